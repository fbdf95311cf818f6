//! `benchctl load --h3` through the built binary, against an HTTP/3 server of another
//! implementation (`h3` over `quinn`) on UDP 127.0.0.1 port 0: ab's tables with the TLS and
//! protocol lines, `--json` saying it was HTTP/3, `--0rtt` said and its note printed, and a
//! port where nothing speaks QUIC is one line and exit 1, soon.

use super::{benchctl, json_of, SHORT};
use crate::h3srv::{Alpn, H3Server};
use std::time::{Duration, Instant};

#[test]
fn ab_text_names_http3_and_json_says_so() {
    let s = H3Server::start(Alpn::H3, 100);
    let url = s.url("/");
    let f = benchctl(
        &[
            "load",
            "-q",
            "--h3",
            "-k",
            "--streams",
            "4",
            "-n",
            "200",
            "-c",
            "2",
            &url,
        ],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    for want in [
        "Server Software:        h3-test",
        "SSL/TLS Protocol:       TLSv1.3,TLS_AES_256_GCM_SHA384,256,256",
        "Server Temp Key:        X25519 253 bits",
        "Protocol:               HTTP/3 over QUIC v1 (h3), 4 streams per connection",
        "Complete requests:      200",
        "Failed requests:        0",
        "Keep-Alive requests:    200",
        "HTML transferred:       2600 bytes",
    ] {
        assert!(
            f.stdout.lines().any(|l| l == want),
            "no {want:?}\n{}",
            f.stdout
        );
    }
    let f = benchctl(
        &["load", "--json", "--h3", "-k", "-n", "50", "-c", "2", &url],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let j = json_of(&f);
    assert_eq!(j["settings"]["http3"], true, "{j}");
    assert_eq!(j["complete"], 50);
}

#[test]
fn zero_rtt_is_said_on_the_protocol_line_and_in_a_note() {
    let s = H3Server::start(Alpn::H3, 100);
    let url = s.url("/");
    let f = benchctl(
        &["load", "-q", "--h3", "--0rtt", "-n", "20", "-c", "1", &url],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    assert!(
        f.stdout.lines().any(|l| l
            == "Protocol:               HTTP/3 over QUIC v1 (h3), 1 stream per connection, 0-RTT allowed"),
        "{}",
        f.stdout
    );
    // Notes go to standard error, under the tables.
    let note = "note: 0-RTT: 19 of the 20 QUIC connections sent their requests with the \
                handshake's first flight";
    assert!(f.stderr.contains(note), "{}", f.describe());
    assert!(
        f.stderr
            .contains("; the server accepted 19 and rejected 0\n"),
        "{}",
        f.stderr
    );
    let f = benchctl(&["load", "-q", "--0rtt", "-n", "1", &url], SHORT);
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(f.stderr.contains("--0rtt"), "{}", f.stderr);
}

#[test]
fn nothing_speaking_quic_on_the_port_is_one_line_and_exit_1() {
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("https://127.0.0.1:{port}/");
    let t = Instant::now();
    let f = benchctl(&["load", "-q", "--h3", "-n", "10", &url], SHORT);
    assert_eq!(f.code, Some(1), "{}", f.describe());
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let lines: Vec<&str> = f.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", f.describe());
    assert!(lines[0].contains("UDP port"), "{}", lines[0]);
}

#[test]
fn http3_options_that_cannot_work_are_refused() {
    for (args, says) in [
        (vec!["--h3", "http://127.0.0.1:9/"], "https://"),
        (vec!["--h3", "--h2", "https://127.0.0.1:9/"], "--h2"),
        (
            vec!["--h3", "--streams", "4", "https://127.0.0.1:9/"],
            "keep-alive",
        ),
        (
            vec!["--h3", "-f", "TLS1.2", "https://127.0.0.1:9/"],
            "TLS 1.3",
        ),
    ] {
        let mut all = vec!["load", "-n", "10"];
        all.extend(&args);
        let f = benchctl(&all, SHORT);
        assert_eq!(f.code, Some(2), "{args:?}\n{}", f.describe());
        assert!(f.stderr.contains(says), "{args:?}: {}", f.stderr);
    }
}
