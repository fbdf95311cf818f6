//! One worker's io_uring: the ring, the receive buffers the kernel fills (a registered buffer
//! ring), and the entries staged for the next submission.
//!
//! Everything the kernel reads or writes on the worker's behalf lives here and outlives every
//! operation: the ring is the first field, so it is torn down (cancelling what is still in
//! flight) before the memory its operations point into. The other pointers an entry carries,
//! the request bytes, belong to the run's shared state, which outlives the worker.

use io_uring::{cqueue, squeue, types, IoUring};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Buffer group of the receive buffers.
pub(in crate::engine) const GROUP: u16 = 0;
/// Room in each receive buffer for a receive stamp's control message (a 16-byte header and a
/// 16-byte timespec; twice that, so a second message never truncates the first).
const CONTROL_LEN: usize = 64;
/// What a multishot `recvmsg` puts before the payload: its own header (`io_uring_recvmsg_out`,
/// 16 bytes), no address, then the control room.
pub(in crate::engine) const PAYLOAD_AT: usize = 16 + CONTROL_LEN;
const PAGE: usize = 4096;

/// A completion, copied out of the ring so that handling it may stage new entries.
#[derive(Debug, Clone, Copy)]
pub(in crate::engine) struct Cqe {
    pub(in crate::engine) data: u64,
    pub(in crate::engine) res: i32,
    pub(in crate::engine) flags: u32,
}

impl Cqe {
    /// The receive buffer the kernel filled for it, if any.
    pub(in crate::engine) fn buffer(&self) -> Option<u16> {
        cqueue::buffer_select(self.flags)
    }
    /// A multishot operation stays armed after it.
    pub(in crate::engine) fn more(&self) -> bool {
        cqueue::more(self.flags)
    }
}

/// What a multishot receive delivered in one buffer.
pub(in crate::engine) struct Received<'a> {
    pub(in crate::engine) payload: &'a [u8],
    pub(in crate::engine) control: &'a [u8],
}

/// How a submission waits for completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::engine) struct Wait {
    /// Completions to wait for; none: the entries are handed over and nothing is waited for.
    pub(in crate::engine) want: usize,
    /// The longest wait.
    pub(in crate::engine) timeout: Duration,
    /// A batch's bound: once it has passed, one completion is enough (where the kernel can,
    /// [`Ring::batch_waits`]).
    pub(in crate::engine) batch: Option<Duration>,
}

impl Wait {
    /// Hands the entries over and waits for nothing.
    pub(in crate::engine) const NONE: Wait = Wait {
        want: 0,
        timeout: Duration::ZERO,
        batch: None,
    };
}

pub(in crate::engine) struct Ring {
    uring: IoUring,
    /// The kernel takes a batch's bound in the wait (`min_wait_usec`, Linux 6.12 and later).
    batch_waits: bool,
    /// The buffer ring: two 64-bit words per entry (address; length, buffer id and, in the
    /// first entry, the ring's tail), starting page-aligned at word `ring_at`. Atomics, because
    /// the kernel reads them while the worker writes.
    ring_mem: Box<[AtomicU64]>,
    ring_at: usize,
    ring_entries: u16,
    /// The tail the worker has published, and buffers added since.
    tail: u16,
    added: u16,
    /// The receive buffers, `buf_size` bytes each, in buffer id order.
    bufs: Box<[u8]>,
    buf_size: usize,
}

