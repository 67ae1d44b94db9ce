//! What the server sees of each load: per /hello answer, when it was due and when it was written, and on a keep-alive
//! connection the time from one answer's write to the next request's read (the tool's turnaround and the network
//! both ways, with this server's own wake-up on the request's arrival: it cannot tell them apart). A closed loop's
//! cycle, connection by connection, is exactly hold + lateness + turnaround (one request's read to the next's), so
//! these say how much of it was outside the server's sleep, which no setting of the server knows.
//!
//! Each event loop keeps its own `Tally`, written by its own thread only (plain loads and stores, no lock and no
//! read-modify-write on the hot path); GET /calibration/stats merges them (`Account`), GET /calibration/reset starts
//! a new generation: a loop zeroes its tally when it next counts, and a tally of an older generation reads as empty.

use std::sync::atomic::{AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};

/// One loop's counts since the generation it holds; times in ns since the server's epoch (`crate::Shared::nanos`).
#[derive(Default)]
pub struct Tally {
    generation: AtomicU64,
    answers: AtomicU64,
    hold_ns: AtomicU64,
    late_ns: AtomicU64,
    late_max_ns: AtomicU64,
    turns: AtomicU64,
    turn_ns: AtomicU64,
    first_read_ns: AtomicU64, // 0: none yet
    last_write_ns: AtomicU64,
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.store(counter.load(Relaxed) + by, Relaxed); // only the owning loop writes: no lost update
}

impl Tally {
    /// Zeroes the counts when the server's generation moved on (a reset); called by the owning loop only.
    fn keep_up(&self, generation: u64) {
        if self.generation.load(Relaxed) != generation {
            for counter in [
                &self.answers,
                &self.hold_ns,
                &self.late_ns,
                &self.late_max_ns,
                &self.turns,
                &self.turn_ns,
                &self.first_read_ns,
                &self.last_write_ns,
            ] {
                counter.store(0, Relaxed);
            }
            self.generation.store(generation, Release); // a reader that sees it sees the zeroes
        }
    }

    /// A /hello request read at `read` (the first read of the load is the start of its span); `turnaround`: the time
    /// since this connection's previous answer was written, if it was kept alive.
    pub fn read(&self, generation: u64, read: u64, turnaround: Option<u64>) {
        self.keep_up(generation);
        let first = self.first_read_ns.load(Relaxed);
        if first == 0 || read < first {
            self.first_read_ns.store(read.max(1), Relaxed);
        }
        if let Some(t) = turnaround {
            bump(&self.turns, 1);
            bump(&self.turn_ns, t);
        }
    }

    /// An answer to a request read at `read`, due at `due` (its hold, burn and slot done), written at `written`.
    pub fn answered(&self, generation: u64, read: u64, due: u64, written: u64) {
        self.keep_up(generation);
        let late = written.saturating_sub(due);
        bump(&self.answers, 1);
        bump(&self.hold_ns, due.saturating_sub(read));
        bump(&self.late_ns, late);
        if late > self.late_max_ns.load(Relaxed) {
            self.late_max_ns.store(late, Relaxed);
        }
        if written > self.last_write_ns.load(Relaxed) {
            self.last_write_ns.store(written, Relaxed);
        }
    }

    /// Its counts, where they belong to `generation` (else an empty account).
    pub fn account(&self, generation: u64) -> Account {
        if self.generation.load(Acquire) != generation {
            return Account::default();
        }
        let first = self.first_read_ns.load(Relaxed);
        Account {
            answers: self.answers.load(Relaxed),
            hold_ns: self.hold_ns.load(Relaxed),
            late_ns: self.late_ns.load(Relaxed),
            late_max_ns: self.late_max_ns.load(Relaxed),
            turns: self.turns.load(Relaxed),
            turn_ns: self.turn_ns.load(Relaxed),
            first_read_ns: (first > 0).then_some(first),
            last_write_ns: self.last_write_ns.load(Relaxed),
        }
    }
}

/// The loops' tallies merged: what the server saw of the load since the last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Account {
    pub answers: u64,
    pub hold_ns: u64,
    pub late_ns: u64,
    pub late_max_ns: u64,
    pub turns: u64,
    pub turn_ns: u64,
    pub first_read_ns: Option<u64>,
    pub last_write_ns: u64,
}

