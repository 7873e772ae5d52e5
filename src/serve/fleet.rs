//! A fleet's directory as one server sees it, sans-IO: what [`Rooms`](super::Rooms) asks
//! the directory to write ([`DirOp`]), what the directory tells it ([`DirNews`]), the other
//! servers' rooms and load it answers from ([`Fleet`]), and the entries' JSON layout.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::lockstep::Mode;
use crate::session::msg::{RoomInfo, ServerInfo, MAX_REGION, MAX_SERVER};

use super::names::valid_room_name;

/// How often each server rewrites its heartbeat.
pub const HEARTBEAT: Duration = Duration::from_secs(5);
/// A server whose heartbeat has not changed for this long is gone: the others drop its
/// rooms from the directory (so a server that dies leaves it within `SILENT` + a check).
pub const SILENT: Duration = Duration::from_secs(15);

/// Key prefix of a room's entry: `room.NAME`.
pub const ROOM_PREFIX: &str = "room.";
/// Key prefix of a server's heartbeat: `server.ID` (see [`server_key`]).
pub const SERVER_PREFIX: &str = "server.";

/// What a server asks its directory client to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirOp {
    /// Take the room's name, if no server holds it (create-if-absent); answered by
    /// [`DirNews::Claimed`], [`DirNews::Taken`] or [`DirNews::Unreachable`].
    Claim(RoomInfo),
    /// The room's entry changed (players, spectators, state).
    Update(RoomInfo),
    /// The room closed.
    Remove(String),
    /// This server's load, for its heartbeat.
    Load(ServerInfo),
}

/// What the directory client tells its server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirNews {
    /// The name is this server's.
    Claimed(String),
    /// Another server holds the name.
    Taken { room: String, server: String },
    /// The directory could not be asked: the room opens here alone, and is written to the
    /// directory when it is back.
    Unreachable(String),
    /// A room of another server, new or changed.
    Room(RoomInfo),
    /// A room of another server is gone.
    RoomGone(String),
    /// A server's heartbeat.
    Server(ServerInfo),
    /// A server left, or went silent.
    ServerGone(String),
    /// The directory is reachable (or not).
    Online(bool),
}

/// The fleet: this server's address and region, the other servers' rooms and every
/// server's latest heartbeat.
#[derive(Clone, Debug, Default)]
pub struct Fleet {
    /// This server's public address, "ADDR:PORT".
    pub me: String,
    /// Its region.
    pub region: String,
    /// Other servers' rooms by name (`server` and `region` filled in).
    pub rooms: BTreeMap<String, RoomInfo>,
    /// Servers by address, this one's included once it beat.
    pub servers: BTreeMap<String, ServerInfo>,
    /// Whether the directory answers.
    pub online: bool,
}

impl Fleet {
    pub fn new(me: String, region: String) -> Fleet {
        Fleet {
            me,
            region,
            online: true,
            ..Fleet::default()
        }
    }

    /// Takes in one piece of news (the claim answers are [`Rooms`](super::Rooms)' business).
    pub fn apply(&mut self, news: &DirNews) {
        match news {
            DirNews::Room(info) if info.server != self.me => {
                self.rooms.insert(info.name.clone(), info.clone());
            }
            DirNews::RoomGone(name) => {
                self.rooms.remove(name);
            }
            DirNews::Server(s) => {
                self.servers.insert(s.server.clone(), s.clone());
            }
            DirNews::ServerGone(server) => {
                self.servers.remove(server);
                self.rooms.retain(|_, r| &r.server != server);
            }
            DirNews::Online(up) => self.online = *up,
            _ => {}
        }
    }

    /// Another server of this region with a seat for a new room, the least loaded first.
    pub fn spare_server(&self) -> Option<&ServerInfo> {
        self.servers
            .values()
            .filter(|s| s.server != self.me && s.region == self.region && s.rooms < s.max_rooms)
            .min_by_key(|s| (u32::from(s.rooms) * 1000) / u32::from(s.max_rooms.max(1)))
    }
}

