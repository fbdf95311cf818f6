use super::*;

/// A response: the final head with `fields` after `:status`, and `body` in DATA frames of
/// `frame` bytes.
fn response(status: &str, fields: &[(&[u8], &[u8])], body: &[u8], frame: usize) -> Vec<u8> {
    let mut all: Vec<(&[u8], &[u8])> = vec![(b":status", status.as_bytes())];
    all.extend_from_slice(fields);
    let (mut block, mut out) = (vec![], vec![]);
    qpack::encode(&all, &mut block);
    frame::put_headers(&block, &mut out);
    for part in body.chunks(frame.max(1)) {
        frame::put_header(kind::DATA, part.len() as u64, &mut out);
        out.extend_from_slice(part);
    }
    out
}

/// Everything `reader` reads from `input` fed in pieces of `step` bytes, and what `finish`
/// says.
fn read_all(
    reader: &mut ResponseReader,
    input: &[u8],
    step: usize,
) -> Result<(Vec<String>, Vec<u8>), Error> {
    let (mut events, mut body) = (vec![], vec![]);
    for part in input.chunks(step.max(1)) {
        let mut part = part;
        while let Some(e) = reader.next(&mut part)? {
            match e {
                Event::Body(b) => body.extend_from_slice(b),
                e => events.push(format!("{e:?}")),
            }
        }
    }
    reader.finish()?;
    Ok((events, body))
}

fn reader() -> ResponseReader {
    ResponseReader::new(16 << 10, 8 << 10)
}

#[test]
fn a_request_is_a_headers_frame_and_a_body_its_data_frame() {
    let mut out = vec![];
    put_request("GET", "https", "127.0.0.1:8443", "/", &[], None, &mut out);
    let mut input = &out[..];
    let mut r = FrameReader::new(1024);
    let Some(Piece::Headers(block)) = r.next(&mut input).unwrap() else {
        panic!("{out:02x?}");
    };
    assert!(input.is_empty());
    // GET, https and the path "/" are single bytes of the static table.
    assert_eq!(&block[..3], [0, 0, 0xc0 | 17]);
    let mut fields = vec![];
    qpack::decode(&block, 1024, |k, v| fields.push((k.to_vec(), v.to_vec()))).unwrap();
    assert_eq!(fields[3], (b":path".to_vec(), b"/".to_vec()));
    let mut out = vec![];
    put_request(
        "POST",
        "https",
        "h",
        "/up",
        &[(b"content-type", b"text/plain")],
        Some(3),
        &mut out,
    );
    assert_eq!(
        &out[out.len() - 2..],
        [0x00, 0x03],
        "a DATA frame of 3 bytes follows"
    );
}

#[test]
fn a_response_reads_the_same_whether_whole_or_byte_by_byte() {
    let body: Vec<u8> = (0..2000u32).map(|i| (i % 251) as u8).collect();
    let mut input = response(
        "200",
        &[(b"content-length", b"2000"), (b"server", b"t")],
        &body,
        700,
    );
    let mut trailers = vec![];
    qpack::encode(&[(b"x-done", b"1")], &mut trailers);
    frame::put_headers(&trailers, &mut input);
    for step in [input.len(), 1, 7] {
        let (events, got) = read_all(&mut reader(), &input, step).unwrap();
        assert_eq!(
            events,
            [
                "Head { status: 200, content_length: Some(2000) }",
                "Trailers"
            ],
            "{step}"
        );
        assert_eq!(got, body, "{step}");
    }
}

#[test]
fn interim_responses_come_before_the_final_one() {
    let mut input = response("103", &[(b"link", b"</a.css>")], b"", 1);
    input.extend(response("200", &[], b"ok", 10));
    let (events, body) = read_all(&mut reader(), &input, 3).unwrap();
    assert_eq!(
        events,
        ["Interim(103)", "Head { status: 200, content_length: None }"]
    );
    assert_eq!(body, b"ok");
}

