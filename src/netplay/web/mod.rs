//! `serve --http ADDR:PORT`: the server's web page, on a thread of its own with a small
//! tokio runtime and hyper, so that the UDP loop never waits on a browser. The loop
//! publishes a [`Snapshot`] about once a second ([`Web::publish`]: a pointer swapped under
//! a lock); every request is answered from the latest one.
//!
//! Routes (GET and HEAD only; anything else is 405):
//! - `/`: the page ([`page::render`]): rooms with their invite links and commands, the
//!   server's load, the fleet's members and their rooms, the replays kept;
//! - `/rooms.json`: the rooms as `framelock rooms --json` prints them;
//! - `/replays.json` and `/replay/ID.flr` with `--archive`: the replays and their files;
//! - `/metrics`: the Prometheus metrics, unless `--metrics` serves them on an address of
//!   their own.
//!
//! Bounds, so that no visitor can starve the others: request heads of at most
//! [`MAX_HEAD`] bytes and [`MAX_HEADERS`] headers, read within [`HEAD_TIMEOUT`] (a
//! slow-loris connection is closed); a connection lives [`CONN_LIFETIME`] at most; an IPv4
//! address or IPv6 /64 holds [`CONNS_PER_ADDR`] connections at once and makes
//! [`RATE_PER_ADDR`] requests a second (a burst of twice that), [`MAX_CONNS`] in all.
//! Requests with a body are refused. Refusals are counted ([`WebCounts`]).

pub mod page;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_LENGTH, TRANSFER_ENCODING};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::registry::Registry;

pub use page::Snapshot;

use super::archive::Shelf;
use super::NetplayError;

/// Largest request head (request line and headers).
pub const MAX_HEAD: usize = 16 * 1024;
/// Most headers in a request.
pub const MAX_HEADERS: usize = 32;
/// A request's head must arrive within this (from the connection's start or the previous
/// answer).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest a connection lives.
pub const CONN_LIFETIME: Duration = Duration::from_secs(30);
/// Connections one address (IPv4, or IPv6 /64) holds at once.
pub const CONNS_PER_ADDR: usize = 8;
/// Connections in all.
pub const MAX_CONNS: usize = 256;
/// Requests a second one address makes (a burst of twice this).
pub const RATE_PER_ADDR: f64 = 200.0;
/// Longest path answered.
const MAX_PATH: usize = 256;

/// What the web side turned away.
#[derive(Debug, Default)]
pub struct WebCounts {
    pub requests: AtomicU64,
    /// Connections closed at once: their address (or the server) holds too many.
    pub refused_busy: AtomicU64,
    /// Requests over their address's rate (answered 429).
    pub refused_rate: AtomicU64,
    /// Methods other than GET and HEAD, bodies, paths too long.
    pub refused_bad: AtomicU64,
    /// Connections closed for taking too long (a head not read in time, or past their
    /// lifetime).
    pub timed_out: AtomicU64,
}

struct Addr {
    conns: usize,
    tokens: f64,
    at: Instant,
}

/// What a rendered page was rendered from: the snapshot's number, the replays list (its
/// address) and the Host header.
type PageKey = (u64, usize, String);

struct State {
    snap: Mutex<(u64, Arc<Snapshot>)>,
    /// The last page rendered: (snapshot number, replays list, host), page.
    cache: Mutex<Option<(PageKey, Bytes)>>,
    metrics: Option<Arc<Registry>>,
    shelf: Option<Arc<Shelf>>,
    http_port: u16,
    addrs: Mutex<HashMap<IpAddr, Addr>>,
    counts: Arc<WebCounts>,
}

/// The serve loop's handle on the web thread.
pub struct Web {
    state: Arc<State>,
    /// The address it listens on.
    pub local: SocketAddr,
    pub counts: Arc<WebCounts>,
}

/// What the web side serves besides the snapshot.
pub struct WebConfig {
    pub addr: SocketAddr,
    /// Metrics to serve at `/metrics`.
    pub metrics: Option<Arc<Registry>>,
    /// The archive, for `/replays.json` and the replays' files.
    pub shelf: Option<Arc<Shelf>>,
}

