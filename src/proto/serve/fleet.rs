//! A fleet's directory as one server sees it, sans-IO: what [`Rooms`](super::Rooms) asks
//! the directory to write ([`DirOp`]), what the directory tells it ([`DirNews`]), the other
//! servers' rooms and load it answers from ([`Fleet`]), and the entries' JSON layout.
//!
//! # Signed entries
//! Anyone who may write the NATS bucket could write a `room.NAME` entry naming any address,
//! and every server would send that room's joiners there. So a fleet may share a secret
//! that NATS never sees, [`FleetKey`] (`serve --directory-key FILE`, the same file on
//! every server). Its servers then put a `"tag"` field in every entry they write: 64 hex
//! digits, BLAKE3 in keyed mode (a MAC) under a key derived from the file, over the bucket
//! key, a NUL byte, and the entry's JSON without its tag, as [`serde_json`] writes the
//! fields read here (so fields a reader does not know are not covered, and not used).
//! A server with a key skips entries whose tag is missing or does not verify
//! ([`Refused::Unverified`]): they are never listed, redirected to, or taken as holding a
//! name. Without a key entries are written without a tag and every well-formed entry is
//! believed (tags are ignored). A tag binds an entry to its key, not to a time: a writer
//! without the secret can only put back an entry a server once wrote under that key.
//!
//! Even a verified entry only sends joiners to an address a server could have
//! ([`check_server`]).

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
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
    /// The MAC of the entry without it, when the fleet has a key (see the module's doc).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
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
    /// As [`RoomEntry::tag`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// Context of the BLAKE3 key derivation from a `--directory-key` file's bytes.
const KEY_CONTEXT: &str = "framelock 2026 fleet directory entry tags";

/// The fleet's shared secret, which signs directory entries (see the module's doc).
#[derive(Clone)]
pub struct FleetKey([u8; 32]);

impl fmt::Debug for FleetKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FleetKey(..)")
    }
}

impl FleetKey {
    /// Fewest bytes a key file holds (trailing whitespace not counted).
    pub const MIN_BYTES: usize = 32;

    /// The key from a key file's bytes: raw random bytes or text (hex, base64), its
    /// trailing whitespace ignored so that an editor's newline does not change the key.
    pub fn from_secret(secret: &[u8]) -> Result<FleetKey, String> {
        let end = secret
            .iter()
            .rposition(|b| !b.is_ascii_whitespace())
            .map_or(0, |i| i + 1);
        if end < Self::MIN_BYTES {
            return Err(format!(
                "holds {end} bytes; a fleet key is at least {} random bytes \
                 (make one with `head -c 32 /dev/urandom > fleet.key`)",
                Self::MIN_BYTES
            ));
        }
        Ok(FleetKey(blake3::derive_key(KEY_CONTEXT, &secret[..end])))
    }

    fn mac(&self, key: &str, body: &[u8]) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&self.0);
        h.update(key.as_bytes()).update(&[0]).update(body);
        h.finalize()
    }

    /// The tag of `body` (an entry's JSON without its tag) under bucket key `key`.
    pub fn tag(&self, key: &str, body: &[u8]) -> String {
        self.mac(key, body).to_hex().to_string()
    }

    /// Whether `tag` is `body`'s under `key` (compared in constant time).
    pub fn verify(&self, key: &str, body: &[u8], tag: &str) -> bool {
        blake3::Hash::from_hex(tag).is_ok_and(|t| t == self.mac(key, body))
    }
}

/// Why an entry was not believed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// It does not parse, or says what cannot be.
    Malformed(String),
    /// The fleet has a key and the entry's tag is missing or wrong: not a fleet server's.
    Unverified(&'static str),
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Malformed(why) => f.write_str(why),
            Refused::Unverified(why) => f.write_str(why),
        }
    }
}

impl From<String> for Refused {
    fn from(why: String) -> Refused {
        Refused::Malformed(why)
    }
}

/// An entry's JSON, with its tag when the fleet has a key.
fn sign<T: Serialize>(
    entry: &T,
    set_tag: impl FnOnce(&T, String) -> T,
    key: &str,
    fleet: Option<&FleetKey>,
) -> Vec<u8> {
    let body = serde_json::to_vec(entry).unwrap_or_default();
    match fleet {
        Some(k) => serde_json::to_vec(&set_tag(entry, k.tag(key, &body))).unwrap_or_default(),
        None => body,
    }
}

