//! The HTTP/1.x connection loop: parse with httparse, route, write.
//!
//! Pipelining: every complete request already in the read buffer is answered, in order, and the
//! responses leave in a single write. Keep-alive: HTTP/1.1 unless `Connection: close`; HTTP/1.0 only
//! with `Connection: keep-alive`, which the response then echoes.

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::date;
use crate::framing::{self, Body};
use crate::response::{Response, Status, TEXT};
use crate::routes::{self, App};

/// More headers than any benchmark client sends; more is answered with 400.
const MAX_HEADERS: usize = 32;
/// A request head (or an unread pipelined backlog) larger than this is refused and the connection closed.
const MAX_BUFFERED_REQUEST: usize = 64 * 1024;
const READ_CHUNK: usize = 8 * 1024;
/// The Server header of every response, HTTP/1.x here and HTTP/2 in h2c.rs.
pub const SERVER: &str = "rust-tokio";

/// What the response says about the connection.
#[derive(Clone, Copy, PartialEq)]
enum Persistence {
    /// HTTP/1.1 default: no header needed.
    KeepAlive,
    /// HTTP/1.0 that asked for keep-alive: must be confirmed with `Connection: keep-alive`.
    KeepAliveConfirmed,
    Close,
}

pub async fn serve(mut stream: TcpStream, app: App) {
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    let mut output = Vec::with_capacity(READ_CHUNK);
    loop {
        let keep_open = answer_buffered_requests(&mut input, &mut output, &app).await;
        if !output.is_empty() {
            if stream.write_all(&output).await.is_err() {
                return;
            }
            output.clear();
        }
        if !keep_open {
            // FIN after the last response rather than dropping with unread input (which would send RST).
            let _ = stream.shutdown().await;
            return;
        }
        input.reserve(READ_CHUNK);
        match stream.read_buf(&mut input).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Answers every complete request in `input`, appending the responses to `output` in order.
/// Returns false when the connection must be closed once `output` is written.
async fn answer_buffered_requests(input: &mut BytesMut, output: &mut Vec<u8>, app: &App) -> bool {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        let head_len = match request.parse(input) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) if input.len() <= MAX_BUFFERED_REQUEST => return true,
            Ok(httparse::Status::Partial) | Err(_) => return refuse(output),
        };
        let Some((body, must_close)) = framing::body(request.version, request.headers) else {
            return refuse(output);
        };
        if !framing::host_ok(request.version, request.headers) {
            return refuse(output);
        }
        let body_len = match body {
            Body::Length(length) => length,
            Body::Chunked => match framing::chunked_len(&input[head_len..]) {
                Ok(Some(length)) => length,
                Ok(None) if input.len() <= MAX_BUFFERED_REQUEST => return true,
                Ok(None) | Err(()) => return refuse(output),
            },
        };
        if body_len > MAX_BUFFERED_REQUEST {
            return refuse(output);
        }
        let request_len = head_len + body_len;
        if request_len > input.len() {
            // Wait for the rest of the body (the routes read none; this keeps the framing honest).
            return true;
        }
        let persistence = if must_close {
            Persistence::Close
        } else {
            persistence(request.version, request.headers)
        };
        let (Some(method), Some(target)) = (request.method, request.path) else {
            return refuse(output);
        };
        // HEAD is GET without the content (RFC 9110 §9.3.2: the server MUST NOT send content in the response); its
        // Content-Length is the one GET would send (RFC 9110 §8.6).
        let head = method == "HEAD";
        let response = routes::handle(if head { "GET" } else { method }, framing::origin_form(target), app).await;
        write_response(output, &response, persistence, head);
        input.advance(request_len);
        if persistence == Persistence::Close {
            return false;
        }
    }
}

/// 400 for a request we cannot frame or parse; the connection is closed since its byte stream is lost.
fn refuse(output: &mut Vec<u8>) -> bool {
    let response = Response::new(Status::BadRequest, TEXT, "Bad Request");
    write_response(output, &response, Persistence::Close, false);
    false
}

fn persistence(version: Option<u8>, headers: &[httparse::Header]) -> Persistence {
    let connection_has = |token: &str| {
        headers.iter().any(|header| {
            header.name.eq_ignore_ascii_case("connection")
                && header
                    .value
                    .split(|&b| b == b',')
                    .any(|value| value.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
        })
    };
    match version {
        Some(1) if connection_has("close") => Persistence::Close,
        Some(1) => Persistence::KeepAlive,
        _ if connection_has("keep-alive") => Persistence::KeepAliveConfirmed,
        _ => Persistence::Close,
    }
}

fn write_response(out: &mut Vec<u8>, response: &Response, persistence: Persistence, head: bool) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(response.status.line());
    out.extend_from_slice(b"\r\nServer: ");
    out.extend_from_slice(SERVER.as_bytes());
    out.extend_from_slice(b"\r\nDate: ");
    date::append_to(out);
    out.extend_from_slice(b"\r\nContent-Type: ");
    out.extend_from_slice(response.content_type.as_bytes());
    out.extend_from_slice(b"\r\nContent-Length: ");
    out.extend_from_slice(itoa::Buffer::new().format(response.body.len()).as_bytes());
    out.extend_from_slice(match persistence {
        Persistence::KeepAlive => b"\r\n\r\n".as_slice(),
        Persistence::KeepAliveConfirmed => b"\r\nConnection: keep-alive\r\n\r\n",
        Persistence::Close => b"\r\nConnection: close\r\n\r\n",
    });
    if !head {
        out.extend_from_slice(&response.body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header<'a>(name: &'a str, value: &'a str) -> httparse::Header<'a> {
        httparse::Header {
            name,
            value: value.as_bytes(),
        }
    }

    #[test]
    fn keep_alive_follows_the_version_and_connection_header() {
        assert!(persistence(Some(1), &[]) == Persistence::KeepAlive);
        assert!(persistence(Some(1), &[header("Connection", "Close")]) == Persistence::Close);
        assert!(persistence(Some(0), &[]) == Persistence::Close);
        assert!(
            persistence(Some(0), &[header("connection", "Keep-Alive")])
                == Persistence::KeepAliveConfirmed
        );
        assert!(
            persistence(Some(0), &[header("Connection", "TE, keep-alive")])
                == Persistence::KeepAliveConfirmed
        );
    }
}