impl Web {
    /// Listens on `cfg.addr` and serves from a thread of its own.
    pub fn start(cfg: WebConfig) -> Result<Web, NetplayError> {
        let err = |e: std::io::Error| {
            NetplayError::Web(format!(
                "--http {}: cannot listen: {}",
                cfg.addr,
                crate::wording::io_reason(&e)
            ))
        };
        let std_listener = std::net::TcpListener::bind(cfg.addr).map_err(err)?;
        std_listener.set_nonblocking(true).map_err(err)?;
        let local = std_listener.local_addr().map_err(err)?;
        let counts = Arc::new(WebCounts::default());
        let state = Arc::new(State {
            snap: Mutex::new((0, Arc::new(Snapshot::default()))),
            cache: Mutex::new(None),
            metrics: cfg.metrics,
            shelf: cfg.shelf,
            http_port: local.port(),
            addrs: Mutex::new(HashMap::new()),
            counts: counts.clone(),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| NetplayError::Web(format!("cannot start its runtime: {e}")))?;
        let st = state.clone();
        std::thread::Builder::new()
            .name("web".into())
            .spawn(move || {
                runtime.block_on(async move {
                    match tokio::net::TcpListener::from_std(std_listener) {
                        Ok(listener) => accept(listener, st).await,
                        Err(e) => tracing::error!("web: cannot listen: {e}"),
                    }
                })
            })
            .map_err(|e| NetplayError::Web(format!("cannot start its thread: {e}")))?;
        tracing::info!("serve: web page on http://{local}/");
        Ok(Web {
            state,
            local,
            counts,
        })
    }

    /// The page shows `snap` from now on.
    pub fn publish(&self, snap: Snapshot) {
        let mut s = self.state.snap.lock().unwrap_or_else(|e| e.into_inner());
        *s = (s.0 + 1, Arc::new(snap));
    }
}

/// One address's connections and requests, grouped by IPv4 address or IPv6 /64.
fn group(ip: IpAddr) -> IpAddr {
    crate::session::guard::prefix(ip)
}

async fn accept(listener: tokio::net::TcpListener, state: Arc<State>) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors, say: wait rather than spin.
                tracing::warn!("web: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let ip = group(peer.ip());
        {
            let mut addrs = state.addrs.lock().unwrap_or_else(|e| e.into_inner());
            let total: usize = addrs.values().map(|a| a.conns).sum();
            let a = addrs.entry(ip).or_insert(Addr {
                conns: 0,
                tokens: 2.0 * RATE_PER_ADDR,
                at: Instant::now(),
            });
            if a.conns >= CONNS_PER_ADDR || total >= MAX_CONNS {
                state.counts.refused_busy.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            a.conns += 1;
        }
        let _ = stream.set_nodelay(true);
        let st = state.clone();
        tokio::spawn(async move {
            let service = {
                let st = st.clone();
                service_fn(move |req| {
                    let st = st.clone();
                    async move { Ok::<_, Infallible>(respond(&st, req, ip).await) }
                })
            };
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(MAX_HEAD)
                .max_headers(MAX_HEADERS)
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service);
            match tokio::time::timeout(CONN_LIFETIME, conn).await {
                Err(_) => {
                    st.counts.timed_out.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Err(e)) if e.is_timeout() => {
                    st.counts.timed_out.fetch_add(1, Ordering::Relaxed);
                }
                Ok(_) => {}
            }
            let mut addrs = st.addrs.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(a) = addrs.get_mut(&ip) {
                a.conns = a.conns.saturating_sub(1);
                if a.conns == 0 && a.at.elapsed() > Duration::from_secs(10) {
                    addrs.remove(&ip);
                }
            }
        });
    }
}

/// Whether `ip` may make one more request now (its token bucket).
fn take_token(state: &State, ip: IpAddr) -> bool {
    let mut addrs = state.addrs.lock().unwrap_or_else(|e| e.into_inner());
    let Some(a) = addrs.get_mut(&ip) else {
        return true;
    };
    let now = Instant::now();
    let refill = now.duration_since(a.at).as_secs_f64() * RATE_PER_ADDR;
    a.tokens = (a.tokens + refill).min(2.0 * RATE_PER_ADDR);
    a.at = now;
    if a.tokens >= 1.0 {
        a.tokens -= 1.0;
        true
    } else {
        false
    }
}

fn reply(status: StatusCode, kind: &str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    let h = r.headers_mut();
    let set = |h: &mut hyper::HeaderMap, k: &'static str, v: &str| {
        if let Ok(v) = HeaderValue::from_str(v) {
            h.insert(k, v);
        }
    };
    set(h, "content-type", kind);
    // No script, no outside asset, no form: whatever a name holds cannot run.
    set(
        h,
        "content-security-policy",
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'",
    );
    set(h, "x-content-type-options", "nosniff");
    set(h, "referrer-policy", "no-referrer");
    set(h, "cache-control", "no-store");
    // A malformed or refused request ends its connection; a 404 or a 429 does not.
    if status.is_client_error()
        && status != StatusCode::NOT_FOUND
        && status != StatusCode::TOO_MANY_REQUESTS
    {
        set(h, "connection", "close");
    }
    r
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    reply(status, "text/plain; charset=utf-8", format!("{body}\n"))
}

