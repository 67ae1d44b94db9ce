//! The calibrated server: answers whose timing and cost are known by construction, so that every load tool's
//! figures can be checked against a truth (README.md, "Calibration").
//!
//! GET /hello answers "Hello World" after, in this order:
//! - waiting for its slot under the rate cap (`cap` requests per second for all connections together; 0: none;
//!   while requests wait their turns, slots a stall passed are caught up within CAP_LAG: `next_slot`),
//! - burning `burn_us` µs of CPU: the loop spins until B after its previous burn's end while it has had requests
//!   waiting since (its own HTTP work inside the B, so a busy loop answers one request every B and spends B of CPU
//!   on each), or B after the request's turn began on a loop that had waited for work (`burn_deadline`),
//! - sleeping until `service_us` µs after the request was read (plus `delay_us` for 1 request in `every`, counted
//!   over all connections: requests number 0, 1, 2, ...; every one whose number is `every - 1` modulo `every`),
//! - and answering 503 "Unavailable" (as long as "Hello World", so a tool that compares lengths sees none changed) in
//!   place of 200 for 1 request in `fail_every`: every one whose number is 0 modulo `fail_every` (0: none), so a tool
//!   must count exactly those as errors.
//!
//! Each setting comes from the request's query (/hello?service_us=5000&every=20&delay_us=20000) or else from the
//! environment at start (CAL_SERVICE_US, CAL_EVERY, CAL_DELAY_US, CAL_BURN_US, CAL_CAP, CAL_FAIL_EVERY).
//!
//! Design: one epoll event loop per core (SERVER_CORES, event_loop.rs), so that its own cost per request is small
//! (a tool-bound calibration needs the tool to cost more per request than the server); a request held for its service
//! time parks its connection on a nanosecond timer and holds only that connection, as the arithmetic of a closed loop
//! assumes; one waiting for its slot under the cap keeps the loop polling, so the slot is kept to the microsecond.
//! GET /id answers "calibrated". HTTP/1.1 keep-alive and pipelining, HTTP/1.0; SIGTERM ends it (the default action).
//! Each /hello answer says what it was in a header, `Calibration: request=41; delayed=1`, so a client can tell the
//! delayed requests from the others (`; failed=1` on a 503).
//! GET /calibration/stats answers, as JSON, what the server saw of the load since GET /calibration/reset (account.rs):
//! its answers over its span (first request read to last answer written), how late its answers left (written minus
//! due: its timers' and its loop's wake-ups), and on keep-alive connections the time from an answer's write to the next
//! request's read (the tool's turnaround): the parts of a closed loop's cycle that no setting of the server knows.

mod account;
mod event_loop;
mod http;
mod sys;

use std::env;
use std::net::{TcpListener, ToSocketAddrs};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use account::{Account, Tally};

const DEFAULT_PORT: u16 = 8089;

/// What one request is asked to do; the defaults come from the environment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Settings {
    pub service_us: u64,
    pub every: u64,
    pub delay_us: u64,
    pub burn_us: u64,
    pub cap: u64,
    pub fail_every: u64,
}

impl Settings {
    fn from_env() -> Result<Settings, String> {
        Ok(Settings {
            service_us: env_u64("CAL_SERVICE_US")?,
            every: env_u64("CAL_EVERY")?,
            delay_us: env_u64("CAL_DELAY_US")?,
            burn_us: env_u64("CAL_BURN_US")?,
            cap: env_u64("CAL_CAP")?,
            fail_every: env_u64("CAL_FAIL_EVERY")?,
        })
    }

