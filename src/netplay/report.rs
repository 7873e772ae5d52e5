//! What netplay tells people: the log lines for what a session's participant raised, the
//! numbers gathered for `--stats-json`, and the window's status line. It decides nothing
//! about the session; the participant (`session::Participant`) does.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::frontend::chat_board::ChatBoard;
use crate::lockstep::{self, ClientEvent, Frame, PauseRefusal, PeerId, Slot};
use crate::net::LinkStats;
use crate::replay::Event;
use crate::session::direct::{PathEvent, PathKind, PathMode};
use crate::session::{
    ChatLine, EndpointEvent, Participant, ParticipantEvent, PlayerOutReason, SessionError,
    LOADING_LIMIT,
};
use std::net::SocketAddr;

use super::status::{PeerStatus, Status};

/// The log line for a path of a room hosted by a player that went direct or back to the
/// relay; `who` is the other side.
pub(crate) fn log_path(who: &str, event: &PathEvent, mode: PathMode) {
    match event {
        PathEvent::Direct { addr, after } => tracing::info!(
            "netplay: direct path to {who} ({addr}, proven in {} ms): the server no longer \
             carries the game",
            after.as_millis()
        ),
        PathEvent::Relayed { why } if mode == PathMode::Direct => {
            tracing::warn!("netplay: {who} stays relayed by the server: {why}")
        }
        PathEvent::Relayed { why } => {
            tracing::info!("netplay: {who} is relayed by the server: {why}")
        }
    }
}

/// How log lines name the player in `slot`: "ana (player 2)", its name and its place, since
/// two players may go by the same name; just "player 2" when it has no name of its own.
pub(crate) fn player_label(names: &[(u8, String)], slot: u8) -> String {
    let place = PeerId(slot).to_string();
    let name = names.iter().find(|(s, _)| *s == slot);
    match name.and_then(|(_, name)| own_name(name, slot)) {
        Some(name) => format!("{name} ({place})"),
        None => place,
    }
}

/// The name of the player in `slot` if it has one of its own: not empty, and not the
/// "player N" the host names a nameless joiner after its place (said once is enough).
pub(crate) fn own_name(name: &str, slot: u8) -> Option<&str> {
    (!name.is_empty() && name != PeerId(slot).to_string()).then_some(name)
}

/// Netplay numbers gathered while running.
#[derive(Default)]
pub(crate) struct Counters {
    desyncs: u64,
    /// Frames of the desyncs this peer heard of.
    desync_frames: Vec<u32>,
    /// Recoveries completed (host: states delivered; joiner: states loaded).
    pub resyncs: u64,
    /// Joiner: ms from hearing of a desync to loading the host's state.
    resync_ms: Vec<f64>,
    desync_heard_at: Option<Instant>,
    players_left: Vec<(u8, u32)>,
    players_joined: Vec<(u8, u32)>,
    /// Spectator: fresh states it jumped to after falling behind.
    pub jumps: u64,
    /// Joiner: times it lost the host, came back, and ms from losing to playing again.
    pub connections_lost: u64,
    pub reconnects: u64,
    pub reconnect_ms: Vec<f64>,
    lost_at: Option<Instant>,
    /// RTT samples (ms, one per frame run), as a 1 ms histogram capped at 5 s.
    rtt_ms: Vec<u64>,
    rtt_count: u64,
    /// Spectator: its delay behind the players (ms), every 30th frame.
    pub delay_ms: Vec<f64>,
}

pub(crate) fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

impl Counters {
    pub fn record_rtt(&mut self, rtt: Duration) {
        if self.rtt_ms.is_empty() {
            self.rtt_ms = vec![0; 5001];
        }
        let ms = (rtt.as_secs_f64() * 1000.0).round().min(5000.0) as usize;
        self.rtt_ms[ms] += 1;
        self.rtt_count += 1;
    }

