//! The few system calls the bottleneck needs: the monotonic clock, non-blocking
//! reads and writes on TUN file descriptors, `ppoll` with a nanosecond timeout, and
//! the timer slack that decides how late a sleeping thread may wake.

use std::io;
use std::os::fd::RawFd;

/// CLOCK_MONOTONIC in nanoseconds: the clock every process on the machine shares
/// (Python's `time.monotonic_ns()`), so the traffic programs and the bottleneck
/// agree on when a run starts.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller owns; failure is reported by errno.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        if fl < 0 || libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Ask the kernel to wake this thread within 1 µs of its timeouts instead of the
/// default 50 µs slack.
pub fn tight_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0) };
}

/// `read(2)`: `Ok(None)` when nothing is waiting.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: the buffer is valid for `buf.len()` bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
        _ => Err(e),
    }
}

/// `write(2)` of one whole packet; false if the device refused it.
pub fn write(fd: RawFd, buf: &[u8]) -> bool {
    // SAFETY: the buffer is valid for `buf.len()` bytes.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    n == buf.len() as isize
}

/// Wait until one of `fds` is readable or `timeout_ns` has passed.
/// Returns which descriptors are readable (or hung up).
pub fn wait_readable(fds: &[RawFd; 3], timeout_ns: u64) -> [bool; 3] {
    let mut p = fds.map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
    let ts = libc::timespec { tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t, tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long };
    // SAFETY: `p` holds three valid pollfd structs; no signal mask is passed.
    let n = unsafe { libc::ppoll(p.as_mut_ptr(), 3, &ts, std::ptr::null()) };
    if n <= 0 {
        return [false; 3];
    }
    p.map(|x| x.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0)
}

/// Best effort: run this thread under SCHED_FIFO so that the sender and receiver
/// programs, which share the machine's cores, do not delay its deadlines. The
/// kernel's real-time throttling (95 % by default) keeps the rest of the machine
/// alive; the loop sleeps between deadlines anyway. Returns false without privilege.
pub fn realtime_priority() -> bool {
    let p = libc::sched_param { sched_priority: 10 };
    // SAFETY: a valid sched_param for the calling thread (pid 0).
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}
