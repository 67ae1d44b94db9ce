//! One event loop per server core (epoll), all accepting from one listening socket (EPOLLEXCLUSIVE wakes one loop per
//! connection). Connections are edge-triggered so that requests are served in the order they arrived: epoll's ready
//! list holds an edge-triggered connection from its arrival on, while a level-triggered one is put back at the list's
//! place of the previous wait, ahead of connections whose requests came earlier (with 8 connections burning 2 ms each,
//! answers took 7 burns or 14, never the 8 of first come, first served). A request that must wait (its slot under the cap, its service time, its delay)
//! parks its connection on a timer (timerfd: nanoseconds, where epoll_wait's own timeout has milliseconds) and the
//! loop serves the others meanwhile; for a slot under the cap the loop polls instead of sleeping (a sleeping loop's
//! wake-up can come late). A CPU burn runs on the loop, timed by its timetable (`crate::burn_deadline`: a busy loop
//! answers one request every B), so c connections on N loops take c·B/N each.
//! A connection's requests are answered in order, one at a time (pipelined ones wait in its buffer).
//! Each loop keeps its account of the load (account.rs): a /hello request's read, and once its answer is written,
//! when it was due and when it left.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::account::Tally;
use crate::http::{self, Answer, Parsed};
use crate::sys::{self, Epoll, EpollEvent, Timer, EPOLLET, EPOLLEXCLUSIVE, EPOLLIN, EPOLLOUT};
use crate::{Settings, Shared};

const LISTENER: u64 = u64::MAX;
const TIMER: u64 = u64::MAX - 1;
const READ_CHUNK: usize = 16 * 1024;

enum Stage {
    Slot,
    Hold { number: u64, delayed: bool, failed: bool },
}

struct Pending {
    settings: Settings,
    start: Instant,
    keep: bool,
    stage: Stage,
    until: Instant,
}

struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    out: Vec<u8>,
    pending: Option<Pending>,
    close_after: bool,
    watching_out: bool,
    unsent: Vec<(Instant, Instant)>, // the /hello answers in `out`: when each request was read, when it was due
    written_at: Option<Instant>,     // when the latest answer left, while the connection is kept alive
}

/// What a loop's connections share: the settings' defaults, what all loops share, the loop's own account.
struct Context<'a> {
    defaults: &'a Settings,
    shared: &'a Shared,
    tally: &'a Tally,
}

impl Conn {
    fn answer(&mut self, answer: &Answer, keep: bool) {
        let keep = keep && !answer.closes();
        http::write_answer(&mut self.out, answer, keep);
        if !keep {
            self.close_after = true;
        }
    }

    /// Serves what the buffer holds until a request must wait (returns when it may go on) or nothing is left;
    /// `chain`: the end of the loop's latest burn while it has been busy since (`crate::burn_deadline`).
    fn drive(&mut self, cx: &Context, chain: &mut Option<Instant>) -> Option<Instant> {
        let shared = cx.shared;
        loop {
            if let Some(p) = &self.pending {
                if Instant::now() < p.until {
                    return Some(p.until);
                }
                let p = self.pending.take().expect("checked above");
                match p.stage {
                    Stage::Slot => self.after_slot(p.settings, (p.start, p.until), p.keep, shared, chain),
                    Stage::Hold {
                        number,
                        delayed,
                        failed,
                    } => self.answer_hello((number, delayed, failed), p.keep, (p.start, p.until)),
                }
                continue;
            }
            if self.close_after {
                return None;
            }
            let req = match http::parse(&self.buf) {
                Parsed::Incomplete => return None,
                Parsed::Bad(why) => {
                    self.answer(&Answer::bad_request(why), false);
                    return None;
                }
                Parsed::Done(req) if self.buf.len() < req.head_len + req.body_len => return None, // body to come
                Parsed::Done(req) => req,
            };
            self.buf.drain(..req.head_len + req.body_len);
            let (path, query) = req.target.split_once('?').unwrap_or((&req.target, ""));
            let previous = self.written_at.take();
            match path {
                "/id" => self.answer(&Answer::ok("text/plain", "calibrated"), req.keep_alive),
                "/hello" => match cx.defaults.with_query(query) {
                    Ok(settings) => {
                        let read = Instant::now();
                        let turnaround = previous.map(|w| read.saturating_duration_since(w).as_nanos() as u64);
                        cx.tally.read(shared.generation(), shared.nanos(read), turnaround);
                        self.begin(settings, read, req.keep_alive, shared, chain)
                    }
                    Err(why) => self.answer(&Answer::bad_request(why), false),
                },
                "/calibration/stats" => self.answer(
                    &Answer::ok("application/json", &shared.account().json()),
                    req.keep_alive,
                ),
                "/calibration/reset" => {
                    shared.reset_accounts();
                    self.answer(&Answer::ok("application/json", "{\"reset\": true}"), req.keep_alive)
                }
                _ => self.answer(&Answer::not_found(), req.keep_alive),
            }
        }
    }

