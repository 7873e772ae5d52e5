//! `serve --metrics ADDR:PORT`: the server's numbers as Prometheus (OpenMetrics) text, on a
//! plain HTTP listener thread that answers every request with them; without `--metrics`,
//! `serve --http` serves the same registry at `/metrics` (`web`).
//!
//! Metrics: `framelock_rooms`, `framelock_players`, `framelock_spectators` (gauges);
//! `framelock_datagrams_total` and `framelock_bytes_total` by `direction` (in, out);
//! `framelock_dropped_total` by `reason` (garbage, wrong_room, rate_limited, full,
//! held_unvalidated, auth, relay_limited); `framelock_answer_seconds` (histogram: from taking datagrams off
//! the socket to sending what they caused); `framelock_directory_errors_total`;
//! `framelock_replays_recorded_total` (rooms on the server recorded for `--archive`) and
//! `framelock_replay_uploads_total` by `outcome` (received, unknown_room, stranger,
//! too_large, forged, not_shared).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::serve::ServeStats;

use super::NetplayError;

type Labels = [(&'static str, &'static str); 1];

/// The serve loop's handles on the metrics the listener serves.
pub struct Metrics {
    rooms: Gauge,
    players: Gauge,
    spectators: Gauge,
    datagrams: Family<Labels, Counter>,
    bytes: Family<Labels, Counter>,
    dropped: Family<Labels, Counter>,
    answer: Histogram,
    directory_errors: Counter,
    replays_recorded: Counter,
    uploads: Family<Labels, Counter>,
    last: ServeStats,
    last_directory_errors: u64,
}

impl Metrics {
    /// Listens on `addr` and serves the metrics from a thread of their own.
    pub fn listen(addr: SocketAddr) -> Result<Metrics, NetplayError> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| NetplayError::Metrics(format!("--metrics {addr}: cannot listen: {e}")))?;
        let (m, registry) = Metrics::new();
        let local = listener.local_addr().unwrap_or(addr);
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || serve(listener, registry))
            .map_err(|e| NetplayError::Metrics(format!("cannot start its thread: {e}")))?;
        tracing::info!("serve: metrics on http://{local}/metrics");
        Ok(m)
    }

    /// The metrics and their registry, for a server of someone else's (`serve --http`).
    pub fn new() -> (Metrics, Arc<Registry>) {
        let mut registry = Registry::with_prefix("framelock");
        let m = Metrics {
            rooms: Gauge::default(),
            players: Gauge::default(),
            spectators: Gauge::default(),
            datagrams: Family::default(),
            bytes: Family::default(),
            dropped: Family::default(),
            answer: Histogram::new(exponential_buckets(10e-6, 2.0, 14)),
            directory_errors: Counter::default(),
            replays_recorded: Counter::default(),
            uploads: Family::default(),
            last: ServeStats::default(),
            last_directory_errors: 0,
        };
        registry.register("rooms", "Rooms open", m.rooms.clone());
        registry.register("players", "Players in the rooms", m.players.clone());
        registry.register("spectators", "Spectators watching", m.spectators.clone());
        registry.register("datagrams", "UDP datagrams", m.datagrams.clone());
        registry.register("bytes", "UDP payload bytes", m.bytes.clone());
        registry.register("dropped", "Datagrams turned away", m.dropped.clone());
        registry.register(
            "answer_seconds",
            "From taking datagrams off the socket to sending what they caused",
            m.answer.clone(),
        );
        registry.register(
            "replays_recorded",
            "Rooms on the server recorded for the archive",
            m.replays_recorded.clone(),
        );
        registry.register(
            "replay_uploads",
            "Hosted rooms' recordings uploaded, by outcome",
            m.uploads.clone(),
        );
        registry.register(
            "directory_errors",
            "Failed directory requests and skipped malformed entries",
            m.directory_errors.clone(),
        );
        (m, Arc::new(registry))
    }

    pub fn observe_answer(&self, d: Duration) {
        self.answer.observe(d.as_secs_f64());
    }

    /// The counters and gauges as they are now.
    pub fn update(&mut self, s: &ServeStats, load: (usize, usize, usize), directory_errors: u64) {
        let (rooms, players, spectators) = load;
        self.rooms.set(rooms as i64);
        self.players.set(players as i64);
        self.spectators.set(spectators as i64);
        let p = self.last;
        let add = |f: &Family<Labels, Counter>, l: Labels, now: u64, was: u64| {
            f.get_or_create(&l).inc_by(now.saturating_sub(was));
        };
        add(
            &self.datagrams,
            [("direction", "in")],
            s.datagrams_in,
            p.datagrams_in,
        );
        add(
            &self.datagrams,
            [("direction", "out")],
            s.datagrams_out,
            p.datagrams_out,
        );
        add(&self.bytes, [("direction", "in")], s.bytes_in, p.bytes_in);
        add(
            &self.bytes,
            [("direction", "out")],
            s.bytes_out,
            p.bytes_out,
        );
        let d = &self.dropped;
        add(d, [("reason", "garbage")], s.garbage, p.garbage);
        add(d, [("reason", "wrong_room")], s.wrong_room, p.wrong_room);
        add(
            d,
            [("reason", "rate_limited")],
            s.rate_limited,
            p.rate_limited,
        );
        add(d, [("reason", "full")], s.full, p.full);
        add(
            d,
            [("reason", "held_unvalidated")],
            s.held_unvalidated,
            p.held_unvalidated,
        );
        add(d, [("reason", "auth")], s.dropped_auth, p.dropped_auth);
        add(
            d,
            [("reason", "relay_limited")],
            s.relay_limited,
            p.relay_limited,
        );
        self.replays_recorded
            .inc_by(s.replays_recorded.saturating_sub(p.replays_recorded));
        let u = &self.uploads;
        for (outcome, now, was) in [
            ("received", s.uploads_received, p.uploads_received),
            (
                "unknown_room",
                s.uploads_unknown_room,
                p.uploads_unknown_room,
            ),
            ("stranger", s.uploads_stranger, p.uploads_stranger),
            ("too_large", s.uploads_too_large, p.uploads_too_large),
            ("forged", s.uploads_forged, p.uploads_forged),
            ("not_shared", s.uploads_not_shared, p.uploads_not_shared),
        ] {
            add(u, [("outcome", outcome)], now, was);
        }
        self.directory_errors
            .inc_by(directory_errors.saturating_sub(self.last_directory_errors));
        self.last = *s;
        self.last_directory_errors = directory_errors;
    }
}