#[test]
fn a_body_that_disagrees_with_its_length_is_a_message_error() {
    let long = response("200", &[(b"content-length", b"3")], b"four", 10);
    let e = read_all(&mut reader(), &long, 100).unwrap_err();
    assert_eq!(e.code(), code::H3_MESSAGE_ERROR, "{e}");
    let short = response("200", &[(b"content-length", b"5")], b"four", 10);
    let e = read_all(&mut reader(), &short, 100).unwrap_err();
    assert!(e.to_string().contains("said 5"), "{e}");
    // The response to a HEAD request, and a 304, name the length of a body they do not carry.
    let head = response("200", &[(b"content-length", b"5")], b"", 10);
    read_all(&mut reader().for_head_request(), &head, 100).unwrap();
    let not_modified = response("304", &[(b"content-length", b"5")], b"", 10);
    read_all(&mut reader(), &not_modified, 100).unwrap();
}

#[test]
fn a_stream_that_breaks_the_grammar_is_refused_with_its_code() {
    let data_first = {
        let mut out = vec![];
        frame::put_header(kind::DATA, 1, &mut out);
        out.push(b'x');
        out
    };
    let mut after_trailers = response("200", &[], b"", 1);
    frame::put_headers(&[0, 0], &mut after_trailers);
    frame::put_header(kind::DATA, 1, &mut after_trailers);
    after_trailers.push(b'x');
    let mut settings = response("200", &[], b"", 1);
    frame::put_settings(&[], &mut settings);
    let mut push = response("200", &[], b"", 1);
    frame::put_header(kind::PUSH_PROMISE, 1, &mut push);
    push.push(0);
    let mut cut = response("200", &[], b"body", 10);
    cut.pop();
    for (what, input, code) in [
        (
            "DATA before the head",
            data_first,
            code::H3_FRAME_UNEXPECTED,
        ),
        (
            "DATA after the trailers",
            after_trailers,
            code::H3_FRAME_UNEXPECTED,
        ),
        (
            "SETTINGS on a request stream",
            settings,
            code::H3_FRAME_UNEXPECTED,
        ),
        ("a push", push, code::H3_ID_ERROR),
        ("an end within a frame", cut, code::H3_FRAME_ERROR),
        ("no head at all", vec![], code::H3_MESSAGE_ERROR),
    ] {
        let e = read_all(&mut reader(), &input, 5).unwrap_err();
        assert_eq!(e.code(), code, "{what}: {e}");
    }
}

#[test]
fn a_head_without_a_valid_single_status_first_is_malformed() {
    let head = |fields: &[(&[u8], &[u8])]| {
        let (mut block, mut out) = (vec![], vec![]);
        qpack::encode(fields, &mut block);
        frame::put_headers(&block, &mut out);
        out
    };
    for (what, fields) in [
        ("no :status", vec![(&b"server"[..], &b"t"[..])]),
        (
            "two",
            vec![(&b":status"[..], &b"200"[..]), (b":status", b"200")],
        ),
        (
            "after a field",
            vec![(&b"server"[..], &b"t"[..]), (b":status", b"200")],
        ),
        ("101", vec![(&b":status"[..], &b"101"[..])]),
        ("not three digits", vec![(&b":status"[..], &b"20"[..])]),
        (
            "a request's pseudo-header",
            vec![(&b":status"[..], &b"200"[..]), (b":path", b"/")],
        ),
        (
            "a bad length",
            vec![(&b":status"[..], &b"200"[..]), (b"content-length", b"-1")],
        ),
        (
            "two lengths",
            vec![
                (&b":status"[..], &b"200"[..]),
                (b"content-length", b"1"),
                (b"content-length", b"2"),
            ],
        ),
    ] {
        let e = read_all(&mut reader(), &head(&fields), 100).unwrap_err();
        assert_eq!(e.code(), code::H3_MESSAGE_ERROR, "{what}: {e}");
    }
}

#[test]
fn the_server_field_is_kept_only_when_asked_for() {
    let input = response(
        "200",
        &[(b"server", b"nginx/1.26.3"), (b"content-length", b"2")],
        b"ok",
        2,
    );
    let mut keeping = reader().keeping_server();
    read_all(&mut keeping, &input, 3).unwrap();
    assert_eq!(keeping.take_server().as_deref(), Some("nginx/1.26.3"));
    assert_eq!(keeping.take_server(), None, "taken once");
    let mut plain = reader();
    read_all(&mut plain, &input, 3).unwrap();
    assert_eq!(plain.take_server(), None);
}

