//! What a route answers, whatever the protocol carries it (HTTP/1.x in connection.rs, h2c in h2c.rs).

use bytes::Bytes;

pub const TEXT: &str = "text/plain";
pub const TEXT_UTF8: &str = "text/plain; charset=utf-8";
pub const HTML_UTF8: &str = "text/html; charset=utf-8";
pub const JSON: &str = "application/json";

pub enum Status {
    Ok,
    BadRequest,
    NotFound,
    InternalServerError,
    BadGateway,
}

impl Status {
    /// The HTTP/1.x status line's code and reason.
    pub fn line(&self) -> &'static [u8] {
        match self {
            Status::Ok => b"200 OK",
            Status::BadRequest => b"400 Bad Request",
            Status::NotFound => b"404 Not Found",
            Status::InternalServerError => b"500 Internal Server Error",
            Status::BadGateway => b"502 Bad Gateway",
        }
    }
}

pub struct Response {
    pub status: Status,
    pub content_type: &'static str,
    pub body: Bytes,
}

impl Response {
    pub fn new(status: Status, content_type: &'static str, body: impl Into<Bytes>) -> Response {
        Response {
            status,
            content_type,
            body: body.into(),
        }
    }
}
