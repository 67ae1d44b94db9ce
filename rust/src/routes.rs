//! The routes of CONTRACT.md.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use num_bigint::BigUint;
use serde::Serialize;

use crate::response::{Response, Status, HTML_UTF8, JSON, TEXT, TEXT_UTF8};
use crate::weather::Upstream;

const MAX_FACTORIAL: u32 = 5000;
const MAX_FIBONACCI: u32 = 45;

/// What one event loop's connections share.
#[derive(Clone)]
pub struct App {
    upstream: Arc<Upstream>,
}

impl App {
    pub fn new(upstream: Upstream) -> App {
        App {
            upstream: Arc::new(upstream),
        }
    }
}

pub async fn handle(method: &str, target: &str, app: &App) -> Response {
    if method != "GET" {
        return not_found();
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    match path {
        "/id" => Response::new(Status::Ok, TEXT, "rust"),
        "/hello" => Response::new(Status::Ok, TEXT_UTF8, "Hello World"),
        "/backend" => Response::new(Status::Ok, HTML_UTF8, "<h1>Say hello to akka-http</h1>"),
        "/v1/tweets" => tweets(),
        "/factorial" => factorial(query),
        "/fibonacci" => fibonacci(query).await,
        _ => match path.strip_prefix("/weather/") {
            Some(city) if !city.is_empty() && !city.contains('/') => {
                app.upstream.current_weather().await
            }
            _ => not_found(),
        },
    }
}

fn not_found() -> Response {
    Response::new(Status::NotFound, TEXT, "Not Found")
}

#[derive(Serialize)]
struct Tweet {
    id: u64,
    author: &'static str,
    content: &'static str,
}

static NEXT_TWEET_ID: AtomicU64 = AtomicU64::new(1_000_000);

fn tweets() -> Response {
    let tweets = [Tweet {
        id: NEXT_TWEET_ID.fetch_add(1, Ordering::Relaxed),
        author: "author1",
        content: "Hello, World!",
    }];
    let body = serde_json::to_vec(&tweets).expect("a Tweet always serializes");
    Response::new(Status::Ok, JSON, body)
}

/// `param` from the query string, when it is a plain decimal integer in 0..=max
/// (no sign, no fraction, no exponent).
fn param(query: &str, max: u32) -> Option<u32> {
    let value = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("param="))?;
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok().filter(|&n| n <= max)
}

fn bad_param(max: u32) -> Response {
    Response::new(
        Status::BadRequest,
        TEXT,
        format!("param must be an integer from 0 to {max}"),
    )
}

/// Runs inline on the event loop: 5000! takes well under a millisecond with the product tree below,
/// less than a hand-off to another thread would cost in latency.
fn factorial(query: &str) -> Response {
    match param(query, MAX_FACTORIAL) {
        Some(n) => Response::new(Status::Ok, TEXT, product(1, n).to_string()),
        None => bad_param(MAX_FACTORIAL),
    }
}

/// The product of `low..=high` by binary splitting: multiplying balanced halves lets num-bigint use its
/// Karatsuba/Toom-3 multiplication, where a running product would do n huge-by-small steps.
fn product(low: u32, high: u32) -> BigUint {
    if high < low + 16 {
        return (low..=high).fold(BigUint::from(1u32), |acc, k| acc * k);
    }
    let middle = low + (high - low) / 2;
    product(low, middle) * product(middle + 1, high)
}

/// fib(45) recurses for several seconds, so it does not run on the event loop: on this thread-per-core
/// server an event loop busy recursing would stall every other connection it owns (a /hello behind it
/// would wait seconds). tokio's guidance for CPU-bound work is to move it off the runtime's worker;
/// `spawn_blocking` hands it to the runtime's blocking pool, capped at one thread per event loop in
/// main.rs so at most SERVER_CORES recursions run at once, one per pinned CPU.
async fn fibonacci(query: &str) -> Response {
    let Some(n) = param(query, MAX_FIBONACCI) else {
        return bad_param(MAX_FIBONACCI);
    };
    match tokio::task::spawn_blocking(move || fib(n)).await {
        Ok(value) => Response::new(Status::Ok, TEXT, value.to_string()),
        // Only when the runtime is shutting down (panics abort the process in release builds).
        Err(_) => Response::new(Status::InternalServerError, TEXT, "fibonacci was cancelled"),
    }
}

/// Naive double recursion on purpose: this route is the CPU-bound test.
fn fib(n: u32) -> u64 {
    if n < 2 {
        1
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_accepts_only_plain_integers_in_range() {
        assert_eq!(param("param=0", 45), Some(0));
        assert_eq!(param("x=1&param=45", 45), Some(45));
        for bad in [
            "",
            "param=",
            "param=abc",
            "param=1.5",
            "param=-1",
            "param=+1",
            "param=46",
            "param=99999999999999999999",
        ] {
            assert_eq!(param(bad, 45), None, "{bad}");
        }
    }

    #[test]
    fn factorial_is_exact() {
        assert_eq!(product(1, 0).to_string(), "1");
        assert_eq!(product(1, 20).to_string(), "2432902008176640000");
        let naive = (1..=5000u32).fold(BigUint::from(1u32), |acc, k| acc * k);
        assert_eq!(product(1, 5000), naive);
    }

    #[test]
    fn fib_starts_at_one() {
        assert_eq!((fib(0), fib(1), fib(2), fib(30)), (1, 1, 2, 1346269));
    }
}
