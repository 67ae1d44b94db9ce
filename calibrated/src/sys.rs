//! The few Linux calls the standard library does not offer: epoll, timerfd and timer slack.

use std::io;
use std::time::Duration;

#[cfg_attr(target_arch = "x86_64", repr(C, packed))]
#[cfg_attr(not(target_arch = "x86_64"), repr(C))]
#[derive(Clone, Copy)]
pub struct EpollEvent {
    pub events: u32,
    pub data: u64,
}

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

#[repr(C)]
struct Itimerspec {
    interval: Timespec,
    value: Timespec,
}

extern "C" {
    fn epoll_create1(flags: i32) -> i32;
    fn epoll_ctl(epfd: i32, op: i32, fd: i32, event: *mut EpollEvent) -> i32;
    fn epoll_wait(epfd: i32, events: *mut EpollEvent, maxevents: i32, timeout: i32) -> i32;
    fn timerfd_create(clockid: i32, flags: i32) -> i32;
    fn timerfd_settime(fd: i32, flags: i32, new: *const Itimerspec, old: *mut Itimerspec) -> i32;
    fn prctl(option: i32, arg2: u64, arg3: u64, arg4: u64, arg5: u64) -> i32;
    fn read(fd: i32, buf: *mut u8, count: usize) -> isize;
}

pub const EPOLLIN: u32 = 0x001;
pub const EPOLLOUT: u32 = 0x004;
pub const EPOLLEXCLUSIVE: u32 = 1 << 28;
pub const EPOLLET: u32 = 1 << 31;
const EPOLL_CTL_ADD: i32 = 1;
const EPOLL_CTL_MOD: i32 = 3;
const CLOCK_MONOTONIC: i32 = 1;
const PR_SET_TIMERSLACK: i32 = 29;
const O_CLOEXEC_NONBLOCK: i32 = 0o2000000 | 0o4000;

fn check(result: i32) -> io::Result<i32> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

pub struct Epoll(i32);

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall, no pointers
        check(unsafe { epoll_create1(0o2000000) }).map(Epoll)
    }

    fn ctl(&self, op: i32, fd: i32, events: u32, data: u64) -> io::Result<()> {
        let mut event = EpollEvent { events, data };
        // SAFETY: `event` lives for the call
        check(unsafe { epoll_ctl(self.0, op, fd, &mut event) }).map(|_| ())
    }

    pub fn add(&self, fd: i32, events: u32, data: u64) -> io::Result<()> {
        self.ctl(EPOLL_CTL_ADD, fd, events, data)
    }

    pub fn modify(&self, fd: i32, events: u32, data: u64) -> io::Result<()> {
        self.ctl(EPOLL_CTL_MOD, fd, events, data)
    }

    /// Waits for events: `block` forever (the timers are a timerfd among them), or not at all (what is ready now);
    /// EINTR is no event.
    pub fn wait(&self, events: &mut [EpollEvent], block: bool) -> io::Result<usize> {
        let timeout = if block { -1 } else { 0 };
        // SAFETY: the kernel writes at most events.len() entries into the slice
        let n = unsafe { epoll_wait(self.0, events.as_mut_ptr(), events.len() as i32, timeout) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(0)
            } else {
                Err(e)
            };
        }
        Ok(n as usize)
    }
}

/// A one-shot timer on the monotonic clock, at nanosecond resolution (epoll_wait's own timeout is in milliseconds).
pub struct Timer(pub i32);

impl Timer {
    pub fn new() -> io::Result<Timer> {
        // SAFETY: plain syscall, no pointers
        check(unsafe { timerfd_create(CLOCK_MONOTONIC, O_CLOEXEC_NONBLOCK) }).map(Timer)
    }

    /// Fires once, `after` from now (at least 1 ns: zero would disarm it).
    pub fn set(&self, after: Duration) {
        let after = after.max(Duration::from_nanos(1));
        let spec = Itimerspec {
            interval: Timespec { tv_sec: 0, tv_nsec: 0 },
            value: Timespec {
                tv_sec: after.as_secs() as i64,
                tv_nsec: after.subsec_nanos() as i64,
            },
        };
        // SAFETY: `spec` lives for the call; the old value is not asked for
        unsafe { timerfd_settime(self.0, 0, &spec, std::ptr::null_mut()) };
    }

    /// Reads its expiry count, so that it stops being readable.
    pub fn clear(&self) {
        let mut count = [0u8; 8];
        // SAFETY: reads at most 8 bytes into `count`
        unsafe { read(self.0, count.as_mut_ptr(), 8) };
    }
}

/// Timers of this thread end when asked, not up to 50 µs later (the default slack).
pub fn precise_timers() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) changes only this thread's timer slack.
    unsafe { prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0) };
}
