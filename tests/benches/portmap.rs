//! Port mapping (`--port-map`): `cargo bench --bench portmap`. Prints:
//! - the time from `framelock host` to a forwarded port, per protocol, against Debian's
//!   miniupnpd in the NAT lab (needs root, as CI has): the host's own measure from the
//!   mapping's start (its log: `port map: PCP ... in N ms`) and from the process's start
//!   (its first log line) to that line; `FRAMELOCK_BENCH_TRIES` hosts each (default 5, 1
//!   in the short form);
//! - what a mapping costs an hour once made, per protocol: the mapping machine on simulated
//!   time against a scripted router that grants the lease asked for (1 h), over
//!   `FRAMELOCK_BENCH_HOURS` hours (default 24, 2 in the short form), IP/UDP and TCP
//!   headers counted.
//!
//! # Results
//!
//! On the shared 2-core machine, Debian 12's miniupnpd 2.3.1 in the lab's router:
//!
//! | protocol | median ms from the mapping's start | median ms from `host` | tries |
//! |---|---|---|---|
//! | auto (PCP) | 68 | 101 | 5 |
//! | NAT-PMP | 43 | 72 | 5 |
//! | UPnP | 155 | 172 | 5 |
//!
//! Once made, over 24 simulated hours (the lease 1 h, renewed at its half):
//!
//! | protocol | requests an hour | bytes an hour |
//! |---|---|---|
//! | PCP | 2 | 360 |
//! | NAT-PMP | 2 | 168 |
//! | UPnP | 2 | 2,664 |

#[path = "../fixtures/mod.rs"]
mod fixtures;
#[path = "../nat_common/mod.rs"]
mod nat_common;
mod procs;
mod smoke;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;
use std::time::{Duration, Instant};

use framelock::portmap::{pcp, MapConfig, MapEvent, Mapper, Protocol, Request};
use nat_common::{Lab, Router};
use procs::stamp;

const GW: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 1);
const OUTSIDE: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 7);

/// A router that grants every request for the lease asked for.
fn answer_udp(to: SocketAddr, bytes: &[u8]) -> Option<(SocketAddr, Vec<u8>)> {
    let gw = SocketAddr::from((GW, 5351));
    if to != gw {
        let location = "HTTP/1.1 200 OK\r\nLOCATION: http://192.168.1.1:5000/d.xml\r\n\r\n";
        return Some((SocketAddr::from((GW, 1900)), location.as_bytes().to_vec()));
    }
    if bytes[0] == pcp::VERSION {
        let mut a = bytes[..pcp::MAP_LEN].to_vec();
        a[1] = 0x81;
        a[44..60].copy_from_slice(&OUTSIDE.to_ipv6_mapped().octets());
        return Some((gw, a));
    }
    if bytes[..2] == [0, 0] {
        let mut a = vec![0, 128, 0, 0, 0, 0, 0, 1];
        a.extend_from_slice(&OUTSIDE.octets());
        return Some((gw, a));
    }
    let mut a = vec![0, 129, 0, 0, 0, 0, 0, 1];
    a.extend_from_slice(&bytes[4..6]);
    a.extend_from_slice(&bytes[4..6]);
    a.extend_from_slice(&bytes[8..12]);
    Some((gw, a))
}