    fn begin(&mut self, settings: Settings, start: Instant, keep: bool, shared: &Shared, chain: &mut Option<Instant>) {
        if settings.cap > 0 {
            let slot = shared.take_slot(settings.cap);
            if slot > Instant::now() {
                self.pending = Some(Pending {
                    settings,
                    start,
                    keep,
                    stage: Stage::Slot,
                    until: slot,
                });
                return;
            }
        }
        self.after_slot(settings, (start, start), keep, shared, chain);
    }

    /// The request's turn has come (`times`: when it was read, when its turn began): its burn, then its hold.
    fn after_slot(
        &mut self,
        settings: Settings,
        times: (Instant, Instant),
        keep: bool,
        shared: &Shared,
        chain: &mut Option<Instant>,
    ) {
        let (start, began) = times;
        let mut due = began;
        if settings.burn_us > 0 {
            let deadline = crate::burn_deadline(*chain, began, Duration::from_micros(settings.burn_us), Instant::now());
            crate::spin_until(deadline);
            *chain = Some(deadline);
            due = due.max(deadline);
        }
        let (number, delayed, hold, failed) = shared.count(&settings);
        let until = start + hold;
        if until > Instant::now() {
            self.pending = Some(Pending {
                settings,
                start,
                keep,
                stage: Stage::Hold {
                    number,
                    delayed,
                    failed,
                },
                until,
            });
        } else {
            self.answer_hello((number, delayed, failed), keep, (start, due.max(until)));
        }
    }

    /// `counted`: the request's number, whether it was delayed, whether it fails; `times`: when it was read, when its
    /// answer was due (its slot, burn and hold done).
    fn answer_hello(&mut self, counted: (u64, bool, bool), keep: bool, times: (Instant, Instant)) {
        let (number, delayed, failed) = counted;
        self.unsent.push(times);
        let answer = if failed {
            Answer::unavailable()
        } else {
            Answer::ok("text/plain; charset=utf-8", "Hello World")
        };
        let answer = answer.with_note(format!(
            "request={number}; delayed={}{}",
            u8::from(delayed),
            if failed { "; failed=1" } else { "" }
        ));
        self.answer(&answer, keep);
    }

    /// The answers `out` held have left (it is empty): each counted in the loop's account, written now.
    fn count_written(&mut self, cx: &Context) {
        if self.unsent.is_empty() || !self.out.is_empty() {
            return;
        }
        let (shared, generation, now) = (cx.shared, cx.shared.generation(), Instant::now());
        for (read, due) in self.unsent.drain(..) {
            cx.tally
                .answered(generation, shared.nanos(read), shared.nanos(due), shared.nanos(now));
        }
        self.written_at = (!self.close_after).then_some(now);
    }

