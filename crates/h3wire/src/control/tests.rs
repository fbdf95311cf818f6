use super::*;
use crate::frame::{put_header, put_settings};

/// A server's control stream: its type, SETTINGS, then `more`.
fn control(settings: &[(u64, u64)], more: &[u8]) -> Vec<u8> {
    let mut out = vec![stream_type::CONTROL as u8];
    put_settings(settings, &mut out);
    out.extend_from_slice(more);
    out
}

fn feed(peer: &mut Peer, input: &[u8], step: usize) -> Result<UniReader, Error> {
    let mut r = UniReader::default();
    for part in input.chunks(step.max(1)) {
        r.feed(peer, part)?;
    }
    Ok(r)
}

#[test]
fn a_client_opens_control_with_settings_and_both_qpack_streams() {
    let [control, encoder, decoder] = client_streams(65_536);
    // Read back as a server would read it.
    assert_eq!(control[0], 0x00);
    let mut frames = FrameReader::new(64);
    let mut rest = &control[1..];
    assert_eq!(
        frames.next(&mut rest).unwrap(),
        Some(Piece::Settings(vec![
            (setting::QPACK_MAX_TABLE_CAPACITY, 0),
            (setting::QPACK_BLOCKED_STREAMS, 0),
            (setting::MAX_FIELD_SECTION_SIZE, 65_536),
        ]))
    );
    assert!(rest.is_empty());
    assert_eq!((encoder, decoder), (vec![0x02], vec![0x03]));
}

#[test]
fn the_servers_settings_and_goaway_reach_the_peer_however_the_stream_is_cut() {
    let mut goaway = vec![];
    put_header(kind::GOAWAY, 2, &mut goaway);
    varint::put(400, &mut goaway);
    let greased = 0x1f * 2 + 0x21;
    let input = control(
        &[(setting::MAX_FIELD_SECTION_SIZE, 9000), (greased, 7)],
        &goaway,
    );
    for step in [input.len(), 1, 3] {
        let mut peer = Peer::default();
        let r = feed(&mut peer, &input, step).unwrap();
        assert_eq!(peer.max_field_section(), 9000, "{step}");
        assert_eq!(peer.goaway, Some(400));
        assert!(peer.accepts(396) && !peer.accepts(400));
        assert_eq!(
            r.finish().unwrap_err().code(),
            code::H3_CLOSED_CRITICAL_STREAM
        );
    }
    assert_eq!(Peer::default().max_field_section(), u64::MAX);
}

#[test]
fn qpack_and_unknown_streams_are_read_and_dropped() {
    let mut peer = Peer::default();
    // The encoder stream may set the capacity to 0, and nothing more.
    let r = feed(&mut peer, &[0x02, 0x20], 1).unwrap();
    assert_eq!(
        r.finish().unwrap_err().code(),
        code::H3_CLOSED_CRITICAL_STREAM
    );
    let e = feed(&mut peer, &[0x02], 1).unwrap_err();
    assert_eq!(
        e.code(),
        code::H3_STREAM_CREATION_ERROR,
        "a second encoder stream"
    );
    let e = feed(&mut Peer::default(), &[0x02, 0x3f, 0x01], 1).unwrap_err();
    assert_eq!(e.code(), 0x201, "a capacity above 0: {e}");
    let e = feed(&mut Peer::default(), &[0x02, 0xc0, 0x01, 0x61], 1).unwrap_err();
    assert_eq!(e.code(), 0x201, "an insert: {e}");
    // The decoder stream and a stream of unknown type (two-byte varint 0x21 + 0x1f) are drained.
    let r = feed(&mut peer, &[0x03, 0x01, 0x02], 1).unwrap();
    r.finish().unwrap();
    let r = feed(&mut peer, &[0x40, 0x40, 0xff, 0xff], 1).unwrap();
    r.finish().unwrap();
}

#[test]
fn a_server_that_breaks_the_rules_of_its_streams_is_refused_with_their_codes() {
    let mut headers = vec![];
    crate::frame::put_headers(&[0, 0], &mut headers);
    let goaway = |id: u64| {
        let mut out = vec![];
        put_header(kind::GOAWAY, varint::len(id) as u64, &mut out);
        varint::put(id, &mut out);
        out
    };
    let mut rising = goaway(8);
    rising.extend(goaway(12));
    let mut cancel = vec![];
    put_header(kind::CANCEL_PUSH, 1, &mut cancel);
    cancel.push(0);
    let mut max_push = vec![];
    put_header(kind::MAX_PUSH_ID, 1, &mut max_push);
    max_push.push(0);
    let mut no_settings = vec![0x00];
    no_settings.extend(goaway(4));
    let mut twice = control(&[], &[]);
    put_settings(&[], &mut twice);
    for (what, input, code) in [
        (
            "a frame before SETTINGS",
            no_settings,
            code::H3_MISSING_SETTINGS,
        ),
        ("SETTINGS twice", twice, code::H3_FRAME_UNEXPECTED),
        (
            "HEADERS on the control stream",
            control(&[], &headers),
            code::H3_FRAME_UNEXPECTED,
        ),
        (
            "a server's MAX_PUSH_ID",
            control(&[], &max_push),
            code::H3_FRAME_UNEXPECTED,
        ),
        ("a rising GOAWAY", control(&[], &rising), code::H3_ID_ERROR),
        ("a CANCEL_PUSH", control(&[], &cancel), code::H3_ID_ERROR),
        (
            "HTTP/2's setting",
            control(&[(0x02, 1)], &[]),
            code::H3_SETTINGS_ERROR,
        ),
        (
            "a setting twice",
            control(&[(0x06, 1), (0x06, 2)], &[]),
            code::H3_SETTINGS_ERROR,
        ),
        ("a push stream", vec![0x01, 0x00], code::H3_ID_ERROR),
    ] {
        let e = feed(&mut Peer::default(), &input, 2).unwrap_err();
        assert_eq!(e.code(), code, "{what}: {e}");
    }
    let mut peer = Peer::default();
    feed(&mut peer, &control(&[], &[]), 4).unwrap();
    let e = feed(&mut peer, &control(&[], &[]), 4).unwrap_err();
    assert_eq!(
        e.code(),
        code::H3_STREAM_CREATION_ERROR,
        "a second control stream"
    );
}
