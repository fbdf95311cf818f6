//! QPACK field sections (RFC 9204) on the static table alone.
//!
//! A client that never lets the server insert into a dynamic table (capacity 0, no blocked
//! streams) gets field sections made of static references and literals only; that is what
//! [`decode`] reads, refusing any reference to a dynamic table as QPACK_DECOMPRESSION_FAILED.
//! [`encode`] writes a request's fields the same way: a static reference where the table has
//! the field or its name, else a literal, never Huffman-coded (a request is encoded once per
//! load and sent as it is, so its size is all Huffman would save).

use crate::Error;

/// The static table (RFC 9204, appendix A): index, name, value.
pub const STATIC: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// Appends `v` as a prefixed integer (RFC 7541, section 5.1) whose first byte keeps the high
/// bits `flags` and gives the value its low `bits` bits.
fn put_int(v: u64, bits: u32, flags: u8, out: &mut Vec<u8>) {
    let max = (1u64 << bits) - 1;
    if v < max {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = v - max;
    while rest >= 0x80 {
        out.push((rest & 0x7f) as u8 | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// Reads a prefixed integer of `bits` bits from the start of `buf` (its high bits are the
/// caller's): the value and how many bytes it took.
fn get_int(buf: &[u8], bits: u32) -> Result<(u64, usize), Error> {
    let cut = || Error::Qpack("a field section that ends within an integer".into());
    let max = (1u64 << bits) - 1;
    let first = u64::from(*buf.first().ok_or_else(cut)?) & max;
    if first < max {
        return Ok((first, 1));
    }
    let mut v = max;
    for (i, &b) in buf.iter().enumerate().skip(1) {
        let shift = 7 * (i as u32 - 1);
        // 62 bits is more than any length or index here can need.
        if shift > 56 {
            return Err(Error::Qpack("an integer beyond 62 bits".into()));
        }
        v += u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok((v, i + 1));
        }
    }
    Err(cut())
}

/// Appends a string literal whose first byte keeps the high bits `flags`, its H bit just below
/// them and its length in the low `bits` bits: never Huffman-coded.
fn put_str(s: &[u8], bits: u32, flags: u8, out: &mut Vec<u8>) {
    put_int(s.len() as u64, bits, flags, out);
    out.extend_from_slice(s);
}

/// Reads a string literal whose H bit is bit `bits` of its first byte and whose length is the
/// `bits`-bit integer below it, into `dst` (Huffman-decoded when H is set): the bytes it took.
fn get_str(buf: &[u8], bits: u32, max_len: usize, dst: &mut Vec<u8>) -> Result<usize, Error> {
    let huffman = buf.first().is_some_and(|b| b & (1 << bits) != 0);
    let (len, n) = get_int(buf, bits)?;
    let raw = usize::try_from(len)
        .ok()
        .and_then(|len| buf.get(n..n.checked_add(len)?))
        .ok_or_else(|| Error::Qpack(format!("a string of {len} bytes past the section's end")))?;
    dst.clear();
    if huffman {
        httlib_huffman::decode(raw, dst, httlib_huffman::DecoderSpeed::FourBits)
            .map_err(|e| Error::Qpack(format!("a Huffman-coded string that is not: {e:?}")))?;
    } else {
        dst.extend_from_slice(raw);
    }
    if dst.len() > max_len {
        return Err(Error::Qpack(format!(
            "a string of {} bytes, above the {max_len} allowed",
            dst.len()
        )));
    }
    Ok(n + raw.len())
}

/// The static table's entry `index`.
fn entry(index: u64) -> Result<(&'static str, &'static str), Error> {
    usize::try_from(index)
        .ok()
        .and_then(|i| STATIC.get(i))
        .copied()
        .ok_or_else(|| Error::Qpack(format!("static table index {index} (it has 99)")))
}

/// Appends the field section of `fields` (names lower case, pseudo-headers first, as HTTP/3
/// asks): the prefix of a section that references no dynamic table, then one line per field.
pub fn encode(fields: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
    // Required Insert Count 0, Base 0.
    out.extend_from_slice(&[0, 0]);
    for &(name, value) in fields {
        let same_name = |(n, _): &(&str, &str)| n.as_bytes() == name;
        if let Some(i) = STATIC
            .iter()
            .position(|&(n, v)| n.as_bytes() == name && v.as_bytes() == value)
        {
            // Indexed field line, static: 1 T=1 index(6).
            put_int(i as u64, 6, 0xc0, out);
        } else if let Some(i) = STATIC.iter().position(same_name) {
            // Literal with a static name reference: 0 1 N=0 T=1 index(4), then the value.
            put_int(i as u64, 4, 0x50, out);
            put_str(value, 7, 0x00, out);
        } else {
            // Literal with a literal name: 0 0 1 N=0 H=0 length(3), the name, then the value.
            put_str(name, 3, 0x20, out);
            put_str(value, 7, 0x00, out);
        }
    }
}

/// Reads the field section `block` (a HEADERS frame's payload), calling `field` with each
/// name and value in order. A reference to a dynamic table (one this client never allowed),
/// an index beyond the static table, a cut or malformed line, or a name or value longer than
/// `max_len` is an error.
pub fn decode(
    block: &[u8],
    max_len: usize,
    mut field: impl FnMut(&[u8], &[u8]),
) -> Result<(), Error> {
    let (required, n) = get_int(block, 8)?;
    if required != 0 {
        return Err(Error::Qpack(format!(
            "a field section that needs {required} dynamic table entries, with a table of capacity 0"
        )));
    }
    // The Base (sign bit and delta): nothing to base on without a dynamic table.
    let (_, m) = get_int(&block[n..], 7)?;
    let mut rest = &block[n + m..];
    let (mut name, mut value) = (Vec::new(), Vec::new());
    let dynamic = || Error::Qpack("a reference to the dynamic table, which has capacity 0".into());
    while let Some(&first) = rest.first() {
        let used = if first & 0x80 != 0 {
            // Indexed field line: 1 T index(6).
            if first & 0x40 == 0 {
                return Err(dynamic());
            }
            let (i, n) = get_int(rest, 6)?;
            let (k, v) = entry(i)?;
            field(k.as_bytes(), v.as_bytes());
            n
        } else if first & 0x40 != 0 {
            // Literal with a name reference: 0 1 N T index(4), then the value.
            if first & 0x10 == 0 {
                return Err(dynamic());
            }
            let (i, n) = get_int(rest, 4)?;
            let (k, _) = entry(i)?;
            let m = get_str(&rest[n..], 7, max_len, &mut value)?;
            field(k.as_bytes(), &value);
            n + m
        } else if first & 0x20 != 0 {
            // Literal with a literal name: 0 0 1 N H length(3), the name, then the value.
            let n = get_str(rest, 3, max_len, &mut name)?;
            let m = get_str(&rest[n..], 7, max_len, &mut value)?;
            field(&name, &value);
            n + m
        } else {
            // 0001 (indexed, post-base) and 0000 (literal, post-base name): dynamic only.
            return Err(dynamic());
        };
        rest = &rest[used..];
    }
    Ok(())
}

#[cfg(test)]
mod tests;
