//! The dedicated server's messages (`Kind::Room`): rooms listed, opened, joined and their
//! passwords relayed to the creator; the layouts are in the parent module's table.

use super::*;

/// OpenRoom's mode byte when the creator leaves the mode to the server.
const NO_MODE: u8 = 0xff;

/// A room as a dedicated server lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoomInfo {
    /// The room's name.
    pub name: String,
    /// The game file's name.
    pub content: String,
    /// The core's name.
    pub core: String,
    /// Players in.
    pub players: u8,
    /// Seats in all.
    pub seats: u8,
    /// A password is set.
    pub password: bool,
    /// The game runs (not the lobby).
    pub playing: bool,
    /// Seconds since it opened.
    pub age_secs: u32,
    /// Spectators watching.
    pub spectators: u8,
    /// Its lockstep mode.
    pub mode: Mode,
    /// The region of the server holding it (empty: none given).
    pub region: String,
    /// The server holding it, "ADDR:PORT" (empty: the server that answered).
    pub server: String,
}

/// A replay a server keeps (`serve --archive`), as `framelock replays` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ReplayInfo {
    /// Its id: xxh3 of the recording, 16 hex digits.
    pub id: String,
    /// The room it was played in.
    pub room: String,
    /// The game file's name (empty: the core's built-in game).
    pub game: String,
    /// The core's name.
    pub core: String,
    /// The players' names, ", "-joined.
    pub players: String,
    /// When the game began, unix seconds.
    pub created_unix: i64,
    /// Frames in it.
    pub frames: u32,
    /// Frames per second, times 1000.
    pub fps_milli: u32,
    /// Bytes of the recording.
    pub bytes: u32,
    /// The server that serves it, "ADDR:PORT" (empty: the server answering).
    pub server: String,
}

impl ReplayInfo {
    /// Its length in seconds.
    pub fn seconds(&self) -> f64 {
        if self.fps_milli == 0 {
            0.0
        } else {
            f64::from(self.frames) * 1000.0 / f64::from(self.fps_milli)
        }
    }
}

/// Replays in one `Replays` answer at most.
pub const MAX_REPLAYS_LISTED: usize = 4;
/// Bytes of a replay in one `ReplayPiece` (or `Share`) at most.
pub const REPLAY_PIECE: usize = 1000;

/// A server of a fleet as `framelock servers` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerInfo {
    /// Its public address, "ADDR:PORT".
    pub server: String,
    /// Its region (empty: none given).
    pub region: String,
    /// Rooms open on it.
    pub rooms: u16,
    /// Most rooms it opens.
    pub max_rooms: u16,
    /// Players in its rooms.
    pub players: u16,
}

/// What a room's creator asks a dedicated server to open.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenRoom {
    /// Empty: the server makes one up.
    pub room: String,
    /// Seats in the room.
    pub players: u8,
    /// Players the game starts with (the others may join it later).
    pub start_with: u8,
    /// 0: the default of the room's mode.
    pub keyframe_interval: u8,
    /// The mode the creator asks for; `None`: the server's (`serve --mode`).
    pub mode: Option<Mode>,
    /// The core's frames per second.
    pub fps: f64,
    /// A password is set; the creator checks it.
    pub password: bool,
    /// The creator's core.
    pub core_name: String,
    /// Its version.
    pub core_version: String,
    /// The game file's name.
    pub content_name: String,
    /// xxh3 of the game file.
    pub content_hash: Option<u64>,
    /// The creator's name.
    pub player_name: String,
    /// The start payload the creator uploads next (`StateChunk`s, acked by `StateAck`).
    pub raw_len: u32,
    /// See `raw_len`.
    pub packed_len: u32,
    /// See `raw_len`.
    pub payload_hash: u64,
    /// The cookie echoed from the server's Retry (zeros: none yet).
    pub cookie: [u8; COOKIE_LEN],
    /// The creator hosts the game itself: the server only lists the room, relays and
    /// introduces its players (`session::direct`), and nothing is uploaded.
    pub hosted: bool,
    /// The creator's local addresses, for joiners behind the same router (hosted rooms).
    pub locals: Vec<SocketAddr>,
    /// Keep no replay of the room (`--no-share`).
    pub no_share: bool,
}

