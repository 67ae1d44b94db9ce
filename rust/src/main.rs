//! The benchmark contract (CONTRACT.md) on tokio 1.x with a hand-written HTTP/1.1 layer (httparse),
//! in the spirit of tokio-minihttp.
//!
//! Design: thread per core. SERVER_CORES OS threads each run their own current-thread tokio runtime and
//! accept from their own SO_REUSEPORT listening socket, so the kernel spreads connections across the
//! event loops and a connection never leaves its thread (no work-stealing hand-offs, no cross-thread
//! wake-ups, a lock-free per-thread Date cache and upstream pool). This is how tokio-minihttp served its
//! TechEmpower runs (tokio-proto's `TcpServer::threads(n)` is one reactor + SO_REUSEPORT socket per thread).
//! The price, an event loop that cannot shed load to its neighbours, matters only for CPU-heavy requests,
//! which /fibonacci moves off the event loops (see routes.rs).
//!
//! With H2C_PORT set, every event loop also accepts cleartext HTTP/2 (prior knowledge) from its own SO_REUSEPORT
//! socket on that port, served by hyper on the same runtime (h2c.rs).

mod connection;
mod date;
mod framing;
mod h2c;
mod response;
mod routes;
mod weather;

use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::process::ExitCode;
use std::thread;
use std::time::Duration;

use hyper::Uri;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::signal::unix::{signal, SignalKind};

const DEFAULT_PORT: u16 = 8086;
const DEFAULT_UPSTREAM_URL: &str = "http://127.0.0.1:8000/weather.json";
/// Asked of the kernel, which caps it at net.core.somaxconn: room for `ab -c 1000` connecting at once.
const LISTEN_BACKLOG: i32 = 4096;

struct Config {
    addr: SocketAddr,
    /// HOST:H2C_PORT when the harness sets H2C_PORT: cleartext HTTP/2 (h2c.rs).
    h2c_addr: Option<SocketAddr>,
    cores: usize,
    upstream_url: Uri,
}

