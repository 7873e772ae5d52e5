//! `framelock host` and `framelock join`: the glue that carries the sans-IO session handshake
//! (`session`) and lockstep protocol (`lockstep`) over UDP (`net`), and feeds the frames the
//! lockstep client allows into the frame runner (`app`).
//!
//! Order of a session: load the core (and, on the host, the content) -> handshake (`lobby`)
//! -> the joiner applies the host's options and state -> everyone runs frames from the
//! lockstep client (`feed`) -> goodbye. The host's own player uses the same lockstep client
//! as everybody else, talking to the in-process server in memory.

mod chat;
#[cfg(test)]
mod chat_tests;
mod directory;
mod feed;
mod fleet;
mod lobby;
mod metrics;
mod report;
mod serve;
mod status;
#[cfg(test)]
mod world;
#[cfg(test)]
mod world_log;
#[cfg(test)]
mod world_pause_tests;
#[cfg(test)]
mod world_room_tests;
#[cfg(test)]
mod world_scenario;
#[cfg(test)]
mod world_tests;
#[cfg(test)]
mod world_toy;

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Map};
use thiserror::Error;

pub use directory::BUCKET;
pub use feed::{CoreWork, NetFeed, Shared};
pub use fleet::{list_servers, servers_json, servers_table, ServerRow};
pub use serve::{list_rooms, rooms_json, rooms_table, serve, ServeOptions};

use crate::app::chat_board::{ChatBoard, ChatShow};
use crate::app::play::{load_content, open_core, open_core_only, run_session, EarlyWindow};
use crate::app::record::{begin_netplay, reserve, RecordMode, Reserved};
use crate::app::{
    EndReason, Feed, FrameObserver, ObserverError, PlayError, PlayOptions, PlaySummary, Runner,
};
use crate::host::{hash_file, Core, HostError};
use crate::input::Inputs;
use crate::lockstep::{self, Frame};
use crate::net::{random_bytes, random_seed, Link, NetError, NetSim};
use crate::session::{
    self, CoreReply, CoreRequest, Endpoint, EndpointConfig, JoinConfig, Participant,
    ParticipantConfig, SessionError, SessionInfo, StartState,
};

/// The UDP port `host` listens on and `join` connects to by default.
pub const DEFAULT_PORT: u16 = 7845;
/// How long the host keeps serving peers after its own last frame, so they can finish.
const LINGER: Duration = Duration::from_secs(3);
/// A spectator's frame clock forgets a lag past this (about three frames at 60 fps).
const SPECTATOR_MAX_LAG: Duration = Duration::from_millis(50);

/// Settings common to both ends.
#[derive(Clone, Debug)]
pub struct NetOptions {
    pub play: PlayOptions,
    pub name: String,
    pub password: Option<String>,
    pub netsim: Option<NetSim>,
    /// Frames between desync checksums.
    pub checksum_interval: u32,
    /// Bytes per second to each peer, UDP/IP headers included (0: unlimited).
    pub send_budget: u32,
    /// Test hook: `(frame, mask)` flips bits of this peer's own input at that frame.
    pub inject_desync: Option<(u32, u16)>,
    /// `--pause-at`, `--pause-for`: pause for everyone at this frame, for this long.
    pub pause_at: Option<(u32, Duration)>,
    /// Test hook: the main thread stays busy this long after the start state (joiner) or
    /// the lobby (host), before the content is loaded and the first frame runs.
    pub start_delay: Option<Duration>,
    /// Speculation: the most frames a player's picture runs ahead (0: off).
    pub speculate: u32,
    /// How long a joiner whose link dropped tries to come back (zero: it does not).
    pub reconnect: Duration,
    /// Chat messages to say as play begins (`--say`).
    pub say: Vec<String>,
    /// Whose chat messages are shown (`--chat`).
    pub chat: ChatShow,
    /// Test hook: say "ping N" this often from the first frame.
    pub chat_every: Option<Duration>,
}

impl NetOptions {
    /// The participant's settings these options make.
    fn participant(&self) -> ParticipantConfig {
        ParticipantConfig {
            checksum_interval: self.checksum_interval.max(1),
            reconnect: self.reconnect,
        }
    }
}

#[derive(Clone, Debug)]
pub struct HostOptions {
    pub net: NetOptions,
    pub port: u16,
    /// Players in the session, the host's included.
    pub players: u8,
    /// The game starts when this many are in (0: all of `players`); the other seats can be
    /// taken while it runs.
    pub start_with: u8,
    /// Spectators the session takes at once.
    pub max_spectators: u8,
    /// `None`: strict, or with `server` the server's mode.
    pub mode: Option<lockstep::Mode>,
    /// `None`: the mode's default.
    pub keyframe_interval: Option<u32>,
    /// Give up waiting for players after this long.
    pub lobby_timeout: Option<Duration>,
    /// Open a room on this dedicated server (`HOST[:PORT]` as typed) instead of listening.
    pub server: Option<String>,
    /// The room's name there (default: the server makes one up).
    pub room: Option<String>,
}