    fn rtt_median(&self) -> Option<u64> {
        let half = self.rtt_count.div_ceil(2);
        let mut seen = 0;
        for (ms, n) in self.rtt_ms.iter().enumerate() {
            seen += n;
            if seen >= half && *n > 0 {
                return Some(ms as u64);
            }
        }
        None
    }

    /// A desync recovery's state was loaded.
    pub fn resynced(&mut self, now: Instant) {
        self.resyncs += 1;
        if let Some(heard) = self.desync_heard_at.take() {
            let ms = now.saturating_duration_since(heard).as_secs_f64() * 1000.0;
            self.resync_ms.push(ms);
        }
    }

    /// Back in the session after a lost connection.
    pub fn reconnected(&mut self, now: Instant) {
        self.reconnects += 1;
        if let Some(lost) = self.lost_at.take() {
            let ms = now.saturating_duration_since(lost).as_secs_f64() * 1000.0;
            self.reconnect_ms.push(ms);
        }
    }
}

/// Who is in, the counters, and the wording of events.
#[derive(Default)]
pub(crate) struct Report {
    pub names: Vec<(u8, String)>,
    /// The room, when the session runs on a dedicated server.
    pub room: Option<String>,
    pub counters: Counters,
    /// Slots that left (or were dropped) and by which name, to tell a player who comes
    /// back from a new one.
    gone: Vec<(u8, String)>,
    /// Host: why each player who left the running game said it left (its goodbye), for the
    /// one line that says so with the frame its input stops at.
    left_why: Vec<(u8, String)>,
    /// Joiner: the command that gets it back into the session, said when it gives up.
    pub rejoin: Option<String>,
    /// Where chat messages are shown and typed.
    pub chat: ChatBoard,
    /// The pause in force: who paused (as the status bar says it) and since when.
    pub paused: Option<(String, Instant)>,
    /// Pauses seen: (slot that paused, frame, seconds it lasted here).
    pauses: Vec<(u8, u32, f64)>,
    /// `--path`, for the wording of a path that stays relayed.
    pub path: PathMode,
    /// A room hosted by a player: each player's path as last seen (see `note_paths`).
    paths: std::cell::RefCell<Vec<(Option<u8>, PathKind)>>,
}

impl Report {
    pub fn name(&self, slot: u8) -> String {
        player_label(&self.names, slot)
    }

    /// The player's own name if it has one, else its place ("player 2"): for the status
    /// bar, where "ana (player 2)" is too long.
    fn short_name(&self, slot: u8) -> String {
        self.names
            .iter()
            .find(|(s, _)| *s == slot)
            .and_then(|(_, n)| own_name(n, slot))
            .map_or_else(|| PeerId(slot).to_string(), str::to_string)
    }

    fn set_name(&mut self, slot: u8, name: String) {
        if !name.is_empty() {
            self.names.retain(|(s, _)| *s != slot);
            self.names.push((slot, name));
        }
    }

