//! The commands from their options to the first frame: `host` (listening itself, or
//! opening a room on a dedicated server), `join` and `spectate` (a `join` that watches).
//! Each is a [`SessionDriver`] that `app::core_session::run_driven` runs once: `app` opens
//! the early window, the core and the recording; the driver goes through the lobby
//! (`lobby`), loads what the start state says and hands `app` the feed (with `run`'s rules).
//! It must not import `serve` (the dedicated server) nor draw anything: its screens go
//! through `lobby` and `app::play::EarlyWindow`.

use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

use super::address::resolve;
use super::invite::{game_name, invite_notes, join_command};
use super::links;
use super::run;
use super::seat_keys::SeatKeys;
use super::speculation::{Decision, RollbackCheck};
use super::{
    chat, fleet, lobby, port_map, HostOptions, JoinOptions, NetFeed, NetOptions, NetplayError,
    SessionEnd,
};
use crate::app::core_session::{self, Content, Plan, SessionDriver, Stage, Started};
use crate::app::play::EarlyWindow;
use crate::app::{FrameObserver, PlayOptions, PlaySummary, Recording};
use crate::frontend::chat_board::ChatBoard;
use crate::host::{hash_file, Core};
use crate::lockstep;
use crate::net::portmap::PortMap;
use crate::net::{random_bytes, random_seed, Link};
use crate::session::direct::PathMode;
use crate::session::{
    self, Endpoint, EndpointConfig, JoinConfig, Participant, SessionInfo, StartState,
};

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
        session,
        fps,
        send_budget: net.send_budget,
        ..lockstep::Config::default()
    }
    .with_keyframe_interval(k)
}

/// The play options of a netplay command: marked as netplay, with the session's chat board
/// in them.
fn begin(net: &NetOptions) -> (PlayOptions, ChatBoard) {
    let mut play = net.play.clone();
    play.host.netplay = true;
    let chat = chat::session_board(net.chat, &mut play);
    (play, chat)
}

/// Hosts a session: waits for the players, sends them the start state, then plays. A room
/// hosted here on a server keeping replays gets this player's recording after the game,
/// unless `--no-share`.
pub fn host(opts: &HostOptions) -> Result<PlaySummary, NetplayError> {
    let (play, chat) = begin(&opts.net);
    let mut driver = NetDriver::new(&play, &opts.net, chat, Command::Host(opts));
    let summary = core_session::run_driven(&play, &mut driver)?;
    if let Some((server, session)) = driver.hosted.take().filter(|_| !opts.net.no_share) {
        share_recording(&summary, server, session);
    }
    Ok(summary)
}

/// Uploads the recording `summary` names to the server of the room this process hosted.
fn share_recording(summary: &PlaySummary, server: SocketAddr, session: u32) {
    let recording = summary.stats.get("recording");
    let complete = recording
        .and_then(|r| r.get("complete"))
        .and_then(serde_json::Value::as_bool);
    let Some(path) = recording
        .and_then(|r| r.get("path"))
        .and_then(serde_json::Value::as_str)
        .filter(|_| complete == Some(true))
    else {
        return;
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!("replay: cannot read {path} to share it: {e}");
            return;
        }
    };
    let mut link = match Link::client(server, None) {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!("replay: cannot share it: {e}");
            return;
        }
    };
    tracing::info!(
        "replay: sharing the recording ({} KiB) with the room's server {server} (--no-share: \
         don't)",
        bytes.len().div_ceil(1024)
    );
    match super::replays::share(&mut link, server, session, &bytes) {
        Ok(()) => tracing::info!("replay: the server has the recording"),
        Err(why) => tracing::info!("replay: the server did not take the recording: {why}"),
    }
}

/// Joins a session: handshake, the host's options and state, then play.
pub fn join(opts: &JoinOptions) -> Result<PlaySummary, NetplayError> {
    let (play, chat) = begin(&opts.net);
    let command = Command::Join {
        opts,
        to: None,
        typed: None,
    };
    let mut driver = NetDriver::new(&play, &opts.net, chat, command);
    core_session::run_driven(&play, &mut driver)
}

/// A netplay command as `app::core_session` drives it: `app` opens the window, the core and
/// the recording and runs the frames; this does the lobby and the handshake and keeps
/// netplay's rules (`run`).
struct NetDriver<'a> {
    play: &'a PlayOptions,
    net: &'a NetOptions,
    /// Taken by `start`.
    chat: Option<ChatBoard>,
    command: Command<'a>,
    /// Why the session ended before this peer's last frame, if it did.
    ended: Option<SessionEnd>,
    /// The server and session id of the room this process hosted on a server, if it did.
    hosted: Option<(SocketAddr, u32)>,
}