impl Default for OpenRoom {
    /// A 2-seat room at 60 fps with nothing named, nothing to upload and no cookie yet: the
    /// fields a creator does not set.
    fn default() -> Self {
        OpenRoom {
            room: String::new(),
            players: 2,
            start_with: 2,
            keyframe_interval: 0,
            mode: None,
            fps: 60.0,
            password: false,
            core_name: String::new(),
            core_version: String::new(),
            content_name: String::new(),
            content_hash: None,
            player_name: String::new(),
            raw_len: 0,
            packed_len: 0,
            payload_hash: 0,
            cookie: [0; COOKIE_LEN],
            hosted: false,
            locals: Vec::new(),
            no_share: false,
        }
    }
}

/// Most local addresses a room's creator tells.
pub const MAX_LOCALS: usize = 4;

/// One step of a password check a server relays between a joiner and a room's creator,
/// who alone knows the password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RelayStep {
    /// Server -> creator: a joiner asks in; make a challenge.
    Asks,
    /// Creator -> server: the challenge to pass on.
    Challenge([u8; PAKE_MSG_LEN]),
    /// Server -> creator: the joiner's answer.
    Answer {
        /// The joiner's SPAKE2 message.
        msg: [u8; PAKE_MSG_LEN],
        /// Its key confirmation.
        confirm: [u8; CONFIRM_LEN],
    },
    /// Creator -> server: whether the answer proves the password.
    Verdict(bool),
}

/// Messages between a dedicated server and its clients about rooms.
#[derive(Clone, Debug, PartialEq)]
pub enum RoomMsg<'a> {
    /// Creator -> server: open a room.
    Open(OpenRoom),
    /// Server -> creator: the room is open (the header has its session id); upload the state.
    Opened {
        /// Its name.
        room: String,
        /// A hosted room's secret (zeros for a room on the server): the server and the
        /// room's host tag every Room datagram between them with keys derived from it
        /// (`wire::keys::Keys::for_room`), so that nothing of the room is taken from a
        /// source address alone.
        key: [u8; ROOM_KEY_LEN],
    },
    /// Server -> joiner: no such room.
    NoRoom {
        /// The room asked for.
        room: String,
        /// Some that are open.
        rooms: Vec<String>,
    },
    /// Anyone -> server: the open rooms, please.
    List {
        /// Index of the first one wanted.
        first: u32,
    },
    /// Server -> asker: some open rooms.
    Rooms {
        /// Rooms open.
        total: u32,
        /// Index of the first listed.
        first: u32,
        /// The rooms.
        rooms: Vec<RoomInfo>,
    },
    /// A relayed step of a password check.
    Relay {
        /// The check's number.
        ticket: u32,
        /// The step.
        step: RelayStep,
    },
    /// Server -> joiner or creator: the room is held by (or a new one fits on) another
    /// server of the fleet; ask it.
    Moved {
        /// The room.
        room: String,
        /// That server, "ADDR:PORT"; empty: the server answering.
        server: String,
    },
    /// Joiner -> server: which server of the fleet holds this room?
    Locate {
        /// The room.
        room: String,
    },
    /// Anyone -> server: the fleet's servers, please.
    ListServers {
        /// Index of the first one wanted.
        first: u16,
    },
    /// Server -> asker: some of the fleet's servers.
    Servers {
        /// Servers in the fleet.
        total: u16,
        /// Index of the first listed.
        first: u16,
        /// The servers.
        servers: Vec<ServerInfo>,
    },
    /// A datagram relayed whole between a hosted room's host and one of its joiners:
    /// host -> server, `peer` is the joiner it is for; server -> host, the joiner it came
    /// from (as the server sees its address).
    Forward {
        /// See above.
        peer: SocketAddr,
        /// The datagram.
        datagram: &'a [u8],
    },
    /// Server -> a hosted room's host and a joiner it welcomed: try a direct path to the
    /// other (`session::direct`).
    Introduce {
        /// The other as the server sees its address.
        peer: SocketAddr,
        /// The other's local addresses (the host's, told to a joiner).
        locals: Vec<SocketAddr>,
        /// How long to wait before the first punch, so that both sides' punches cross.
        wait_ms: u16,
    },
    /// A hosted room's host (or a joiner whose path is direct) -> server: still here.
    Present {
        /// Players in the room (the host's counts; zeros from a joiner).
        players: u8,
        /// Of them, on a direct path to the host.
        direct: u8,
        /// Of them, relayed by the server.
        relayed: u8,
        /// The game runs.
        playing: bool,
    },
    /// Anyone -> server: the replays it keeps, please.
    ListReplays {
        /// Index of the first one wanted.
        first: u16,
    },
    /// Server -> asker: some of them, newest first.
    Replays {
        /// Replays kept.
        total: u16,
        /// Index of the first listed.
        first: u16,
        /// The replays.
        replays: Vec<ReplayInfo>,
    },
    /// Anyone -> server: a replay's bytes from `offset`.
    FetchReplay {
        /// The replay's id.
        id: String,
        /// The first byte wanted.
        offset: u32,
    },
    /// Server -> asker: a piece of a replay.
    ReplayPiece {
        /// The replay's id.
        id: String,
        /// Its whole length; 0: the server keeps no such replay.
        total: u32,
        /// Where `bytes` go.
        offset: u32,
        /// At most [`REPLAY_PIECE`] of them.
        bytes: &'a [u8],
    },
    /// A hosted room's host -> server: a piece of the room's recording to keep.
    Share {
        /// The recording's length.
        total: u32,
        /// xxh3 of the whole recording.
        hash: u64,
        /// Where `bytes` go.
        offset: u32,
        /// At most [`REPLAY_PIECE`] of them.
        bytes: &'a [u8],
    },
    /// Server -> host: what it has of the recording.
    ShareAck {
        /// Every byte before this one arrived.
        received: u32,
        /// The whole recording arrived.
        done: bool,
    },
}