    /// Words what the participant raised, and returns the recording events it makes
    /// (`(session frame, event)`) and why the session ended, if it did.
    pub fn event(
        &mut self,
        now: Instant,
        p: &Participant,
        ev: ParticipantEvent,
        recorded: &mut Vec<(u32, Event)>,
    ) -> Option<String> {
        match ev {
            ParticipantEvent::Session(ev) => self.endpoint_event(p, ev, recorded),
            ParticipantEvent::Game(ev) => self.client_event(now, p, ev, recorded),
            ParticipantEvent::Waiting { ready, want } => tracing::info!(
                "netplay: waiting for the game to start: {ready} of {want} players in"
            ),
            ParticipantEvent::PasswordChecked { admitted } => tracing::info!(
                "netplay: a joiner {} the room's password",
                if admitted { "knew" } else { "got wrong" }
            ),
            ParticipantEvent::StateReceived { frame, bytes, jump } => {
                if jump {
                    tracing::info!(
                        "netplay: fell behind the players; received a fresh state for frame \
                         {} ({} KiB)",
                        frame.0,
                        bytes / 1024
                    );
                } else {
                    tracing::info!(
                        "netplay: received the host's state for frame {} ({} KiB)",
                        frame.0,
                        bytes / 1024
                    );
                }
            }
            ParticipantEvent::StartOverdue { after } => tracing::error!(
                "netplay: still not running {} s after {after}; going silent, so that the other \
                 players drop this one instead of waiting for it",
                LOADING_LIMIT.as_secs()
            ),
            ParticipantEvent::WaitingForStart { late: true } => {
                tracing::info!("netplay: waiting for the host's first frames")
            }
            ParticipantEvent::WaitingForStart { late: false } => tracing::info!(
                "netplay: waiting for every player to start: frame 0 runs once all of them run \
                 (one still loading may take up to {} s)",
                LOADING_LIMIT.as_secs()
            ),
            ParticipantEvent::StateAsked => tracing::info!(
                "netplay: the server asks for this machine's state, to resync a player that \
                 diverged"
            ),
            ParticipantEvent::ConnectionLost { why, until } => {
                self.counters.connections_lost += 1;
                self.counters.lost_at = Some(now);
                tracing::warn!(
                    "netplay: connection lost ({why}); reconnecting for up to {} s",
                    until.saturating_duration_since(now).as_secs_f64().round()
                );
            }
            ParticipantEvent::Back { frame, .. } => tracing::info!(
                "netplay: reconnected; the game goes on from frame {} once its state is loaded",
                frame.0
            ),
            ParticipantEvent::HostMoved { from, to } => {
                tracing::info!("netplay: the host moved from {from} to {to}")
            }
            ParticipantEvent::Ended(e) => {
                let mut msg = e.to_string();
                if let (SessionError::ReconnectGaveUp { .. }, Some(cmd)) = (&e, &self.rejoin) {
                    msg.push_str(&format!("; to come back, run `{cmd}`"));
                }
                tracing::error!("netplay: {msg}");
                return Some(msg);
            }
            ParticipantEvent::Path { peer, event } => self.path_event(p, peer, event),
            ParticipantEvent::Chat(line) => self.chat_line(now, line, recorded),
            ParticipantEvent::Welcomed { .. }
            | ParticipantEvent::Ready(_)
            | ParticipantEvent::Core(_) => {}
        }
        None
    }

    /// A path of a hosted room went direct or back to the relay.
    fn path_event(&mut self, p: &Participant, peer: Option<SocketAddr>, event: PathEvent) {
        let who = match peer {
            None => "the host".to_string(),
            Some(addr) => p
                .endpoint()
                .and_then(|e| e.players().into_iter().find(|pl| pl.addr == Some(addr)))
                .map_or(addr.to_string(), |pl| self.name(pl.slot)),
        };
        log_path(&who, &event, self.path);
    }

    /// A chat message (someone else's, or this player's own): recorded at its frame, and
    /// logged and shown unless `--chat` hides it.
    pub fn chat_line(&mut self, now: Instant, line: ChatLine, recorded: &mut Vec<(u32, Event)>) {
        recorded.push((
            line.frame.0,
            Event::Chat {
                slot: line.slot,
                name: line.name.clone(),
                text: line.text.clone(),
            },
        ));
        super::chat::show(&self.chat, now, line);
    }

