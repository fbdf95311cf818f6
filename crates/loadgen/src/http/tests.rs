use super::*;

fn feed_all(p: &mut ResponseParser, parts: &[&[u8]]) -> Result<Feed, ParseError> {
    let mut last = Feed::More;
    for part in parts {
        last = p.feed(part)?;
    }
    Ok(last)
}

#[test]
fn content_length_in_one_read() {
    let mut p = ResponseParser::new(false);
    p.reset(true);
    let r = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nContent-Length: 13\r\n\r\nHello, World!";
    assert_eq!(p.feed(r), Ok(Feed::Done));
    assert_eq!(p.body_len, 13);
    assert_eq!(p.wire_len, r.len() as u64);
    assert_eq!(p.head.status, 200);
    assert!(p.head.keep_alive);
    assert_eq!(p.server.as_deref(), Some("nginx/1.22.1"));
}

#[test]
fn head_split_anywhere() {
    let r: &[u8] = b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhello";
    for cut in 1..r.len() {
        for cut2 in cut..r.len() {
            let mut p = ResponseParser::new(false);
            let got = feed_all(&mut p, &[&r[..cut], &r[cut..cut2], &r[cut2..]]).unwrap();
            assert_eq!(got, Feed::Done, "cuts {cut} {cut2}");
            assert_eq!(p.body_len, 5);
            assert!(p.head.keep_alive);
        }
    }
}