pub(super) fn encode_room(out: &mut Vec<u8>, msg: &RoomMsg<'_>) {
    match msg {
        RoomMsg::Open(o) => {
            out.push(1);
            put_str8(out, &o.room, MAX_ROOM_NAME);
            out.push(o.players);
            out.push(o.keyframe_interval);
            out.extend_from_slice(&o.fps.to_bits().to_le_bytes());
            out.push(u8::from(o.password) | u8::from(o.hosted) << 1 | u8::from(o.no_share) << 2);
            put_str8(out, &o.core_name, MAX_TEXT);
            put_str8(out, &o.core_version, MAX_TEXT);
            put_str8(out, &o.content_name, MAX_TEXT);
            match o.content_hash {
                Some(hash) => {
                    out.push(1);
                    out.extend_from_slice(&hash.to_le_bytes());
                }
                None => out.push(0),
            }
            put_str8(out, &o.player_name, MAX_PLAYER_NAME);
            out.extend_from_slice(&o.raw_len.to_le_bytes());
            out.extend_from_slice(&o.packed_len.to_le_bytes());
            out.extend_from_slice(&o.payload_hash.to_le_bytes());
            out.push(o.start_with);
            out.push(o.mode.map_or(NO_MODE, Mode::to_byte));
            out.extend_from_slice(&o.cookie);
            let locals = &o.locals[..o.locals.len().min(MAX_LOCALS)];
            out.push(locals.len() as u8);
            for a in locals {
                put_addr(out, *a);
            }
            pad(out);
        }
        RoomMsg::Opened { room, key } => {
            out.push(2);
            put_str8(out, room, MAX_ROOM_NAME);
            out.extend_from_slice(key);
        }
        RoomMsg::NoRoom { room, rooms } => {
            out.push(3);
            put_str8(out, room, MAX_ROOM_NAME);
            let rooms = &rooms[..rooms.len().min(MAX_LISTED * 2)];
            out.push(rooms.len() as u8);
            for r in rooms {
                put_str8(out, r, MAX_ROOM_NAME);
            }
        }
        RoomMsg::List { first } => {
            out.push(4);
            out.extend_from_slice(&first.to_le_bytes());
            pad(out);
        }
        RoomMsg::Rooms {
            total,
            first,
            rooms,
        } => {
            out.push(5);
            out.extend_from_slice(&total.to_le_bytes());
            out.extend_from_slice(&first.to_le_bytes());
            let rooms = &rooms[..rooms.len().min(MAX_LISTED)];
            out.push(rooms.len() as u8);
            for r in rooms {
                put_str8(out, &r.name, MAX_ROOM_NAME);
                put_str8(out, &r.content, 40);
                put_str8(out, &r.core, 24);
                out.push(r.players);
                out.push(r.seats);
                out.push(
                    u8::from(r.password)
                        | u8::from(r.playing) << 1
                        | u8::from(r.mode == Mode::Optimistic) << 2,
                );
                out.extend_from_slice(&r.age_secs.to_le_bytes());
                out.push(r.spectators);
                put_str8(out, &r.region, MAX_REGION);
                put_str8(out, &r.server, MAX_SERVER);
            }
        }
        RoomMsg::Moved { room, server } => {
            out.push(7);
            put_str8(out, room, MAX_ROOM_NAME);
            put_str8(out, server, MAX_SERVER);
        }
        RoomMsg::Locate { room } => {
            out.push(8);
            put_str8(out, room, MAX_ROOM_NAME);
            pad(out);
        }
        RoomMsg::ListServers { first } => {
            out.push(9);
            out.extend_from_slice(&first.to_le_bytes());
            pad(out);
        }
        RoomMsg::Servers {
            total,
            first,
            servers,
        } => {
            out.push(10);
            out.extend_from_slice(&total.to_le_bytes());
            out.extend_from_slice(&first.to_le_bytes());
            let servers = &servers[..servers.len().min(MAX_SERVERS_LISTED)];
            out.push(servers.len() as u8);
            for s in servers {
                put_str8(out, &s.server, MAX_SERVER);
                put_str8(out, &s.region, MAX_REGION);
                out.extend_from_slice(&s.rooms.to_le_bytes());
                out.extend_from_slice(&s.max_rooms.to_le_bytes());
                out.extend_from_slice(&s.players.to_le_bytes());
            }
        }
        RoomMsg::Forward { peer, datagram } => {
            out.push(11);
            put_addr(out, *peer);
            out.extend_from_slice(&(datagram.len() as u16).to_le_bytes());
            out.extend_from_slice(datagram);
        }
        RoomMsg::Introduce {
            peer,
            locals,
            wait_ms,
        } => {
            out.push(12);
            put_addr(out, *peer);
            let locals = &locals[..locals.len().min(MAX_LOCALS)];
            out.push(locals.len() as u8);
            for a in locals {
                put_addr(out, *a);
            }
            out.extend_from_slice(&wait_ms.to_le_bytes());
        }
        RoomMsg::Present {
            players,
            direct,
            relayed,
            playing,
        } => {
            out.push(13);
            out.extend_from_slice(&[*players, *direct, *relayed, u8::from(*playing)]);
        }
        RoomMsg::ListReplays { first } => {
            out.push(14);
            out.extend_from_slice(&first.to_le_bytes());
            pad(out);
        }
        RoomMsg::Replays {
            total,
            first,
            replays,
        } => {
            out.push(15);
            out.extend_from_slice(&total.to_le_bytes());
            out.extend_from_slice(&first.to_le_bytes());
            let replays = &replays[..replays.len().min(MAX_REPLAYS_LISTED)];
            out.push(replays.len() as u8);
            for r in replays {
                put_str8(out, &r.id, 32);
                put_str8(out, &r.room, MAX_ROOM_NAME);
                put_str8(out, &r.game, 40);
                put_str8(out, &r.core, 24);
                put_str8(out, &r.players, 60);
                out.extend_from_slice(&r.created_unix.to_le_bytes());
                out.extend_from_slice(&r.frames.to_le_bytes());
                out.extend_from_slice(&r.fps_milli.to_le_bytes());
                out.extend_from_slice(&r.bytes.to_le_bytes());
                put_str8(out, &r.server, MAX_SERVER);
            }
        }
        RoomMsg::FetchReplay { id, offset } => {
            out.push(16);
            put_str8(out, id, 32);
            out.extend_from_slice(&offset.to_le_bytes());
            pad(out);
        }
        RoomMsg::ReplayPiece {
            id,
            total,
            offset,
            bytes,
        } => {
            out.push(17);
            put_str8(out, id, 32);
            out.extend_from_slice(&total.to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
            let bytes = &bytes[..bytes.len().min(REPLAY_PIECE)];
            out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        RoomMsg::Share {
            total,
            hash,
            offset,
            bytes,
        } => {
            out.push(18);
            out.extend_from_slice(&total.to_le_bytes());
            out.extend_from_slice(&hash.to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
            let bytes = &bytes[..bytes.len().min(REPLAY_PIECE)];
            out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        RoomMsg::ShareAck { received, done } => {
            out.push(19);
            out.extend_from_slice(&received.to_le_bytes());
            out.push(u8::from(*done));
        }
        RoomMsg::Relay { ticket, step } => {
            out.push(6);
            out.extend_from_slice(&ticket.to_le_bytes());
            match step {
                RelayStep::Asks => out.push(1),
                RelayStep::Challenge(m) => {
                    out.push(2);
                    out.extend_from_slice(m);
                }
                RelayStep::Answer { msg, confirm } => {
                    out.push(3);
                    out.extend_from_slice(msg);
                    out.extend_from_slice(confirm);
                }
                RelayStep::Verdict(ok) => {
                    out.push(4);
                    out.push(u8::from(*ok));
                }
            }
        }
    }
}

pub(super) fn decode_room<'a>(r: &mut Reader<'a>) -> Result<RoomMsg<'a>, ()> {
    let msg = match r.u8()? {
        1 => {
            let room = r.str8()?;
            let players = r.u8()?;
            let keyframe_interval = r.u8()?;
            let fps = f64::from_bits(r.u64()?);
            let flags = r.u8()?;
            let core_name = r.str8()?;
            let core_version = r.str8()?;
            let content_name = r.str8()?;
            let content_hash = match r.u8()? {
                0 => None,
                1 => Some(r.u64()?),
                _ => return Err(()),
            };
            let player_name = r.str8()?;
            let raw_len = r.u32()?;
            let packed_len = r.u32()?;
            let payload_hash = r.u64()?;
            let start_with = r.u8()?;
            let mode = match r.u8()? {
                NO_MODE => None,
                b => Some(Mode::from_byte(b).ok_or(())?),
            };
            let cookie = r.array()?;
            let n = usize::from(r.u8()?);
            if n > MAX_LOCALS {
                return Err(());
            }
            let locals = (0..n).map(|_| r.addr()).collect::<Result<_, _>>()?;
            r.padding()?;
            let sane = (1..=MAX_PLAYERS as u8).contains(&players)
                && (1..=players).contains(&start_with)
                && (0..=60).contains(&keyframe_interval)
                && fps.is_finite()
                && (1.0..=1000.0).contains(&fps)
                && flags <= 7
                && room.len() <= MAX_ROOM_NAME;
            if !sane {
                return Err(());
            }
            RoomMsg::Open(OpenRoom {
                room,
                players,
                start_with,
                mode,
                keyframe_interval,
                fps,
                password: flags & 1 != 0,
                hosted: flags & 2 != 0,
                no_share: flags & 4 != 0,
                locals,
                core_name,
                core_version,
                content_name,
                content_hash,
                player_name,
                raw_len,
                packed_len,
                payload_hash,
                cookie,
            })
        }
        2 => RoomMsg::Opened {
            room: r.str8()?,
            key: r.array()?,
        },
        3 => {
            let room = r.str8()?;
            let n = r.u8()?;
            let rooms = (0..n).map(|_| r.str8()).collect::<Result<_, _>>()?;
            RoomMsg::NoRoom { room, rooms }
        }
        4 => {
            let first = r.u32()?;
            r.padding()?;
            RoomMsg::List { first }
        }
        5 => {
            let total = r.u32()?;
            let first = r.u32()?;
            let n = r.u8()?;
            if usize::from(n) > MAX_LISTED {
                return Err(());
            }
            let mut rooms = Vec::with_capacity(usize::from(n));
            for _ in 0..n {
                let name = r.str8()?;
                let content = r.str8()?;
                let core = r.str8()?;
                let players = r.u8()?;
                let seats = r.u8()?;
                let flags = r.u8()?;
                let age_secs = r.u32()?;
                let spectators = r.u8()?;
                let region = r.str8()?;
                let server = r.str8()?;
                if flags > 7 || players > seats || usize::from(seats) > MAX_PLAYERS {
                    return Err(());
                }
                rooms.push(RoomInfo {
                    name,
                    content,
                    core,
                    players,
                    seats,
                    password: flags & 1 != 0,
                    playing: flags & 2 != 0,
                    mode: if flags & 4 != 0 {
                        Mode::Optimistic
                    } else {
                        Mode::Strict
                    },
                    age_secs,
                    spectators,
                    region,
                    server,
                });
            }
            RoomMsg::Rooms {
                total,
                first,
                rooms,
            }
        }
        6 => {
            let ticket = r.u32()?;
            let step = match r.u8()? {
                1 => RelayStep::Asks,
                2 => RelayStep::Challenge(r.array()?),
                3 => RelayStep::Answer {
                    msg: r.array()?,
                    confirm: r.array()?,
                },
                4 => match r.u8()? {
                    0 => RelayStep::Verdict(false),
                    1 => RelayStep::Verdict(true),
                    _ => return Err(()),
                },
                _ => return Err(()),
            };
            RoomMsg::Relay { ticket, step }
        }
        7 => RoomMsg::Moved {
            room: r.str8()?,
            server: r.str8()?,
        },
        8 => {
            let room = r.str8()?;
            r.padding()?;
            RoomMsg::Locate { room }
        }
        9 => {
            let first = r.u16()?;
            r.padding()?;
            RoomMsg::ListServers { first }
        }
        10 => {
            let total = r.u16()?;
            let first = r.u16()?;
            let n = r.u8()?;
            if usize::from(n) > MAX_SERVERS_LISTED {
                return Err(());
            }
            let mut servers = Vec::with_capacity(usize::from(n));
            for _ in 0..n {
                servers.push(ServerInfo {
                    server: r.str8()?,
                    region: r.str8()?,
                    rooms: r.u16()?,
                    max_rooms: r.u16()?,
                    players: r.u16()?,
                });
            }
            RoomMsg::Servers {
                total,
                first,
                servers,
            }
        }
        11 => {
            let peer = r.addr()?;
            let len = usize::from(r.u16()?);
            RoomMsg::Forward {
                peer,
                datagram: r.take(len)?,
            }
        }
        12 => {
            let peer = r.addr()?;
            let n = usize::from(r.u8()?);
            if n > MAX_LOCALS {
                return Err(());
            }
            let locals = (0..n).map(|_| r.addr()).collect::<Result<_, _>>()?;
            let wait_ms = r.u16()?;
            RoomMsg::Introduce {
                peer,
                locals,
                wait_ms,
            }
        }
        13 => {
            let [players, direct, relayed, playing] = r.array()?;
            if playing > 1 || direct.saturating_add(relayed) > players {
                return Err(());
            }
            RoomMsg::Present {
                players,
                direct,
                relayed,
                playing: playing == 1,
            }
        }
        14 => {
            let first = r.u16()?;
            r.padding()?;
            RoomMsg::ListReplays { first }
        }
        15 => {
            let total = r.u16()?;
            let first = r.u16()?;
            let n = r.u8()?;
            if usize::from(n) > MAX_REPLAYS_LISTED {
                return Err(());
            }
            let mut replays = Vec::with_capacity(usize::from(n));
            for _ in 0..n {
                replays.push(ReplayInfo {
                    id: r.str8()?,
                    room: r.str8()?,
                    game: r.str8()?,
                    core: r.str8()?,
                    players: r.str8()?,
                    created_unix: r.u64()? as i64,
                    frames: r.u32()?,
                    fps_milli: r.u32()?,
                    bytes: r.u32()?,
                    server: r.str8()?,
                });
            }
            RoomMsg::Replays {
                total,
                first,
                replays,
            }
        }
        16 => {
            let id = r.str8()?;
            let offset = r.u32()?;
            r.padding()?;
            RoomMsg::FetchReplay { id, offset }
        }
        17 => {
            let id = r.str8()?;
            let total = r.u32()?;
            let offset = r.u32()?;
            let len = usize::from(r.u16()?);
            if len > REPLAY_PIECE {
                return Err(());
            }
            RoomMsg::ReplayPiece {
                id,
                total,
                offset,
                bytes: r.take(len)?,
            }
        }
        18 => {
            let total = r.u32()?;
            let hash = r.u64()?;
            let offset = r.u32()?;
            let len = usize::from(r.u16()?);
            if len > REPLAY_PIECE {
                return Err(());
            }
            RoomMsg::Share {
                total,
                hash,
                offset,
                bytes: r.take(len)?,
            }
        }
        19 => {
            let received = r.u32()?;
            let done = match r.u8()? {
                0 => false,
                1 => true,
                _ => return Err(()),
            };
            RoomMsg::ShareAck { received, done }
        }
        _ => return Err(()),
    };
    Ok(msg)
}