    fn client_event(
        &mut self,
        now: Instant,
        p: &Participant,
        ev: ClientEvent,
        recorded: &mut Vec<(u32, Event)>,
    ) {
        match ev {
            ClientEvent::ServerSilent { silent_for } => tracing::warn!(
                "netplay: nothing from the host for {} ms",
                silent_for.as_millis()
            ),
            // The participant turns it into a reconnect or an end.
            ClientEvent::ServerLost => {}
            ClientEvent::PlayerLeft { peer, from_frame } => {
                // The host says it once, with why (`PlayerOut`).
                if !p.is_host() {
                    tracing::info!(
                        "netplay: {} left; neutral input from frame {}",
                        self.name(peer.0),
                        from_frame.0
                    );
                }
                let name = self
                    .names
                    .iter()
                    .find(|(s, _)| *s == peer.0)
                    .map(|(_, n)| n.clone())
                    .unwrap_or_default();
                self.gone.retain(|(s, _)| *s != peer.0);
                self.gone.push((peer.0, name));
                self.counters.players_left.push((peer.0, from_frame.0));
                recorded.push((from_frame.0, Event::Left { slot: peer.0 }));
            }
            ClientEvent::PlayerJoined {
                peer,
                from_frame,
                name,
            } => {
                let back = self
                    .gone
                    .iter()
                    .any(|(s, n)| *s == peer.0 && (n == &name || name.is_empty()));
                self.set_name(peer.0, name.clone());
                if back {
                    tracing::info!(
                        "netplay: {} is back from frame {}",
                        self.name(peer.0),
                        from_frame.0
                    );
                } else {
                    tracing::info!(
                        "netplay: {} joined from frame {}",
                        self.name(peer.0),
                        from_frame.0
                    );
                }
                self.counters.players_joined.push((peer.0, from_frame.0));
                recorded.push((from_frame.0, Event::Joined { slot: peer.0, name }));
            }
            ClientEvent::Paused { peer, at } => {
                let who = self.name(peer.0);
                let own = p.client().is_some_and(|c| c.me() == peer);
                tracing::info!(
                    "netplay: {who} paused at frame {}; {} resume{}",
                    at.0,
                    if own { "you" } else { "they" },
                    if own {
                        " (P)".to_string()
                    } else {
                        format!(", anyone after {} s", lockstep::OWNED_FOR.as_secs())
                    }
                );
                let short = self.short_name(peer.0);
                self.paused = Some((short, now));
                self.pauses.push((peer.0, at.0, 0.0));
                recorded.push((at.0, Event::Paused { slot: peer.0 }));
            }
            ClientEvent::Resumed { peer, at } => {
                let lasted = self
                    .paused
                    .take()
                    .map_or(0.0, |(_, t)| now.saturating_duration_since(t).as_secs_f64());
                if let Some(last) = self.pauses.last_mut() {
                    last.2 = lasted;
                }
                tracing::info!(
                    "netplay: {} resumed at frame {} after {lasted:.1} s",
                    self.name(peer.0),
                    at.0
                );
                recorded.push((at.0, Event::Resumed { slot: peer.0 }));
            }
            ClientEvent::PauseRefused { why } => match why {
                PauseRefusal::TooMany { wait_secs } => tracing::warn!(
                    "netplay: pause refused: more than {} pauses a minute; allowed again in \
                     {wait_secs} s",
                    lockstep::PAUSES_PER_WINDOW
                ),
                PauseRefusal::NotYours { wait_secs } => tracing::warn!(
                    "netplay: resume refused: {} paused, and only they can resume for \
                     {wait_secs} s more",
                    self.paused
                        .as_ref()
                        .map_or("another player", |(n, _)| n.as_str())
                ),
            },
            ClientEvent::Desync { frame, peer } => {
                self.counters.desyncs += 1;
                self.counters.desync_frames.push(frame.0);
                if p.client().is_some_and(|c| c.me() == peer) {
                    self.counters.desync_heard_at.get_or_insert(now);
                }
                tracing::error!(
                    "netplay: desync detected at frame {}: {} differs from the host",
                    frame.0,
                    self.name(peer.0)
                );
            }
        }
    }

