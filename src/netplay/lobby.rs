//! Before the first frame: the host waits for its players to join and receive the start
//! state; a joiner runs the handshake until it has the host's state. Both drive a sans-IO
//! session (`session`) over the UDP link the same way: one `net::drive::step`, reacting to
//! its events, then [`sleep`].

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::app::play::EarlyWindow;
use crate::frontend::chat_board::ChatBoard;
use crate::lockstep::{own_name, PeerId, Roster};
use crate::net::portmap::PortMap;
use crate::net::{drive, Link};
use crate::portmap::MapEvent;
use crate::session::direct::PathKind;
use crate::session::{
    Endpoint, EndpointEvent, OpenEvent, Participant, ParticipantEvent, Progress, RoomOpener,
    StartState,
};

use super::report::Report;
use super::NetplayError;

/// Longest a lobby sleeps between looks at the session (and at Ctrl-C).
const POLL: Duration = Duration::from_millis(50);
/// Longest it sleeps with a window open, whose events (Esc, resizing) wait meanwhile.
const WINDOW_POLL: Duration = Duration::from_millis(20);

/// One turn of the session between the lobby and the game's first frame, while work that
/// outlasted the lobby finishes (the rollback check on a slow core): datagrams in, timers
/// (the host's own player counts as starting meanwhile), datagrams out.
pub fn keep_alive(link: &mut Link, participant: &mut Participant) -> Result<(), NetplayError> {
    Ok(drive::exchange(link, participant, Instant::now())?)
}

/// Says what the player typed (if this player can talk yet; else it waits), shows it and
/// sends it.
fn say_typed(link: &mut Link, participant: &mut Participant, chat: &ChatBoard) {
    let now = Instant::now();
    for line in super::chat::say_typed(chat, participant, now) {
        super::chat::show(chat, now, line);
    }
    drive::send_queued(link, participant, now);
}

/// Shows `rows` in the window, if one is open, and handles its events; then waits until a
/// datagram arrives, the session's next timer (`wake`), or `POLL` (`WINDOW_POLL` with a
/// window). Err(Left) when the player pressed Esc or closed the window.
fn sleep(
    link: &Link,
    wake: Option<Instant>,
    now: Instant,
    window: &mut EarlyWindow,
    rows: impl FnOnce() -> Vec<String>,
) -> Result<(), NetplayError> {
    let mut wake = wake.map_or(now + POLL, |t| t.min(now + POLL));
    if window.is_open() {
        if window.show(&rows(), Duration::ZERO)? {
            return Err(NetplayError::Left);
        }
        wake = wake.min(now + WINDOW_POLL);
    }
    link.wait_until(now, Some(wake))?;
    Ok(())
}

/// What a host's lobby tells players about joining (on screen and in the log).
#[derive(Clone, Debug)]
pub struct Invite {
    /// What is played: the content's file name, or the built-in game.
    pub game: String,
    /// The command a friend types to join.
    pub command: String,
    /// The same as a `framelock://` link to paste in a chat app (`framelock open` joins).
    pub link: String,
    /// More they need to know (a router's port forward, the password).
    pub notes: Vec<String>,
    /// What the port mapping did (`port map: PCP 203.0.113.7:7845 (lease 1 h)`).
    pub port_map: Option<String>,
}

impl Invite {
    fn rows(&self, rows: &mut Vec<String>) {
        rows.push("Friends join with:".into());
        rows.push(format!("  {}", self.command));
        rows.push(format!("  or the link {}", self.link));
        rows.extend(self.notes.iter().cloned());
        rows.extend(self.port_map.iter().cloned());
    }
}

/// A host's port mapping as its lobby follows it: the mapping, the port it maps, and how
/// to make the join command for an address.
pub struct LobbyPortMap<'a> {
    pub map: &'a PortMap,
    pub port: u16,
    pub join_command: &'a dyn Fn(&str) -> String,
}

impl LobbyPortMap<'_> {
    /// Passes the mapping's news on (to the participant and the log) and shows it in the
    /// invite: a mapped address makes the join command, a failure says what to do.
    fn follow(&self, participant: &mut Participant, invite: &mut Invite) {
        let direct_host = !participant.hosts_room();
        let events = super::port_map::pump(self.map, participant, self.port, direct_host);
        let report = self.map.report();
        invite.port_map = Some(super::port_map::line(&report));
        for ev in events {
            match ev {
                MapEvent::Mapped(m) if direct_host => {
                    let lan = std::mem::replace(
                        &mut invite.command,
                        (self.join_command)(&m.external.to_string()),
                    );
                    invite.notes.retain(|n| {
                        !n.starts_with("Over the internet") && !n.starts_with("On this network")
                    });
                    invite.notes.insert(0, format!("On this network: {lan}"));
                    tracing::info!(
                        "netplay: over the internet, friends join with `{}` (the router forwards udp port {} here)",
                        invite.command,
                        m.external.port()
                    );
                }
                MapEvent::Failed(_) if direct_host => {
                    let hint = super::port_map::hint(&report, self.port);
                    invite
                        .notes
                        .push(format!("To be joined from the internet, {hint}."));
                }
                _ => {}
            }
        }
    }
}

