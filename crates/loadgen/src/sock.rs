//! Socket reads that also say when the data arrived.
//!
//! A generator that reads a response late, because it was busy with other connections or asleep
//! collecting several responses per wake-up, would otherwise charge that delay to the server.
//! With `SO_TIMESTAMPNS` the kernel stamps each packet as it enters the receive path (on
//! loopback: as the server's write hands it over), and every `recvmsg` returns the stamp of the
//! newest data it consumed. The stamp of the read that completes a response is therefore the
//! moment the whole response was on this host, however late the generator got to it.
//!
//! Stamps are CLOCK_REALTIME; [`arrival`] maps one onto the monotonic clock the engine times
//! everything else with, from a pair of clock readings taken right after the read, so only a
//! clock step between the packet's arrival and its read (microseconds) could skew it, and the
//! result is clamped into the window where it must lie.

use rustix::io::Errno;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

/// When data arrived, as the kernel stamped it: nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp(u64);

/// What one read of a socket gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recv {
    /// `len` bytes; `stamp` when the kernel stamped them (`None` without receive stamps).
    Data {
        len: usize,
        stamp: Option<Stamp>,
    },
    Eof,
    /// Nothing to read for now.
    Again,
    /// Reset or another error.
    Failed,
}

/// Asks the kernel to stamp what arrives on `fd`.
pub fn enable_rx_stamps(fd: BorrowedFd<'_>) -> io::Result<()> {
    let on: libc::c_int = 1;
    // rustix has no SO_TIMESTAMPNS option.
    // SAFETY: `fd` is borrowed, so open; `on` outlives the call and its size is passed with it.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Keeps receive stamping switched on for as long as it lives.
///
/// The kernel stamps packets only while some socket asks for stamps, and it switches stamping
/// on through deferred work: the first packets after the first such socket appears go
/// unstamped, and a generator whose connections come and go one at a time (`-c 1` without
/// keep-alive) would switch it on and off for each one, patching kernel code every time. A
/// keeper is a loopback connection that asks for stamps from the start of the run to its end;
/// it returns once a byte sent over it came back stamped, so from then on every response is.
pub struct StampKeeper {
    _stamped: std::net::TcpStream,
    _peer: std::net::TcpStream,
}

impl StampKeeper {
    /// How long [`StampKeeper::start`] waits for the first stamped byte.
    const WAIT: Duration = Duration::from_millis(200);

    /// `None` when this host cannot stamp (the run then times responses when it reads them).
    pub fn start() -> Option<StampKeeper> {
        use std::io::Write as _;
        let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).ok()?;
        let stamped = std::net::TcpStream::connect(listener.local_addr().ok()?).ok()?;
        let (mut peer, _) = listener.accept().ok()?;
        enable_rx_stamps(stamped.as_fd()).ok()?;
        stamped.set_nonblocking(true).ok()?;
        let deadline = Instant::now() + Self::WAIT;
        let mut buf = [0u8; 16];
        loop {
            peer.write_all(b"x").ok()?;
            // Loopback delivers within the write: the byte is there to read now.
            if let Recv::Data { stamp: Some(_), .. } = recv(stamped.as_fd(), &mut buf, true) {
                return Some(StampKeeper {
                    _stamped: stamped,
                    _peer: peer,
                });
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Room for one `SCM_TIMESTAMPNS` message (CMSG_SPACE of a timespec is 32 bytes on 64-bit
/// Linux), with the alignment a `cmsghdr` needs.
#[repr(C, align(8))]
struct ControlBuf([u8; 64]);

/// Reads from a non-blocking socket. With `stamped`, uses `recvmsg` and returns the receive
/// stamp of the data; otherwise a plain `read`.
#[inline]
pub fn recv(fd: BorrowedFd<'_>, buf: &mut [u8], stamped: bool) -> Recv {
    if !stamped {
        return loop {
            match rustix::io::read(fd, &mut *buf) {
                Ok(0) => break Recv::Eof,
                Ok(len) => break Recv::Data { len, stamp: None },
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => break Recv::Again,
                Err(_) => break Recv::Failed,
            }
        };
    }
    recv_stamped(fd, buf.as_mut_ptr(), buf.len(), 0)
}

/// Takes up to `len` bytes off a non-blocking TCP socket without copying them anywhere, and
/// says how many it took: `MSG_TRUNC` on a TCP socket (Linux 2.4 and later, see tcp(7)) drops
/// the data in the kernel and returns its length. Never more than `len` is taken, so the bytes
/// after it (the next response on the connection) stay to be read. With `stamped`, the
/// receive stamp of the newest data taken comes back as from [`recv`].
///
/// No buffer is passed: should a kernel ignore the flag and try to copy, the call fails with
/// `EFAULT` (a [`Recv::Failed`]) and takes nothing, rather than writing anywhere.
/// [`discard_works`] says whether this kernel drops the data as it should.
#[inline]
pub fn discard(fd: BorrowedFd<'_>, len: usize, stamped: bool) -> Recv {
    if !stamped {
        return loop {
            // rustix takes a buffer as a slice, and there is none here.
            // SAFETY: `fd` is borrowed, so open; no buffer is given, and with MSG_TRUNC the
            // TCP receive path writes nothing.
            let n =
                unsafe { libc::recv(fd.as_raw_fd(), std::ptr::null_mut(), len, libc::MSG_TRUNC) };
            match classify(n) {
                Some(r) => break r,
                None => continue,
            }
        };
    }
    recv_stamped(fd, std::ptr::null_mut(), len, libc::MSG_TRUNC)
}

/// `recvmsg` into `len` bytes at `base` (null with `MSG_TRUNC`), with the receive stamp. rustix
/// neither passes a null buffer nor parses `SCM_TIMESTAMPNS` messages: this stays libc.
#[inline]
fn recv_stamped(fd: BorrowedFd<'_>, base: *mut u8, len: usize, flags: libc::c_int) -> Recv {
    let mut control = ControlBuf([0; 64]);
    loop {
        let mut iov = libc::iovec {
            iov_base: base.cast(),
            iov_len: len,
        };
        // SAFETY: an all-zero msghdr is a valid empty header; its pointers are set to `iov`
        // and `control`, which outlive the call. It then describes a control buffer valid for
        // writes of its length, and either a data buffer valid for writes of `len` bytes (the
        // caller's) or, with MSG_TRUNC on a TCP socket, none that is written to; `fd` is
        // borrowed, so open.
        let (n, controllen) = unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.0.as_mut_ptr().cast();
            msg.msg_controllen = control.0.len() as _;
            let n = libc::recvmsg(fd.as_raw_fd(), &mut msg, flags);
            (n, msg.msg_controllen)
        };
        let stamp = if n > 0 {
            stamp_in(&control.0[..controllen.min(control.0.len())])
        } else {
            None
        };
        match classify(n) {
            Some(Recv::Data { len, .. }) => return Recv::Data { len, stamp },
            Some(r) => return r,
            None => continue,
        }
    }
}

/// The receive stamp among the control messages `control` holds (as a `recvmsg` filled them
/// in: each a 16-byte header, length, level and type, then its data, the next one 8-aligned),
/// if there is one.
pub fn stamp_in(control: &[u8]) -> Option<Stamp> {
    const HEADER: usize = 16;
    let mut at = 0;
    while at + HEADER <= control.len() {
        let word = |from: usize, n: usize| -> Option<u64> {
            let b = control.get(at + from..at + from + n)?;
            let mut w = [0u8; 8];
            w[..n].copy_from_slice(b);
            Some(u64::from_ne_bytes(w))
        };
        let len = usize::try_from(word(0, 8)?).ok()?;
        let (level, kind) = (word(8, 4)? as i32, word(12, 4)? as i32);
        if len < HEADER || at + len > control.len() {
            return None;
        }
        if level == libc::SOL_SOCKET && kind == libc::SCM_TIMESTAMPNS && len >= HEADER + 16 {
            let (sec, nsec) = (word(HEADER, 8)?, word(HEADER + 8, 8)?);
            return Some(Stamp(sec.checked_mul(1_000_000_000)?.checked_add(nsec)?));
        }
        at += len.next_multiple_of(8);
    }
    None
}

/// Whether [`discard`] drops bytes on this kernel as tcp(7) says, exactly as many as asked
/// and no more: tried once per process on a loopback connection, stamped and not. Where it
/// does not, bodies are read into the buffer like everything else.
pub fn discard_works() -> bool {
    static WORKS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WORKS.get_or_init(|| probe_discard().unwrap_or(false))
}

fn probe_discard() -> Option<bool> {
    use std::io::Write as _;
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).ok()?;
    let ours = std::net::TcpStream::connect(listener.local_addr().ok()?).ok()?;
    let (mut peer, _) = listener.accept().ok()?;
    ours.set_nonblocking(true).ok()?;
    let fd = ours.as_fd();
    peer.write_all(b"0123456789").ok()?;
    let deadline = Instant::now() + Duration::from_millis(200);
    let mut took = 0;
    let mut buf = [0u8; 16];
    for (want, stamped) in [(3, false), (4, true)] {
        loop {
            match discard(fd, want, stamped) {
                Recv::Data { len, .. } if len == want => break,
                // Loopback delivers within the write; a partial count is a kernel that does
                // not do what is asked.
                Recv::Again if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                _ => return Some(false),
            }
        }
        took += want;
    }
    // What is left must be exactly the bytes after the ones dropped.
    match recv(fd, &mut buf, false) {
        Recv::Data { len, .. } => Some(buf[..len] == b"0123456789"[took..]),
        _ => Some(false),
    }
}

/// A read's return value as a [`Recv`]; `None` when it was interrupted and must be retried.
#[inline]
fn classify(n: isize) -> Option<Recv> {
    if n > 0 {
        return Some(Recv::Data {
            len: n as usize,
            stamp: None,
        });
    }
    if n == 0 {
        return Some(Recv::Eof);
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::EINTR) => None,
        Some(libc::EAGAIN) => Some(Recv::Again),
        _ => Some(Recv::Failed),
    }
}

/// CLOCK_REALTIME now, in the unit of a [`Stamp`].
#[inline]
pub fn realtime_now() -> Stamp {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    Stamp(ts.tv_sec.max(0) as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The monotonic and realtime clocks read together once, so that a later monotonic reading can
/// be put on the realtime clock (the receive stamps' clock) without reading that clock again.
/// Within a worker's round of events the two clocks do not drift apart measurably (an NTP slew
/// moves the realtime clock by at most 0.5 µs a millisecond); a worker reads a new pair in
/// every round that has a stamped read.
#[derive(Debug, Clone, Copy)]
pub struct Clocks {
    mono: Instant,
    real: Stamp,
}

impl Clocks {
    #[inline]
    pub fn now() -> Clocks {
        Clocks {
            mono: Instant::now(),
            real: realtime_now(),
        }
    }

    /// The realtime clock's reading at `t`, a monotonic reading taken after the pair.
    #[inline]
    pub fn realtime_at(&self, t: Instant) -> Stamp {
        let since = t.saturating_duration_since(self.mono).as_nanos() as u64;
        Stamp(self.real.0.saturating_add(since))
    }
}

/// When data stamped `stamp` arrived, on the monotonic clock: `read_at` (monotonic) and
/// `real_at` (realtime) are readings of the two clocks taken together after the read, and the
/// result is kept within `[floor, read_at]` (data cannot have been read before it arrived, nor,
/// for a response, have arrived before its request started).
#[inline]
pub fn arrival(stamp: Stamp, read_at: Instant, real_at: Stamp, floor: Instant) -> Instant {
    let age = Duration::from_nanos(real_at.0.saturating_sub(stamp.0));
    read_at
        .checked_sub(age)
        .unwrap_or(floor)
        .clamp(floor, read_at)
}

impl Stamp {
    pub fn from_nanos(ns: u64) -> Self {
        Stamp(ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn a_later_reading_is_put_on_the_realtime_clock_by_the_pair() {
        let pair = Clocks::now();
        let later = pair.mono + Duration::from_micros(250);
        assert_eq!(pair.realtime_at(later).0, pair.real.0 + 250_000);
        // A reading from before the pair is taken as the pair's own.
        let earlier = pair
            .mono
            .checked_sub(Duration::from_micros(5))
            .unwrap_or(pair.mono);
        assert_eq!(pair.realtime_at(earlier), pair.real);
        // Against both clocks read again: the pair's extrapolation is within a millisecond.
        std::thread::sleep(Duration::from_millis(5));
        let (mono, real) = (Instant::now(), realtime_now());
        let drift = pair.realtime_at(mono).0.abs_diff(real.0);
        assert!(drift < 1_000_000, "{drift} ns apart after 5 ms");
    }

    #[test]
    fn arrival_is_the_stamp_mapped_onto_the_monotonic_clock() {
        let floor = Instant::now();
        let read_at = floor + Duration::from_millis(10);
        let real = Stamp::from_nanos(5_000_000_000);
        let stamp = Stamp::from_nanos(5_000_000_000 - 3_000_000);
        assert_eq!(
            arrival(stamp, read_at, real, floor),
            read_at - Duration::from_millis(3)
        );
    }

    #[test]
    fn arrival_stays_within_the_request_and_the_read() {
        let floor = Instant::now();
        let read_at = floor + Duration::from_millis(10);
        let real = Stamp::from_nanos(5_000_000_000);
        // Stamped "after" the read: the clock was stepped back meanwhile.
        let later = Stamp::from_nanos(5_000_000_000 + 1_000_000);
        assert_eq!(arrival(later, read_at, real, floor), read_at);
        // Stamped long before the request started: a step forward.
        let early = Stamp::from_nanos(4_000_000_000);
        assert_eq!(arrival(early, read_at, real, floor), floor);
    }

    #[test]
    fn a_stamped_read_returns_when_the_data_arrived_not_when_it_was_read() {
        // Stamping is switched on by deferred work in the kernel, as the engine's runs also
        // find: without a keeper, the first packet may go unstamped.
        let _keeper = StampKeeper::start().expect("this host stamps received packets");
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        client.set_nonblocking(true).unwrap();
        enable_rx_stamps(client.as_fd()).unwrap();

        let mut buf = [0u8; 64];
        assert_eq!(recv(client.as_fd(), &mut buf, true), Recv::Again);
        let sent = Instant::now();
        server.write_all(b"hello").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let r = recv(client.as_fd(), &mut buf, true);
        let (read_at, real_at) = (Instant::now(), realtime_now());
        let Recv::Data { len, stamp } = r else {
            panic!("expected data, got {r:?}");
        };
        assert_eq!(&buf[..len], b"hello");
        let arrived = arrival(stamp.expect("a receive stamp"), read_at, real_at, sent);
        assert!(
            arrived - sent < Duration::from_millis(25),
            "stamped {:?} after the write, read {:?} after it",
            arrived - sent,
            read_at - sent
        );

        // Unstamped reads and the end of the stream.
        server.write_all(b"x").unwrap();
        drop(server);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(
            recv(client.as_fd(), &mut buf, false),
            Recv::Data {
                len: 1,
                stamp: None
            }
        );
        assert_eq!(recv(client.as_fd(), &mut buf, true), Recv::Eof);
    }

    #[test]
    fn discard_takes_exactly_what_is_asked_and_says_when_it_arrived() {
        assert!(discard_works(), "this kernel drops TCP data with MSG_TRUNC");
        let _keeper = StampKeeper::start().expect("this host stamps received packets");
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        client.set_nonblocking(true).unwrap();
        enable_rx_stamps(client.as_fd()).unwrap();
        let fd = client.as_fd();

        assert_eq!(discard(fd, 100, true), Recv::Again);
        let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let sent = Instant::now();
        // From a thread of its own: what does not fit the socket buffers waits for the reads.
        let writer = std::thread::spawn({
            let body = body.clone();
            move || {
                server.write_all(&body).unwrap();
                server.write_all(b"NEXT").unwrap();
                server
            }
        });
        std::thread::sleep(Duration::from_millis(50));
        let deadline = Instant::now() + Duration::from_secs(10);

        // Stamped and not, in pieces that end inside packets, up to the end of the body.
        let mut dropped = 0;
        let mut stamped = 0;
        while dropped < body.len() {
            let want = (body.len() - dropped).min(70_001);
            let with_stamp = dropped % 2 == 0;
            match discard(fd, want, with_stamp) {
                Recv::Data { len, stamp } => {
                    assert!(len <= want, "took {len} of {want}");
                    if let Some(st) = stamp {
                        let (read_at, real_at) = (Instant::now(), realtime_now());
                        let arrived = arrival(st, read_at, real_at, sent);
                        if dropped == 0 {
                            // The first packets came with the write, 50 ms before this read
                            // (later ones, once the receive window opened again).
                            assert!(
                                arrived - sent < Duration::from_millis(25),
                                "stamped {:?} after the write, read {:?} after it",
                                arrived - sent,
                                read_at - sent
                            );
                        }
                        stamped += 1;
                    }
                    dropped += len;
                }
                Recv::Again if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                r => panic!("after {dropped} bytes: {r:?}"),
            }
        }
        assert_eq!(dropped, body.len());
        let server = writer.join().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(stamped > 0, "a stamped discard returns the stamp");
        let mut buf = [0u8; 16];
        assert_eq!(
            recv(fd, &mut buf, false),
            Recv::Data {
                len: 4,
                stamp: None
            },
            "the bytes after the discarded ones are all still there"
        );
        assert_eq!(&buf[..4], b"NEXT");
        drop(server);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(discard(fd, 100, true), Recv::Eof);
    }

    /// A control message as the kernel lays it out on 64-bit Linux: length, level, type,
    /// data, padded to 8 bytes.
    fn cmsg(level: i32, kind: i32, data: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&((16 + data.len()) as u64).to_ne_bytes());
        m.extend_from_slice(&level.to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(data);
        m.resize(m.len().next_multiple_of(8), 0);
        m
    }

    fn timespec(sec: u64, nsec: u64) -> Vec<u8> {
        [sec.to_ne_bytes(), nsec.to_ne_bytes()].concat()
    }

    #[test]
    fn the_stamp_is_found_among_the_control_messages() {
        let stamp = cmsg(libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, &timespec(7, 250));
        assert_eq!(stamp_in(&stamp), Some(Stamp(7_000_000_250)));
        // After another message, with room to spare (zeros: no further message).
        let mut two = cmsg(libc::IPPROTO_IP, 8, &[1, 2, 3]);
        two.extend_from_slice(&stamp);
        two.resize(96, 0);
        assert_eq!(stamp_in(&two), Some(Stamp(7_000_000_250)));
    }

    #[test]
    fn no_stamp_in_empty_other_or_cut_control_data() {
        assert_eq!(stamp_in(&[]), None);
        assert_eq!(stamp_in(&[0; 64]), None);
        assert_eq!(stamp_in(&cmsg(libc::IPPROTO_IP, 8, &[1])), None);
        let stamp = cmsg(libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, &timespec(7, 250));
        assert_eq!(stamp_in(&stamp[..20]), None, "cut inside its data");
        let mut lying = stamp.clone();
        lying[..8].copy_from_slice(&1000u64.to_ne_bytes());
        assert_eq!(stamp_in(&lying), None, "a length past the end");
    }
}