    /// Host: logs what the endpoint raised; a player leaving is said once, by `PlayerOut`
    /// once the game runs (with the frame its input stops), by `Left` in the lobby.
    fn endpoint_event(
        &mut self,
        p: &Participant,
        ev: EndpointEvent,
        recorded: &mut Vec<(u32, Event)>,
    ) {
        let endpoint = p.endpoint();
        let running = endpoint.is_some_and(|e| e.is_running());
        match ev {
            EndpointEvent::Joined {
                slot: Slot::Spectator(_),
                name,
                addr,
            } => {
                tracing::info!("netplay: {name} ({addr}) asks to watch")
            }
            EndpointEvent::Joined {
                slot: Slot::Player(slot),
                name,
                addr,
            } => {
                if running {
                    tracing::info!(
                        "netplay: {name} ({addr}) takes seat {} of the running game",
                        slot.0 + 1
                    );
                } else {
                    tracing::info!("netplay: {name} ({addr}) joined as {slot}");
                }
                self.set_name(slot.0, name);
            }
            EndpointEvent::Watching { slot, frame } => {
                let n = endpoint.map_or(0, |e| e.spectator_count());
                tracing::info!(
                    "netplay: {slot} watches from frame {} ({n} watching)",
                    frame.0
                )
            }
            EndpointEvent::SpectatorLeft { slot, reason } => {
                tracing::info!("netplay: {slot} {reason}")
            }
            EndpointEvent::NoState { slot } => tracing::warn!(
                "netplay: no state could be sent to the joiner in slot {}; it was sent away",
                slot.number()
            ),
            // The host's own client raises it too, with the name: said there.
            EndpointEvent::PlayerJoined { .. } => {}
            // In the game `PlayerOut` says it, with the frame its input stops at.
            EndpointEvent::Left { slot, reason } if running => {
                self.left_why.retain(|(s, _)| *s != slot.0);
                self.left_why.push((slot.0, reason.to_string()));
            }
            EndpointEvent::Left { slot, reason } => {
                tracing::info!("netplay: {} {reason}", self.name(slot.0))
            }
            EndpointEvent::Refused { addr, reason } => {
                tracing::info!("netplay: refused {addr}: {reason}")
            }
            EndpointEvent::PlayerSilent { slot, silent_for } => tracing::warn!(
                "netplay: nothing from {} for {} ms",
                self.name(slot.0),
                silent_for.as_millis()
            ),
            EndpointEvent::PlayerOut {
                slot,
                reason,
                from_frame,
            } => {
                let who = self.name(slot.0);
                let bye = self.left_why.iter().find(|(s, _)| *s == slot.0);
                match (&reason, bye) {
                    (PlayerOutReason::Left, Some((_, why))) => tracing::info!(
                        "netplay: {who} {why}; neutral input from frame {}",
                        from_frame.0
                    ),
                    (PlayerOutReason::Left, None) => tracing::info!(
                        "netplay: {who} is out (left); neutral input from frame {}",
                        from_frame.0
                    ),
                    (PlayerOutReason::TimedOut | PlayerOutReason::TimedOutLoading, _) => {
                        tracing::warn!(
                        "netplay: {who} is out ({reason}); neutral input from frame {}; it may \
                         come back",
                        from_frame.0
                    )
                    }
                    (PlayerOutReason::SlowStart, _) => tracing::warn!(
                        "netplay: {who} is out ({reason}); neutral input from frame {}",
                        from_frame.0
                    ),
                }
                self.left_why.retain(|(s, _)| *s != slot.0);
            }
            EndpointEvent::Desync {
                frame,
                slot,
                expected,
                got,
                send_state,
                ..
            } => {
                tracing::error!(
                    "netplay: desync at frame {}: {} has {got:016x}, host has {expected:016x}{}",
                    frame.0,
                    self.name(slot.0),
                    if send_state {
                        "; sending the host's state"
                    } else {
                        " (recovery under way)"
                    }
                );
                // The host's log: its own checksum and the player's.
                let desync = Event::Desync {
                    local: expected,
                    remote: got,
                };
                recorded.push((frame.0, desync));
            }
            EndpointEvent::StillLoading {
                slot,
                waited,
                again: false,
            } => tracing::info!(
                "netplay: {} is still loading ({:.1} s since it had the start state); the \
                 game starts when it runs (waiting up to {} s)",
                self.name(slot.0),
                waited.as_secs_f64(),
                LOADING_LIMIT.as_secs()
            ),
            EndpointEvent::StillLoading { slot, waited, .. } => tracing::info!(
                "netplay: still waiting for {} to load ({:.0} s)",
                self.name(slot.0),
                waited.as_secs_f64()
            ),
            EndpointEvent::Running { slot, waited } => tracing::info!(
                "netplay: {} is running, {:.1} s after it had the start state",
                self.name(slot.0),
                waited.as_secs_f64()
            ),
            EndpointEvent::Resynced { slot, frame } => {
                tracing::info!(
                    "netplay: {} has the host's state for frame {}",
                    self.name(slot.number()),
                    frame.0
                );
                self.counters.resyncs += 1;
            }
            EndpointEvent::PathChanged { slot, from, to } => {
                tracing::info!(
                    "netplay: {} moved from {from} to {to}",
                    self.name(slot.number())
                )
            }
            other => tracing::debug!("netplay: {other:?}"),
        }
    }