impl Ring {
    /// A ring for a worker with `conns` connections: a single issuer whose completions' task
    /// work runs only when it waits, with `buffers` receive buffers of `buf_size` bytes.
    pub(in crate::engine) fn new(conns: usize, buffers: u16, buf_size: usize) -> io::Result<Ring> {
        let entries = (2 * conns + 64).next_power_of_two().min(1024) as u32;
        let uring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_cqsize(4 * entries)
            .setup_clamp()
            .build(entries)?;
        let buffers = buffers.clamp(1, 1 << 15).next_power_of_two();
        let words = 2 * usize::from(buffers) + PAGE / 8;
        let ring_mem: Box<[AtomicU64]> = (0..words).map(|_| AtomicU64::new(0)).collect();
        let base = ring_mem.as_ptr() as usize;
        let ring_at = (base.next_multiple_of(PAGE) - base) / 8;
        let bufs = vec![0u8; usize::from(buffers) * buf_size].into_boxed_slice();
        let batch_waits = uring.params().is_feature_min_timeout();
        let mut ring = Ring {
            uring,
            batch_waits,
            ring_mem,
            ring_at,
            ring_entries: buffers,
            tail: 0,
            added: 0,
            bufs,
            buf_size,
        };
        let ring_addr = ring.ring_mem[ring_at..].as_ptr() as u64;
        // SAFETY: the buffer ring's memory is `buffers` entries of 16 bytes, page-aligned,
        // owned by `ring` and freed only after the io_uring (the first field) is dropped; the
        // buffers it will list are likewise owned by `ring`. The kernel writes into a buffer only
        // between the worker publishing it and the completion that returns it, and the worker
        // reads a buffer only after that completion, and then publishes it again.
        unsafe {
            ring.uring
                .submitter()
                .register_buf_ring_with_flags(ring_addr, buffers, GROUP, 0)?;
        }
        for bid in 0..buffers {
            ring.recycle(bid);
        }
        ring.publish();
        Ok(ring)
    }

    /// Hands buffer `bid` back to the kernel (published with the next [`Self::publish`]).
    #[inline]
    pub(in crate::engine) fn recycle(&mut self, bid: u16) {
        let bufs_addr = self.bufs.as_ptr() as u64;
        let mask = self.ring_entries - 1;
        let slot = usize::from(self.tail.wrapping_add(self.added) & mask);
        let at = self.ring_at + 2 * slot;
        let addr = bufs_addr + u64::from(bid) * self.buf_size as u64;
        self.ring_mem[at].store(addr, Ordering::Relaxed);
        let mut word = (self.buf_size as u64 & 0xffff_ffff) | (u64::from(bid) << 32);
        if slot == 0 {
            // The first entry's last two bytes are the ring's tail: kept as published.
            word |= self.ring_mem[at + 1].load(Ordering::Relaxed) & (0xffff << 48);
        }
        self.ring_mem[at + 1].store(word, Ordering::Relaxed);
        self.added += 1;
    }

    /// Publishes the buffers recycled since the last call: the new tail, stored after them.
    #[inline]
    pub(in crate::engine) fn publish(&mut self) {
        if self.added == 0 {
            return;
        }
        self.tail = self.tail.wrapping_add(self.added);
        self.added = 0;
        let word = &self.ring_mem[self.ring_at + 1];
        let kept = word.load(Ordering::Relaxed) & !(0xffff << 48);
        word.store(kept | (u64::from(self.tail) << 48), Ordering::Release);
    }