fn answer_http(req: &[u8]) -> Vec<u8> {
    let req = String::from_utf8_lossy(req);
    let body = if req.starts_with("GET ") {
        "<root><device><serviceList><service><serviceType>urn:schemas-upnp-org:service:WANIPConnection:1</serviceType><controlURL>/ctl</controlURL></service></serviceList></device></root>".to_string()
    } else {
        let action = req
            .split('#')
            .nth(1)
            .unwrap_or("")
            .split('"')
            .next()
            .unwrap_or("");
        let args = if action == "GetExternalIPAddress" {
            "<NewExternalIPAddress>203.0.113.7</NewExternalIPAddress>"
        } else {
            ""
        };
        format!("<s:Envelope><s:Body><u:{action}Response>{args}</u:{action}Response></s:Body></s:Envelope>")
    };
    format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Requests and bytes an hour of a mapping held `hours` hours, after it was made.
fn cost(protocol: Protocol, hours: u64) -> (f64, f64) {
    let t0 = Instant::now();
    let internal = SocketAddrV4::new(Ipv4Addr::new(192, 168, 1, 20), 7845);
    let mut cfg = MapConfig::new(internal, Some(GW), [3; 12]);
    cfg.protocols = vec![protocol];
    let mut m = Mapper::new(t0, cfg);
    let mut now = t0;
    let end = t0 + Duration::from_secs(hours * 3600);
    let mut made = None;
    loop {
        while let Some(req) = m.poll_request() {
            match req {
                Request::Udp { to, bytes } => {
                    if let Some((from, a)) = answer_udp(to, &bytes) {
                        m.handle_udp(now, from, &a);
                    }
                }
                Request::Http { id, bytes, .. } => m.handle_http(now, id, Ok(answer_http(&bytes))),
            }
        }
        while let Some(ev) = m.poll_event() {
            match ev {
                MapEvent::Mapped(_) if made.is_none() => made = Some(m.stats()),
                MapEvent::Failed(f) => smoke::fail(format!("{protocol}: {f}")),
                _ => {}
            }
        }
        match m.poll_timeout() {
            Some(t) if t <= end => {
                now = t.max(now);
                m.handle_timeout(now);
            }
            _ => break,
        }
    }
    let Some(first) = made else {
        smoke::fail(format!("{protocol}: no mapping"));
    };
    let s = m.stats();
    let h = hours as f64;
    (
        (s.requests - first.requests) as f64 / h,
        ((s.bytes_sent + s.bytes_received) - (first.bytes_sent + first.bytes_received)) as f64 / h,
    )
}

/// Hosts `tries` times in home 1 with `--port-map mode`: the medians of the mapping's own
/// time and of the time from the process's first log line, in ms.
fn time_to_map(lab: &Lab, dir: &Path, mode: &str, tries: usize) -> (f64, f64) {
    let (mut own, mut whole) = (Vec::new(), Vec::new());
    for i in 0..tries {
        let label = format!("{mode}{i}");
        let args: Vec<String> = [
            "host",
            "--headless",
            "--port-map",
            mode,
            "--lobby-timeout",
            "3",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut child = procs::spawn_in(dir, Some(&lab.home(1)), &label, &args);
        let start = Instant::now();
        let log_path = dir.join(format!("{label}.log"));
        let line = loop {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            if let Some(l) = log
                .lines()
                .find(|l| l.contains("port map: ") && l.contains(" ms"))
            {
                break Some((l.to_string(), log.lines().next().unwrap_or("").to_string()));
            }
            if log.contains("port map: ") && (log.contains("refused") || log.contains("no "))
                || start.elapsed() > Duration::from_secs(15)
            {
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let _ = child.wait();
        let Some((line, first)) = line else {
            smoke::fail(format!(
                "{mode}: no mapping: {}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            ));
        };
        let ms: f64 = line
            .rsplit(" in ")
            .next()
            .and_then(|s| s.trim_end_matches(" ms").trim().parse().ok())
            .unwrap_or_else(|| smoke::fail(format!("no time in {line}")));
        own.push(ms);
        if let (Some(a), Some(b)) = (stamp(&first), stamp(&line)) {
            whole.push((b - a) * 1000.0);
        }
        // The router forgets the mapping before the next try.
        let until = Instant::now() + Duration::from_secs(5);
        while !lab.forwards(1).is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    (median(&mut own), median(&mut whole))
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let tries = smoke::var("FRAMELOCK_BENCH_TRIES", 5usize, 1);
    let hours = smoke::var("FRAMELOCK_BENCH_HOURS", 24u64, 2);
    if tries == 0 || hours == 0 {
        smoke::fail("FRAMELOCK_BENCH_TRIES and FRAMELOCK_BENCH_HOURS must be at least 1");
    }
    let lab = Lab::with_routers(&[Router::upnp(1)]);
    let dir = tempfile::tempdir().unwrap();
    println!("| protocol | median ms from the mapping's start | median ms from `host` | tries |");
    println!("|---|---|---|---|");
    for (name, mode) in [
        ("auto (PCP)", "auto"),
        ("NAT-PMP", "natpmp"),
        ("UPnP", "upnp"),
    ] {
        let (own, whole) = time_to_map(&lab, dir.path(), mode, tries);
        println!("| {name} | {own:.1} | {whole:.0} | {tries} |");
    }
    drop(lab);
    println!();
    println!("| protocol | requests an hour | bytes an hour |");
    println!("|---|---|---|");
    for p in Protocol::ALL {
        let (requests, bytes) = cost(p, hours);
        println!("| {p} | {requests:.0} | {bytes:.0} |");
    }
}