/// A room's entry in the directory bucket (JSON), under `room.NAME`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomEntry {
    pub server: String,
    pub region: String,
    pub game: String,
    pub core: String,
    pub mode: String,
    pub seats: u8,
    pub players: u8,
    pub spectators: u8,
    pub password: bool,
    /// "lobby" or "playing".
    pub state: String,
    /// When it opened, seconds since the Unix epoch (its age is counted from this).
    pub opened: u64,
}

/// A server's heartbeat in the directory bucket (JSON), under `server.ID`, rewritten every
/// [`HEARTBEAT`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerEntry {
    pub server: String,
    pub region: String,
    pub rooms: u16,
    pub max_rooms: u16,
    pub players: u16,
}

impl RoomEntry {
    pub fn new(info: &RoomInfo, now_unix: u64) -> RoomEntry {
        RoomEntry {
            server: info.server.clone(),
            region: info.region.clone(),
            game: info.content.clone(),
            core: info.core.clone(),
            mode: info.mode.as_str().to_string(),
            seats: info.seats,
            players: info.players,
            spectators: info.spectators,
            password: info.password,
            state: if info.playing { "playing" } else { "lobby" }.into(),
            opened: now_unix.saturating_sub(u64::from(info.age_secs)),
        }
    }

    /// The entry under `key`, checked: a name that is no room name, an address that is not
    /// one, impossible seat counts and unknown words are refused with why.
    pub fn parse(key: &str, value: &[u8], now_unix: u64) -> Result<RoomInfo, String> {
        let name = key
            .strip_prefix(ROOM_PREFIX)
            .filter(|n| valid_room_name(n))
            .ok_or_else(|| format!("key {key:?} is not room.NAME"))?;
        let e: RoomEntry = serde_json::from_slice(value).map_err(|e| e.to_string())?;
        check_server(&e.server)?;
        check_region(&e.region)?;
        let max = crate::input::MAX_PLAYERS as u8;
        if e.seats == 0 || e.seats > max || e.players > e.seats {
            return Err(format!("{} players in {} seats", e.players, e.seats));
        }
        let mode = match e.mode.as_str() {
            "strict" => Mode::Strict,
            "optimistic" => Mode::Optimistic,
            m => return Err(format!("mode {m:?} is neither strict nor optimistic")),
        };
        let playing = match e.state.as_str() {
            "lobby" => false,
            "playing" => true,
            s => return Err(format!("state {s:?} is neither lobby nor playing")),
        };
        Ok(RoomInfo {
            name: name.to_string(),
            content: e.game,
            core: e.core,
            players: e.players,
            seats: e.seats,
            password: e.password,
            playing,
            age_secs: now_unix.saturating_sub(e.opened).min(u64::from(u32::MAX)) as u32,
            spectators: e.spectators,
            mode,
            region: e.region,
            server: e.server,
        })
    }
}

impl ServerEntry {
    pub fn new(info: &ServerInfo) -> ServerEntry {
        ServerEntry {
            server: info.server.clone(),
            region: info.region.clone(),
            rooms: info.rooms,
            max_rooms: info.max_rooms,
            players: info.players,
        }
    }

    /// The heartbeat under `key`, checked as [`RoomEntry::parse`] does.
    pub fn parse(key: &str, value: &[u8]) -> Result<ServerInfo, String> {
        let e: ServerEntry = serde_json::from_slice(value).map_err(|e| e.to_string())?;
        check_server(&e.server)?;
        check_region(&e.region)?;
        if key != server_key(&e.server) {
            return Err(format!("key {key:?} does not name server {}", e.server));
        }
        Ok(ServerInfo {
            server: e.server,
            region: e.region,
            rooms: e.rooms,
            max_rooms: e.max_rooms,
            players: e.players,
        })
    }
}

/// A server's heartbeat key: `server.` and its address with every character a key may not
/// hold (`:`, `[`, `]`, and `.` which separates key tokens) as `_`.
pub fn server_key(server: &str) -> String {
    let id: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{SERVER_PREFIX}{id}")
}

/// A room's key: `room.NAME`.
pub fn room_key(room: &str) -> String {
    format!("{ROOM_PREFIX}{room}")
}

