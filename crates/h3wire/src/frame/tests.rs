use super::*;

/// A response stream: HEADERS, a DATA frame, a grease frame to skip, an empty DATA frame,
/// another DATA frame, and trailers.
fn stream() -> Vec<u8> {
    let mut s = vec![];
    put_headers(&[0, 0, 0xd9], &mut s);
    put_header(kind::DATA, 5, &mut s);
    s.extend_from_slice(b"hello");
    put_header(0x1f * 3 + 0x21, 3, &mut s);
    s.extend_from_slice(b"xyz");
    put_header(kind::DATA, 0, &mut s);
    put_header(kind::DATA, 300, &mut s);
    s.extend_from_slice(&[b'w'; 300]);
    put_headers(&[0, 0], &mut s);
    s
}

/// What `reader` reads from `input` cut into `parts`: the field sections, and the body.
fn read(reader: &mut FrameReader, parts: &[&[u8]]) -> Result<(Vec<Vec<u8>>, Vec<u8>), Error> {
    let (mut headers, mut body) = (vec![], vec![]);
    for part in parts {
        let mut input = *part;
        while let Some(piece) = reader.next(&mut input)? {
            match piece {
                Piece::Headers(h) => headers.push(h),
                Piece::Data(d) => body.extend_from_slice(d),
                other => panic!("{other:?}"),
            }
        }
        assert!(input.is_empty());
    }
    Ok((headers, body))
}

#[test]
fn a_stream_reads_the_same_however_it_is_cut() {
    let s = stream();
    let mut want_body = b"hello".to_vec();
    want_body.extend_from_slice(&[b'w'; 300]);
    let want = (vec![vec![0, 0, 0xd9], vec![0, 0]], want_body);
    let mut r = FrameReader::new(1024);
    assert_eq!(read(&mut r, &[&s]).unwrap(), want);
    assert!(r.at_boundary());
    for cut in 0..=s.len() {
        let mut r = FrameReader::new(1024);
        assert_eq!(
            read(&mut r, &[&s[..cut], &s[cut..]]).unwrap(),
            want,
            "{cut}"
        );
        assert!(r.at_boundary(), "{cut}");
    }
    let bytes: Vec<&[u8]> = s.chunks(1).collect();
    let mut r = FrameReader::new(1024);
    assert_eq!(read(&mut r, &bytes).unwrap(), want);
}

#[test]
fn a_data_payload_is_handed_on_as_it_arrived() {
    let mut s = vec![];
    put_header(kind::DATA, 6, &mut s);
    s.extend_from_slice(b"abcdef");
    let mut r = FrameReader::new(16);
    let mut first = &s[..5];
    assert_eq!(r.next(&mut first).unwrap(), Some(Piece::Data(b"abc")));
    assert_eq!(r.next(&mut first).unwrap(), None);
    assert!(!r.at_boundary(), "within a frame");
    let mut second = &s[5..];
    assert_eq!(r.next(&mut second).unwrap(), Some(Piece::Data(b"def")));
    assert!(r.at_boundary());
}

#[test]
fn settings_and_goaway_are_read_whole() {
    let mut s = vec![];
    let settings = [
        (setting::QPACK_MAX_TABLE_CAPACITY, 0),
        (setting::MAX_FIELD_SECTION_SIZE, 65_536),
        (0x1f * 7 + 0x21, 1 << 40),
    ];
    put_settings(&settings, &mut s);
    put_header(kind::GOAWAY, 2, &mut s);
    crate::varint::put(400, &mut s);
    put_header(kind::MAX_PUSH_ID, 1, &mut s);
    s.push(7);
    put_settings(&[], &mut s);
    let mut r = FrameReader::new(64);
    let mut input = &s[..];
    assert_eq!(
        r.next(&mut input).unwrap(),
        Some(Piece::Settings(settings.to_vec()))
    );
    assert_eq!(r.next(&mut input).unwrap(), Some(Piece::Goaway(400)));
    assert_eq!(
        r.next(&mut input).unwrap(),
        Some(Piece::Other {
            kind: kind::MAX_PUSH_ID,
            payload: vec![7]
        })
    );
    assert_eq!(r.next(&mut input).unwrap(), Some(Piece::Settings(vec![])));
    assert_eq!(r.next(&mut input).unwrap(), None);
}

#[test]
fn frames_http3_forbids_or_cannot_parse_are_errors_with_their_codes() {
    let error = |bytes: &[u8], max: u64| {
        let mut r = FrameReader::new(max);
        let mut input = bytes;
        loop {
            match r.next(&mut input) {
                Err(e) => return e.code(),
                Ok(None) => panic!("no error in {bytes:02x?}"),
                Ok(Some(_)) => {}
            }
        }
    };
    // HTTP/2's PRIORITY, PING, WINDOW_UPDATE and CONTINUATION types.
    for t in [0x02, 0x06, 0x08, 0x09] {
        assert_eq!(error(&[t, 0], 64), code::H3_FRAME_UNEXPECTED, "{t:#x}");
    }
    // A HEADERS frame larger than allowed is refused before it is read.
    assert_eq!(error(&[0x01, 0x40, 0x41], 64), code::H3_EXCESSIVE_LOAD);
    // A GOAWAY frame with more than its integer; a SETTINGS frame cut within a pair.
    assert_eq!(error(&[0x07, 0x02, 0x01, 0x01], 64), code::H3_FRAME_ERROR);
    assert_eq!(error(&[0x04, 0x01, 0x01], 64), code::H3_FRAME_ERROR);
}
