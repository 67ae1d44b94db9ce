//! Cleartext HTTP/2 with prior knowledge (h2c), on H2C_PORT when the harness sets it: hyper's HTTP/2 server in front
//! of the same routes as the HTTP/1.1 layer (routes::handle, so the same bodies, tweet counter and upstream client).
//!
//! Its own port rather than telling HTTP/2's connection preface from an HTTP/1.1 request line on PORT: nginx and
//! Node's http2 server need a port of their own for h2c, so every server in this repository takes it on H2C_PORT, and
//! the HTTP/1.1 path stays exactly as it is.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, SERVER};
use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper::{Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;

use crate::connection;
use crate::response::{Response, Status};
use crate::routes::{self, App};

/// Serves one HTTP/2 connection. Its streams are tasks on this event loop's current-thread runtime (TokioExecutor
/// spawns onto the runtime it is called from), so like an HTTP/1.1 connection it never leaves its thread.
pub async fn serve(stream: TcpStream, app: App) {
    let service = service_fn(move |request: Request<Incoming>| {
        let app = app.clone();
        async move {
            let target = request
                .uri()
                .path_and_query()
                .map_or("/", |target| target.as_str());
            let response = routes::handle(request.method().as_str(), target, &app).await;
            Ok::<_, Infallible>(into_hyper(response))
        }
    });
    // hyper adds the Date header itself (auto_date_header, on by default), from a per-thread cache like date.rs.
    // An error here is the client's doing (it went away, or did not open with the HTTP/2 preface): nothing to answer.
    let _ = http2::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

fn into_hyper(response: Response) -> hyper::Response<Full<Bytes>> {
    // Content-Length comes from the Full body's exact size.
    let mut out = hyper::Response::new(Full::new(response.body));
    *out.status_mut() = match response.status {
        Status::Ok => StatusCode::OK,
        Status::BadRequest => StatusCode::BAD_REQUEST,
        Status::NotFound => StatusCode::NOT_FOUND,
        Status::InternalServerError => StatusCode::INTERNAL_SERVER_ERROR,
        Status::BadGateway => StatusCode::BAD_GATEWAY,
    };
    let headers = out.headers_mut();
    headers.insert(SERVER, HeaderValue::from_static(connection::SERVER));
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(response.content_type),
    );
    out
}