/// What the command does before its first frame.
enum Command<'a> {
    Host(&'a HostOptions),
    /// `to`, set by `prepare`: the screen shown and the address to join.
    Join {
        opts: &'a JoinOptions,
        to: Option<Box<(lobby::JoinScreen, SocketAddr)>>,
        /// The password the player typed when asked (`JoinOptions::ask_password`).
        typed: Option<String>,
    },
}

impl<'a> NetDriver<'a> {
    fn new(
        play: &'a PlayOptions,
        net: &'a NetOptions,
        chat: ChatBoard,
        command: Command<'a>,
    ) -> NetDriver<'a> {
        NetDriver {
            play,
            net,
            chat: Some(chat),
            command,
            ended: None,
            hosted: None,
        }
    }
}

impl SessionDriver for NetDriver<'_> {
    type Feed = NetFeed;
    type Error = NetplayError;

    fn prepare(&mut self, window: &mut EarlyWindow) -> Result<Plan, NetplayError> {
        match &mut self.command {
            Command::Host(_) => {
                // The window tells what is loading, then shows the lobby.
                let game = game_name(self.play);
                lobby::JoinScreen::new(format!("hosting {game}"), None)
                    .loading(&format!("loading {game}"))
                    .show(window)?;
                Ok(Plan {
                    role: "host",
                    content: Content::Now,
                })
            }
            Command::Join { opts, to, typed } => {
                let mut title = format!("joining {}", opts.host);
                if let Some(room) = &opts.room {
                    title.push_str(&format!(", room {room}"));
                }
                let screen = lobby::JoinScreen::new(title, None);
                screen.show(window)?;
                if opts.ask_password && opts.net.password.is_none() {
                    let why = match &opts.room {
                        Some(room) => format!("room {room} on {} has a password", opts.host),
                        None => format!("{} has a password", opts.host),
                    };
                    *typed = Some(super::open::ask_password(&why, window)?);
                }
                let mut addr = resolve(&opts.host)?;
                if let Some(room) = &opts.room {
                    // In a fleet, the room may be held by another server than the one named.
                    addr = fleet::locate(addr, room)?;
                }
                *to = Some(Box::new((screen, addr)));
                // The core is opened first (the handshake compares its name and version)
                // but the content is loaded only once the host's option values are known.
                Ok(Plan {
                    role: if opts.watch { "spectate" } else { "join" },
                    content: Content::Later,
                })
            }
        }
    }

    fn start(&mut self, stage: Stage<'_>) -> Result<Started<NetFeed>, NetplayError> {
        let chat = self.chat.take().unwrap_or_default();
        let (feed, rollback) = match &mut self.command {
            Command::Host(opts) => host_start(opts, self.play, stage, chat, &mut self.hosted)?,
            Command::Join { opts, to, typed } => {
                let (screen, addr) = *to.take().expect("`prepare` runs before `start`");
                let password = typed.take().or_else(|| opts.net.password.clone());
                join_start(opts, password, self.play, stage, chat, screen, addr)?
            }
        };
        Ok(run::started(self.play, self.net, feed, rollback))
    }

    fn observer(
        &mut self,
        feed: &NetFeed,
        recording: Option<Recording>,
    ) -> Box<dyn FrameObserver<Core>> {
        run::observer(feed, recording)
    }

    fn finish(
        &mut self,
        feed: &mut NetFeed,
        quit: bool,
    ) -> serde_json::Map<String, serde_json::Value> {
        let (ended, extra) = run::finish(feed, quit);
        self.ended = ended;
        extra
    }

    fn outcome(
        &mut self,
        summary: PlaySummary,
        interrupted: bool,
    ) -> Result<PlaySummary, NetplayError> {
        run::outcome(summary, self.ended.take(), interrupted)
    }
}