    /// Reads what has arrived; false when the peer closed or the connection failed.
    fn read_in(&mut self) -> bool {
        let mut chunk = [0u8; READ_CHUNK];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    if n < chunk.len() {
                        return true; // drained: more data is a new edge, so no EAGAIN read is needed
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    /// Writes what it can; false when the connection failed.
    fn flush(&mut self) -> bool {
        while !self.out.is_empty() {
            match self.stream.write(&self.out) {
                Ok(n) => {
                    self.out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        true
    }
}

struct Loop {
    epoll: Epoll,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    timers: BinaryHeap<Reverse<(Instant, usize)>>,
    chain: Option<Instant>, // the end of the latest burn, while the loop has not waited for work since
    defaults: Settings,
    shared: &'static Shared,
    tally: Arc<Tally>,
}

impl Loop {
    /// Takes one waiting connection: None when none waited, Some(None) when it could not be set up (dropped), else
    /// its id. One per wake-up where there are other loops: the listener stays readable while more wait, so the other
    /// loops (woken one per connection by EPOLLEXCLUSIVE) get their share and connections spread over the cores.
    fn accept(&mut self, listener: &TcpListener) -> Option<Option<usize>> {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(_) => return None, // WouldBlock: another loop took it; EINTR: it is still readable; EMFILE: it waits
        };
        if stream.set_nonblocking(true).is_err() {
            return Some(None);
        }
        let _ = stream.set_nodelay(true);
        let id = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        if self
            .epoll
            .add(stream.as_raw_fd(), EPOLLIN | EPOLLET, id as u64)
            .is_err()
        {
            self.free.push(id);
            return Some(None);
        }
        let conn = Conn {
            stream,
            buf: Vec::new(),
            out: Vec::new(),
            pending: None,
            close_after: false,
            watching_out: false,
            unsent: Vec::new(),
            written_at: None,
        };
        self.conns[id] = Some(conn);
        Some(Some(id))
    }

    /// Takes the waiting connections (all of them when `alone`, else one) and serves what each has sent at once: a
    /// request that came with its connection is served in the connection's turn (the listener's place in the ready
    /// list), not behind the requests other connections sent while it waited to be accepted.
    fn take_connections(&mut self, listener: &TcpListener, alone: bool) {
        while let Some(taken) = self.accept(listener) {
            if let Some(id) = taken {
                self.serve(id, true);
            }
            if !alone {
                break;
            }
        }
    }

    /// Serves connection `id` after an event or its timer (`readable`: read first); closes it when done or failed.
    fn serve(&mut self, id: usize, readable: bool) {
        let Some(conn) = self.conns.get_mut(id).and_then(|c| c.as_mut()) else {
            return;
        };
        let alive = !readable || conn.read_in();
        let cx = Context {
            defaults: &self.defaults,
            shared: self.shared,
            tally: &self.tally,
        };
        let wake = if alive { conn.drive(&cx, &mut self.chain) } else { None };
        let flushed = alive && conn.flush();
        if flushed {
            conn.count_written(&cx);
        }
        let done = !flushed || (conn.close_after && conn.out.is_empty() && conn.pending.is_none());
        if done {
            self.conns[id] = None; // closing the socket takes it out of the epoll set
            self.free.push(id);
            return;
        }
        let want_out = !conn.out.is_empty();
        if want_out != conn.watching_out {
            let events = if want_out {
                EPOLLIN | EPOLLOUT | EPOLLET
            } else {
                EPOLLIN | EPOLLET
            };
            let _ = self.epoll.modify(conn.stream.as_raw_fd(), events, id as u64);
            conn.watching_out = want_out;
        }
        if let Some(at) = wake {
            self.timers.push(Reverse((at, id)));
        }
    }
}

impl Loop {
    /// Whether the next timer is a request's slot under the cap: the loop polls for it rather than sleeping, since
    /// a timer's wake-up can come late (an idle virtual CPU is slow to wake), and a late slot is a late answer.
    fn waits_for_slot(&self) -> bool {
        self.timers.peek().is_some_and(|&Reverse((_, id))| {
            let conn = self.conns.get(id).and_then(|c| c.as_ref());
            conn.and_then(|c| c.pending.as_ref())
                .is_some_and(|p| matches!(p.stage, Stage::Slot))
        })
    }
}

/// One event loop; `alone`: the server's only one, which takes every waiting connection at once, in the order they
/// came (one per pass of the ready list, a burn per connection ready in each, held the 8th of 8 connections 28 burns
/// before its first request was read: wrk's max 52 ms where 16 were due).
pub fn run(listener: Arc<TcpListener>, defaults: Settings, shared: &'static Shared, alone: bool) -> io::Result<()> {
    sys::precise_timers();
    let timer = Timer::new()?;
    let mut lp = Loop {
        epoll: Epoll::new()?,
        conns: Vec::new(),
        free: Vec::new(),
        timers: BinaryHeap::new(),
        chain: None,
        defaults,
        shared,
        tally: shared.new_tally(),
    };
    lp.epoll.add(listener.as_raw_fd(), EPOLLIN | EPOLLEXCLUSIVE, LISTENER)?;
    lp.epoll.add(timer.0, EPOLLIN, TIMER)?;
    let mut events = vec![EpollEvent { events: 0, data: 0 }; 256];
    loop {
        let mut n = lp.epoll.wait(&mut events, false)?;
        if n == 0 {
            lp.chain = None; // nothing in hand: the loop waits for work, its next burn starts a new timetable
            if !lp.waits_for_slot() {
                n = lp.epoll.wait(&mut events, true)?;
            }
        }
        for event in &events[..n] {
            let (data, flags) = (event.data, event.events);
            match data {
                LISTENER => lp.take_connections(&listener, alone),
                TIMER => timer.clear(),
                id => lp.serve(id as usize, flags & EPOLLIN != 0 || flags & EPOLLOUT == 0),
            }
        }
        let now = Instant::now();
        while let Some(&Reverse((at, id))) = lp.timers.peek() {
            if at > now {
                break;
            }
            lp.timers.pop();
            lp.serve(id, false);
        }
        if let Some(&Reverse((at, _))) = lp.timers.peek().filter(|_| !lp.waits_for_slot()) {
            timer.set(at.saturating_duration_since(Instant::now()));
        }
    }
}
