//! QUIC's variable-length integers (RFC 9000, section 16), which HTTP/3 uses for frame types,
//! lengths, settings and stream types: the two high bits of the first byte give the length
//! (1, 2, 4 or 8 bytes), the rest is the value in network byte order.

/// The largest value a variable-length integer holds: 2^62 - 1.
pub const MAX: u64 = (1 << 62) - 1;

/// How many bytes `v` takes (`v` at most [`MAX`]).
pub fn len(v: u64) -> usize {
    match v {
        0..=0x3f => 1,
        0x40..=0x3fff => 2,
        0x4000..=0x3fff_ffff => 4,
        _ => 8,
    }
}

/// Appends `v` in its shortest form.
///
/// # Panics
/// When `v` is above [`MAX`]: every value this crate writes is a type, a length or a setting
/// it chose, never one read from a peer.
pub fn put(v: u64, out: &mut Vec<u8>) {
    assert!(v <= MAX, "{v} does not fit a QUIC variable-length integer");
    match len(v) {
        1 => out.push(v as u8),
        2 => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        4 => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// Reads one integer from the start of `buf`: its value and how many bytes it took, or `None`
/// when `buf` ends before it does (more bytes are needed; no form is invalid).
pub fn get(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let n = 1usize << (first >> 6);
    let bytes = buf.get(..n)?;
    let v = bytes[1..]
        .iter()
        .fold(u64::from(first & 0x3f), |v, &b| (v << 8) | u64::from(b));
    Some((v, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_examples_of_rfc_9000_decode_to_their_values() {
        // RFC 9000, appendix A.1, and a two-byte form of 37 that is valid though not shortest.
        let cases: [(&[u8], u64); 5] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
            (&[0x40, 0x25], 37),
        ];
        for (bytes, value) in cases {
            assert_eq!(get(bytes), Some((value, bytes.len())), "{bytes:02x?}");
        }
    }

    #[test]
    fn every_length_round_trips_at_its_edges_and_a_cut_one_asks_for_more() {
        for v in [0, 63, 64, 16_383, 16_384, (1 << 30) - 1, 1 << 30, MAX] {
            let mut out = vec![];
            put(v, &mut out);
            assert_eq!(out.len(), len(v), "{v}");
            assert_eq!(get(&out), Some((v, out.len())), "{v}");
            // Followed by other bytes, it still reads only its own.
            out.push(0xff);
            assert_eq!(get(&out), Some((v, out.len() - 1)), "{v}");
            out.pop();
            for cut in 0..out.len() {
                assert_eq!(get(&out[..cut]), None, "{v} cut at {cut}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn a_value_beyond_62_bits_is_refused() {
        put(MAX + 1, &mut vec![]);
    }
}
