//! Port mapping as the netplay commands use it (`net::portmap` does the asking): started
//! for a host's socket (and for a player's in a room a player hosts, whose direct path a
//! forwarded port helps), its mapped address handed to the participant, and its words in
//! the lobby, the log and `--stats-json`. Words and glue only: it must not import the
//! lobby, the feed or the commands, which call it.

use std::net::{IpAddr, SocketAddr};

use serde_json::{json, Value};

use crate::net::portmap::{PortMap, PortMapMode, Report, Status};
use crate::net::random_bytes;
use crate::portmap::{duration_words, MapEvent};
use crate::session::Participant;

/// Starts mapping UDP `port` unless `mode` is off.
pub(super) fn start(mode: PortMapMode, port: u16) -> Option<PortMap> {
    if mode == PortMapMode::Off {
        tracing::debug!("netplay: port map: off (--port-map off)");
        return None;
    }
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(&random_bytes()[..12]);
    let map = PortMap::start(port, mode, nonce);
    if let Status::NoAddress = map.report().status {
        tracing::info!("netplay: port map: this machine has no IPv4 address to map a port to");
    }
    Some(map)
}

/// What to do when no router forwards `port` for a host (it follows "to be joined from
/// the internet, ").
pub(super) fn hint(report: &Report, port: u16) -> String {
    let here = report.internal.map_or("this machine".to_string(), |a| {
        format!("this machine ({})", a.ip())
    });
    format!(
        "forward udp port {port} to {here} in your router's settings (or turn its UPnP on), \
         or host through a server with --server"
    )
}

/// The lobby's line: `port map: UPnP 203.0.113.7:7845 (lease 1 h)`, or why there is none.
pub(super) fn line(report: &Report) -> String {
    match &report.status {
        Status::Trying => "port map: asking the router...".into(),
        Status::Mapped(m) => format!("port map: {m}"),
        Status::Failed(f) => format!("port map: {f}"),
        Status::NoAddress => "port map: no IPv4 address to map".into(),
        Status::Removed => "port map: removed".into(),
    }
}

/// Moves the mapping's news to the participant (a mapped address is a direct-path
/// candidate in a room hosted by a player) and the log. `port` is the mapped socket's,
/// `host` whether this is a host waiting to be joined (whose failure gets a hint).
pub(super) fn pump(
    map: &PortMap,
    participant: &mut Participant,
    port: u16,
    host: bool,
) -> Vec<MapEvent> {
    let mut events = Vec::new();
    while let Some(ev) = map.poll_event() {
        let report = map.report();
        match &ev {
            MapEvent::Mapped(m) => {
                let after = report
                    .after
                    .map(|d| format!(" in {} ms", d.as_millis()))
                    .unwrap_or_default();
                tracing::info!("netplay: port map: {m}{after}");
                if m.behind_another_nat() {
                    tracing::warn!(
                        "netplay: port map: the router's outside address {} is private: \
                         another router or your provider's NAT sits beyond it, so only \
                         players on that network reach it",
                        m.external.ip()
                    );
                }
                participant.handle_mapped(Some(SocketAddr::V4(m.external)));
            }
            MapEvent::Renewed(m) => tracing::debug!("netplay: port map renewed: {m}"),
            MapEvent::Failed(f) if host => {
                tracing::warn!("netplay: port map: {f}");
                tracing::info!(
                    "netplay: to be joined from the internet, {}",
                    hint(&report, port)
                );
            }
            MapEvent::Failed(f) => tracing::info!("netplay: port map: {f}"),
            MapEvent::Lost { why } => {
                tracing::warn!("netplay: port map lost ({why}); asking the router again");
                participant.handle_mapped(None);
            }
            MapEvent::Removed { confirmed: true } => {
                tracing::info!("netplay: port map removed from the router")
            }
            MapEvent::Removed { confirmed: false } => tracing::warn!(
                "netplay: port map: the router did not confirm the removal; it ends with \
                 its lease"
            ),
        }
        events.push(ev);
    }
    events
}

/// Removes the mapping (waits for the router, briefly) and logs it.
pub(super) fn close(map: &mut PortMap, participant: &mut Participant, port: u16) {
    map.close();
    pump(map, participant, port, false);
}

/// The session ends before its game (the lobby failed or was left): the mapping is
/// removed now, and the log says so.
pub(super) fn abandon(map: Option<PortMap>) {
    let Some(mut map) = map else {
        return;
    };
    map.close();
    while let Some(ev) = map.poll_event() {
        if let MapEvent::Removed { confirmed } = ev {
            tracing::info!(
                "netplay: port map removed from the router{}",
                if confirmed {
                    ""
                } else {
                    " (unconfirmed: it ends with its lease)"
                }
            );
        }
    }
}

/// `--stats-json`'s `port_map`.
pub(super) fn stats(map: Option<&PortMap>) -> Value {
    let Some(map) = map else {
        return json!({ "state": "off" });
    };
    let r = map.report();
    let mut v = json!({
        "internal": r.internal.map(|a| a.to_string()),
        "gateway": r.gateway.map(|g| IpAddr::V4(g).to_string()),
        "bytes_sent": r.stats.bytes_sent,
        "bytes_received": r.stats.bytes_received,
        "requests": r.stats.requests,
        "after_ms": r.after.map(|d| d.as_secs_f64() * 1000.0),
    });
    let fields = match &r.status {
        Status::Trying => json!({ "state": "trying" }),
        Status::Mapped(m) => json!({
            "state": "mapped",
            "protocol": m.protocol.as_str(),
            "external": m.external.to_string(),
            "lease_secs": m.lease.map(|d| d.as_secs()),
            "lease": m.lease.map_or("permanent".into(), duration_words),
        }),
        Status::Failed(f) => json!({ "state": "failed", "why": f.to_string() }),
        Status::NoAddress => json!({ "state": "failed", "why": "no IPv4 address" }),
        Status::Removed => match r.last {
            Some(m) => json!({
                "state": "removed",
                "protocol": m.protocol.as_str(),
                "external": m.external.to_string(),
            }),
            None => json!({ "state": "removed" }),
        },
    };
    if let (Some(v), Value::Object(f)) = (v.as_object_mut(), fields) {
        v.extend(f);
    }
    v
}