/// The host's lobby screen: the game, who is in, the free seats and how to join.
fn host_rows(
    endpoint: &Endpoint,
    paths: &[(Option<PeerId>, PathKind)],
    (seats, want): (u8, u8),
    invite: &Invite,
) -> Vec<String> {
    let players = endpoint.players();
    let mut rows = vec![format!("framelock: hosting {}", invite.game), String::new()];
    let free = usize::from(seats).saturating_sub(players.len());
    let starts = if want < seats {
        format!(", the game starts with {want}")
    } else {
        String::new()
    };
    rows.push(format!(
        "Players: {} of {seats} in, {free} seat{} free{starts}",
        players.len(),
        if free == 1 { "" } else { "s" }
    ));
    for p in &players {
        let name = own_name(&p.name, p.slot).unwrap_or("");
        let state = match (p.addr, p.ready) {
            (None, _) => "(you)".to_string(),
            (Some(addr), ready) => format!(
                "{addr}  {}{}",
                if ready { "ready" } else { "receiving the game" },
                p.rtt
                    .map(|r| format!("  {} ms", r.as_millis()))
                    .unwrap_or_default()
            ),
        };
        let path = paths
            .iter()
            .find(|(s, _)| s.is_some() && *s == p.slot.player())
            .map(|(_, k)| format!("  {}", k.as_str().to_uppercase()))
            .unwrap_or_default();
        let state = state + &path;
        rows.push(format!("  P{} {name}  {state}", p.slot.number() + 1));
    }
    let watching = endpoint.spectator_count();
    if watching > 0 {
        rows.push(format!("  and {watching} watching"));
    }
    rows.push(String::new());
    invite.rows(&mut rows);
    rows.push(String::new());
    rows.push("Esc leaves".into());
    rows
}

/// A joiner's screen before the game: where it joins, how far it got, who is in.
#[derive(Clone, Debug)]
pub struct JoinScreen {
    /// "joining HOST" (and the room).
    pub title: String,
    /// What is happening now.
    pub doing: String,
    /// Players in, by slot and name; this player's seat (`None` until it is welcomed to
    /// one, or if it watches).
    pub players: Roster,
    pub slot: Option<PeerId>,
    /// The room's invite, shown to the player who opened it.
    pub invite: Option<Invite>,
    /// In a room hosted by a player: how this player reaches the host.
    pub path: Option<PathKind>,
}

impl JoinScreen {
    pub fn new(title: String, invite: Option<Invite>) -> JoinScreen {
        JoinScreen {
            title,
            doing: "waiting for an answer".into(),
            players: Roster::new(),
            slot: None,
            invite,
            path: None,
        }
    }

    pub fn rows(&self) -> Vec<String> {
        let mut rows = vec![
            format!("framelock: {}", self.title),
            String::new(),
            self.doing.clone(),
        ];
        if !self.players.is_empty() {
            rows.push(String::new());
            rows.push("Players in:".into());
            for (seat, _) in self.players.iter() {
                let you = if self.slot == Some(seat) {
                    "  (you)"
                } else {
                    ""
                };
                let name = self.players.own_name(seat).unwrap_or("");
                rows.push(format!("  P{} {name}{you}", seat.0 + 1));
            }
        }
        if let Some(path) = self.path {
            rows.push(format!(
                "Path to the host: {}",
                path.as_str().to_uppercase()
            ));
        }
        if let Some(invite) = &self.invite {
            rows.push(String::new());
            invite.rows(&mut rows);
        }
        rows.push(String::new());
        rows.push("Esc leaves".into());
        rows
    }

    /// The screen with `doing` as what happens now.
    pub fn loading(mut self, doing: &str) -> JoinScreen {
        self.doing = doing.to_string();
        self
    }

    /// Shows the screen once (nothing to wait for: the caller is about to do slow work).
    pub fn show(&self, window: &mut EarlyWindow) -> Result<(), NetplayError> {
        if window.show(&self.rows(), Duration::ZERO)? {
            return Err(NetplayError::Left);
        }
        Ok(())
    }
}

/// Sends the goodbyes the session queued and lets them leave the conditioner.
fn goodbye(link: &mut Link, participant: &mut Participant) {
    drive::send_queued(link, participant, Instant::now());
    link.drain(super::GOODBYE_DRAIN);
}