impl Config {
    fn from_env() -> Result<Config, String> {
        let host = env_or("HOST", "127.0.0.1");
        let port: u16 = parse_env("PORT", DEFAULT_PORT)?;
        let addr = (host.as_str(), port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut addrs| addrs.next())
            .ok_or_else(|| format!("cannot resolve HOST {host:?}"))?;
        // Unset (or 0): no h2c listener.
        let h2c_port: u16 = parse_env("H2C_PORT", 0)?;
        let h2c_addr = (h2c_port != 0).then(|| SocketAddr::new(addr.ip(), h2c_port));
        // Default: the CPUs this process may run on (available_parallelism honours the affinity mask).
        let default_cores = thread::available_parallelism().map_or(1, |n| n.get());
        let cores = parse_env("SERVER_CORES", default_cores)?.max(1);
        let upstream_url = env_or("UPSTREAM_URL", DEFAULT_UPSTREAM_URL);
        let upstream_url = upstream_url
            .parse::<Uri>()
            .ok()
            .filter(|uri| uri.scheme_str() == Some("http") && uri.host().is_some())
            .ok_or_else(|| format!("UPSTREAM_URL must be an http:// URL, got {upstream_url:?}"))?;
        Ok(Config {
            addr,
            h2c_addr,
            cores,
            upstream_url,
        })
    }
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

fn parse_env<T: std::str::FromStr>(name: &str, default: T) -> Result<T, String> {
    match std::env::var(name) {
        Ok(value) if !value.is_empty() => {
            value.parse().map_err(|_| format!("bad {name}: {value:?}"))
        }
        _ => Ok(default),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("rust-server: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let config = Config::from_env()?;
    // Set up signal handling first, so a SIGTERM during start-up already takes the clean path.
    let signals = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(|e| format!("cannot start the signal runtime: {e}"))?;
    let shutdown = signals
        .block_on(async { ShutdownSignals::register() })
        .map_err(|e| format!("cannot register signal handlers: {e}"))?;

    let cannot_listen =
        |addr: SocketAddr| move |e: io::Error| format!("cannot listen on {addr}: {e}");
    ensure_port_free(config.addr).map_err(cannot_listen(config.addr))?;
    if let Some(h2c_addr) = config.h2c_addr {
        ensure_port_free(h2c_addr).map_err(cannot_listen(h2c_addr))?;
    }
    for worker in 0..config.cores {
        // Bind every socket here so that a taken port fails start-up instead of a worker thread.
        let listener = bind_reuseport(config.addr).map_err(cannot_listen(config.addr))?;
        let h2c_listener = config
            .h2c_addr
            .map(|addr| bind_reuseport(addr).map_err(cannot_listen(addr)))
            .transpose()?;
        let upstream_url = config.upstream_url.clone();
        thread::Builder::new()
            .name(format!("event-loop-{worker}"))
            .spawn(move || run_event_loop(listener, h2c_listener, upstream_url))
            .map_err(|e| format!("cannot start an event loop thread: {e}"))?;
    }
    let h2c = match config.h2c_addr {
        Some(addr) => format!(", h2c on http://{addr}"),
        None => String::new(),
    };
    println!(
        "rust-server listening on http://{}{h2c} with {} event loop(s), upstream {}",
        config.addr, config.cores, config.upstream_url
    );

    let name = signals.block_on(shutdown.wait());
    println!("rust-server: {name}, shutting down");
    // Returning from main ends the process and with it the event loop threads and their connections.
    Ok(())
}

/// SO_REUSEPORT would also let us silently share the port with a stale instance of this server:
/// a plain bind fails if anything listens there already.
fn ensure_port_free(addr: SocketAddr) -> io::Result<()> {
    let probe = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    probe.set_reuse_address(true)?;
    probe.bind(&addr.into())
}

/// One listening socket per event loop; SO_REUSEPORT lets them share the port and the kernel
/// spreads incoming connections across them.
fn bind_reuseport(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    Ok(socket.into())
}

fn run_event_loop(listener: TcpListener, h2c_listener: Option<TcpListener>, upstream_url: Uri) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        // /fibonacci runs on this runtime's blocking pool. One thread per event loop caps the
        // recursing threads at SERVER_CORES, one per CPU we are pinned to: extra requests queue
        // instead of time-slicing the same CPUs.
        .max_blocking_threads(1)
        .build()
        .expect("cannot build the event loop runtime");
    runtime.block_on(async move {
        // One App (one upstream pool) per event loop, shared by its HTTP/1.1 and HTTP/2 connections.
        let app = routes::App::new(weather::Upstream::new(upstream_url));
        tokio::spawn(date::refresh_every_second());
        if let Some(h2c_listener) = h2c_listener {
            tokio::spawn(accept_loop(h2c_listener, app.clone(), h2c::serve));
        }
        accept_loop(listener, app, connection::serve).await
    })
}

/// Accepts connections for ever, each served by `serve` as a task of this event loop.
async fn accept_loop<F, Fut>(listener: TcpListener, app: routes::App, serve: F)
where
    F: Fn(tokio::net::TcpStream, routes::App) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener =
        tokio::net::TcpListener::from_std(listener).expect("cannot register the listener");
    loop {
        match listener.accept().await {
            Ok((stream, _peer)) => {
                // Responses go out in one write per batch: nothing to gain from Nagle, only delay.
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(stream, app.clone()));
            }
            Err(error) => {
                // Typically EMFILE under a connection storm: back off instead of spinning.
                eprintln!("rust-server: accept failed: {error}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

struct ShutdownSignals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    fn register() -> io::Result<ShutdownSignals> {
        Ok(ShutdownSignals {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }

    async fn wait(mut self) -> &'static str {
        tokio::select! {
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.interrupt.recv() => "SIGINT",
        }
    }
}