/// Checks the tag an entry came with (taken out of it), when the fleet has a key.
fn verify<T: Serialize>(
    entry: &T,
    tag: Option<String>,
    key: &str,
    fleet: Option<&FleetKey>,
) -> Result<(), Refused> {
    let Some(k) = fleet else {
        return Ok(());
    };
    let tag = tag.ok_or(Refused::Unverified("it is not signed with the fleet's key"))?;
    let body = serde_json::to_vec(entry).unwrap_or_default();
    if k.verify(key, &body, &tag) {
        Ok(())
    } else {
        Err(Refused::Unverified(
            "its tag does not verify with the fleet's key",
        ))
    }
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
            tag: None,
        }
    }

    /// The bytes written under `room_key(info.name)`, signed with `fleet` if given.
    pub fn to_value(info: &RoomInfo, now_unix: u64, fleet: Option<&FleetKey>) -> Vec<u8> {
        let set_tag = |e: &RoomEntry, tag| RoomEntry {
            tag: Some(tag),
            ..e.clone()
        };
        sign(
            &RoomEntry::new(info, now_unix),
            set_tag,
            &room_key(&info.name),
            fleet,
        )
    }

    /// The entry under `key`, checked: with a fleet key, one without a good tag is refused
    /// as [`Refused::Unverified`]; a name that is no room name, an address that is not
    /// one, impossible seat counts and unknown words are refused with why.
    pub fn parse(
        key: &str,
        value: &[u8],
        now_unix: u64,
        fleet: Option<&FleetKey>,
    ) -> Result<RoomInfo, Refused> {
        let name = key
            .strip_prefix(ROOM_PREFIX)
            .filter(|n| valid_room_name(n))
            .ok_or_else(|| format!("key {key:?} is not room.NAME"))?;
        let mut e: RoomEntry = serde_json::from_slice(value).map_err(|e| e.to_string())?;
        let tag = e.tag.take();
        verify(&e, tag, key, fleet)?;
        check_server(&e.server)?;
        check_region(&e.region)?;
        let max = crate::input::MAX_PLAYERS as u8;
        if e.seats == 0 || e.seats > max || e.players > e.seats {
            return Err(format!("{} players in {} seats", e.players, e.seats).into());
        }
        let mode = match e.mode.as_str() {
            "strict" => Mode::Strict,
            "optimistic" => Mode::Optimistic,
            m => return Err(format!("mode {m:?} is neither strict nor optimistic").into()),
        };
        let playing = match e.state.as_str() {
            "lobby" => false,
            "playing" => true,
            s => return Err(format!("state {s:?} is neither lobby nor playing").into()),
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
            tag: None,
        }
    }

    /// The bytes written under `server_key(info.server)`, signed with `fleet` if given.
    pub fn to_value(info: &ServerInfo, fleet: Option<&FleetKey>) -> Vec<u8> {
        let set_tag = |e: &ServerEntry, tag| ServerEntry {
            tag: Some(tag),
            ..e.clone()
        };
        sign(
            &ServerEntry::new(info),
            set_tag,
            &server_key(&info.server),
            fleet,
        )
    }

    /// The heartbeat under `key`, checked as [`RoomEntry::parse`] does.
    pub fn parse(key: &str, value: &[u8], fleet: Option<&FleetKey>) -> Result<ServerInfo, Refused> {
        let mut e: ServerEntry = serde_json::from_slice(value).map_err(|e| e.to_string())?;
        let tag = e.tag.take();
        verify(&e, tag, key, fleet)?;
        check_server(&e.server)?;
        check_region(&e.region)?;
        if key != server_key(&e.server) {
            return Err(format!("key {key:?} does not name server {}", e.server).into());
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

/// A public address as a fleet names its servers: "ADDR:PORT", a real port on a real host
/// (not 0, and not an unspecified, multicast or broadcast address).
pub fn check_server(server: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = server
        .parse()
        .map_err(|_| format!("server {server:?} is not ADDR:PORT"))?;
    let ip = addr.ip();
    let broadcast = matches!(ip, IpAddr::V4(v4) if v4.is_broadcast());
    if addr.port() == 0 || ip.is_unspecified() || ip.is_multicast() || broadcast {
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
        assert_eq!(RoomEntry::parse("room.den", &json, 1000, None), Ok(room()));
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
            (
                "room.den",
                with("server", "255.255.255.255:7845".into()),
                "no address",
            ),
            (
                "room.den",
                with("server", "[ff02::1]:7845".into()),
                "no address",
            ),
            (
                "room.den",
                with("server", "127.0.0.1:0".into()),
                "no address",
            ),
            ("room.den", with("seats", 0.into()), "seats"),
            ("room.den", with("players", 9.into()), "seats"),
            ("room.den", with("mode", "fast".into()), "mode"),
            ("room.den", with("state", "gone".into()), "state"),
            ("room.den", with("region", "a b".into()), "region"),
        ];
        for (key, value, why) in cases {
            let e = RoomEntry::parse(key, &value, 1000, None).unwrap_err();
            assert!(matches!(e, Refused::Malformed(_)), "{key}: {e:?}");
            assert!(e.to_string().contains(why), "{key}: {e}");
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
        assert_eq!(ServerEntry::parse("server.___1__7845", &json, None), Ok(s));
        assert!(ServerEntry::parse("server.other", &json, None).is_err());
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

    fn key(byte: u8) -> FleetKey {
        FleetKey::from_secret(&[byte; 32]).unwrap()
    }

    #[test]
    fn signed_entries_verify_under_the_fleets_key_only() {
        let k = key(7);
        let value = RoomEntry::to_value(&room(), 1000, Some(&k));
        let json: serde_json::Value = serde_json::from_slice(&value).unwrap();
        assert_eq!(json["tag"].as_str().map(str::len), Some(64), "{json}");
        assert_eq!(
            RoomEntry::parse("room.den", &value, 1000, Some(&k)),
            Ok(room())
        );
        // Readers without a key ignore the tag.
        assert_eq!(RoomEntry::parse("room.den", &value, 1000, None), Ok(room()));
        let unverified = |r: Result<RoomInfo, Refused>| matches!(r, Err(Refused::Unverified(_)));
        // Another fleet's key, another bucket key (the tag covers the room's name).
        assert!(unverified(RoomEntry::parse(
            "room.den",
            &value,
            1000,
            Some(&key(8))
        )));
        assert!(unverified(RoomEntry::parse(
            "room.lair",
            &value,
            1000,
            Some(&k)
        )));
        // Unsigned, or any field changed after signing: the redirect target above all.
        let plain = RoomEntry::to_value(&room(), 1000, None);
        assert!(unverified(RoomEntry::parse(
            "room.den",
            &plain,
            1000,
            Some(&k)
        )));
        for (field, v) in [
            ("server", serde_json::json!("203.0.113.9:7845")),
            ("players", serde_json::json!(2)),
            ("tag", serde_json::json!("00".repeat(32))),
            ("tag", serde_json::json!("not hex")),
        ] {
            let mut forged = json.clone();
            forged[field] = v;
            let forged = serde_json::to_vec(&forged).unwrap();
            let got = RoomEntry::parse("room.den", &forged, 1000, Some(&k));
            assert!(unverified(got.clone()), "{field}: {got:?}");
            assert!(got.unwrap_err().to_string().contains("fleet's key"));
        }
        // Heartbeats likewise.
        let s = ServerInfo {
            server: "127.0.0.1:7845".into(),
            region: "eu".into(),
            rooms: 1,
            max_rooms: 4,
            players: 2,
        };
        let beat = ServerEntry::to_value(&s, Some(&k));
        let id = server_key(&s.server);
        assert_eq!(ServerEntry::parse(&id, &beat, Some(&k)), Ok(s.clone()));
        let plain = ServerEntry::to_value(&s, None);
        assert!(matches!(
            ServerEntry::parse(&id, &plain, Some(&k)),
            Err(Refused::Unverified(_))
        ));
    }

    #[test]
    fn a_fleet_key_is_32_bytes_or_more_and_a_trailing_newline_does_not_change_it() {
        let e = FleetKey::from_secret(b"short\n").unwrap_err();
        assert!(
            e.contains("holds 5 bytes") && e.contains("/dev/urandom"),
            "{e}"
        );
        assert!(FleetKey::from_secret(&[b' '; 40]).is_err());
        let hex = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        let with_newline = [&hex[..], b"\n"].concat();
        let (a, b) = (
            FleetKey::from_secret(hex).unwrap(),
            FleetKey::from_secret(&with_newline).unwrap(),
        );
        assert_eq!(a.tag("room.x", b"{}"), b.tag("room.x", b"{}"));
        assert_ne!(a.tag("room.x", b"{}"), key(0).tag("room.x", b"{}"));
        assert_eq!(format!("{a:?}"), "FleetKey(..)", "never printed");
    }
}