/// A public address as a fleet names its servers: "ADDR:PORT", a real port on a real host.
pub fn check_server(server: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = server
        .parse()
        .map_err(|_| format!("server {server:?} is not ADDR:PORT"))?;
    if addr.port() == 0 || addr.ip().is_unspecified() || addr.ip().is_multicast() {
        return Err(format!("server {server:?} is no address players can reach"));
    }
    if server.len() > MAX_SERVER {
        return Err(format!(
            "server {server:?} is longer than {MAX_SERVER} bytes"
        ));
    }
    Ok(addr)
}

/// A region name: up to 16 letters, digits, '-' or '_' (or none).
pub fn check_region(region: &str) -> Result<(), String> {
    let ok = region.len() <= MAX_REGION
        && region
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "region {region:?} is not up to {MAX_REGION} letters, digits, '-' or '_'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room() -> RoomInfo {
        RoomInfo {
            name: "den".into(),
            content: "airstriker.md".into(),
            core: "lightcycles".into(),
            players: 1,
            seats: 2,
            password: true,
            playing: true,
            age_secs: 30,
            spectators: 2,
            mode: Mode::Optimistic,
            region: "eu".into(),
            server: "127.0.0.1:7845".into(),
        }
    }

    #[test]
    fn a_room_entry_reads_back_as_it_was_written() {
        let e = RoomEntry::new(&room(), 1000);
        let json = serde_json::to_vec(&e).unwrap();
        assert_eq!(RoomEntry::parse("room.den", &json, 1000), Ok(room()));
    }

    #[test]
    fn malformed_entries_are_refused_with_why() {
        let good = serde_json::to_value(RoomEntry::new(&room(), 1000)).unwrap();
        let with = |k: &str, v: serde_json::Value| {
            let mut e = good.clone();
            e[k] = v;
            serde_json::to_vec(&e).unwrap()
        };
        let cases = [
            ("room.den", b"not json".to_vec(), "expected"),
            (
                "room.d e",
                serde_json::to_vec(&good).unwrap(),
                "not room.NAME",
            ),
            (
                "room.den",
                with("server", "nowhere".into()),
                "not ADDR:PORT",
            ),
            (
                "room.den",
                with("server", "0.0.0.0:7845".into()),
                "no address",
            ),
            ("room.den", with("seats", 0.into()), "seats"),
            ("room.den", with("players", 9.into()), "seats"),
            ("room.den", with("mode", "fast".into()), "mode"),
            ("room.den", with("state", "gone".into()), "state"),
            ("room.den", with("region", "a b".into()), "region"),
        ];
        for (key, value, why) in cases {
            let e = RoomEntry::parse(key, &value, 1000).unwrap_err();
            assert!(e.contains(why), "{key}: {e}");
        }
    }

    #[test]
    fn server_keys_hold_only_key_characters() {
        assert_eq!(server_key("127.0.0.1:7845"), "server.127_0_0_1_7845");
        assert_eq!(server_key("[::1]:7845"), "server.___1__7845");
        let s = ServerInfo {
            server: "[::1]:7845".into(),
            region: String::new(),
            rooms: 1,
            max_rooms: 2,
            players: 3,
        };
        let json = serde_json::to_vec(&ServerEntry::new(&s)).unwrap();
        assert_eq!(ServerEntry::parse("server.___1__7845", &json), Ok(s));
        assert!(ServerEntry::parse("server.other", &json).is_err());
    }

    #[test]
    fn a_full_server_sends_new_rooms_to_the_least_loaded_of_its_region() {
        let mut f = Fleet::new("127.0.0.1:1".into(), "eu".into());
        for (server, region, rooms) in [
            ("127.0.0.1:1", "eu", 0),
            ("127.0.0.1:2", "eu", 9),
            ("127.0.0.1:3", "eu", 4),
            ("127.0.0.1:4", "us", 0),
            ("127.0.0.1:5", "eu", 10),
        ] {
            f.apply(&DirNews::Server(ServerInfo {
                server: server.into(),
                region: region.into(),
                rooms,
                max_rooms: 10,
                players: 0,
            }));
        }
        assert_eq!(f.spare_server().unwrap().server, "127.0.0.1:3");
    }
}