/// A host's lobby, from its loaded core to the session's feed: in a room on a server
/// (`host_in_room`), in a room hosted here (`open_hosted_room`), or listening itself.
fn host_start(
    opts: &HostOptions,
    play: &PlayOptions,
    stage: Stage<'_>,
    chat: ChatBoard,
    hosted: &mut Option<(SocketAddr, u32)>,
) -> Result<(NetFeed, Decision), NetplayError> {
    let core = &mut *stage.core;
    let game = game_name(play);
    let mut info = session_info(core, &opts.net)?;
    // Every option the core has, so joiners end up with exactly the host's values.
    info.options = core.options();
    let fps = core.av_info().fps;
    let state = core.serialize()?;
    let sram = core
        .memory(crate::host::MemoryRegion::SaveRam)
        .map(<[u8]>::to_vec)
        .unwrap_or_default();

    let in_room = match &opts.server {
        Some(server) if opts.net.path == PathMode::Relayed => {
            let payload = session::StartPayload {
                options: info.options.clone(),
                state,
                sram,
            };
            return host_in_room(opts, server, play, stage, info, payload, chat);
        }
        Some(server) => Some(open_hosted_room(opts, server, &info, fps, stage.window)?),
        None => None,
    };
    *hosted = in_room.as_ref().map(|(_, r)| (r.server, r.session));
    let (mut link, in_room) = match in_room {
        Some((link, room)) => (link, Some(room)),
        None => (Link::host(opts.port, opts.net.netsim.clone())?, None),
    };
    // A direct host's port, or a hosted room's host's socket (its direct paths' candidate).
    let port = link.local_addr().port();
    let port_map = port_map::start(opts.net.port_map, port);
    let seed = random_seed();
    let session_id = in_room.as_ref().map_or((seed >> 32) as u32, |r| r.session);
    let mut host = session::HostConfig::new(session_id, random_bytes(), fps);
    host.hosted_room = in_room.as_ref().map(|r| r.name.clone());
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
    let (now, pcfg) = (Instant::now(), opts.net.participant());
    let mut participant = match &in_room {
        Some(room) => Participant::host_room(now, endpoint, lcfg, pcfg, room.server, &room.key),
        None => Participant::host(now, endpoint, lcfg, pcfg),
    };
    let start_with = match opts.start_with {
        0 => opts.players,
        n => n.min(opts.players),
    };
    let invite = match &in_room {
        Some(room) => lobby::Invite {
            game,
            command: join_command(&room.server_name, Some(&room.name), play),
            link: links::room_link(&room.server_name, &room.name),
            notes: invite_notes(None, opts.net.password.is_some()),
            port_map: None,
        },
        None => {
            let here = crate::net::lan_address().map_or("THIS-MACHINE".into(), |ip| {
                SocketAddr::new(ip, port).to_string()
            });
            lobby::Invite {
                game,
                command: join_command(&here, None, play),
                link: links::direct_link(&here),
                notes: invite_notes(
                    Some(format!(
                        "Over the internet: your public address, with udp port {port} forwarded \
                         here."
                    )),
                    opts.net.password.is_some(),
                ),
                port_map: None,
            }
        }
    };
    let mut invite = invite;
    if let Some(room) = &in_room {
        tracing::info!(
            "netplay: room {} is open on {}, hosted here; your friends join with `{}` or \
             the link {}{}",
            room.name,
            room.server_name,
            invite.command,
            invite.link,
            if opts.net.password.is_some() {
                " and the password"
            } else {
                ""
            }
        );
    }
    let seats = (opts.players, start_with);
    let lobby = (&mut *stage.window, &chat);
    // The rollback check runs while the lobby waits for the players.
    let mut check = RollbackCheck::begin(core, opts.net.speculate, false, &opts.net.cache_dir);
    let mut while_waiting = || {
        check.step(core);
        check.line()
    };
    let join_for = |addr: &str| join_command(addr, None, play);
    let follow = port_map.as_ref().map(|map| lobby::LobbyPortMap {
        map,
        port,
        join_command: &join_for,
    });
    if let Err(e) = lobby::host_lobby(
        &mut link,
        &mut participant,
        seats,
        &mut invite,
        lobby,
        &mut while_waiting,
        follow,
    ) {
        port_map::abandon(port_map);
        return Err(e);
    }
    // A check that outlasted the lobby (a slow core) goes on in slices with the session
    // kept alive: blocking here for seconds made the host's own server drop its player.
    while check.running() {
        check.step(core);
        if let Err(e) = lobby::keep_alive(&mut link, &mut participant) {
            port_map::abandon(port_map);
            return Err(e);
        }
    }
    let rollback = check.finish(core);
    let names = participant
        .endpoint()
        .map(Endpoint::players)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| Some((p.slot.player()?, p.name)))
        .collect();
    let bot = opts.net.play.bot.map(|spec| spec.bot(0));
    let feed = NetFeed::new(link, participant, bot)
        .with_names(names)
        .with_chat(chat, opts.net.say.clone(), opts.net.chat_every)
        .with_path(opts.net.path)
        .with_room(in_room.map(|r| r.name))
        .with_port_map(port_map, port, true);
    start_delay(&opts.net);
    Ok((feed, rollback))
}

