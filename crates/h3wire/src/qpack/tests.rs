use super::*;

/// Every field of `block`, as strings.
fn fields(block: &[u8]) -> Result<Vec<(String, String)>, Error> {
    let mut out = vec![];
    decode(block, 4096, |k, v| {
        out.push((
            String::from_utf8_lossy(k).into_owned(),
            String::from_utf8_lossy(v).into_owned(),
        ));
    })?;
    Ok(out)
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn prefixed_integers_are_those_of_rfc_7541() {
    // RFC 7541, appendix C.1: 10 and 1337 on a 5-bit prefix, 42 on 8 bits.
    for (v, bits, bytes) in [
        (10, 5, vec![0x0a]),
        (1337, 5, vec![0x1f, 0x9a, 0x0a]),
        (42, 8, vec![0x2a]),
        (31, 5, vec![0x1f, 0x00]),
    ] {
        let mut out = vec![];
        put_int(v, bits, 0, &mut out);
        assert_eq!(out, bytes, "{v}");
        assert_eq!(get_int(&out, bits).unwrap(), (v, out.len()), "{v}");
    }
    // The high bits belong to the line, not the integer.
    assert_eq!(get_int(&[0xea], 5).unwrap(), (10, 1));
    assert!(get_int(&[0x1f, 0x9a], 5).is_err());
    assert!(get_int(
        &[0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
        5
    )
    .is_err());
}

#[test]
fn the_static_table_has_the_indexes_of_rfc_9204() {
    assert_eq!(STATIC[0], (":authority", ""));
    assert_eq!(STATIC[17], (":method", "GET"));
    assert_eq!(STATIC[25], (":status", "200"));
    assert_eq!(STATIC[31], ("accept-encoding", "gzip, deflate, br"));
    assert_eq!(STATIC[52], ("content-type", "text/html; charset=utf-8"));
    assert_eq!(STATIC[63], (":status", "100"));
    assert_eq!(STATIC[95], ("user-agent", ""));
    assert_eq!(STATIC[98], ("x-frame-options", "sameorigin"));
}

#[test]
fn a_literal_with_a_static_name_reference_is_read_as_rfc_9204_shows_it() {
    // RFC 9204, appendix B.1.
    let block = hex("0000 510b 2f69 6e64 6578 2e68 746d 6c");
    assert_eq!(
        fields(&block).unwrap(),
        [(":path".into(), "/index.html".into())]
    );
}

#[test]
fn huffman_coded_names_and_values_are_decoded() {
    // RFC 7541, appendix C.4: "www.example.com", "custom-key" and "custom-value" coded.
    let mut block = hex("0000 50 8c f1e3 c2e5 f23a 6ba0 ab90 f4ff");
    block.extend(hex("2f01 25a8 49e9 5ba9 7d7f 89 25a8 49e9 5bb8 e8b4 bf"));
    assert_eq!(
        fields(&block).unwrap(),
        [
            (":authority".into(), "www.example.com".into()),
            ("custom-key".into(), "custom-value".into()),
        ]
    );
    // A Huffman string with the end-of-string code in it is not one.
    let bad = hex("0000 50 84 ffff ffff");
    assert!(fields(&bad).is_err());
}

#[test]
fn a_request_round_trips_with_static_references_where_the_table_has_them() {
    let request: [(&[u8], &[u8]); 6] = [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"127.0.0.1:8443"),
        (b":path", b"/page.html"),
        (b"user-agent", b"benchctl"),
        (b"x-trace", b"1"),
    ];
    let mut block = vec![];
    encode(&request, &mut block);
    // GET and https are one byte each; :authority and :path name references; x-trace literal.
    assert_eq!(&block[..4], [0x00, 0x00, 0xc0 | 17, 0xc0 | 23]);
    assert_eq!(block[4], 0x50);
    let got = fields(&block).unwrap();
    let want: Vec<(String, String)> = request
        .iter()
        .map(|(k, v)| {
            (
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect();
    assert_eq!(got, want);
    // Long names and values take the prefixed integer's continuation bytes.
    let long = vec![b'a'; 300];
    let mut block = vec![];
    encode(&[(&long[..40], &long[..])], &mut block);
    assert_eq!(fields(&block).unwrap(), [("a".repeat(40), "a".repeat(300))]);
}

#[test]
fn what_only_a_dynamic_table_could_mean_is_refused() {
    for (what, block) in [
        ("required insert count 2", hex("0200 d1")),
        ("indexed, dynamic", hex("0000 81")),
        ("indexed, post-base", hex("0000 10")),
        ("name reference, dynamic", hex("0000 41 01 61")),
        ("post-base name reference", hex("0000 00 01 61")),
    ] {
        let e = fields(&block).unwrap_err();
        assert_eq!(
            e.code(),
            crate::frame::code::QPACK_DECOMPRESSION_FAILED,
            "{what}"
        );
    }
}

#[test]
fn a_malformed_or_oversized_section_is_refused_not_read_past() {
    for (what, block) in [
        ("empty", vec![]),
        ("no base", hex("00")),
        ("index 99", hex("0000 ff24")),
        ("value past the end", hex("0000 51 0b 2f69")),
        ("name past the end", hex("0000 25 6161")),
    ] {
        assert!(fields(&block).is_err(), "{what}");
    }
    let mut block = vec![];
    encode(&[(b"x-big", &[b'v'; 5000][..])], &mut block);
    let e = decode(&block, 4096, |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("5000 bytes"), "{e}");
}