/// What the host's lobby makes of one of its participant's events: the game's start (the
/// slots that play) or the lobby's end ends the lobby; the rest the report words, as in the
/// game.
fn host_event(
    host: &mut Participant,
    ev: ParticipantEvent,
    report: &mut Report,
    now: Instant,
    start: Instant,
) -> ControlFlow<Result<Vec<PeerId>, NetplayError>> {
    match ev {
        ParticipantEvent::Session(EndpointEvent::Started { slots }) => {
            ControlFlow::Break(Ok(slots))
        }
        ParticipantEvent::Session(EndpointEvent::LobbyExpired { ready, want }) => {
            ControlFlow::Break(Err(NetplayError::LobbyTimeout {
                secs: now.duration_since(start).as_secs(),
                ready,
                want,
            }))
        }
        ev => {
            // Nothing is recorded before the game.
            report.event(now, host, ev, &mut Vec::new());
            ControlFlow::Continue(())
        }
    }
}

/// Serves the lobby until every player is in and ready, when the endpoint starts the game;
/// returns the slots that play (the host's own slot 0 included). Ends early when the
/// lobby's time runs out or the host presses Ctrl-C. Chat goes between the host and the
/// players that have the start state.
pub fn host_lobby(
    link: &mut Link,
    host: &mut Participant,
    (seats, want): (u8, u8),
    invite: &mut Invite,
    (window, chat): (&mut EarlyWindow, &ChatBoard),
    while_waiting: &mut dyn FnMut() -> Option<String>,
    port_map: Option<LobbyPortMap<'_>>,
) -> Result<Vec<PeerId>, NetplayError> {
    let start = Instant::now();
    let port = link.local_addr().port();
    let mode = host.endpoint().map(Endpoint::mode).unwrap_or_default();
    let mut report = Report::default();
    report.chat = chat.clone();
    if host.hosts_room() {
        tracing::info!(
            "netplay: hosting the room ({mode} mode); waiting for {} more player(s)",
            want.saturating_sub(1)
        );
    } else {
        tracing::info!(
            "netplay: hosting on udp port {port} ({mode} mode); waiting for {} more player(s)",
            want.saturating_sub(1)
        );
        tracing::info!(
            "netplay: on this network, players join with `{}` (or the link {}) and the same game",
            invite.command,
            invite.link
        );
        if port_map.is_some() {
            tracing::info!(
                "netplay: asking the router to forward udp port {port} here (--port-map off \
                 does not ask)"
            );
        } else {
            tracing::info!(
                "netplay: over the internet, with your public address and udp port {port} \
                 forwarded to this machine"
            );
        }
    }
    loop {
        if let Some(pm) = &port_map {
            pm.follow(host, invite);
        }
        let now = Instant::now();
        let wake = match drive::step(link, host, now, |host, ev| {
            host_event(host, ev, &mut report, now, start)
        })? {
            ControlFlow::Break(end) => return end,
            ControlFlow::Continue(wake) => wake,
        };
        if crate::app::interrupt::requested() {
            host.close("the host stopped before the game started");
            goodbye(link, host);
            return Err(NetplayError::Interrupted);
        }
        let Some(endpoint) = host.endpoint() else {
            return Err(NetplayError::Interrupted);
        };
        let paths = host.paths();
        // Work that waits with the lobby (the rollback check), and its line on the screen.
        let note = while_waiting();
        let invite = &*invite;
        let rows = || {
            let mut rows = host_rows(endpoint, &paths, (seats, want), invite);
            rows.extend(note.clone());
            rows
        };
        if let Err(e) = sleep(link, wake, now, window, rows) {
            host.close("the host left before the game started");
            goodbye(link, host);
            return Err(e);
        }
        say_typed(link, host, chat);
    }
}

/// Opens a room on a dedicated server and uploads the start state; returns the room's name.
pub fn open_room(
    link: &mut Link,
    opener: &mut RoomOpener,
    window: &mut EarlyWindow,
) -> Result<String, NetplayError> {
    tracing::info!("netplay: opening a room on {}", opener.server());
    let mut screen = JoinScreen::new(format!("opening a room on {}", opener.server()), None);
    let mut bar = DownloadBar(None);
    loop {
        let now = Instant::now();
        let turn = drive::step(link, opener, now, |opener, ev| {
            match ev {
                OpenEvent::Opened { .. } if opener.progress().total == 0 => {}
                OpenEvent::Opened { room, .. } => {
                    let len = opener.progress().total;
                    tracing::info!(
                        "netplay: the server opened room {room}; uploading {:.1} KiB of start state",
                        len as f64 / 1024.0
                    );
                    bar = DownloadBar::new(len as u64, "uploading the start state");
                }
                OpenEvent::Uploaded { room, .. } => return ControlFlow::Break(Ok(room)),
                OpenEvent::Moved { server } => {
                    tracing::info!("netplay: that server is full; opening the room on {server}");
                    screen.title = format!("opening a room on {server}");
                }
                OpenEvent::Failed(e) => return ControlFlow::Break(Err(NetplayError::Join(e))),
            }
            ControlFlow::Continue(())
        })?;
        let wake = match turn {
            ControlFlow::Break(end) => return end,
            ControlFlow::Continue(wake) => wake,
        };
        let Progress {
            done: sent,
            total: len,
        } = opener.progress();
        bar.at(sent as u64);
        if len > 0 {
            screen.doing = format!("uploading the game: {}", kib_of(sent, len));
        }
        if crate::app::interrupt::requested() {
            return Err(NetplayError::Interrupted);
        }
        sleep(link, wake, now, window, || screen.rows())?;
    }
}