/// What `read_all` gives, but through `next_remembering` with `heads`.
fn read_all_remembering(
    reader: &mut ResponseReader,
    input: &[u8],
    step: usize,
    heads: &mut Heads,
) -> Result<(Vec<String>, Vec<u8>), Error> {
    let (mut events, mut body) = (vec![], vec![]);
    for part in input.chunks(step.max(1)) {
        let mut part = part;
        while let Some(e) = reader.next_remembering(&mut part, heads)? {
            match e {
                Event::Body(b) => body.extend_from_slice(b),
                e => events.push(format!("{e:?}")),
            }
        }
    }
    reader.finish()?;
    Ok((events, body))
}

#[test]
fn remembered_heads_read_exactly_as_decoded_ones() {
    let long = vec![b'x'; 2000];
    let date1: &[(&[u8], &[u8])] = &[
        (b"date", b"Sat, 05 Dec 2026 00:10:01 GMT"),
        (b"content-length", b"3"),
    ];
    let date2: &[(&[u8], &[u8])] = &[
        (b"date", b"Sat, 05 Dec 2026 00:10:02 GMT"),
        (b"content-length", b"3"),
    ];
    let mut interim = response("103", &[(b"link", b"</a.css>")], b"", 1);
    interim.extend(response("200", date1, b"abc", 2));
    let cases: Vec<(Vec<u8>, bool)> = vec![
        (response("200", date1, b"abc", 3), false),
        (response("200", date1, b"abc", 1), false),
        (response("200", date1, b"abcd", 3), false),
        (response("200", date2, b"abc", 3), false),
        (response("200", date1, b"abc", 3), true),
        (response("304", date1, b"", 3), false),
        (response("404", date1, b"abc", 3), false),
        (interim, false),
        (response("2000", date1, b"abc", 3), false),
        (response("200", &[(b"x-long", &long[..])], b"", 3), false),
        (response("200", &[(b"x-long", &long[..])], b"", 3), false),
        (response("200", &[(b"x-mid", &long[..600])], b"", 3), false),
        (response("200", date1, b"abc", 3), false),
    ];
    let mut heads = Heads::new();
    for round in 0..2 {
        for (i, (bytes, head_request)) in cases.iter().enumerate() {
            // A reader refusing fields above 500 bytes, and one above 1000: the same section
            // is refused by the one and read by the other, remembered or not.
            for max_field in [500, 1000] {
                let make = || {
                    let r = ResponseReader::new(16 << 10, max_field);
                    if *head_request {
                        r.for_head_request()
                    } else {
                        r
                    }
                };
                for step in [1, 7, usize::MAX] {
                    let plain = read_all(&mut make(), bytes, step);
                    let kept = read_all_remembering(&mut make(), bytes, step, &mut heads);
                    assert_eq!(
                        plain, kept,
                        "round {round}, case {i}, max {max_field}, step {step}"
                    );
                }
            }
        }
    }
    // A section is kept once decoded, and one over the bound is not.
    let mut heads = Heads::new();
    read_all_remembering(
        &mut reader(),
        &response("200", date1, b"abc", 3),
        9,
        &mut heads,
    )
    .unwrap();
    assert_eq!(heads.head, Some((200, Some(3))));
    let over = response("200", &[(b"x-long", &long[..1100])], b"", 3);
    read_all_remembering(&mut reader(), &over, 9, &mut heads).unwrap();
    assert_eq!(heads.head, None);
}

#[test]
fn a_reader_keeping_the_server_field_decodes_its_head_whatever_is_remembered() {
    let fields: &[(&[u8], &[u8])] = &[(b"server", b"nginx/1.26.3")];
    let bytes = response("200", fields, b"", 3);
    let mut heads = Heads::new();
    read_all_remembering(&mut reader(), &bytes, 100, &mut heads).unwrap();
    let mut r = reader().keeping_server();
    read_all_remembering(&mut r, &bytes, 100, &mut heads).unwrap();
    assert_eq!(r.take_server().as_deref(), Some("nginx/1.26.3"));
}