/// A request has this long, in all, to arrive; the answer as long to be taken.
const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// Connections answered at once, and from one IP address: a slow client (one that sends
/// a byte a second and never ends its request) holds one thread for `REQUEST_DEADLINE`
/// at most, and cannot hold them all.
const MAX_CONNECTIONS: usize = 32;
const MAX_PER_IP: usize = 4;

/// Answers each connection on a thread of its own, within the limits above.
fn serve(listener: TcpListener, registry: Arc<Registry>) {
    let open: Arc<Mutex<HashMap<IpAddr, usize>>> = Arc::default();
    for stream in listener.incoming().flatten() {
        let Ok(peer) = stream.peer_addr() else {
            continue;
        };
        {
            let mut o = open.lock().unwrap_or_else(PoisonError::into_inner);
            let total: usize = o.values().sum();
            let mine = o.entry(peer.ip()).or_default();
            if total >= MAX_CONNECTIONS || *mine >= MAX_PER_IP {
                continue; // closed at once
            }
            *mine += 1;
        }
        let (registry, open2) = (registry.clone(), open.clone());
        let done = move || {
            let mut o = open2.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(n) = o.get_mut(&peer.ip()) {
                *n -= 1;
                if *n == 0 {
                    o.remove(&peer.ip());
                }
            }
        };
        let spawned = std::thread::Builder::new()
            .name("metrics-answer".into())
            .spawn(move || {
                answer(stream, &registry);
                done();
            });
        if spawned.is_err() {
            let mut o = open.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(n) = o.get_mut(&peer.ip()) {
                *n = n.saturating_sub(1);
            }
        }
    }
}

/// One HTTP request, whatever it asks: the metrics.
fn answer(mut stream: TcpStream, registry: &Registry) {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let _ = stream.set_write_timeout(Some(REQUEST_DEADLINE));
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 8192 {
        // A timeout per read alone lets a byte a second hold the connection for hours.
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let mut body = String::new();
    if encode(&mut body, registry).is_err() {
        return;
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/openmetrics-text; version=1.0.0; \
         charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 50: one slow-loris connection (a byte every 300 ms, never ending its request)
    /// stopped every scrape; now a scrape beside it is answered at once, and the slow one
    /// is cut off at the deadline.
    #[test]
    fn a_slow_client_neither_holds_up_a_scrape_nor_its_connection_for_long() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (_m, registry) = Metrics::new();
        std::thread::spawn(move || serve(listener, registry));
        let mut loris = TcpStream::connect(addr).unwrap();
        let started = Instant::now();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let trickle = {
            let mut loris = loris.try_clone().unwrap();
            let stop = stop.clone();
            std::thread::spawn(move || {
                for b in b"GET /metrics HTTP/1.1\r\nX-Slow: ".iter().cycle() {
                    if stop.load(std::sync::atomic::Ordering::Relaxed)
                        || loris.write_all(&[*b]).is_err()
                    {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(300));
                }
            })
        };
        std::thread::sleep(Duration::from_millis(500));
        let asked = Instant::now();
        let mut scrape = TcpStream::connect(addr).unwrap();
        scrape
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        scrape
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        scrape.read_to_string(&mut answer).unwrap();
        let took = asked.elapsed();
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(answer.contains("framelock_rooms"), "{answer}");
        assert!(took < Duration::from_secs(1), "the scrape took {took:?}");
        // The slow one is answered (and closed) at the deadline, still trickling.
        loris
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut rest = Vec::new();
        let _ = loris.read_to_end(&mut rest);
        let held = started.elapsed();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        trickle.join().unwrap();
        assert!(
            held < REQUEST_DEADLINE + Duration::from_secs(1),
            "the slow client held its connection {held:?}"
        );
    }
}
