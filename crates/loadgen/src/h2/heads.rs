//! Response heads that repeat: most servers send the same header block for every response to
//! the same request but for the `date` once a second, and decoding its Huffman-coded literals
//! is much of what reading a small response costs. HPACK's blocks depend on the connection's
//! dynamic table in general. A block that refers to nothing in the table and sets no table
//! size (static references and literals only) decodes to the same fields whatever the table
//! holds; its literals with incremental indexing add to the table (nginx adds its `server` and
//! `date` to it in every response, and never refers to them).
//!
//! Such a block, when it repeats the last one byte for byte, is taken from [`Heads`] after
//! one comparison, and its additions to the table are owed: before any other block is
//! decoded, the decoder reads the owed copies again. The table keeps only its newest entries,
//! so copies beyond those that fill it whatever was there change nothing: at most that many
//! are read again.

use super::{decode_head, ConnError, ResponseHead};

/// Entries of HPACK's static table (RFC 7541, appendix A).
const STATIC_ENTRIES: u64 = 61;

/// What an entry adds to the table's size beside its name and value (RFC 7541, section 4.1).
const ENTRY_OVERHEAD: u64 = 32;

/// A connection's decoder of response heads: its HPACK decoder, the last block decoded that
/// refers to nothing in the table with what it said, and the copies of it taken from here
/// whose additions the decoder's table still owes. One per connection, new with each.
#[derive(Default)]
pub struct Heads {
    dec: httlib_hpack::Decoder<'static>,
    block: Vec<u8>,
    head: Option<ResponseHead>,
    /// Its literals with incremental indexing.
    adds: u64,
    /// Copies taken from here since the decoder last read it.
    owed: u64,
}

impl std::fmt::Debug for Heads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Heads")
            .field("block", &self.block.len())
            .field("adds", &self.adds)
            .field("owed", &self.owed)
            .finish_non_exhaustive()
    }
}

impl Heads {
    /// Blocks longer than this are decoded every time (the copy would be most of the saving).
    pub const MAX: usize = 1024;

    pub fn new() -> Heads {
        Heads::default()
    }

    /// [`decode_head`] with this connection's decoder, taking the head from the kept copy
    /// when `block` repeats it, and keeping `block` when it refers to nothing in the table;
    /// the table ends as [`decode_head`] would leave it whenever a block is decoded. A head
    /// whose `server` field is wanted is decoded every time.
    pub fn decode(&mut self, block: Vec<u8>, want_server: bool) -> Result<ResponseHead, ConnError> {
        if !want_server {
            if let Some(head) = self.head.as_ref().filter(|_| self.block == block) {
                if self.adds > 0 {
                    self.owed += 1;
                }
                return Ok(head.clone());
            }
        }
        self.settle()?;
        let adds = (!want_server && block.len() <= Heads::MAX)
            .then(|| self_contained(&block))
            .flatten();
        let Some(adds) = adds else {
            return decode_head(&mut self.dec, block, want_server);
        };
        self.block.clear();
        self.block.extend_from_slice(&block);
        self.head = None;
        let head = decode_head(&mut self.dec, block, want_server)?;
        (self.head, self.adds) = (Some(head.clone()), adds);
        Ok(head)
    }

    /// Has the decoder read the copies owed, as many as can still change its table.
    fn settle(&mut self) -> Result<(), ConnError> {
        if self.owed == 0 {
            return Ok(());
        }
        // Each copy adds at least `adds` entries of at least ENTRY_OVERHEAD bytes; once the
        // copies read have added more than the table holds, nothing older is left in it.
        let fill = u64::from(self.dec.max_dynamic_size()) / (self.adds * ENTRY_OVERHEAD) + 2;
        for _ in 0..self.owed.min(fill) {
            decode_head(&mut self.dec, self.block.clone(), false)?;
        }
        self.owed = 0;
        Ok(())
    }
}

/// When every representation in `block` is a static-table reference or a literal whose name
/// is the static table's or literal, with no table size update: the number of its literals
/// with incremental indexing (what it adds to the table). `None` for any other block, a
/// malformed one included.
pub fn self_contained(mut block: &[u8]) -> Option<u64> {
    let mut adds = 0;
    while let Some(&first) = block.first() {
        let used = if first & 0x80 != 0 {
            // Indexed field: 1 index(7).
            match int(block, 7)? {
                (i, n) if (1..=STATIC_ENTRIES).contains(&i) => n,
                _ => return None,
            }
        } else if first & 0xc0 == 0x40 {
            // With incremental indexing: 01 index(6), the name when the index is 0, the value.
            adds += 1;
            literal(block, 6)?
        } else if first & 0xe0 == 0x20 {
            // A dynamic table size update.
            return None;
        } else {
            // Without indexing (0000) or never indexed (0001): index(4), then as above.
            literal(block, 4)?
        };
        block = &block[used..];
    }
    Some(adds)
}

/// The length of the literal at the start of `b` whose name index has a `bits`-bit prefix,
/// when its name is literal or the static table's.
fn literal(b: &[u8], bits: u32) -> Option<usize> {
    let (i, mut at) = int(b, bits)?;
    if i > STATIC_ENTRIES {
        return None;
    }
    if i == 0 {
        at += string(&b[at..])?;
    }
    Some(at + string(&b[at..])?)
}

/// The length of the string literal (its length prefix included) at the start of `b`.
fn string(b: &[u8]) -> Option<usize> {
    let (len, n) = int(b, 7)?;
    let end = n.checked_add(usize::try_from(len).ok()?)?;
    (end <= b.len()).then_some(end)
}

/// An HPACK integer with a `bits`-bit prefix at the start of `b` (RFC 7541, section 5.1), and
/// the bytes it took; `None` when cut or above 2^56.
fn int(b: &[u8], bits: u32) -> Option<(u64, usize)> {
    let mask = (1u8 << bits) - 1;
    let first = *b.first()? & mask;
    if first < mask {
        return Some((u64::from(first), 1));
    }
    let mut value = u64::from(mask);
    for (k, &byte) in b.iter().skip(1).take(8).enumerate() {
        value += u64::from(byte & 0x7f) << (7 * k);
        if byte & 0x80 == 0 {
            return Some((value, k + 2));
        }
    }
    None
}

#[cfg(test)]
mod tests;