impl HostOptions {
    /// The mode of a session this host runs itself.
    pub fn session_mode(&self) -> lockstep::Mode {
        self.mode.unwrap_or_default()
    }

    /// Its keyframe interval: as given, else the mode's default.
    pub fn session_keyframe_interval(&self) -> u32 {
        self.keyframe_interval
            .unwrap_or_else(|| self.session_mode().default_keyframe_interval())
    }
}

#[derive(Clone, Debug)]
pub struct JoinOptions {
    pub net: NetOptions,
    /// `HOST[:PORT]` as typed.
    pub host: String,
    /// The room, when `host` is a dedicated server.
    pub room: Option<String>,
    /// Watch (`framelock spectate`) instead of playing.
    pub watch: bool,
}

#[derive(Debug, Error)]
pub enum NetplayError {
    #[error(transparent)]
    Play(#[from] PlayError),
    #[error(transparent)]
    Net(#[from] NetError),
    #[error("{0}")]
    Join(SessionError),
    #[error("starting the session: {0}")]
    Session(SessionError),
    #[error("lockstep: {0}")]
    Lockstep(#[from] lockstep::LockstepError),
    #[error("cannot join {host:?}: {reason}")]
    Resolve { host: String, reason: String },
    #[error("reading content {}: {}", .path.display(), crate::wording::io_reason(.io))]
    Content { path: PathBuf, io: std::io::Error },
    #[error("core: {0}")]
    Host(#[from] HostError),
    #[error("nobody joined in time: {ready} of {want} players ready after {secs} s")]
    LobbyTimeout { secs: u64, ready: usize, want: u8 },
    #[error("the session ended: {0}")]
    Ended(String),
    #[error("interrupted before the game started")]
    Interrupted,
    /// The player pressed Esc or closed the window before the game started.
    #[error("left before the game started")]
    Left,
    #[error("fleet directory: {0}")]
    Directory(String),
    #[error("metrics: {0}")]
    Metrics(String),
}

/// Time a goodbye gets to leave the network conditioner before the process exits.
const GOODBYE_DRAIN: Duration = Duration::from_millis(500);

/// What the handshake compares: the core, the content and the option values.
fn session_info(core: &Core, opts: &NetOptions) -> Result<SessionInfo, NetplayError> {
    let info = core.info();
    let (content_name, content_hash) = match &opts.play.content {
        Some(path) => (
            path.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            Some(hash_file(path).map_err(|io| NetplayError::Content {
                path: path.clone(),
                io,
            })?),
        ),
        None => (String::new(), None),
    };
    Ok(SessionInfo {
        core_name: info.library_name.clone(),
        core_version: info.library_version.clone(),
        content_name,
        content_hash,
        options: opts.play.host.options.clone(),
        player_name: opts.name.clone(),
    })
}

fn lockstep_config(
    slots: u8,
    k: u32,
    session: u32,
    fps: f64,
    net: &NetOptions,
) -> lockstep::Config {
    lockstep::Config {
        players: slots,
        keyframe_interval: k,
        min_lead: k.max(1),
        session,
        fps,
        send_budget: net.send_budget,
        ..lockstep::Config::default()
    }
}

/// Per player, where the lockstep server put its samples (optimistic mode: how many came
/// later than its own offset, by how many frames, and how many equal ones were merged to
/// drain a backlog; all zero in strict mode), for `--stats-json`.
pub(crate) fn placement_json(stats: Option<&lockstep::ServerStats>) -> serde_json::Value {
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

/// Hosts a session: waits for the players, sends them the start state, then plays.
pub fn host(opts: &HostOptions) -> Result<PlaySummary, NetplayError> {
    check_display(&opts.net.play)?;
    let mut play = opts.net.play.clone();
    play.host.netplay = true;
    let chat = chat::session_board(opts.net.chat, &mut play);
    // The window opens at once and tells what is loading, then shows the lobby.
    let mut window = EarlyWindow::open(&play)?;
    let game = game_name(&play);
    lobby::JoinScreen::new(format!("hosting {game}"), None)
        .loading(&format!("loading {game}"))
        .show(&mut window)?;
    let mut core = open_core(&play)?;
    let mut info = session_info(&core, &opts.net)?;
    // Every option the core has, so joiners end up with exactly the host's values.
    info.options = core.options();
    let fps = core.av_info().fps;
    let state = core.serialize()?;
    let sram = core
        .memory(crate::host::MemoryRegion::SaveRam)
        .map(<[u8]>::to_vec)
        .unwrap_or_default();

    if let Some(server) = &opts.server {
        let payload = session::StartPayload {
            options: info.options.clone(),
            state,
            sram,
        };
        return host_in_room(opts, server, &play, core, info, payload, window);
    }
    let mut link = Link::host(opts.port, opts.net.netsim.clone())?;
    let recording = reserve_recording(&play, "host")?;
    let seed = random_seed();
    let mut host = session::HostConfig::new((seed >> 32) as u32, random_bytes(), fps);
    host.password = opts.net.password.clone();
    host.max_players = opts.players;
    host.start_with = opts.start_with;
    host.max_spectators = opts.max_spectators;
    let (mode, k) = (opts.session_mode(), opts.session_keyframe_interval());
    host.keyframe_interval = k as u8;
    host.mode = mode;
    let lcfg = lockstep::Config {
        mode,
        ..lockstep_config(opts.players, k, 0, fps, &opts.net)
    };
    let cfg = EndpointConfig {
        host,
        lockstep: lcfg.clone(),
        lobby_timeout: opts.lobby_timeout,
    };
    let endpoint =
        Endpoint::new(Instant::now(), cfg, info, state, sram).map_err(NetplayError::Session)?;
    let mut participant = Participant::host(Instant::now(), endpoint, lcfg, opts.net.participant());
    let start_with = match opts.start_with {
        0 => opts.players,
        n => n.min(opts.players),
    };
    let port = link.local_addr().port();
    let here = crate::net::lan_address().map_or("THIS-MACHINE".into(), |ip| {
        SocketAddr::new(ip, port).to_string()
    });
    let invite = lobby::Invite {
        game,
        command: join_command(&here, None, &play),
        notes: invite_notes(
            Some(format!(
                "Over the internet: your public address, with udp port {port} forwarded here."
            )),
            opts.net.password.is_some(),
        ),
    };
    let seats = (opts.players, start_with);
    let lobby = (&mut window, &chat);
    lobby::host_lobby(&mut link, &mut participant, seats, &invite, lobby)?;
    let names = participant
        .endpoint()
        .map(Endpoint::players)
        .unwrap_or_default()
        .into_iter()
        .map(|p| (p.slot, p.name))
        .collect();
    let bot = opts.net.play.bot.map(|spec| spec.bot(0));
    let feed = NetFeed::new(link, participant, bot)
        .with_names(names)
        .with_chat(chat, opts.net.say.clone(), opts.net.chat_every);
    start_delay(&opts.net);
    run(&play, &mut core, feed, &opts.net, recording, window)
}

/// Joins a session: handshake, the host's options and state, then play.
pub fn join(opts: &JoinOptions) -> Result<PlaySummary, NetplayError> {
    check_display(&opts.net.play)?;
    let mut play = opts.net.play.clone();
    play.host.netplay = true;
    let chat = chat::session_board(opts.net.chat, &mut play);
    let mut window = EarlyWindow::open(&play)?;
    let mut title = format!("joining {}", opts.host);
    if let Some(room) = &opts.room {
        title.push_str(&format!(", room {room}"));
    }
    let screen = lobby::JoinScreen::new(title, None);
    screen.show(&mut window)?;
    let mut addr = resolve(&opts.host)?;
    if let Some(room) = &opts.room {
        // In a fleet, the room may be held by another server than the one named.
        addr = fleet::locate(addr, room)?;
    }
    // The core is opened first (the handshake compares its name and version) but the
    // content is loaded only once the host's option values are known.
    let core = open_core_only(&play)?;
    let info = session_info(&core, &opts.net)?;
    let link = Link::client(addr, opts.net.netsim.clone())?;
    let recording = reserve_recording(&play, if opts.watch { "spectate" } else { "join" })?;
    let mut jcfg = JoinConfig::new(addr, info);
    jcfg.password = opts.net.password.clone();
    jcfg.entropy = random_bytes();
    jcfg.room = opts.room.clone().unwrap_or_default();
    jcfg.watch = opts.watch;
    let session = joiner(jcfg, &opts.net);
    let joined = Joined {
        link,
        session,
        screen,
        window,
        chat,
    };
    play_joined(&opts.net, &play, core, joined, recording, true)
}

/// A joiner's participant: its handshake starts now.
fn joiner(jcfg: JoinConfig, net: &NetOptions) -> Participant {
    let base = lockstep::Config {
        send_budget: net.send_budget,
        ..lockstep::Config::default()
    };
    Participant::join(Instant::now(), jcfg, base, net.participant())
}

/// A joiner's way to its host and what it shows meanwhile.
struct Joined {
    link: Link,
    session: Participant,
    screen: lobby::JoinScreen,
    window: EarlyWindow,
    chat: ChatBoard,
}

/// The content's file name, or what is played without content.
fn game_name(play: &PlayOptions) -> String {
    match &play.content {
        Some(path) => path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into(),
        ),
        None if play.core == crate::host::CoreSource::Builtin => "the built-in game".into(),
        None => "the core without content".into(),
    }
}

/// The exact command a friend types to join: the address (and room), the core by name
/// when it is not the built-in one, and the content's file name.
fn join_command(addr: &str, room: Option<&str>, play: &PlayOptions) -> String {
    join_command_for(addr, room, &play.core, play.content.as_deref())
}

fn join_command_for(
    addr: &str,
    room: Option<&str>,
    core: &crate::host::CoreSource,
    content: Option<&Path>,
) -> String {
    let mut cmd = format!("framelock join {addr}");
    if let Some(room) = room {
        cmd.push_str(&format!(" --room {}", shell_word(room)));
    }
    if let crate::host::CoreSource::Path(path) = core {
        if let Some(name) = crate::host::catalog::core_name(path) {
            cmd.push_str(&format!(" --core {}", shell_word(&name)));
        }
    }
    if let Some(name) = content.and_then(|p| p.file_name()) {
        cmd.push_str(&format!(" {}", shell_word(&name.to_string_lossy())));
    }
    cmd
}

/// The invite's notes: `first`, then the password if the session has one.
fn invite_notes(first: Option<String>, password: bool) -> Vec<String> {
    let mut notes: Vec<String> = first.into_iter().collect();
    if password {
        notes.push("They need the password too (--password).".into());
    }
    notes
}

/// `word` quoted for a shell when it holds anything but plain characters.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.,+/:@%=".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Opens a room on a dedicated server, uploads the start state, then joins it as player 1
/// like any other player: from here on the host is a client of the server.
fn host_in_room(
    opts: &HostOptions,
    server: &str,
    play: &PlayOptions,
    core: Core,
    info: SessionInfo,
    payload: session::StartPayload,
    mut window: EarlyWindow,
) -> Result<PlaySummary, NetplayError> {
    let fps = core.av_info().fps;
    let addr = resolve(server)?;
    let mut link = Link::client(addr, opts.net.netsim.clone())?;
    let recording = reserve_recording(play, "host")?;
    let password = opts.net.password.clone().filter(|p| !p.is_empty());
    let open = session::msg::OpenRoom {
        room: opts.room.clone().unwrap_or_default(),
        players: opts.players,
        start_with: match opts.start_with {
            0 => opts.players,
            n => n.min(opts.players),
        },
        // 0: the default of the mode the room gets.
        keyframe_interval: opts.keyframe_interval.unwrap_or(0) as u8,
        mode: opts.mode,
        fps,
        password: password.is_some(),
        core_name: info.core_name.clone(),
        core_version: info.core_version.clone(),
        content_name: info.content_name.clone(),
        content_hash: info.content_hash,
        player_name: info.player_name.clone(),
        raw_len: 0,
        packed_len: 0,
        payload_hash: 0,
        cookie: Default::default(),
    };
    let mut opener = session::RoomOpener::new(Instant::now(), addr, open, &payload)
        .map_err(NetplayError::Session)?;
    let room = lobby::open_room(&mut link, &mut opener, &mut window)?;
    // A full server of a fleet may have sent the room to another one.
    let (asked, addr) = (addr, opener.server());
    let moved = addr.to_string();
    let server = if addr == asked {
        server
    } else {
        moved.as_str()
    };
    let invite = lobby::Invite {
        game: game_name(play),
        command: join_command(server, Some(&room), play),
        notes: invite_notes(None, password.is_some()),
    };
    tracing::info!(
        "netplay: room {room} is open on {server}; your friends join with `{}`{}",
        invite.command,
        if password.is_some() {
            " and the password"
        } else {
            ""
        }
    );
    let mut jcfg = JoinConfig::new(addr, info);
    jcfg.password = password;
    jcfg.entropy = random_bytes();
    jcfg.room = room.clone();
    jcfg.creator = true;
    let session = joiner(jcfg, &opts.net);
    let screen = lobby::JoinScreen::new(format!("room {room} on {server}"), Some(invite));
    let joined = Joined {
        link,
        session,
        screen,
        window,
        // `host` made it.
        chat: play.chat.clone().unwrap_or_default(),
    };
    // The creator's core is at the start state already: nothing to load.
    play_joined(&opts.net, play, core, joined, recording, false)
}

/// A joiner's handshake through to the end of the game. With `load`, the host's options,
/// content and state are loaded into `core` first.
fn play_joined(
    net: &NetOptions,
    play: &PlayOptions,
    mut core: Core,
    joined: Joined,
    recording: Option<Reserved>,
    load: bool,
) -> Result<PlaySummary, NetplayError> {
    let Joined {
        mut link,
        mut session,
        mut screen,
        mut window,
        chat,
    } = joined;
    let room = session
        .join_session()
        .and_then(|s| s.room())
        .map(str::to_string);
    let start = lobby::join_lobby(&mut link, &mut session, &mut screen, (&mut window, &chat))?;
    // The network thread serves from here on: while this player loads the content and the
    // state and opens its window, it tells the host that it is still coming (`Loading`),
    // which otherwise drops a player silent for 2 s.
    let watch = start.slot == session::msg::SPECTATOR;
    let bot = net
        .play
        .bot
        .filter(|_| !watch)
        .map(|spec| spec.bot(usize::from(start.slot)));
    let host = session
        .seat()
        .map(|s| s.host().to_string())
        .unwrap_or_default();
    let mut rejoin = join_command(&host, room.as_deref(), play);
    if watch {
        rejoin = rejoin.replacen("framelock join", "framelock spectate", 1);
    }
    let mut feed = NetFeed::new(link, session, bot)
        .with_chat(chat, net.say.clone(), net.chat_every)
        .with_names(start.players.clone())
        .with_room(room)
        .with_rejoin(rejoin);
    screen.players = start.players.clone();
    if load {
        screen.doing = format!("loading {}", game_name(play));
        screen
            .show(&mut window)
            .inspect_err(|_| feed.close("quit"))?;
    }
    start_delay(net);
    if load {
        if let Err(e) = load_start(&mut core, play, &start) {
            // Tell the host why, at once, instead of going silent.
            feed.close(&format!("could not start: {e}"));
            return Err(e);
        }
    }
    if watch {
        tracing::info!(
            "netplay: watching session {:08x} from frame {}",
            start.session,
            start.frame
        );
    } else if start.frame > 0 {
        tracing::info!(
            "netplay: in session {:08x} as player {} of {}, from frame {} (the game runs: \
             catching up, then your input counts from a frame the host announces)",
            start.session,
            start.slot + 1,
            start.slots,
            start.frame
        );
    } else {
        tracing::info!(
            "netplay: in session {:08x} as player {} of {}",
            start.session,
            start.slot + 1,
            start.slots
        );
    }
    // The screen stays until the first frame is drawn over it.
    screen.doing = if watch {
        "ready; the game shows as soon as its frames arrive".into()
    } else {
        "ready; the game starts when everyone is in".into()
    };
    screen
        .show(&mut window)
        .inspect_err(|_| feed.close("quit"))?;
    run(play, &mut core, feed, net, recording, window)
}

/// Loads the host's options, the content, the host's save RAM and state into `core`.
fn load_start(core: &mut Core, play: &PlayOptions, start: &StartState) -> Result<(), NetplayError> {
    for diff in &start.option_diffs {
        // Worth a line only where this player chose another value; options it never set
        // simply take the host's.
        let (key, host) = (&diff.key, diff.host.as_deref().unwrap_or("(unset)"));
        match &diff.local {
            Some(local) => tracing::info!(
                "netplay: core option {key} = {host} (the host's; yours was {local})"
            ),
            None => tracing::debug!("netplay: core option {key} = {host} (the host's)"),
        }
    }
    for (key, value) in &start.payload.options {
        if let Err(e) = core.set_option(key, value) {
            tracing::warn!("netplay: host option {key}={value}: {e}");
        }
    }
    load_content(core, play)?;
    if !start.payload.sram.is_empty() {
        core.write_sram(&start.payload.sram);
    }
    core.unserialize(&start.payload.state)?;
    Ok(())
}

/// Makes the recording's file before the lobby, so nobody waits for a session that cannot
/// be recorded where asked: a `--record FILE` that cannot be written ends the command as it
/// does `play`'s; the default recording (into `recordings_dir`) is logged and skipped.
fn reserve_recording(play: &PlayOptions, role: &str) -> Result<Option<Reserved>, NetplayError> {
    match reserve(&play.record, role) {
        Ok(r) => Ok(r),
        Err(e) if matches!(play.record, RecordMode::File(_)) => Err(PlayError::from(e).into()),
        Err(e) => {
            tracing::error!("not recording this session: {e}");
            Ok(None)
        }
    }
}

/// The `--start-delay-ms` test hook: a start as slow as a large romset's or a slow window's.
fn start_delay(net: &NetOptions) {
    if let Some(delay) = net.start_delay {
        tracing::warn!(
            "netplay: starting {} ms late (test hook)",
            delay.as_millis()
        );
        std::thread::sleep(delay);
    }
}

/// A window needs a display: say so before the players wait for us, not after.
fn check_display(play: &PlayOptions) -> Result<(), NetplayError> {
    if play.headless {
        return Ok(());
    }
    crate::frontend::window::check_display().map_err(|e| PlayError::Window(e).into())
}

/// Plays frames from `feed` until the frame limit, a quit, or the session ends.
fn run(
    play: &PlayOptions,
    core: &mut Core,
    mut feed: NetFeed,
    net: &NetOptions,
    recording: Option<Reserved>,
    window: EarlyWindow,
) -> Result<PlaySummary, NetplayError> {
    if let Some((frame, mask)) = net.inject_desync {
        feed = feed.with_injected_desync(frame, mask);
    }
    if let Some((frame, hold)) = net.pause_at {
        feed = feed.with_pause_at(frame, hold);
    }
    let mut runner_cfg = play.runner.clone();
    // A player never drops a backlog: its frames are due on the session's clock, so it
    // catches up (capped) instead. A spectator's pace is the frames' arrival (its feed's
    // backlog runs what it holds beyond a keyframe interval's worth, see
    // `Feed::paced_by_arrival`), and a clock left behind by a pause is forgotten, as in `play`.
    runner_cfg.max_lag = if feed.is_spectator() {
        SPECTATOR_MAX_LAG
    } else {
        Duration::MAX
    };
    if net.speculate > 0 && !feed.is_spectator() {
        runner_cfg.run_ahead = speculation_depth(core, net.speculate);
    }
    let first = feed.first_frame();
    // --frames N ends the session at its frame N, wherever this peer's machine started (a
    // spectator's jumps to fresh states skip frames: its feed ends there too).
    if let Some(n) = runner_cfg.max_frames.as_mut() {
        feed.end_at(*n);
        *n = n.saturating_sub(u64::from(first)).max(1);
    }
    let recording = begin_netplay(
        recording,
        play,
        core,
        &feed.names(),
        net.checksum_interval,
        first,
        feed.mode().as_str(),
    );
    let mut runner = Runner::new(feed, runner_cfg);
    runner.observe(Box::new(CoreSide::new(
        runner.feed().shared(),
        recording.clone(),
        u64::from(first),
    )));
    if let Some(r) = &recording {
        runner.observe(r.observer());
    }
    // Stats are written below, once the netplay numbers are in.
    let quiet = PlayOptions {
        stats_json: None,
        ..play.clone()
    };
    let result = run_session(&quiet, core, &mut runner, Map::new(), recording, window);
    let quit = matches!(
        result,
        Ok(PlaySummary {
            end: EndReason::Quit,
            ..
        })
    );
    let feed = runner.feed_mut();
    let ended = feed.end();
    if ended.is_none() {
        match (feed.is_host(), quit) {
            (true, false) => {
                // Reached --frames: the joiners are about to, let them finish.
                feed.linger(LINGER);
                feed.close("host finished");
            }
            (true, true) => feed.close("host quit"),
            (false, false) => feed.close("finished"),
            (false, true) => feed.close("quit"),
        }
    }
    let mut summary = result?;
    let mut extra = runner.feed().stats();
    extra.remove("kind");
    summary.stats.extend(extra);
    summary.stats.insert("netplay".into(), json!(true));
    if let Some(path) = &play.stats_json {
        crate::app::stats::write(path, &summary.stats).map_err(PlayError::from)?;
    }
    if quit && summary.frames == 0 {
        // Admitted, and waiting for the others when the player gave up: as in the lobby.
        return Err(if crate::app::interrupt::requested() {
            NetplayError::Interrupted
        } else {
            NetplayError::Left
        });
    }
    // A joiner that reached its own frame limit finished, whenever the host left.
    if let (Some(why), false) = (ended, summary.end == EndReason::FrameLimit) {
        return Err(NetplayError::Ended(format!(
            "{why} (after {} frames)",
            summary.frames
        )));
    }
    Ok(summary)
}

/// The depth to speculate at: `want`, if the core passes the rollback check (see
/// `app::sync_test::check_rollback`), else 0 with the reason logged.
fn speculation_depth(core: &mut Core, want: u32) -> u32 {
    match crate::app::sync_test::check_rollback(core, want.max(2)) {
        Ok(()) => {
            tracing::info!("netplay: speculating up to {want} frame(s) ahead");
            want
        }
        Err(why) => {
            tracing::warn!(
                "netplay: {} failed the rollback check ({why}); playing without speculation",
                core.info().library_name
            );
            0
        }
    }
}

/// Frames kept to replay after loading an older state from the host (10 s at 60 fps).
const HISTORY: usize = 600;

/// The core side of netplay, run after every frame and while the feed waits: it does what
/// the session's participant asks of the machine (`session::CoreRequest`: checksums, states
/// to send, states to load) and hands the answers back, and writes the session's events into
/// the recording.
struct CoreSide {
    shared: Shared,
    /// `(session frame, inputs)` of the frames run lately.
    history: VecDeque<(u64, Inputs)>,
    recording: Option<crate::app::Recording>,
    /// The session frame of the runner's frame 0 (a late joiner's or spectator's start
    /// state is at a later frame than 0), moved on by jumps.
    base: u64,
    /// A desync recovery's state for a frame this machine has not reached yet.
    pending: Option<(u64, Vec<u8>)>,
}

impl CoreSide {
    fn new(shared: Shared, recording: Option<crate::app::Recording>, base: u64) -> CoreSide {
        CoreSide {
            shared,
            history: VecDeque::with_capacity(HISTORY),
            recording,
            base,
            pending: None,
        }
    }

    /// Loads the host's state as of the start of `frame` when this peer is at `next` (the
    /// next frame to run), re-running `frame..next` from the input history.
    fn load(&mut self, core: &mut Core, frame: u64, next: u64, state: &[u8]) -> bool {
        let oldest = self.history.front().map_or(next, |(f, _)| *f);
        if frame < oldest {
            tracing::error!(
                "netplay: the host's state for frame {frame} is older than this peer's input history (from {oldest}); waiting for a newer one"
            );
            return false;
        }
        if let Err(e) = core.unserialize(state) {
            tracing::error!("netplay: cannot load the host's state: {e}");
            return false;
        }
        for (_, inputs) in self.history.iter().filter(|(f, _)| *f >= frame) {
            core.run_frame(inputs);
        }
        // What the re-run frames played was heard already.
        core.drain_audio(&mut Vec::new());
        true
    }

    /// Jumps to the state at the start of session frame `at` while the runner is at its
    /// frame `next`: the machine goes on from there (a spectator back from too far behind,
    /// a player back from a lost connection).
    fn jump(&mut self, core: &mut Core, next: u64, at: u64, state: &[u8], sram: &[u8]) -> bool {
        if !sram.is_empty() {
            core.write_sram(sram);
        }
        match core.unserialize(state) {
            Ok(()) => {
                self.base = at.saturating_sub(next);
                self.history.clear();
                if let Some(r) = &self.recording {
                    r.resync(next, core);
                }
                true
            }
            Err(e) => {
                tracing::error!("netplay: cannot load the fresh state: {e}");
                false
            }
        }
    }

    /// Does what was asked of the machine that can be done at the runner's frame `next`;
    /// `ran` is true right after a frame ran (checksums and states are taken then).
    fn work(&mut self, core: &mut Core, next: u64, ran: bool) {
        let at_session = next + self.base;
        let requests: Vec<CoreRequest> = std::mem::take(&mut feed::lock(&self.shared).requests)
            .into_iter()
            .collect();
        let mut keep = VecDeque::new();
        let mut replies = Vec::new();
        for req in requests {
            match req {
                CoreRequest::Checksum { frame } if ran => replies.push(CoreReply::Checksum {
                    frame,
                    checksum: core.checksum(),
                }),
                CoreRequest::SaveState { for_slots } if ran || !for_slots.is_empty() => {
                    match core.serialize() {
                        Ok(state) => replies.push(CoreReply::State {
                            frame: Frame(at_session as u32),
                            state,
                            for_slots,
                        }),
                        Err(e) => tracing::error!("netplay: cannot serialize for a resync: {e}"),
                    }
                }
                CoreRequest::Load {
                    frame,
                    state,
                    sram,
                    jump: true,
                } => {
                    if self.jump(core, next, u64::from(frame.0), &state, &sram) {
                        replies.push(CoreReply::Loaded { frame });
                    }
                }
                CoreRequest::Load { frame, state, .. } => {
                    self.pending = Some((u64::from(frame.0), state));
                }
                other => keep.push_back(other),
            }
        }
        if let Some((at, state)) = self.pending.take() {
            if at <= at_session {
                if self.load(core, at, at_session, &state) {
                    replies.push(CoreReply::Loaded {
                        frame: Frame(at as u32),
                    });
                    if let Some(r) = &self.recording {
                        r.resync(next, core);
                    }
                }
            } else {
                self.pending = Some((at, state));
            }
        }
        let mut shared = feed::lock(&self.shared);
        shared.requests.extend(keep);
        shared.replies.extend(replies);
        if let Some(r) = &self.recording {
            for (at, event) in shared.events.drain(..) {
                // In the log's numbering, which starts at its start state.
                r.event(u64::from(at).saturating_sub(self.base), &event);
            }
        } else {
            shared.events.clear();
        }
    }
}

impl FrameObserver<Core> for CoreSide {
    /// Jumps wait for the runner to stop running frames (the participant hands out none
    /// until the state is loaded).
    fn idle(&mut self, next: u64, core: &mut Core) -> Result<(), ObserverError> {
        self.work(core, next, false);
        Ok(())
    }

    fn after_frame(
        &mut self,
        frame: u64,
        inputs: &Inputs,
        core: &mut Core,
    ) -> Result<(), ObserverError> {
        let session_frame = frame + self.base;
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back((session_frame, *inputs));
        self.work(core, frame + 1, true);
        Ok(())
    }
}

/// `HOST`, `HOST:PORT`, `V6`, `[V6]:PORT` -> a socket address (the first one resolved).
fn resolve(host: &str) -> Result<SocketAddr, NetplayError> {
    let err = |reason: String| NetplayError::Resolve {
        host: host.to_string(),
        reason,
    };
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    let addr = if let Ok(addr) = host.parse::<SocketAddr>() {
        addr
    } else if let Ok(ip) = bare.unwrap_or(host).parse::<IpAddr>() {
        SocketAddr::new(ip, DEFAULT_PORT)
    } else if host.starts_with('[') && !host.contains(']') {
        return Err(err("an IPv6 address opened with [ needs its ]".into()));
    } else {
        let with_port = if host.contains(':') {
            host.to_string()
        } else {
            format!("{host}:{DEFAULT_PORT}")
        };
        with_port
            .to_socket_addrs()
            .map_err(|e| err(e.to_string()))?
            .next()
            .ok_or_else(|| err("no address found".into()))?
    };
    check_host_address(addr).map_err(err)
}

/// A host is one machine on a port it listens on: not port 0, not an unspecified,
/// broadcast or multicast address (whose datagrams would go to no host, or to many).
fn check_host_address(addr: SocketAddr) -> Result<SocketAddr, String> {
    let ip = addr.ip();
    let multicast_or_broadcast = match ip {
        IpAddr::V4(v4) => v4.is_multicast() || v4.is_broadcast(),
        IpAddr::V6(v6) => v6.is_multicast(),
    };
    if addr.port() == 0 {
        Err("port 0 is not a port a host listens on".into())
    } else if ip.is_unspecified() {
        Err(format!("{ip} is no machine's address; give the host's"))
    } else if multicast_or_broadcast {
        Err(format!(
            "{ip} is a broadcast or multicast address, not one host's"
        ))
    } else {
        Ok(addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_join_command_names_the_core_and_the_content_file_as_typed() {
        use crate::host::CoreSource;
        let gpgx = CoreSource::Path("/opt/cores/genesis_plus_gx_libretro.so".into());
        assert_eq!(
            join_command_for(
                "192.0.2.7:7845",
                None,
                &gpgx,
                Some(Path::new("/home/ana/roms/Sonic 2 (W).md"))
            ),
            "framelock join 192.0.2.7:7845 --core genesis_plus_gx 'Sonic 2 (W).md'"
        );
        assert_eq!(
            join_command_for(
                "play.example.org",
                Some("friday"),
                &CoreSource::Builtin,
                None
            ),
            "framelock join play.example.org --room friday"
        );
        assert_eq!(shell_word("it's.md"), "'it'\\''s.md'");
    }

    #[test]
    fn host_addresses_get_the_default_port() {
        assert_eq!(
            resolve("127.0.0.1").unwrap(),
            "127.0.0.1:7845".parse().unwrap()
        );
        assert_eq!(
            resolve("127.0.0.1:9000").unwrap(),
            "127.0.0.1:9000".parse().unwrap()
        );
        assert_eq!(resolve("::1").unwrap(), "[::1]:7845".parse().unwrap());
        assert_eq!(resolve("[::1]:99").unwrap(), "[::1]:99".parse().unwrap());
        assert_eq!(resolve("localhost:5").unwrap().port(), 5);
        assert!(matches!(
            resolve("no.such.host.invalid"),
            Err(NetplayError::Resolve { .. })
        ));
        assert_eq!(resolve("[::1]").unwrap(), "[::1]:7845".parse().unwrap());
        // Addresses no host listens on are refused, saying why.
        for (bad, why) in [
            ("[::1", "needs its ]"),
            ("127.0.0.1:0", "port 0"),
            ("0.0.0.0", "no machine's address"),
            ("[::]:7845", "no machine's address"),
            ("255.255.255.255", "broadcast or multicast"),
            ("224.0.0.1:9", "broadcast or multicast"),
            ("[ff02::1]:9", "broadcast or multicast"),
        ] {
            let e = resolve(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains(why), "{bad}: {e}");
        }
    }
}
