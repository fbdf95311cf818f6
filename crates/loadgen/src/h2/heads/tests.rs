use super::*;
use httlib_hpack::Encoder;

const HUFFMAN: u8 = Encoder::HUFFMAN_VALUE | Encoder::BEST_FORMAT;
const INDEXED: u8 = HUFFMAN | Encoder::WITH_INDEXING;

/// One block of `fields` from `enc` (as a server's encoder writes it, its table kept), each
/// field with its flags.
fn block(enc: &mut Encoder<'static>, fields: &[(&str, &str, u8)]) -> Vec<u8> {
    let mut out = Vec::new();
    for &(name, value, flags) in fields {
        let field = (name.as_bytes().to_vec(), value.as_bytes().to_vec(), flags);
        enc.encode(field, &mut out).unwrap();
    }
    out
}

/// A response head as nginx writes it: its status from the static table, then Huffman-coded
/// literals, the `server` and `date` added to the table (`adds`) or not.
fn nginx(status: &str, date: &str, adds: bool) -> Vec<u8> {
    let flags = if adds { INDEXED } else { HUFFMAN };
    // A fresh encoder: nginx never refers to what it adds.
    block(
        &mut Encoder::default(),
        &[
            (":status", status, HUFFMAN),
            ("server", "nginx/1.26.3", flags),
            ("date", date, flags),
            ("content-type", "text/html", HUFFMAN),
            ("content-length", "13", HUFFMAN),
        ],
    )
}

/// A head that refers to the first `n` entries of the table.
fn referring(n: u8) -> Vec<u8> {
    let mut b = vec![0x88];
    b.extend((0..n).map(|i| 0x80 | (62 + i)));
    b
}

/// Decodes `blocks` twice, with [`decode_head`] and with [`Heads::decode`], each
/// with its own decoder: the same heads, or the same error, block by block. Returns how many
/// were taken from the kept copy.
fn both_ways(blocks: &[Vec<u8>]) -> usize {
    let mut plain = httlib_hpack::Decoder::default();
    let mut heads = Heads::new();
    let mut hits = 0;
    for (i, b) in blocks.iter().enumerate() {
        let owed = heads.owed;
        let want = decode_head(&mut plain, b.clone(), false);
        let got = heads.decode(b.clone(), false);
        assert_eq!(got, want, "block {i}");
        hits += usize::from(heads.owed > owed || (heads.adds == 0 && heads.block == *b && i > 0));
    }
    hits
}

#[test]
fn remembered_heads_read_as_decoded_ones_and_the_table_stays_in_step() {
    let d1 = "Sat, 05 Dec 2026 01:00:01 GMT";
    let d2 = "Sat, 05 Dec 2026 01:00:02 GMT";
    // nginx's way: every head adds to the table. Heads that refer to the table come between,
    // after few repeats and after many (more than fill the table), so that the owed copies
    // must have been read, and read far enough.
    let mut blocks = vec![nginx("200", d1, true)];
    // A full table holds the entries of about 35 heads (70 entries): references reach deep.
    for repeats in [1, 3, 40, 400] {
        let deep = if repeats > 3 { 60 } else { 4 };
        blocks.extend(std::iter::repeat_n(nginx("200", d1, true), repeats));
        blocks.push(referring(deep));
        blocks.extend(std::iter::repeat_n(nginx("404", d2, true), repeats));
        blocks.push(nginx("200", d2, true));
        blocks.push(referring(deep));
    }
    // Heads that add nothing, between them.
    blocks.extend(std::iter::repeat_n(nginx("200", d1, false), 5));
    blocks.push(referring(6));
    // A smaller table, then repeats and a reference again.
    let mut smaller = vec![0x3f, 0xe1, 0x01]; // size update to 256 (31 + 225)
    smaller.extend(nginx("200", d1, true));
    blocks.push(smaller);
    blocks.extend(std::iter::repeat_n(nginx("200", d1, true), 50));
    blocks.push(referring(2));
    // Past the table: an error both ways.
    blocks.push(referring(40));
    assert!(both_ways(&blocks) > 900);
}

#[test]
fn only_blocks_that_refer_to_nothing_in_the_table_are_kept() {
    assert_eq!(self_contained(&nginx("200", "now", false)), Some(0));
    assert_eq!(self_contained(&nginx("200", "now", true)), Some(2));
    assert_eq!(self_contained(&[]), Some(0));
    // :status 200 from the static table; index 0 and an index past the static table.
    assert_eq!(self_contained(&[0x88]), Some(0));
    assert_eq!(self_contained(&[0x80]), None);
    assert_eq!(self_contained(&referring(1)), None);
    // A literal never indexed with a literal name "a" and value "b"; cut short.
    assert_eq!(self_contained(&[0x10, 1, b'a', 1, b'b']), Some(0));
    assert_eq!(self_contained(&[0x10, 1, b'a', 2, b'b']), None);
    // Without indexing, its name from the table (index 62: 15, then 47); added, its name from
    // the table (index 63: 63, then 0).
    assert_eq!(self_contained(&[0x0f, 47, 1, b'b']), None);
    assert_eq!(self_contained(&[0x7f, 0x00, 1, b'b']), None);
    // Added with a literal name; a table size update.
    assert_eq!(self_contained(&[0x40, 1, b'a', 1, b'b']), Some(1));
    assert_eq!(self_contained(&[0x20]), None);
    // An integer that never ends.
    assert_eq!(self_contained(&[0xff; 12]), None);
}

#[test]
fn a_wanted_server_field_and_a_long_block_are_decoded_every_time() {
    let b = nginx("200", "now", true);
    let mut heads = Heads::new();
    let head = heads.decode(b.clone(), true).unwrap();
    assert_eq!(head.server.as_deref(), Some("nginx/1.26.3"));
    assert!(heads.head.is_none());
    heads.decode(b.clone(), false).unwrap();
    heads.decode(b.clone(), false).unwrap();
    assert_eq!(heads.owed, 1);
    let again = heads.decode(b, true).unwrap();
    assert_eq!(again.server.as_deref(), Some("nginx/1.26.3"));
    assert_eq!(heads.owed, 0);
    let long = "x".repeat(Heads::MAX);
    let b = block(
        &mut Encoder::default(),
        &[(":status", "200", HUFFMAN), ("x-long", &long, 0)],
    );
    heads.decode(b, false).unwrap();
    assert!(
        heads.block.len() <= Heads::MAX,
        "the long block is not kept"
    );
}