/// Runs the joiner's handshake to the end: the host's start state, or why not. Lines typed
/// meanwhile wait on `chat` until the player is in the session.
pub fn join_lobby(
    link: &mut Link,
    session: &mut Participant,
    screen: &mut JoinScreen,
    (window, chat): (&mut EarlyWindow, &ChatBoard),
    port_map: Option<&PortMap>,
) -> Result<StartState, NetplayError> {
    if let Some(s) = session.join_session() {
        tracing::info!("netplay: joining {}", s.host());
    }
    let mut bar = DownloadBar(None);
    let mut welcomed = false;
    let mut report = Report::default();
    report.chat = chat.clone();
    let port = link.local_addr().port();
    loop {
        if let Some(pm) = port_map {
            super::port_map::pump(pm, session, port, false);
            if let Some(invite) = &mut screen.invite {
                invite.port_map = Some(super::port_map::line(&pm.report()));
            }
        }
        let now = Instant::now();
        let turn = drive::step(link, session, now, |session, ev| {
            match ev {
                ParticipantEvent::Welcomed {
                    slot,
                    packed_len,
                    players,
                    mode,
                    keyframe_interval,
                } => {
                    welcomed = true;
                    screen.players = players;
                    screen.slot = slot;
                    let kib = packed_len as f64 / 1024.0;
                    match slot {
                        None => tracing::info!(
                            "netplay: admitted as a spectator ({mode} mode); receiving \
                             {kib:.1} KiB of state"
                        ),
                        Some(seat) => tracing::info!(
                            "netplay: admitted as {seat} ({mode} mode, K {keyframe_interval}); \
                             receiving {kib:.1} KiB of start state"
                        ),
                    }
                    bar = DownloadBar::new(packed_len as u64, "start state");
                }
                ParticipantEvent::Ready(state) => return ControlFlow::Break(Ok(*state)),
                ParticipantEvent::Ended(e) => {
                    return ControlFlow::Break(Err(NetplayError::Join(e)))
                }
                // Nothing is recorded before the game.
                ev => report.event(now, session, ev, &mut Vec::new()),
            }
            ControlFlow::Continue(())
        })?;
        let wake = match turn {
            ControlFlow::Break(end) => return end,
            ControlFlow::Continue(wake) => wake,
        };
        screen.path = session.paths().first().map(|(_, k)| *k);
        let Progress {
            done: got,
            total: len,
        } = session
            .join_session()
            .map(|s| s.progress())
            .unwrap_or_default();
        bar.at(got as u64);
        if welcomed && len > 0 {
            let what = match screen.slot {
                None => "admitted to watch".to_string(),
                Some(seat) => format!("admitted as {seat}"),
            };
            screen.doing = format!("{what}; receiving the game: {}", kib_of(got, len));
        }
        if crate::app::interrupt::requested() {
            session.close("quit");
            goodbye(link, session);
            return Err(NetplayError::Interrupted);
        }
        if let Err(e) = sleep(link, wake, now, window, || screen.rows()) {
            session.close("quit");
            goodbye(link, session);
            return Err(e);
        }
        say_typed(link, session, chat);
    }
}

/// "12.3 of 45.6 KiB".
fn kib_of(done: usize, len: usize) -> String {
    format!(
        "{:.1} of {:.1} KiB",
        done as f64 / 1024.0,
        len as f64 / 1024.0
    )
}

/// The start state's download on stderr, once its size is known: long at long round trips
/// (the transfer's window starts small and grows a round at a time). indicatif draws it only
/// when stderr is a terminal; it is cleared when the lobby ends, however it ends.
struct DownloadBar(Option<ProgressBar>);

impl DownloadBar {
    fn new(len: u64, what: &str) -> DownloadBar {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(&format!(
            "{what} [{{bar:30}}] {{binary_bytes}}/{{binary_total_bytes}}, \
             {{binary_bytes_per_sec}}, eta {{eta}}"
        )) {
            bar.set_style(style.progress_chars("=> "));
        }
        DownloadBar(Some(bar))
    }

    fn at(&self, bytes: u64) {
        if let Some(bar) = &self.0 {
            bar.set_position(bytes);
        }
    }
}

impl Drop for DownloadBar {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