/// A joiner's handshake, from its opened core (content not loaded yet) to the session's
/// feed.
fn join_start(
    opts: &JoinOptions,
    password: Option<String>,
    play: &PlayOptions,
    stage: Stage<'_>,
    chat: ChatBoard,
    screen: lobby::JoinScreen,
    addr: SocketAddr,
) -> Result<(NetFeed, Decision), NetplayError> {
    let info = session_info(stage.core, &opts.net)?;
    let link = Link::client(addr, opts.net.netsim.clone())?;
    let mut jcfg = JoinConfig::new(addr, info);
    jcfg.password = password;
    jcfg.entropy = random_bytes();
    jcfg.room = opts.room.clone().unwrap_or_default();
    jcfg.watch = opts.watch;
    // A player back after its process ended shows the seat key its last join here was
    // given: the host gives the seat back at once (a spectator has no seat to keep).
    let seat_keys = (!opts.watch).then(|| {
        let room = opts.room.as_deref();
        let places = vec![
            SeatKeys::place(&opts.host, room),
            SeatKeys::place(&addr.to_string(), room),
        ];
        SeatKeys::new(opts.net.seat_keys.clone(), places, &jcfg.info.player_name)
    });
    if let Some(key) = seat_keys.as_ref().and_then(|k| k.load(SystemTime::now())) {
        tracing::debug!("netplay: showing the seat key of your last join here");
        jcfg.seat_key = key;
    }
    let session = joiner(jcfg, &opts.net);
    // In a room a player hosts, a forwarded port helps the direct path to the host.
    let port_map = match (&opts.room, opts.net.path) {
        (Some(_), PathMode::Auto | PathMode::Direct) => {
            port_map::start(opts.net.port_map, link.local_addr().port())
        }
        _ => None,
    };
    let joined = Joined {
        link,
        session,
        screen,
        chat,
        port_map,
        seat_keys,
    };
    play_joined(&opts.net, play, stage, joined, true)
}

/// A joiner's participant: its handshake starts now.
fn joiner(mut jcfg: JoinConfig, net: &NetOptions) -> Participant {
    jcfg.no_share = net.no_share;
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
    chat: ChatBoard,
    /// Its router's port mapping, if it asks for one.
    port_map: Option<PortMap>,
    /// Where its seat key is saved (a player's `join`; not a room's creator).
    seat_keys: Option<SeatKeys>,
}

/// A room on a server that this process hosts: the server lists it, relays its joiners
/// and introduces them for direct paths (`session::direct`).
struct HostedRoom {
    name: String,
    session: u32,
    server: SocketAddr,
    /// The server as the invite names it.
    server_name: String,
    /// The room's secret with the server (`RoomOpener::room_key`).
    key: [u8; session::msg::ROOM_KEY_LEN],
}

/// Opens a room that this process hosts on `server` (nothing is uploaded).
fn open_hosted_room(
    opts: &HostOptions,
    server: &str,
    info: &SessionInfo,
    fps: f64,
    window: &mut EarlyWindow,
) -> Result<(Link, HostedRoom), NetplayError> {
    let addr = resolve(server)?;
    let mut link = Link::client(addr, opts.net.netsim.clone())?;
    let port = link.local_addr().port();
    let locals = crate::net::lan_address()
        .map(|ip| SocketAddr::new(ip, port))
        .into_iter()
        .collect();
    let open = session::msg::OpenRoom {
        locals,
        ..room_request(opts, info, fps)
    };
    let mut opener = session::RoomOpener::hosted(Instant::now(), addr, open);
    let name = lobby::open_room(&mut link, &mut opener, window)?;
    let moved = opener.server();
    let room = HostedRoom {
        name,
        session: opener.session(),
        key: opener.room_key(),
        server: moved,
        server_name: if moved == addr {
            server.to_string()
        } else {
            moved.to_string()
        },
    };
    Ok((link, room))
}

/// What a room's creator asks a server for (the payload's fields are filled in later).
fn room_request(opts: &HostOptions, info: &SessionInfo, fps: f64) -> session::msg::OpenRoom {
    session::msg::OpenRoom {
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
        password: opts.net.password.as_ref().is_some_and(|p| !p.is_empty()),
        core_name: info.core_name.clone(),
        core_version: info.core_version.clone(),
        content_name: info.content_name.clone(),
        content_hash: info.content_hash,
        player_name: info.player_name.clone(),
        no_share: opts.net.no_share,
        ..session::msg::OpenRoom::default()
    }
}

