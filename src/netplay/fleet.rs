//! A player's side of a fleet of servers: where a room is held (`join --room`, `spectate`),
//! and `framelock servers`: the fleet's servers with their load and the round trip to each
//! from this machine.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::net::Link;
use crate::session::msg::{Msg, RoomMsg, ServerInfo};
use crate::session::{SessionError, HANDSHAKE_TIMEOUT, HELLO_INTERVAL};

use super::address::resolve;
use super::NetplayError;

/// Longest a room's lookup waits: a server of an older protocol, or a lone one that does
/// not answer it, is then asked directly (its Hello says why not, if it refuses).
const LOCATE_WAIT: Duration = Duration::from_millis(1500);
/// Round trips measured to each server; the least is shown.
const PINGS: usize = 3;

/// The server that holds `room`, asking `addr` (any server of its fleet): `addr` itself if
/// it holds the room, has no fleet, or does not answer.
pub fn locate(addr: SocketAddr, room: &str) -> Result<SocketAddr, NetplayError> {
    let mut link = Link::client(addr, None)?;
    let start = Instant::now();
    let mut asked: Option<Instant> = None;
    while start.elapsed() < LOCATE_WAIT {
        let now = Instant::now();
        if asked.is_none_or(|t| now >= t + HELLO_INTERVAL) {
            asked = Some(now);
            let msg = Msg::Room(RoomMsg::Locate {
                room: room.to_string(),
            });
            link.send(now, addr, msg.encode(0));
        }
        for (from, bytes) in link.recv(now)? {
            if from != addr {
                continue;
            }
            match Msg::decode(&bytes) {
                Ok((_, Msg::Room(RoomMsg::Moved { server, .. }))) if server.is_empty() => {
                    return Ok(addr)
                }
                Ok((_, Msg::Room(RoomMsg::Moved { server, .. }))) => {
                    let to = resolve(&server)?;
                    tracing::info!("netplay: room {room} is on {server}; joining it there");
                    return Ok(to);
                }
                // No such room, or a refusal: the Hello to `addr` tells the player.
                Ok(_) => return Ok(addr),
                Err(_) => {}
            }
        }
        link.wait_until(now, Some(now + Duration::from_millis(20)))?;
    }
    Ok(addr)
}

/// A server as `framelock servers` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerRow {
    pub info: ServerInfo,
    /// The least round trip measured from here; `None`: it did not answer.
    pub rtt: Option<Duration>,
}

/// `framelock servers`: the fleet's servers as `server` (any of them) knows them, each
/// with the round trip measured from this machine.
pub fn list_servers(server: &str) -> Result<Vec<ServerRow>, NetplayError> {
    let addr = resolve(server)?;
    let mut link = Link::client(addr, None)?;
    let mut servers: Vec<ServerInfo> = Vec::new();
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let mut total = None;
    let mut asked: Option<Instant> = None;
    while total.is_none_or(|t| servers.len() < usize::from(t)) {
        let now = Instant::now();
        if now >= deadline {
            return Err(NetplayError::Join(SessionError::NoAnswer { addr, secs: 5 }));
        }
        if asked.is_none_or(|t| now >= t + HELLO_INTERVAL) {
            asked = Some(now);
            let first = servers.len().min(usize::from(u16::MAX)) as u16;
            link.send(
                now,
                addr,
                Msg::Room(RoomMsg::ListServers { first }).encode(0),
            );
        }
        for (from, bytes) in link.recv(now)? {
            if from != addr {
                continue;
            }
            match Msg::decode(&bytes) {
                Ok((
                    _,
                    Msg::Room(RoomMsg::Servers {
                        total: t,
                        first,
                        servers: page,
                    }),
                )) if usize::from(first) == servers.len() => {
                    total = Some(if page.is_empty() {
                        servers.len() as u16
                    } else {
                        t
                    });
                    servers.extend(page);
                    asked = None;
                }
                Ok((_, Msg::Refuse(reason))) => {
                    return Err(NetplayError::Join(SessionError::Refused(reason)))
                }
                _ => {}
            }
        }
        link.wait_until(now, Some(now + Duration::from_millis(20)))?;
    }
    // A lone server names no public address: it is the one asked.
    for s in &mut servers {
        if s.server.is_empty() {
            s.server = addr.to_string();
        }
    }
    let rtts = measure(&mut link, &servers)?;
    Ok(servers
        .into_iter()
        .zip(rtts)
        .map(|(info, rtt)| ServerRow { info, rtt })
        .collect())
}

/// The least of `PINGS` round trips to each server (an empty `ListServers` page is the
/// ping), all measured at once.
fn measure(link: &mut Link, servers: &[ServerInfo]) -> Result<Vec<Option<Duration>>, NetplayError> {
    let addrs: Vec<Option<SocketAddr>> = servers
        .iter()
        .map(|s| s.server.parse::<SocketAddr>().ok())
        .collect();
    let mut best: Vec<Option<Duration>> = vec![None; servers.len()];
    let ping = Msg::Room(RoomMsg::ListServers { first: u16::MAX }).encode(0);
    for _ in 0..PINGS {
        let sent = Instant::now();
        for a in addrs.iter().flatten() {
            link.send(sent, *a, ping.clone());
        }
        let mut waiting: Vec<bool> = addrs.iter().map(Option::is_some).collect();
        let until = sent + Duration::from_millis(1000);
        while waiting.iter().any(|w| *w) && Instant::now() < until {
            let now = Instant::now();
            for (from, bytes) in link.recv(now)? {
                if !matches!(
                    Msg::decode(&bytes),
                    Ok((_, Msg::Room(RoomMsg::Servers { .. })))
                ) {
                    continue;
                }
                for (i, a) in addrs.iter().enumerate() {
                    if *a == Some(from) && waiting[i] {
                        waiting[i] = false;
                        let rtt = now.duration_since(sent);
                        best[i] = Some(best[i].map_or(rtt, |b: Duration| b.min(rtt)));
                    }
                }
            }
            link.wait_until(now, Some(now + Duration::from_millis(2)))?;
        }
    }
    Ok(best)
}

pub fn servers_table(rows: &[ServerRow]) -> String {
    let mut out = format!(
        "{:<40} {:<16} {:>11} {:>7} {:>9}\n",
        "SERVER", "REGION", "ROOMS", "PLAYERS", "RTT"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<40} {:<16} {:>11} {:>7} {:>9}\n",
            r.info.server,
            if r.info.region.is_empty() {
                "-"
            } else {
                &r.info.region
            },
            format!("{}/{}", r.info.rooms, r.info.max_rooms),
            r.info.players,
            match r.rtt {
                Some(d) => format!("{:.1} ms", d.as_secs_f64() * 1000.0),
                None => "no answer".into(),
            }
        ));
    }
    out
}

pub fn servers_json(rows: &[ServerRow]) -> serde_json::Value {
    json!(rows
        .iter()
        .map(|r| json!({
            "server": r.info.server,
            "region": r.info.region,
            "rooms": r.info.rooms,
            "max_rooms": r.info.max_rooms,
            "players": r.info.players,
            "rtt_ms": r.rtt.map(|d| d.as_secs_f64() * 1000.0),
        }))
        .collect::<Vec<_>>())
}