    /// What buffer `bid` holds after a multishot `recvmsg` completed with `res` into it.
    pub(in crate::engine) fn received(&self, bid: u16, res: i32) -> Option<Received<'_>> {
        let at = usize::from(bid) * self.buf_size;
        let len = usize::try_from(res).ok()?.min(self.buf_size);
        parse_recvmsg(&self.bufs[at..at + len])
    }

    /// Whether a wait can end at a batch's bound once one completion is in (Linux 6.12 and
    /// later); without it a wait for a batch ends at its bound with what came, none perhaps.
    pub(in crate::engine) fn batch_waits(&self) -> bool {
        self.batch_waits
    }

    /// Submits what is staged and waits as `wait` says: until `want` completions are ready or
    /// the timeout has passed, and, with a batch's bound, once that has passed, until one is.
    /// Interrupted and timed-out waits are not errors.
    pub(in crate::engine) fn submit_and_wait(
        &mut self,
        staged: &mut Vec<squeue::Entry>,
        wait: Wait,
    ) -> io::Result<()> {
        let mut from = 0;
        while from < staged.len() {
            let mut sq = self.uring.submission();
            let room = sq.capacity() - sq.len();
            let upto = (from + room).min(staged.len());
            // SAFETY: every staged entry points only into memory that outlives the ring or
            // its operation: the receive buffers (see `new`); the worker's own boxed `recvmsg`
            // header and socket address, and its connections' send buffers (TLS records,
            // HTTP/2 frames: kept until their send's completion, a given-up socket's among the
            // worker's retired ones), all dropped after the ring; and the run's request bytes,
            // which the shared state holds until every worker has ended.
            let pushed = unsafe { sq.push_multiple(&staged[from..upto]) };
            drop(sq);
            if pushed.is_err() || upto < staged.len() {
                // Full: hand these to the kernel and go on with the rest. Those in the queue
                // go with the next submission if this one fails: they are not staged again.
                if let Err(e) = self.uring.submit() {
                    staged.drain(..upto);
                    return Err(e);
                }
            }
            from = upto;
        }
        staged.clear();
        let r = if wait.want == 0 {
            self.uring.submit()
        } else {
            let ts = types::Timespec::from(wait.timeout);
            let mut args = types::SubmitArgs::new().timespec(&ts);
            if let Some(b) = wait.batch.filter(|_| self.batch_waits) {
                args = args.min_wait_usec(b.as_micros().clamp(1, u128::from(u32::MAX)) as u32);
            }
            self.uring.submitter().submit_with_args(wait.want, &args)
        };
        match r {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Moves the ready completions into `out`.
    pub(in crate::engine) fn reap(&mut self, out: &mut Vec<Cqe>) {
        out.extend(self.uring.completion().map(|c| Cqe {
            data: c.user_data(),
            res: c.result(),
            flags: c.flags(),
        }));
    }
}

/// What a multishot `recvmsg` wrote into one buffer (`buf`, as long as the completion said):
/// `None` when that is too short to hold what it says it holds.
fn parse_recvmsg(buf: &[u8]) -> Option<Received<'_>> {
    // `io_uring_recvmsg_out`: the lengths of the address, the control messages and the payload
    // the kernel had, and the message's flags; then the address room (none), the control
    // room, the payload.
    let word = |i: usize| -> Option<usize> {
        let b: [u8; 4] = buf.get(4 * i..4 * i + 4)?.try_into().ok()?;
        usize::try_from(u32::from_ne_bytes(b)).ok()
    };
    let (control_len, payload_len) = (word(1)?.min(CONTROL_LEN), word(2)?);
    let payload = buf.get(PAYLOAD_AT..)?;
    Some(Received {
        payload: &payload[..payload_len.min(payload.len())],
        control: &buf[16..16 + control_len],
    })
}

/// The header a multishot `recvmsg` is given: no address, room for the receive stamp.
pub(in crate::engine) fn msghdr() -> Box<libc::msghdr> {
    Box::new(libc::msghdr {
        msg_name: std::ptr::null_mut(),
        msg_namelen: 0,
        msg_iov: std::ptr::null_mut(),
        msg_iovlen: 0,
        msg_control: std::ptr::null_mut(),
        msg_controllen: CONTROL_LEN,
        msg_flags: 0,
    })
}

/// A multishot `recvmsg` on `fd` into the receive buffers, keeping the receive stamps;
/// `header` must live until the ring is dropped.
/// What a socket made as a direct descriptor is given to be set up before its connect:
/// `setsockopt` reads the value when the entry runs, so it is static.
pub(in crate::engine) static ON: libc::c_int = 1;

impl Ring {
    /// Gives the ring a table of `n` direct descriptors, empty, for connections' sockets.
    pub(in crate::engine) fn register_sockets(&self, n: usize) -> io::Result<()> {
        let n = u32::try_from(n).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        self.uring.submitter().register_files_sparse(n)
    }
}

