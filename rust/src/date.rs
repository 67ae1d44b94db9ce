//! The `Date` header value, formatted once a second instead of once per response.
//!
//! Each event loop is a single thread, so the cache is a thread-local that only its own refresh task writes:
//! no locks, no atomics.

use std::cell::RefCell;
use std::time::{Duration, SystemTime};

use tokio::time::{interval, MissedTickBehavior};

thread_local! {
    static CURRENT: RefCell<String> = RefCell::new(httpdate::fmt_http_date(SystemTime::now()));
}

/// Runs on every event loop for the life of the process.
pub async fn refresh_every_second() {
    let mut ticks = interval(Duration::from_secs(1));
    ticks.set_missed_tick_behavior(MissedTickBehavior::Skip);
    loop {
        ticks.tick().await;
        let now = httpdate::fmt_http_date(SystemTime::now());
        CURRENT.with_borrow_mut(|date| *date = now);
    }
}

pub fn append_to(out: &mut Vec<u8>) {
    CURRENT.with_borrow(|date| out.extend_from_slice(date.as_bytes()));
}