async fn respond(state: &State, req: Request<Incoming>, ip: IpAddr) -> Response<Full<Bytes>> {
    state.counts.requests.fetch_add(1, Ordering::Relaxed);
    let bad = |status, body: &str| {
        state.counts.refused_bad.fetch_add(1, Ordering::Relaxed);
        text(status, body)
    };
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = bad(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD");
        r.headers_mut()
            .insert("allow", HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let has_body = req.headers().contains_key(TRANSFER_ENCODING)
        || req
            .headers()
            .get(CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() != b"0");
    if has_body {
        return bad(StatusCode::PAYLOAD_TOO_LARGE, "a request here has no body");
    }
    let path = req.uri().path().to_string();
    if path.len() > MAX_PATH {
        return bad(StatusCode::URI_TOO_LONG, "path too long");
    }
    if !take_token(state, ip) {
        state.counts.refused_rate.fetch_add(1, Ordering::Relaxed);
        let mut r = text(
            StatusCode::TOO_MANY_REQUESTS,
            "too many requests: slow down",
        );
        r.headers_mut()
            .insert("retry-after", HeaderValue::from_static("1"));
        return r;
    }
    let host = req
        .headers()
        .get("host")
        .and_then(|h| h.to_str().ok())
        .map(str::to_string);
    let (generation, snap) = {
        let s = state.snap.lock().unwrap_or_else(|e| e.into_inner());
        (s.0, s.1.clone())
    };
    match path.as_str() {
        "/" | "/index.html" => {
            let replays = state.shelf.as_ref().map(|s| s.list()).unwrap_or_default();
            let key = (
                generation,
                Arc::as_ptr(&replays) as usize,
                host.clone().unwrap_or_default(),
            );
            let cached = state
                .cache
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .filter(|(k, _)| *k == key)
                .map(|(_, page)| page.clone());
            let body = match cached {
                Some(page) => page,
                None => {
                    let html = page::render(&snap, host.as_deref(), &replays, state.http_port);
                    let page = Bytes::from(html);
                    *state.cache.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some((key, page.clone()));
                    page
                }
            };
            reply(StatusCode::OK, "text/html; charset=utf-8", body)
        }
        "/rooms.json" => {
            let json = super::rooms_json(&snap.all_rooms());
            reply(StatusCode::OK, "application/json", format!("{json}\n"))
        }
        "/replays.json" => match &state.shelf {
            Some(shelf) => {
                let list = shelf.list();
                let json = serde_json::to_string(&*list).unwrap_or_else(|_| "[]".into());
                reply(StatusCode::OK, "application/json", format!("{json}\n"))
            }
            None => text(StatusCode::NOT_FOUND, "this server keeps no replays"),
        },
        "/metrics" => match &state.metrics {
            Some(registry) => {
                let mut body = String::new();
                if prometheus_client::encoding::text::encode(&mut body, registry).is_err() {
                    return text(StatusCode::INTERNAL_SERVER_ERROR, "metrics failed");
                }
                reply(
                    StatusCode::OK,
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    body,
                )
            }
            None => text(StatusCode::NOT_FOUND, "metrics are served by --metrics"),
        },
        p => {
            let id = p
                .strip_prefix("/replay/")
                .and_then(|r| r.strip_suffix(".flr"))
                .filter(|id| super::links::valid_replay_id(id));
            match (id, &state.shelf) {
                (Some(id), Some(shelf)) => match shelf.get(id).await {
                    Some(bytes) => {
                        let mut r = reply(
                            StatusCode::OK,
                            "application/octet-stream",
                            Bytes::from(bytes.as_ref().clone()),
                        );
                        if let Ok(v) =
                            HeaderValue::from_str(&format!("attachment; filename=\"{id}.flr\""))
                        {
                            r.headers_mut().insert("content-disposition", v);
                        }
                        r
                    }
                    None => text(StatusCode::NOT_FOUND, "no such replay"),
                },
                _ => text(StatusCode::NOT_FOUND, "not found"),
            }
        }
    }
}