#[test]
fn http10_without_keep_alive_header_closes() {
    let mut p = ResponseParser::new(false);
    p.feed(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi")
        .unwrap();
    assert!(!p.head.keep_alive);
    let mut p = ResponseParser::new(false);
    p.feed(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi")
        .unwrap();
    assert!(!p.head.keep_alive);
}

#[test]
fn chunked_split_byte_by_byte() {
    let r: &[u8] =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: y\r\n\r\n";
    let mut p = ResponseParser::new(false);
    let mut last = Feed::More;
    for b in r.chunks(1) {
        last = p.feed(b).unwrap();
    }
    assert_eq!(last, Feed::Done);
    assert_eq!(p.body_len, 31);
    assert!(p.head.keep_alive);
    let mut p = ResponseParser::new(false);
    assert_eq!(p.feed(r), Ok(Feed::Done));
    assert_eq!(p.body_len, 31);
}

#[test]
fn close_delimited_body_ends_at_eof() {
    let mut p = ResponseParser::new(false);
    assert_eq!(p.feed(b"HTTP/1.0 200 OK\r\n\r\nabc"), Ok(Feed::More));
    assert!(p.until_close());
    assert_eq!(p.feed(b"defg"), Ok(Feed::More));
    assert_eq!(p.eof(), Feed::Done);
    assert_eq!(p.body_len, 7);
    assert!(!p.head.keep_alive);
}

#[test]
fn skipping_a_length_body_counts_what_feeding_it_would() {
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n";
    let mut fed = ResponseParser::new(false);
    assert_eq!(fed.skippable(), 0, "nothing to skip before the head");
    let mut first = head.to_vec();
    first.extend_from_slice(&[b'x'; 1000]);
    assert_eq!(fed.feed(&first), Ok(Feed::More));
    assert_eq!(fed.skippable(), 99_000, "the rest of the body, no more");
    assert_eq!(fed.skip(99_001), Err(ParseError::Malformed));
    assert_eq!(fed.skip(40_000), Ok(Feed::More));
    assert_eq!(fed.skippable(), 59_000);
    assert_eq!(fed.skip(59_000), Ok(Feed::Done));
    assert_eq!(fed.skippable(), 0);

    let mut read = ResponseParser::new(false);
    let mut all = head.to_vec();
    all.extend_from_slice(&[b'x'; 100_000]);
    assert_eq!(read.feed(&all), Ok(Feed::Done));
    assert_eq!((fed.body_len, fed.wire_len), (read.body_len, read.wire_len));
    assert_eq!((fed.skipped, read.skipped), (99_000, 0));
    fed.reset(false);
    assert_eq!(fed.skipped, 0);
}

#[test]
fn only_large_chunks_are_skipped_and_their_framing_is_still_parsed() {
    let mut p = ResponseParser::new(false);
    let big = 3 * MIN_CHUNK_SKIP + 7;
    let head = format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{big:x}\r\nab");
    assert_eq!(p.feed(head.as_bytes()), Ok(Feed::More));
    assert_eq!(p.skippable(), big - 2);
    assert_eq!(p.skip(big - 2), Ok(Feed::More));
    assert_eq!(p.skippable(), 0, "the CRLF after the chunk is read");
    // A small chunk is read, not skipped, even when it is all that is left.
    assert_eq!(p.feed(b"\r\n5\r\nhe"), Ok(Feed::More));
    assert_eq!(p.skippable(), 0);
    assert_eq!(p.feed(b"llo\r\n0\r\n\r\n"), Ok(Feed::Done));
    assert_eq!(p.body_len, big + 5);
    assert_eq!(p.skipped, big - 2);
}

#[test]
fn a_close_delimited_body_is_skipped_up_to_the_close() {
    let mut p = ResponseParser::new(false);
    assert_eq!(p.feed(b"HTTP/1.0 200 OK\r\n\r\nab"), Ok(Feed::More));
    assert_eq!(p.skippable(), u64::MAX);
    assert_eq!(p.skip(1 << 20), Ok(Feed::More));
    assert_eq!(p.eof(), Feed::Done);
    assert_eq!(p.body_len, 2 + (1 << 20));
}

#[test]
fn head_request_and_no_body_statuses() {
    let mut p = ResponseParser::new(true);
    assert_eq!(
        p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"),
        Ok(Feed::Done)
    );
    assert_eq!(p.body_len, 0);
    let mut p = ResponseParser::new(false);
    assert_eq!(
        p.feed(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n"),
        Ok(Feed::Done)
    );
}

#[test]
fn garbage_and_excess_are_malformed() {
    let mut p = ResponseParser::new(false);
    assert_eq!(
        p.feed(b"SSH-2.0-OpenSSH\r\n\r\n"),
        Err(ParseError::Malformed)
    );
    let mut p = ResponseParser::new(false);
    assert_eq!(
        p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi!"),
        Err(ParseError::Malformed)
    );
    let mut p = ResponseParser::new(false);
    assert_eq!(
        p.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
        Err(ParseError::Malformed)
    );
    let mut p = ResponseParser::new(false);
    let huge = vec![b'a'; MAX_HEAD + 10];
    assert_eq!(p.feed(b"HTTP/1.1 200 OK\r\nX: "), Ok(Feed::More));
    assert_eq!(p.feed(&huge), Err(ParseError::Malformed));
}

/// Heads built from random parts, cut at random points, must parse as httparse parses
/// them: same completeness, length, status and Content-Length.
#[test]
fn head_scanner_agrees_with_httparse() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let reasons = ["OK", "", "Not Found", "Weird  Reason\t(x)", "caf\u{e9}"];
    let names = [
        "Server",
        "Date",
        "content-length",
        "CONTENT-LENGTH",
        "X-A!#$%&'*+-.^_`|~1",
        "Connection",
        "Transfer-Encoding",
        "ETag",
        "Accept-Ranges",
    ];
    let values = [
        "",
        "nginx/1.22.1",
        " 13 ",
        "keep-alive",
        "close, Keep-Alive",
        "a:b:c",
    ];
    for round in 0..4000 {
        let eol = if round % 5 == 0 { "\n" } else { "\r\n" };
        let code = 100 + next(500);
        let reason = reasons[next(reasons.len())];
        let mut head = if next(4) == 0 {
            format!("HTTP/1.{} {code}{eol}", next(2))
        } else {
            format!("HTTP/1.{} {code} {reason}{eol}", next(2))
        };
        let mut has_length = false;
        for _ in 0..next(12) {
            let name = names[next(names.len())];
            let value = if name.eq_ignore_ascii_case("content-length") {
                if has_length {
                    continue;
                }
                has_length = true;
                " 13 "
            } else {
                values[next(values.len())]
            };
            head.push_str(&format!("{name}:{value}{eol}"));
        }
        head.push_str(eol);
        let bytes = head.as_bytes();
        let cut = if next(3) == 0 {
            next(bytes.len() + 1)
        } else {
            bytes.len()
        };
        let input = &bytes[..cut];

        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut resp = httparse::Response::new(&mut headers);
        let theirs = resp.parse(input);
        let mut p = ResponseParser::new(true);
        let ours = p.parse_head(input);
        match theirs {
            Ok(httparse::Status::Complete(n)) => {
                assert_eq!(ours, Ok(Some(n)), "{head:?} cut at {cut}");
                assert_eq!(Some(p.head.status), resp.code, "{head:?}");
            }
            Ok(httparse::Status::Partial) => assert_eq!(ours, Ok(None), "{head:?} cut {cut}"),
            Err(e) => panic!("generated an invalid head {head:?} ({e})"),
        }
    }
}

#[test]
fn malformed_heads_are_rejected() {
    for bad in [
        &b"HTTP/2.0 200 OK\r\n\r\n"[..],
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"HTTP/1.1 2x0 OK\r\n\r\n",
        b"HTTP/1.1  200 OK\r\n\r\n",
        b"HTTP/1.1 200OK\r\n\r\n",
        b"HTTP/1.1 200 O\x01K\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n folded: line\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
        b"http/1.1 200 OK\r\n\r\n",
        b"<html>",
    ] {
        let mut p = ResponseParser::new(false);
        assert_eq!(
            p.feed(bad),
            Err(ParseError::Malformed),
            "{}",
            String::from_utf8_lossy(bad)
        );
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let theirs = httparse::Response::new(&mut headers).parse(bad);
        assert!(
            !matches!(theirs, Ok(httparse::Status::Complete(_)))
                || bad.starts_with(b"HTTP/1.1 200 OK\r\nContent-Length"),
            "httparse accepts {}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn feed_prefix_stops_where_each_response_ends() {
    // Three pipelined responses in one read: Content-Length, chunked, empty 204.
    let one = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".as_slice();
    let two =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n".as_slice();
    let three = b"HTTP/1.1 204 No Content\r\n\r\n".as_slice();
    let all = [one, two, three].concat();
    let mut p = ResponseParser::new(false);
    let mut at = 0;
    for (want, body) in [(one, 5), (two, 3), (three, 0)] {
        p.reset(false);
        let (fed, used) = p.feed_prefix(&all[at..]).unwrap();
        assert_eq!((fed, used), (Feed::Done, want.len()));
        assert_eq!(p.body_len, body);
        assert_eq!(p.wire_len, want.len() as u64);
        at += used;
    }
    assert_eq!(at, all.len());
    // Split anywhere, the same responses come out with the same counts.
    for split in 1..all.len() {
        let mut p = ResponseParser::new(false);
        let mut done = Vec::new();
        for part in [&all[..split], &all[split..]] {
            let mut from = 0;
            while from < part.len() {
                let (fed, used) = p.feed_prefix(&part[from..]).unwrap();
                from += used;
                if fed == Feed::Done {
                    done.push(p.wire_len);
                    p.reset(false);
                }
            }
        }
        let lens: Vec<u64> = [one, two, three].iter().map(|r| r.len() as u64).collect();
        assert_eq!(done, lens, "split at {split}");
    }
    // `feed` still refuses bytes past the end of a response.
    let mut p = ResponseParser::new(false);
    assert_eq!(p.feed(&all), Err(ParseError::Malformed));
}

#[test]
fn request_bytes_follow_ab() {
    use crate::config::{LoadSpec, Method, Target};
    let t = Target::parse("http://127.0.0.1:8080/index.html").unwrap();
    let mut cfg = LoadConfig::new(t, LoadSpec::default());
    cfg.load.keep_alive = true;
    let s = String::from_utf8(build_request(&cfg)).unwrap();
    assert!(s.starts_with(
        "GET /index.html HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: 127.0.0.1:8080\r\n"
    ));
    assert!(s.ends_with("Accept: */*\r\n\r\n"));
    cfg.load.method = Method::Head;
    cfg.load.version = HttpVersion::Http11;
    cfg.load.keep_alive = false;
    cfg.headers = vec![("Host".into(), "example".into())];
    let s = String::from_utf8(build_request(&cfg)).unwrap();
    assert!(s.starts_with("HEAD /index.html HTTP/1.1\r\nConnection: close\r\nHost: example\r\n"));
    assert_eq!(s.matches("Host:").count(), 1);
}

#[test]
fn a_body_cookies_credentials_and_a_proxy_go_where_ab_puts_them() {
    use crate::config::{LoadSpec, Method, Proxy, Target};
    let t = Target::parse("http://127.0.0.1:8080/form?x=1").unwrap();
    let mut cfg = LoadConfig::new(t, LoadSpec::default());
    cfg.load.method = Method::Post;
    cfg.body = Some(b"a=1&b=\x00\xff".to_vec());
    cfg.content_type = Some("application/x-www-form-urlencoded".into());
    cfg.cookies = vec!["a=1".into(), "b=2".into()];
    cfg.basic_auth = Some("user:pass".into());
    cfg.proxy_auth = Some("proxy:secret".into());
    cfg.proxy = Some(Proxy::parse("127.0.0.1:3128").unwrap());
    cfg.validate().unwrap();
    let r = build_request(&cfg);
    let head_end = r.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = std::str::from_utf8(&r[..head_end]).unwrap();
    assert_eq!(
        head,
        concat!(
            "POST http://127.0.0.1:8080/form?x=1 HTTP/1.0\r\n",
            "Cookie: a=1; b=2\r\n",
            "Authorization: Basic dXNlcjpwYXNz\r\n",
            "Proxy-Authorization: Basic cHJveHk6c2VjcmV0\r\n",
            "Content-Length: 8\r\n",
            "Content-Type: application/x-www-form-urlencoded\r\n",
            "Host: 127.0.0.1:8080\r\n",
            "User-Agent: benchctl/",
            env!("CARGO_PKG_VERSION"),
            "\r\n",
            "Accept: */*\r\n\r\n"
        )
    );
    assert_eq!(&r[head_end..], b"a=1&b=\x00\xff");
    // A body without -T is text/plain, as ab sends it; a -H Content-Type replaces that.
    cfg.content_type = None;
    let s = String::from_utf8_lossy(&build_request(&cfg)).into_owned();
    assert!(s.contains("Content-Type: text/plain\r\n"));
    cfg.headers = vec![("Content-Type".into(), "application/json".into())];
    let s = String::from_utf8_lossy(&build_request(&cfg)).into_owned();
    assert_eq!(s.matches("Content-Type").count(), 1);
    assert!(s.contains("Content-Type: application/json\r\n"));
}

/// Everything a parser says after a feed, to compare a parser that took heads from a cache
/// with one that parsed each.
fn outcome(p: &ResponseParser, fed: Result<(Feed, usize), ParseError>) -> String {
    format!(
        "{fed:?} {:?} {:?} body {} wire {} skippable {} server {:?}",
        p.state,
        p.head,
        p.body_len,
        p.wire_len,
        p.skippable(),
        p.server
    )
}

#[test]
fn a_head_from_the_cache_says_what_parsing_it_says() {
    let date = |s: u8| {
        format!("HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Thu, 03 Dec 2026 15:00:0{s} GMT\r\nContent-Length: 5\r\n\r\nhello")
    };
    let responses: Vec<Vec<u8>> = vec![
        date(1).into(),
        date(1).into(),
        date(2).into(),
        date(2).into(),
        // The same head but for its length, then its framing, then its status.
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
        b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nhello".to_vec(),
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".to_vec(),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".to_vec(),
        b"HTTP/1.1 204 OK\r\nContent-Length: 5\r\n\r\n".to_vec(),
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end".to_vec(),
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end".to_vec(),
        // Bare LF line ends, and a malformed head that starts as the last good one did.
        b"HTTP/1.0 200 OK\nContent-Length: 2\n\nhi".to_vec(),
        b"HTTP/1.0 200 OK\nContent-Length: 2\n\nhi".to_vec(),
        b"HTTP/1.0 200 OK\nContent-Length: 2\nbad line\n\nhi".to_vec(),
        // Two pipelined responses in one read.
        [date(3).as_bytes(), date(3).as_bytes()].concat(),
    ];
    for head_only in [false, true] {
        let mut heads = HeadCache::new();
        for (i, r) in responses.iter().enumerate() {
            // The first of each run wants the Server header: the cache is not used for it.
            let want_server = i == 0;
            let (mut cached, mut plain) = (
                ResponseParser::new(head_only),
                ResponseParser::new(head_only),
            );
            cached.reset(want_server);
            plain.reset(want_server);
            let mut from = 0;
            while from < r.len() {
                let a = cached.feed_prefix_with(&r[from..], Some(&mut heads));
                let b = plain.feed_prefix(&r[from..]);
                assert_eq!(
                    outcome(&cached, a),
                    outcome(&plain, b),
                    "response {i}, head_only {head_only}"
                );
                match b {
                    Ok((Feed::Done, used)) if from + used < r.len() => {
                        from += used;
                        cached.reset(false);
                        plain.reset(false);
                    }
                    _ => break,
                }
            }
        }
    }
}

#[test]
fn a_repeated_head_is_taken_from_the_cache() {
    let r: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let mut heads = HeadCache::new();
    let mut p = ResponseParser::new(false);
    p.feed_prefix_with(r, Some(&mut heads)).unwrap();
    assert_eq!(heads.lookup(r, false).map(|(n, ..)| n), Some(r.len() - 5));
    // Not for a HEAD request's parser, nor for a head that differs.
    assert!(heads.lookup(r, true).is_none());
    assert!(heads
        .lookup(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello!", false)
        .is_none());
    // A head too long to keep leaves the cache empty.
    let long = format!(
        "HTTP/1.1 200 OK\r\nX-Long: {}\r\nContent-Length: 0\r\n\r\n",
        "a".repeat(2000)
    );
    p.reset(false);
    p.feed_prefix_with(long.as_bytes(), Some(&mut heads))
        .unwrap();
    assert!(heads.lookup(r, false).is_none());
}