    /// These settings with the query's own (`a=1&b=2`); an unknown name or a value that is not a whole number is an
    /// error (answered 400).
    pub fn with_query(mut self, query: &str) -> Result<Settings, String> {
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let number: u64 = value
                .parse()
                .map_err(|_| format!("{name}={value:?} is not a whole number"))?;
            match name {
                "service_us" => self.service_us = number,
                "every" => self.every = number,
                "delay_us" => self.delay_us = number,
                "burn_us" => self.burn_us = number,
                "cap" => self.cap = number,
                "fail_every" => self.fail_every = number,
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

/// Shared by every connection: the request counter (1 in k) and the rate cap's next free slot, with whether the cap
/// is binding (the latest request had to wait for its turn, or was catching up); and the loops' accounts of the load
/// (account.rs): their tallies, the generation a reset began, the epoch their times count from.
pub struct Shared {
    requests: AtomicU64,
    next_slot: Mutex<(Option<Instant>, bool)>,
    epoch: Instant,
    generation: AtomicU64,
    tallies: Mutex<Vec<Arc<Tally>>>,
}

impl Shared {
    pub fn new() -> Shared {
        Shared {
            requests: AtomicU64::new(0),
            next_slot: Mutex::new((None, false)),
            epoch: Instant::now(),
            generation: AtomicU64::new(0),
            tallies: Mutex::new(Vec::new()),
        }
    }

    /// A new loop's tally, listed for the stats (locked once per loop, not per request).
    pub fn new_tally(&self) -> Arc<Tally> {
        let tally = Arc::new(Tally::default());
        self.tallies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::clone(&tally));
        tally
    }

    /// `at` in ns since the server started (the tallies' clock).
    pub fn nanos(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_nanos() as u64
    }

    /// The generation the loops count in (a reset begins a new one).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// Begins a new account: every loop's tally reads as empty until it counts again.
    pub fn reset_accounts(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// The loops' tallies of the current generation, merged.
    pub fn account(&self) -> Account {
        let generation = self.generation.load(Ordering::Acquire);
        let tallies = self.tallies.lock().unwrap_or_else(|e| e.into_inner());
        tallies
            .iter()
            .fold(Account::default(), |sum, t| sum.merge(t.account(generation)))
    }

    /// The next free slot under a cap of `cap` requests per second (all connections together), taken.
    pub fn take_slot(&self, cap: u64) -> Instant {
        let mut state = self.next_slot.lock().unwrap_or_else(|e| e.into_inner());
        let (slot, binding) = next_slot(*state, Instant::now());
        *state = (Some(slot + Duration::from_nanos(1_000_000_000 / cap)), binding);
        slot
    }

    /// The request's number, whether it is one of the 1 in `every` delayed, how long after it was read it is
    /// answered (its service time, plus the delay when delayed), and whether it is one of the 1 in `fail_every`
    /// answered 503.
    pub fn count(&self, s: &Settings) -> (u64, bool, Duration, bool) {
        let number = self.requests.fetch_add(1, Ordering::Relaxed);
        let delayed = s.every > 0 && number % s.every == s.every - 1;
        let hold = s.service_us + if delayed { s.delay_us } else { 0 };
        let failed = s.fail_every > 0 && number % s.fail_every == 0;
        (number, delayed, Duration::from_micros(hold), failed)
    }
}

/// A request's slot under the cap, from the next free one and whether the cap was binding, and whether it is binding
/// now. While requests wait their turns, each takes the next slot, even one a stall passed (the loop held from its
/// core) within CAP_LAG: answered at once, so the cap's rate is R whatever such a stall; otherwise (an open load under
/// the cap, or a new load) a slot never lies before the request: the cap keeps no credit from idle time.
pub fn next_slot(state: (Option<Instant>, bool), now: Instant) -> (Instant, bool) {
    match state {
        (Some(next), _) if next > now => (next, true),
        (Some(next), true) if next + CAP_LAG >= now => (next, true),
        _ => (now, false),
    }
}

/// How far a binding cap's slots may have passed and still be caught up: short, so that a new load started just after
/// a capped one ends takes at most this much of its credit (20 requests at 1,000/s).
pub const CAP_LAG: Duration = Duration::from_millis(20);

impl Default for Shared {
    fn default() -> Self {
        Shared::new()
    }
}

/// How far a busy loop's answers may fall behind their timetable (one every B) and still be caught up: a loop that
/// lost its core for a while (another process on it, the hypervisor) answers the requests whose times have passed
/// at once, unburned, until it is on time again, so its rate stays 1/B; one further behind starts a new timetable.
pub const MAX_LAG: Duration = Duration::from_millis(100);

/// When a request that burns `burn` is answered. A loop that had it in hand without waiting for work since its
/// previous burn (`previous`: that burn's end) answers it `burn` after that one: its own HTTP work between the two
/// (the answer's write, the read, the parse) is inside the burn, so a busy loop answers one request every B exactly,
/// and a stall shorter than the burn (or caught up, see MAX_LAG) moves no answer. A loop that waited for work
/// answers `burn` after the request's turn began (`began`: it was read, or its slot under the cap came).
pub fn burn_deadline(previous: Option<Instant>, began: Instant, burn: Duration, now: Instant) -> Instant {
    match previous {
        Some(p) if p + MAX_LAG >= now => p + burn,
        _ => began + burn,
    }
}

/// Spins on the monotonic clock until `deadline`: the loop keeps its core, as a CPU-bound request would.
pub fn spin_until(deadline: Instant) {
    let mut x: u64 = 1;
    while Instant::now() < deadline {
        for _ in 0..64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
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
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("cannot make the listener non-blocking: {e}"))?;
    let cores = match env::var("SERVER_CORES") {
        Ok(c) if !c.is_empty() => c.parse().map_err(|_| format!("SERVER_CORES={c:?} is not a number"))?,
        _ => thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let listener = Arc::new(listener);
    let shared: &'static Shared = Box::leak(Box::new(Shared::new()));
    println!("calibrated listening on http://{addr}, {cores} event loop(s) (defaults {defaults:?})");
    let alone = cores <= 1;
    let loops: Vec<_> = (0..cores.max(1))
        .map(|_| {
            let listener = Arc::clone(&listener);
            thread::spawn(move || event_loop::run(listener, defaults, shared, alone))
        })
        .collect();
    for handle in loops {
        match handle.join() {
            Ok(Err(e)) => return Err(format!("an event loop failed: {e}")),
            Err(_) => return Err("an event loop panicked".into()),
            Ok(Ok(())) => {}
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

#[cfg(test)]
mod tests {
    use super::*;

    const B: Duration = Duration::from_micros(2000);

    #[test]
    fn a_busy_loop_answers_one_request_every_burn_whatever_its_own_work() {
        let t0 = Instant::now();
        let previous = t0 + B;
        let read = previous + Duration::from_micros(40); // the loop's own HTTP work after the previous burn
        assert_eq!(burn_deadline(Some(previous), read, B, read), previous + B);
    }

    #[test]
    fn a_stall_is_caught_up_within_the_lag_and_restarts_the_timetable_beyond_it() {
        let t0 = Instant::now();
        let late = t0 + Duration::from_millis(30);
        assert_eq!(burn_deadline(Some(t0), late, B, late), t0 + B); // already passed: answered at once
        let far = t0 + MAX_LAG + Duration::from_millis(1);
        assert_eq!(burn_deadline(Some(t0), far, B, far), far + B);
    }

    #[test]
    fn a_binding_cap_catches_up_slots_a_stall_passed_and_an_idle_one_keeps_no_credit() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(next_slot((Some(t0 + ms(3)), false), t0), (t0 + ms(3), true)); // waits its turn
        assert_eq!(next_slot((Some(t0), true), t0 + ms(5)), (t0, true)); // a stall passed it: at once
        assert_eq!(next_slot((Some(t0), false), t0 + ms(5)), (t0 + ms(5), false)); // idle: no credit
        assert_eq!(next_slot((Some(t0), true), t0 + ms(21)), (t0 + ms(21), false)); // beyond CAP_LAG
        assert_eq!(next_slot((None, false), t0), (t0, false));
    }

    #[test]
    fn a_loop_that_waited_for_work_burns_from_the_request_s_turn() {
        let began = Instant::now();
        assert_eq!(burn_deadline(None, began, B, began), began + B);
    }
}
