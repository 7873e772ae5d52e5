//! The numbers the report gathers, as the window's status bar and `--stats-json` show them.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::lockstep::{self, Frame, PeerId};
use crate::net::LinkStats;
use crate::netplay::status::{PeerStatus, Status};
use crate::session::direct::PathKind;
use crate::session::Participant;

use super::{median, Report};

impl Report {
    /// What the window's status bar shows (see `super::status`).
    pub fn status(&self, now: Instant, p: &Participant, link: &LinkStats, play: Play) -> Status {
        let client = p.client();
        let s = client.map(|c| c.stats());
        let paths = p.paths();
        let path_of =
            |seat: Option<PeerId>| paths.iter().find(|(s, _)| *s == seat).map(|(_, k)| *k);
        let peers = match p.endpoint() {
            Some(endpoint) => endpoint
                .server_stats()
                .map(|s| s.peers)
                .unwrap_or_default()
                .into_iter()
                .filter(|peer| Some(peer.peer) != endpoint.local())
                .map(|peer| PeerStatus {
                    player: Some(peer.peer.0 + 1),
                    rtt: peer.rtt,
                    traffic: Some(peer.traffic),
                    path: path_of(Some(peer.peer)),
                })
                .collect(),
            None => vec![PeerStatus {
                player: None,
                rtt: s.as_ref().and_then(|s| s.rtt),
                traffic: None,
                path: path_of(None),
            }],
        };
        let watching = client.filter(|c| c.is_spectator()).map(|c| {
            let buffered = Duration::from_secs_f64(c.ready_frames() as f64 / c.config().fps);
            buffered + c.rtt().unwrap_or_default() / 2
        });
        Status {
            spectators: p.endpoint().map(|e| e.spectator_count()),
            mode: client.map_or_else(Default::default, |c| c.config().mode),
            keyframe_interval: s.as_ref().map_or(0, |s| s.keyframe_interval),
            // A spectator has no lead of its own.
            lead: s
                .as_ref()
                .and_then(|s| s.lead)
                .filter(|_| watching.is_none()),
            watching,
            stalls: s.as_ref().map_or(0, |s| s.stalls),
            wire_out: link.wire_bytes_sent - play.lobby_bytes.0,
            wire_in: link.wire_bytes_received - play.lobby_bytes.1,
            secs: now.saturating_duration_since(play.started).as_secs_f64(),
            peers,
            room: self.room.clone(),
            ahead: play.spec.ahead,
            delay: play.spec.on.then_some(play.spec.delay_now),
            rollbacks_per_s: play.spec.on.then(|| play.spec.rollbacks_per_s(now)),
            rollback_off: play.spec.off.clone(),
            reconnecting: p
                .reconnecting_until()
                .map(|until| until.saturating_duration_since(now)),
            paused: self.paused.as_ref().map(|(who, _)| who.clone()),
        }
    }