/// Opens a room on a dedicated server, uploads the start state, then joins it as player 1
/// like any other player: from here on the host is a client of the server.
fn host_in_room(
    opts: &HostOptions,
    server: &str,
    play: &PlayOptions,
    stage: Stage<'_>,
    info: SessionInfo,
    payload: session::StartPayload,
    chat: ChatBoard,
) -> Result<(NetFeed, Decision), NetplayError> {
    let fps = stage.core.av_info().fps;
    let addr = resolve(server)?;
    let mut link = Link::client(addr, opts.net.netsim.clone())?;
    let password = opts.net.password.clone().filter(|p| !p.is_empty());
    let open = room_request(opts, &info, fps);
    let mut opener = session::RoomOpener::new(Instant::now(), addr, open, &payload)
        .map_err(NetplayError::Session)?;
    let room = lobby::open_room(&mut link, &mut opener, stage.window)?;
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
        link: links::room_link(server, &room),
        notes: invite_notes(None, password.is_some()),
        port_map: None,
    };
    tracing::info!(
        "netplay: room {room} is open on {server}; your friends join with `{}` or the \
         link {}{}",
        invite.command,
        invite.link,
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
        chat,
        port_map: None,
        seat_keys: None,
    };
    // The creator's core is at the start state already: nothing to load.
    play_joined(&opts.net, play, stage, joined, false)
}

/// A joiner's handshake through to the end of the game. With `load`, the host's options,
/// content and state are loaded into `core` first.
fn play_joined(
    net: &NetOptions,
    play: &PlayOptions,
    mut stage: Stage<'_>,
    joined: Joined,
    load: bool,
) -> Result<(NetFeed, Decision), NetplayError> {
    let Joined {
        mut link,
        mut session,
        mut screen,
        chat,
        port_map,
        seat_keys,
    } = joined;
    let room = session
        .join_session()
        .and_then(|s| s.room())
        .map(str::to_string);
    let lobby = (&mut *stage.window, &chat);
    let start = match lobby::join_lobby(
        &mut link,
        &mut session,
        &mut screen,
        lobby,
        port_map.as_ref(),
    ) {
        Ok(start) => start,
        Err(e) => {
            port_map::abandon(port_map);
            return Err(e);
        }
    };
    let port = link.local_addr().port();
    // The network thread serves from here on: while this player loads the content and the
    // state and opens its window, it tells the host that it is still coming (`Loading`),
    // which otherwise drops a player silent for 2 s.
    let watch = start.slot.is_none();
    let bot = start
        .slot
        .and_then(|seat| net.play.bot.map(|spec| spec.bot(seat.index())));
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
        .with_path(net.path)
        .with_names(start.players.clone())
        .with_room(room)
        .with_rejoin(rejoin)
        .with_seat_keys(seat_keys)
        .with_port_map(port_map, port, false);
    screen.players = start.players.clone();
    if load {
        screen.doing = format!("loading {}", game_name(play));
        screen
            .show(stage.window)
            .inspect_err(|_| feed.close("quit"))?;
    }
    start_delay(net);
    if load {
        if let Err(e) = load_start(&mut stage, &start) {
            // Tell the host why, at once, instead of going silent.
            feed.close(&format!("could not start: {e}"));
            return Err(e);
        }
    }
    // The rollback check, the first time this core version and game play: the host waits
    // for this player meanwhile, as for a slow load.
    let rollback =
        RollbackCheck::begin(stage.core, net.speculate, watch, &net.cache_dir).finish(stage.core);
    match start.slot {
        None => tracing::info!(
            "netplay: watching session {:08x} from frame {}",
            start.session,
            start.frame.0
        ),
        Some(seat) if start.frame.0 > 0 => tracing::info!(
            "netplay: in session {:08x} as {seat} of {}, from frame {} (the game runs: \
             catching up, then your input counts from a frame the host announces)",
            start.session,
            start.slots,
            start.frame.0
        ),
        Some(seat) => tracing::info!(
            "netplay: in session {:08x} as {seat} of {}",
            start.session,
            start.slots
        ),
    }
    // The screen stays until the first frame is drawn over it.
    screen.doing = if watch {
        "ready; the game shows as soon as its frames arrive".into()
    } else {
        "ready; the game starts when everyone is in".into()
    };
    screen
        .show(stage.window)
        .inspect_err(|_| feed.close("quit"))?;
    Ok((feed, rollback))
}

/// Loads the host's options, the content, the host's save RAM and state into `core`.
fn load_start(stage: &mut Stage<'_>, start: &StartState) -> Result<(), NetplayError> {
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
        if let Err(e) = stage.core.set_option(key, value) {
            tracing::warn!("netplay: host option {key}={value}: {e}");
        }
    }
    stage.load_content()?;
    if !start.payload.sram.is_empty() {
        stage.core.write_sram(&start.payload.sram);
    }
    stage.core.unserialize(&start.payload.state)?;
    Ok(())
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