impl Account {
    pub fn merge(self, other: Account) -> Account {
        let first_read_ns = match (self.first_read_ns, other.first_read_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Account {
            answers: self.answers + other.answers,
            hold_ns: self.hold_ns + other.hold_ns,
            late_ns: self.late_ns + other.late_ns,
            late_max_ns: self.late_max_ns.max(other.late_max_ns),
            turns: self.turns + other.turns,
            turn_ns: self.turn_ns + other.turn_ns,
            first_read_ns,
            last_write_ns: self.last_write_ns.max(other.last_write_ns),
        }
    }

    /// From the first request read to the last answer written, in seconds (0 with no answer).
    pub fn span_s(&self) -> f64 {
        match self.first_read_ns {
            Some(first) if self.answers > 0 => self.last_write_ns.saturating_sub(first) as f64 / 1e9,
            _ => 0.0,
        }
    }

    /// The answers over the span: the rate the server itself saw, counted as a tool counts its own.
    pub fn rate(&self) -> Option<f64> {
        let span = self.span_s();
        (span > 0.0).then(|| self.answers as f64 / span)
    }

    fn mean_ms(total_ns: u64, count: u64) -> Option<f64> {
        (count > 0).then(|| total_ns as f64 / count as f64 / 1e6)
    }

    /// The account as JSON (null where there is nothing to average).
    pub fn json(&self) -> String {
        let number = |v: Option<f64>| v.map_or("null".to_string(), |x| format!("{x:.6}"));
        format!(
            "{{\"answers\": {}, \"span_s\": {:.6}, \"rate\": {}, \"hold_mean_ms\": {}, \"late_mean_ms\": {}, \
             \"late_max_ms\": {}, \"turnarounds\": {}, \"turnaround_mean_ms\": {}}}",
            self.answers,
            self.span_s(),
            number(self.rate()),
            number(Self::mean_ms(self.hold_ns, self.answers)),
            number(Self::mean_ms(self.late_ns, self.answers)),
            number((self.answers > 0).then(|| self.late_max_ns as f64 / 1e6)),
            self.turns,
            number(Self::mean_ms(self.turn_ns, self.turns)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_connection_s_cycles_split_into_hold_lateness_and_turnaround() {
        let t = Tally::default();
        // read at 1 ms, due 41 ms later, written 0.3 ms late; read again 0.5 ms after the write; and so on
        t.read(0, MS, None);
        t.answered(0, MS, 41 * MS, 41 * MS + 300_000);
        t.read(0, 41 * MS + 800_000, Some(500_000));
        t.answered(0, 41 * MS + 800_000, 81 * MS + 800_000, 81 * MS + 900_000);
        let a = t.account(0);
        assert_eq!(
            (a.answers, a.turns, a.first_read_ns, a.last_write_ns),
            (2, 1, Some(MS), 81 * MS + 900_000)
        );
        assert_eq!(
            (a.hold_ns, a.late_ns, a.late_max_ns, a.turn_ns),
            (80 * MS, 400_000, 300_000, 500_000)
        );
        assert!((a.span_s() - 0.0809).abs() < 1e-12);
        assert!((a.rate().unwrap() - 2.0 / 0.0809).abs() < 1e-9);
        assert_eq!(
            a.json(),
            "{\"answers\": 2, \"span_s\": 0.080900, \"rate\": 24.721879, \"hold_mean_ms\": 40.000000, \
             \"late_mean_ms\": 0.200000, \"late_max_ms\": 0.300000, \"turnarounds\": 1, \"turnaround_mean_ms\": 0.500000}"
        );
    }

    #[test]
    fn loops_merge_into_one_account_over_the_widest_span() {
        let (a, b) = (Tally::default(), Tally::default());
        a.read(3, 5 * MS, None);
        a.answered(3, 5 * MS, 45 * MS, 46 * MS);
        b.read(3, 2 * MS, Some(MS));
        b.answered(3, 2 * MS, 42 * MS, 42 * MS + 100);
        let merged = a.account(3).merge(b.account(3));
        assert_eq!(
            (merged.answers, merged.first_read_ns, merged.last_write_ns),
            (2, Some(2 * MS), 46 * MS)
        );
        assert_eq!((merged.late_max_ns, merged.late_ns, merged.turns), (MS, MS + 100, 1));
    }

    #[test]
    fn a_reset_empties_every_loop_even_one_that_has_not_counted_since() {
        let t = Tally::default();
        t.read(0, MS, None);
        t.answered(0, MS, 2 * MS, 3 * MS);
        assert_eq!(t.account(1), Account::default()); // generation 1 began: the old counts are not its own
        t.read(1, 10 * MS, Some(7 * MS));
        let a = t.account(1);
        assert_eq!(
            (a.answers, a.turns, a.first_read_ns, a.last_write_ns),
            (0, 1, Some(10 * MS), 0)
        );
        assert_eq!(a.rate(), None);
        assert!(a.json().contains("\"rate\": null, \"hold_mean_ms\": null"));
    }
}