/// Whether the ring can make a connection's socket itself, as a direct descriptor: made
/// (`socket`, Linux 5.19), set up (`setsockopt` as a socket command, Linux 6.7) and closed by
/// entries, with no system call of its own. Tried once, on a ring of its own.
pub(in crate::engine) fn probe_direct() -> bool {
    use io_uring::opcode::{Close, SetSockOpt, Socket};
    let Ok(mut ring) = Ring::new(1, 1, 4096) else {
        return false;
    };
    let Ok(slot) = types::DestinationSlot::try_from_slot_target(0) else {
        return false;
    };
    if ring.register_sockets(1).is_err() {
        return false;
    }
    let mut staged = vec![
        Socket::new(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0)
            .file_index(Some(slot))
            .build()
            .flags(squeue::Flags::IO_LINK)
            .user_data(1),
        SetSockOpt::new(
            types::Fixed(0),
            libc::SOL_SOCKET as u32,
            libc::SO_TIMESTAMPNS as u32,
            (&ON as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as u32,
        )
        .build()
        .flags(squeue::Flags::IO_LINK)
        .user_data(2),
        Close::new(types::Fixed(0)).build().user_data(3),
    ];
    if ring
        .submit_and_wait(
            &mut staged,
            Wait {
                want: 3,
                timeout: Duration::from_secs(1),
                batch: None,
            },
        )
        .is_err()
    {
        return false;
    }
    let mut cqes = Vec::new();
    ring.reap(&mut cqes);
    cqes.len() == 3 && cqes.iter().all(|c| c.res >= 0)
}

/// Whether this kernel, and whatever filters this process's system calls, let a worker use
/// io_uring as the engine does; `Err` says why not.
pub(in crate::engine) fn probe() -> Result<(), String> {
    let ring = Ring::new(1, 1, 4096).map_err(|e| {
        let why = match e.raw_os_error() {
            Some(libc::EPERM) => "not permitted here (a seccomp profile, as some Docker \
                                  releases' default one, or the kernel.io_uring_disabled setting)"
                .to_string(),
            Some(libc::ENOSYS) => "not in this kernel".to_string(),
            Some(libc::EINVAL) => "too old in this kernel (6.1 or later is needed)".to_string(),
            _ => e.to_string(),
        };
        format!("io_uring is {why}")
    })?;
    let mut p = io_uring::Probe::new();
    ring.uring
        .submitter()
        .register_probe(&mut p)
        .map_err(|e| format!("io_uring cannot say what it supports: {e}"))?;
    use io_uring::opcode::{Connect, RecvMsgMulti, Send};
    for (code, name) in [
        (Connect::CODE, "connect"),
        (Send::CODE, "send"),
        (RecvMsgMulti::CODE, "recvmsg"),
    ] {
        if !p.is_supported(code) {
            return Err(format!("this kernel's io_uring has no {name}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer as a multishot `recvmsg` fills it: the header, the control room, the payload.
    fn filled(control: &[u8], payload: &[u8], had: u32) -> Vec<u8> {
        let mut b = Vec::new();
        for w in [0u32, control.len() as u32, had, 0] {
            b.extend_from_slice(&w.to_ne_bytes());
        }
        let mut room = control.to_vec();
        room.resize(CONTROL_LEN, 0);
        b.extend_from_slice(&room);
        b.extend_from_slice(payload);
        b
    }

    #[test]
    fn a_filled_buffer_gives_its_payload_and_control_data() {
        let b = filled(&[9; 32], b"HTTP/1.1 200 OK", 15);
        let r = parse_recvmsg(&b).unwrap();
        assert_eq!(r.payload, b"HTTP/1.1 200 OK");
        assert_eq!(r.control, &[9; 32]);
        // The kernel had more than the buffer held: what the buffer holds.
        let b = filled(&[], b"HTTP", 4000);
        assert_eq!(parse_recvmsg(&b).unwrap().payload, b"HTTP");
        // The end of the stream: no payload.
        assert!(parse_recvmsg(&filled(&[], b"", 0))
            .unwrap()
            .payload
            .is_empty());
    }

    #[test]
    fn a_short_buffer_is_not_read_past_its_end() {
        assert!(parse_recvmsg(&[0; 8]).is_none());
        assert!(parse_recvmsg(&filled(&[], b"", 0)[..PAYLOAD_AT - 1]).is_none());
    }

    #[test]
    fn the_buffer_ring_lists_every_buffer_and_publishes_its_tail() {
        let Ok(ring) = Ring::new(2, 8, 4096) else {
            // No io_uring here (the engine test of the fallback covers that).
            return;
        };
        let word = |i: usize| ring.ring_mem[ring.ring_at + i].load(Ordering::Relaxed);
        assert_eq!(ring.ring_mem[ring.ring_at..].as_ptr() as usize % PAGE, 0);
        assert_eq!(word(1) >> 48, 8, "the tail after all 8 buffers");
        for bid in 0..8u64 {
            assert_eq!(
                word(2 * bid as usize),
                ring.bufs.as_ptr() as u64 + bid * 4096
            );
            assert_eq!(
                word(2 * bid as usize + 1) & 0xffff_ffff_ffff,
                (bid << 32) | 4096
            );
        }
    }
}
