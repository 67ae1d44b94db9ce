//! The calibrated server: answers whose timing and cost are known by construction, so that every load tool's
//! figures can be checked against a truth (README.md, "Calibration").
//!
//! GET /hello answers "Hello World" after, in this order:
//! - waiting for its slot under the rate cap (`cap` requests per second for all connections together; 0: none),
//! - burning `burn_us` µs of CPU, measured on the thread's own CPU clock (CLOCK_THREAD_CPUTIME_ID), so preemption
//!   does not shorten it,
//! - sleeping until `service_us` µs after the request was read (plus `delay_us` for 1 request in `every`, counted
//!   over all connections: requests number 0, 1, 2, ...; every one whose number is `every - 1` modulo `every`).
//! Each setting comes from the request's query (/hello?service_us=5000&every=20&delay_us=20000) or else from the
//! environment at start (CAL_SERVICE_US, CAL_EVERY, CAL_DELAY_US, CAL_BURN_US, CAL_CAP).
//!
//! Design: a thread per connection (blocking I/O), so a sleeping request holds only its own connection, as the
//! arithmetic of a closed loop assumes; each thread's timer slack is set to 1 ns so sleeps end when asked, not up to
//! 50 µs later. GET /id answers "calibrated". HTTP/1.1 keep-alive and pipelining, HTTP/1.0; SIGTERM ends it (the
//! default action). Each /hello answer says what it was in a header, `Calibration: request=41; delayed=1`, so a
//! client can tell the delayed requests from the others.

mod http;

use std::env;
use std::io;
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

const DEFAULT_PORT: u16 = 8089;
const THREAD_STACK_BYTES: usize = 128 * 1024;

/// What one request is asked to do; the defaults come from the environment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Settings {
    pub service_us: u64,
    pub every: u64,
    pub delay_us: u64,
    pub burn_us: u64,
    pub cap: u64,
}

impl Settings {
    fn from_env() -> Result<Settings, String> {
        Ok(Settings {
            service_us: env_u64("CAL_SERVICE_US")?,
            every: env_u64("CAL_EVERY")?,
            delay_us: env_u64("CAL_DELAY_US")?,
            burn_us: env_u64("CAL_BURN_US")?,
            cap: env_u64("CAL_CAP")?,
        })
    }

    /// These settings with the query's own (`a=1&b=2`); an unknown name or a value that is not a whole number is an
    /// error (answered 400).
    pub fn with_query(mut self, query: &str) -> Result<Settings, String> {
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let number: u64 = value.parse().map_err(|_| format!("{name}={value:?} is not a whole number"))?;
            match name {
                "service_us" => self.service_us = number,
                "every" => self.every = number,
                "delay_us" => self.delay_us = number,
                "burn_us" => self.burn_us = number,
                "cap" => self.cap = number,
                _ => return Err(format!("unknown setting {name:?}")),
            }
        }
        Ok(self)
    }
}

fn env_u64(name: &str) -> Result<u64, String> {
    match env::var(name) {
        Ok(v) if !v.is_empty() => v.parse().map_err(|_| format!("{name}={v:?} is not a whole number")),
        _ => Ok(0),
    }
}

/// Shared by every connection: the request counter (1 in k) and the rate cap's next free slot.
pub struct Shared {
    requests: AtomicU64,
    next_slot: Mutex<Option<Instant>>,
}

impl Shared {
    pub fn new() -> Shared {
        Shared { requests: AtomicU64::new(0), next_slot: Mutex::new(None) }
    }

    /// Does what `s` asks of one request read at `start`; returns its number and whether it was one of the delayed
    /// ones.
    pub fn serve(&self, s: &Settings, start: Instant) -> (u64, bool) {
        if s.cap > 0 {
            let spacing = Duration::from_nanos(1_000_000_000 / s.cap);
            let slot = {
                let mut next = self.next_slot.lock().unwrap_or_else(|e| e.into_inner());
                let now = Instant::now();
                let slot = next.map_or(now, |n| n.max(now));
                *next = Some(slot + spacing);
                slot
            };
            sleep_until(slot);
        }
        burn_cpu(Duration::from_micros(s.burn_us));
        let number = self.requests.fetch_add(1, Ordering::Relaxed);
        let delayed = s.every > 0 && number % s.every == s.every - 1;
        let hold = s.service_us + if delayed { s.delay_us } else { 0 };
        sleep_until(start + Duration::from_micros(hold));
        (number, delayed)
    }
}

impl Default for Shared {
    fn default() -> Self {
        Shared::new()
    }
}

fn sleep_until(deadline: Instant) {
    let now = Instant::now();
    if deadline > now {
        thread::sleep(deadline - now);
    }
}

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    fn prctl(option: i32, arg2: u64, arg3: u64, arg4: u64, arg5: u64) -> i32;
}

const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
const PR_SET_TIMERSLACK: i32 = 29;

/// This thread's CPU time (user + system), from the kernel's per-thread clock.
pub fn thread_cpu_time() -> Duration {
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into memory we own; CLOCK_THREAD_CPUTIME_ID always exists on Linux.
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Spins until this thread has used `amount` more CPU time: exact in CPU, whatever else runs on the core.
pub fn burn_cpu(amount: Duration) {
    if amount.is_zero() {
        return;
    }
    let until = thread_cpu_time() + amount;
    let mut x: u64 = 1;
    while thread_cpu_time() < until {
        for _ in 0..64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

fn precise_sleeps() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) changes only this thread's timer slack.
    unsafe { prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0) };
}

fn serve_connection(stream: TcpStream, defaults: Settings, shared: &Shared) {
    precise_sleeps();
    let _ = stream.set_nodelay(true);
    let _ = http::Connection::new(stream).serve(|target| {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        match path {
            "/id" => http::Answer::ok("text/plain", "calibrated"),
            "/hello" => match defaults.with_query(query) {
                Ok(settings) => {
                    let (number, delayed) = shared.serve(&settings, Instant::now());
                    http::Answer::ok("text/plain; charset=utf-8", "Hello World")
                        .with_note(format!("request={number}; delayed={}", u8::from(delayed)))
                }
                Err(why) => http::Answer::bad_request(why),
            },
            _ => http::Answer::not_found(),
        }
    });
}

fn run() -> Result<(), String> {
    let host = env::var("HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port: u16 = match env::var("PORT") {
        Ok(p) if !p.is_empty() => p.parse().map_err(|_| format!("PORT={p:?} is not a port"))?,
        _ => DEFAULT_PORT,
    };
    let defaults = Settings::from_env()?;
    let addr = (host.as_str(), port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("cannot resolve HOST {host:?}"))?;
    let listener = TcpListener::bind(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let shared: &'static Shared = Box::leak(Box::new(Shared::new()));
    println!("calibrated listening on http://{addr} (defaults {defaults:?})");
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => {
                let spawned = thread::Builder::new()
                    .stack_size(THREAD_STACK_BYTES)
                    .spawn(move || serve_connection(stream, defaults, shared));
                if let Err(e) = spawned {
                    eprintln!("calibrated: cannot start a connection's thread: {e}");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                eprintln!("calibrated: accept: {e}");
                thread::sleep(Duration::from_millis(1)); // out of descriptors: let connections close
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("calibrated: {e}");
            ExitCode::from(2)
        }
    }
}