    /// The numbers for `--stats-json`.
    pub fn stats_map(
        &self,
        now: Instant,
        p: &Participant,
        link: &LinkStats,
        play: Play,
    ) -> Map<String, Value> {
        let client = p.client();
        let s = client.map(|c| c.stats()).unwrap_or_default();
        let spectator = client.is_some_and(|c| c.is_spectator());
        let mut m = Map::new();
        m.insert(
            "kind".into(),
            json!(match p {
                Participant::Host(_) => "host",
                Participant::Join(_) if spectator => "spectate",
                Participant::Join(_) => "join",
            }),
        );
        m.insert("first_frame".into(), json!(play.first));
        m.insert("spectator".into(), json!(spectator));
        if let Some(endpoint) = p.endpoint() {
            m.insert("spectators".into(), json!(endpoint.spectator_count()));
        }
        if spectator {
            m.insert("jumps".into(), json!(self.counters.jumps));
            let delay = self.counters.delay_ms.clone();
            m.insert(
                "delay_ms".into(),
                json!({ "median": median(&delay), "max": delay.iter().copied().fold(0.0, f64::max) }),
            );
        }
        m.insert(
            "players_joined".into(),
            json!(self
                .counters
                .players_joined
                .iter()
                .map(|(seat, frame)| json!({"slot": seat.0, "from_frame": frame.0}))
                .collect::<Vec<_>>()),
        );
        m.insert("slot".into(), json!(client.map_or(0, |c| c.me().0)));
        if let Some(room) = &self.room {
            m.insert("room".into(), json!(room));
        }
        m.insert("stalls".into(), json!(s.stalls));
        m.insert("stall_ms".into(), json!(s.stalled.as_secs_f64() * 1000.0));
        m.insert(
            "input_latency_frames".into(),
            json!({ "median": s.latency.median(), "p95": s.latency.p95() }),
        );
        m.insert(
            "perceived_latency_frames".into(),
            json!({ "median": s.perceived.median(), "p95": s.perceived.p95() }),
        );
        m.insert(
            "rollback".into(),
            json!({
                "on": play.spec.on,
                "delay_frames": play.spec.delay_now,
                "off": play.spec.off,
            }),
        );
        m.insert("rtt_ms".into(), json!(self.counters.rtt_median()));
        m.insert(
            "mode".into(),
            json!(client.map_or("strict", |c| c.config().mode.as_str())),
        );
        if let Some(endpoint) = p.endpoint() {
            let stats = endpoint.server_stats();
            m.insert("placement".into(), placement_json(stats.as_ref()));
        }
        m.insert("keyframe_interval".into(), json!(s.keyframe_interval));
        m.insert("lead".into(), json!(s.lead));
        m.insert("pace".into(), json!(s.pace));
        let dropped = link.packets_dropped_invalid
            + s.traffic.packets_dropped_invalid
            + p.endpoint().map_or(0, |endpoint| {
                endpoint.stats().dropped_invalid
                    + endpoint
                        .server_stats()
                        .map_or(0, |s| s.traffic.packets_dropped_invalid)
            });
        m.insert("bytes_sent".into(), json!(link.wire_bytes_sent));
        m.insert("bytes_received".into(), json!(link.wire_bytes_received));
        // The span the bytes after the lobby were counted over: play, the wait for the first
        // frames and the goodbye (wall_s covers play only).
        m.insert(
            "session_s".into(),
            json!(now.saturating_duration_since(play.started).as_secs_f64()),
        );
        m.insert("lobby_bytes_sent".into(), json!(play.lobby_bytes.0));
        m.insert("lobby_bytes_received".into(), json!(play.lobby_bytes.1));
        m.insert("payload_bytes_sent".into(), json!(link.bytes_sent));
        m.insert("payload_bytes_received".into(), json!(link.bytes_received));
        m.insert("packets_sent".into(), json!(link.packets_sent));
        m.insert("packets_received".into(), json!(link.packets_received));
        m.insert("packets_dropped_invalid".into(), json!(dropped));
        let dropped_auth = match (p.endpoint(), p.seat()) {
            (Some(endpoint), _) => endpoint.stats().dropped_auth,
            (None, Some(seat)) => seat.stats().dropped_auth,
            (None, None) => 0,
        };
        m.insert("packets_dropped_auth".into(), json!(dropped_auth));
        if let Some(e) = p.endpoint().map(|e| e.stats()) {
            m.insert("chat_relayed".into(), json!(e.chat_relayed));
            m.insert("chat_flood_dropped".into(), json!(e.chat_flood_dropped));
        }
        if let Some(n) = link.netsim {
            m.insert(
                "netsim".into(),
                json!({
                    "pushed": n.pushed,
                    "dropped": n.dropped,
                    "duplicated": n.duplicated,
                    "reordered": n.reordered,
                    "corrupted": n.corrupted,
                    "released": n.released,
                    "released_late": n.released_late,
                    "late_max_ms": n.late_max.as_secs_f64() * 1000.0,
                }),
            );
        }
        m.insert("desyncs_detected".into(), json!(self.counters.desyncs));
        let desyncs: Vec<u32> = self.counters.desync_frames.iter().map(|f| f.0).collect();
        m.insert("desync_frames".into(), json!(desyncs));
        m.insert("resyncs".into(), json!(self.counters.resyncs));
        m.insert("resync_ms".into(), json!(self.counters.resync_ms));
        m.insert(
            "connections_lost".into(),
            json!(self.counters.connections_lost),
        );
        m.insert("reconnects".into(), json!(self.counters.reconnects));
        // A room hosted by a player: a joiner's path to the host; the host's is "direct"
        // only if every joiner's is.
        let paths = p.paths();
        if !paths.is_empty() {
            let direct = paths.iter().all(|(_, k)| *k == PathKind::Direct);
            let path = if direct { "direct" } else { "relayed" };
            m.insert("path".into(), json!(path));
            m.insert(
                "paths".into(),
                json!(paths
                    .iter()
                    .map(|(seat, k)| json!({"slot": seat.map(|s| s.0), "path": k.as_str()}))
                    .collect::<Vec<_>>()),
            );
            if let Some(after) = p.first_direct() {
                m.insert(
                    "direct_after_ms".into(),
                    json!(after.as_secs_f64() * 1000.0),
                );
            }
        }
        m.insert("reconnect_ms".into(), json!(self.counters.reconnect_ms));
        let frame = client.map_or(Frame::ZERO, |c| c.frame());
        m.insert(
            "players_left".into(),
            json!(self
                .counters
                .players_left
                .iter()
                // A player who left after this peer's last frame (it reached its frame
                // limit first and said goodbye) ended with the session: none of this peer's
                // frames ran with its input neutral.
                .filter(|&&(_, f)| f < frame)
                .map(|(seat, frame)| json!({"slot": seat.0, "from_frame": frame.0}))
                .collect::<Vec<_>>()),
        );
        m.insert(
            "pauses".into(),
            json!(self
                .pauses
                .iter()
                .map(|(slot, at, secs)| json!({"by": slot, "at": at, "secs": secs}))
                .collect::<Vec<_>>()),
        );
        m
    }
}

/// The play-time facts the status line and stats need from the driver.
#[derive(Clone, Copy)]
pub(crate) struct Play<'a> {
    pub started: Instant,
    pub lobby_bytes: (u64, u64),
    pub first: u32,
    pub spec: &'a crate::netplay::speculation::Shown,
}

/// Per player, where the lockstep server put its samples (optimistic mode: how many came
/// later than its own offset, by how many frames, and how many equal ones were merged to
/// drain a backlog; all zero in strict mode), for `--stats-json`.
pub(in crate::netplay) fn placement_json(
    stats: Option<&lockstep::ServerStats>,
) -> serde_json::Value {
    let Some(stats) = stats else {
        return serde_json::json!([]);
    };
    serde_json::json!(stats
        .placements
        .iter()
        .map(|(peer, p)| serde_json::json!({
            "slot": peer.0,
            // Its offset now, if it still plays.
            "offset": stats.peers.iter().find(|s| s.peer == *peer).map(|s| s.lead),
            "placed_late": p.late,
            "placed_late_frames": {
                "median": p.late_frames.median(),
                "p95": p.late_frames.p95(),
            },
            "merged": p.merged,
        }))
        .collect::<Vec<_>>())
}
