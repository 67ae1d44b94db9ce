//! Just enough HTTP/1.x for the load tools and the contract check: GET requests, keep-alive (HTTP/1.1 by default,
//! HTTP/1.0 when asked), Content-Length bodies skipped, anything malformed answered 400 and the connection closed.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

const MAX_HEAD_BYTES: usize = 16 * 1024;

pub struct Answer {
    status: &'static str,
    content_type: &'static str,
    body: String,
    close: bool,
    note: Option<String>,
}

impl Answer {
    pub fn ok(content_type: &'static str, body: &str) -> Answer {
        Answer {
            status: "200 OK",
            content_type,
            body: body.to_string(),
            close: false,
            note: None,
        }
    }
    /// Whether the connection is closed after it (a bad request).
    pub fn closes(&self) -> bool {
        self.close
    }

    /// The answer with a `Calibration: <note>` header.
    pub fn with_note(mut self, note: String) -> Answer {
        self.note = Some(note);
        self
    }
    /// 503 with a body as long as "Hello World": a calibrated failure (`fail_every`).
    pub fn unavailable() -> Answer {
        Answer {
            status: "503 Service Unavailable",
            content_type: "text/plain; charset=utf-8",
            body: "Unavailable".into(),
            close: false,
            note: None,
        }
    }
    pub fn not_found() -> Answer {
        Answer {
            status: "404 Not Found",
            content_type: "text/plain",
            body: "Not Found".into(),
            close: false,
            note: None,
        }
    }
    pub fn bad_request(why: String) -> Answer {
        Answer {
            status: "400 Bad Request",
            content_type: "text/plain",
            body: why,
            close: true,
            note: None,
        }
    }
}

pub struct Request {
    pub target: String,
    pub keep_alive: bool,
    pub head_len: usize,
    pub body_len: usize,
}

pub enum Parsed {
    Incomplete,
    Bad(String),
    Done(Request),
}

pub fn parse(buf: &[u8]) -> Parsed {
    let end = match buf.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(i) => i + 4,
        None if buf.len() > MAX_HEAD_BYTES => return Parsed::Bad("request head too long".into()),
        None => return Parsed::Incomplete,
    };
    let head = match std::str::from_utf8(&buf[..end]) {
        Ok(h) => h,
        Err(_) => return Parsed::Bad("request head is not text".into()),
    };
    let mut lines = head.split("\r\n");
    let mut parts = lines.next().unwrap_or("").split(' ');
    let (method, target, version) = (parts.next(), parts.next(), parts.next());
    let (Some(method), Some(target), Some(version)) = (method, target, version) else {
        return Parsed::Bad("malformed request line".into());
    };
    if method.is_empty() || !target.starts_with('/') || !version.starts_with("HTTP/1.") {
        return Parsed::Bad("malformed request line".into());
    }
    let mut keep_alive = version == "HTTP/1.1";
    let mut body_len = 0usize;
    for line in lines.filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Parsed::Bad("malformed header".into());
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("connection") {
            let value = value.to_ascii_lowercase();
            if value.contains("close") {
                keep_alive = false;
            } else if value.contains("keep-alive") {
                keep_alive = true;
            }
        } else if name.eq_ignore_ascii_case("content-length") {
            match value.parse() {
                Ok(n) => body_len = n,
                Err(_) => return Parsed::Bad("bad Content-Length".into()),
            }
        }
    }
    Parsed::Done(Request {
        target: target.to_string(),
        keep_alive,
        head_len: end,
        body_len,
    })
}

pub fn write_answer(out: &mut Vec<u8>, a: &Answer, keep_alive: bool) {
    let connection = if keep_alive { "keep-alive" } else { "close" };
    let _ = write!(
        out,
        "HTTP/1.1 {}\r\nServer: calibrated\r\nDate: {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: {}\r\n{}\r\n{}",
        a.status,
        http_date(),
        a.content_type,
        a.body.len(),
        connection,
        a.note.as_ref().map_or(String::new(), |n| format!("Calibration: {n}\r\n")),
        a.body
    );
}

thread_local! {
    static DATE: std::cell::RefCell<(u64, String)> = const { std::cell::RefCell::new((u64::MAX, String::new())) };
}

/// Now as an HTTP date (RFC 9110 IMF-fixdate), e.g. "Sun, 06 Nov 1994 08:49:37 GMT", formatted once a second.
fn http_date() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE.with(|cached| {
        let mut cached = cached.borrow_mut();
        if cached.0 != secs {
            *cached = (secs, format_date(secs));
        }
        cached.1.clone()
    })
}

fn format_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let (h, m, s) = (secs % 86_400 / 3600, secs % 3600 / 60, secs % 60);
    // civil date from days since 1970-01-01 (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + if month <= 2 { 1 } else { 0 };
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        h,
        m,
        s
    )
}