    /// The players' paths in a room hosted by a player, remembered: a player who left
    /// keeps the path it had.
    pub fn note_paths(&self, p: &Participant) -> Vec<(Option<u8>, PathKind)> {
        let mut paths = self.paths.borrow_mut();
        for (slot, kind) in p.paths() {
            paths.retain(|(s, _)| *s != slot);
            paths.push((slot, kind));
        }
        paths.clone()
    }

    /// What the window's status bar shows (see `super::status`).
    pub fn status(&self, now: Instant, p: &Participant, link: &LinkStats, play: Play) -> Status {
        let client = p.client();
        let s = client.map(|c| c.stats());
        let paths = self.note_paths(p);
        let path_of = |slot: Option<u8>| paths.iter().find(|(s, _)| *s == slot).map(|(_, k)| *k);
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
                    path: path_of(Some(peer.peer.0)),
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
            ahead: play.ahead,
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
                .map(|(slot, frame)| json!({"slot": slot, "from_frame": frame}))
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
        m.insert("desync_frames".into(), json!(self.counters.desync_frames));
        m.insert("resyncs".into(), json!(self.counters.resyncs));
        m.insert("resync_ms".into(), json!(self.counters.resync_ms));
        m.insert(
            "connections_lost".into(),
            json!(self.counters.connections_lost),
        );
        m.insert("reconnects".into(), json!(self.counters.reconnects));
        // A room hosted by a player: a joiner's path to the host; the host's is "direct"
        // only if every joiner's is.
        let paths = self.note_paths(p);
        if !paths.is_empty() {
            let direct = paths.iter().all(|(_, k)| *k == PathKind::Direct);
            let path = if direct { "direct" } else { "relayed" };
            m.insert("path".into(), json!(path));
            m.insert(
                "paths".into(),
                json!(paths
                    .iter()
                    .map(|(slot, k)| json!({"slot": slot, "path": k.as_str()}))
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
                .filter(|&&(_, f)| f < frame.0)
                .map(|(slot, frame)| json!({"slot": slot, "from_frame": frame}))
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
pub(crate) struct Play {
    pub started: Instant,
    pub lobby_bytes: (u64, u64),
    pub first: u32,
    pub ahead: Option<u32>,
}

/// Per player, where the lockstep server put its samples (optimistic mode: how many came
/// later than its own offset, by how many frames, and how many equal ones were merged to
/// drain a backlog; all zero in strict mode), for `--stats-json`.
pub(super) fn placement_json(stats: Option<&lockstep::ServerStats>) -> serde_json::Value {
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

#[cfg(test)]
mod tests {
    use super::player_label;

    #[test]
    fn players_are_named_with_their_place() {
        let names = [
            (0, "ana".to_string()),
            (1, "ana".into()),
            (2, "player 3".into()),
        ];
        // Two players called ana are told apart.
        assert_eq!(player_label(&names, 0), "ana (player 1)");
        assert_eq!(player_label(&names, 1), "ana (player 2)");
        // A player the host named by its slot, or not at all, is not named twice.
        assert_eq!(player_label(&names, 2), "player 3");
        assert_eq!(player_label(&[(3, String::new())], 3), "player 4");
        assert_eq!(player_label(&names, 5), "player 6");
    }
}
