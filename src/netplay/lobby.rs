//! Before the first frame: the host waits for its players to join and receive the start
//! state; a joiner runs the handshake until it has the host's state. Both drive a sans-IO
//! session (`session`) over the UDP link the same way: [`exchange`], react, [`sleep`].

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::lockstep::PeerId;
use crate::net::Link;
use crate::session::{
    Endpoint, EndpointEvent, JoinEvent, JoinSession, OpenEvent, RoomOpener, StartState, Transmit,
};

use super::feed::own_name;
use super::NetplayError;

/// Longest a lobby sleeps between looks at the session (and at Ctrl-C).
const POLL: Duration = Duration::from_millis(50);

/// The part of a handshake session a lobby loop drives.
trait Handshake {
    /// False if the datagram was rejected.
    fn datagram(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> bool;
    fn timers(&mut self, now: Instant);
    fn transmit(&mut self, now: Instant) -> Option<Transmit>;
    fn poll_timeout(&self) -> Option<Instant>;
}

impl Handshake for Endpoint {
    fn datagram(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> bool {
        // The endpoint counts what it rejects itself.
        self.handle_datagram(now, from, bytes);
        true
    }
    fn timers(&mut self, now: Instant) {
        self.handle_timeout(now)
    }
    fn transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.poll_transmit(now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Endpoint::poll_timeout(self)
    }
}

impl Handshake for RoomOpener {
    fn datagram(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> bool {
        self.handle_datagram(now, from, bytes)
    }
    fn timers(&mut self, now: Instant) {
        self.handle_timeout(now)
    }
    fn transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.poll_transmit(now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        RoomOpener::poll_timeout(self)
    }
}

impl Handshake for JoinSession {
    fn datagram(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> bool {
        // Only the host talks to a joiner.
        from == self.host() && self.handle_datagram(now, from, bytes).is_ok()
    }
    fn timers(&mut self, now: Instant) {
        self.handle_timeout(now)
    }
    fn transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.poll_transmit(now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        JoinSession::poll_timeout(self)
    }
}

/// One turn: takes in what arrived (counting rejects), runs the timers, sends what is due.
fn exchange(link: &mut Link, session: &mut impl Handshake) -> Result<Instant, NetplayError> {
    let now = Instant::now();
    for (from, bytes) in link.recv(now)? {
        if !session.datagram(now, from, &bytes) {
            link.note_invalid();
        }
    }
    session.timers(now);
    send_queued(link, session, now);
    Ok(now)
}

fn send_queued(link: &mut Link, session: &mut impl Handshake, now: Instant) {
    while let Some(t) = session.transmit(now) {
        link.send(now, t.to, t.bytes);
    }
    link.flush_due(now);
}

/// Until a datagram arrives, the session's next timer, or `POLL`.
fn sleep(link: &Link, session: &impl Handshake, now: Instant) -> Result<(), NetplayError> {
    let wake = session
        .poll_timeout()
        .map_or(now + POLL, |t| t.min(now + POLL));
    link.wait_until(now, Some(wake))?;
    Ok(())
}

/// Sends the goodbyes the session queued and lets them leave the conditioner.
fn goodbye(link: &mut Link, session: &mut impl Handshake) {
    send_queued(link, session, Instant::now());
    link.drain(super::GOODBYE_DRAIN);
}

/// Serves the lobby until every player is in and ready, when the endpoint starts the game;
/// returns the slots that play (the host's own slot 0 included). Ends early when the
/// lobby's time runs out or the host presses Ctrl-C.
pub fn host_lobby(
    link: &mut Link,
    endpoint: &mut Endpoint,
    want: u8,
) -> Result<Vec<u8>, NetplayError> {
    let start = Instant::now();
    let port = link.local_addr().port();
    tracing::info!(
        "netplay: hosting on udp port {port} ({} mode); waiting for {} more player(s)",
        endpoint.mode(),
        want.saturating_sub(1)
    );
    let here = crate::net::lan_address().map_or("THIS-MACHINE".into(), |ip| {
        SocketAddr::new(ip, port).to_string()
    });
    tracing::info!(
        "netplay: on this network, players join with `framelock join {here}` and the same \
         game; over the internet, with your public address and udp port {port} forwarded to \
         this machine"
    );
    loop {
        let now = exchange(link, endpoint)?;
        while let Some(ev) = endpoint.poll_event() {
            match ev {
                EndpointEvent::Joined { slot, name, addr } => {
                    let player = PeerId(slot);
                    match own_name(&name, slot) {
                        Some(name) => tracing::info!("netplay: {name} ({addr}) joined as {player}"),
                        None => tracing::info!("netplay: {player} ({addr}) joined"),
                    }
                }
                EndpointEvent::Ready { slot, ready, want } => {
                    tracing::info!("netplay: player {} has the start state", slot + 1);
                    tracing::info!("netplay: {ready}/{want} players ready");
                }
                EndpointEvent::Left { slot, reason } => {
                    tracing::warn!("netplay: player {} {reason}", slot + 1)
                }
                EndpointEvent::Refused { addr, reason } => {
                    tracing::warn!("netplay: refused {addr}: {reason}")
                }
                EndpointEvent::Started { slots } => return Ok(slots),
                EndpointEvent::LobbyExpired { ready, want } => {
                    return Err(NetplayError::LobbyTimeout {
                        secs: now.duration_since(start).as_secs(),
                        ready,
                        want,
                    })
                }
                other => tracing::debug!("netplay: {other:?}"),
            }
        }
        if crate::app::interrupt::requested() {
            endpoint.shutdown("the host stopped before the game started");
            goodbye(link, endpoint);
            return Err(NetplayError::Interrupted);
        }
        sleep(link, endpoint, now)?;
    }
}

/// Opens a room on a dedicated server and uploads the start state; returns the room's name.
pub fn open_room(link: &mut Link, opener: &mut RoomOpener) -> Result<String, NetplayError> {
    tracing::info!("netplay: opening a room on {}", opener.server());
    let mut bar = DownloadBar(None);
    loop {
        let now = exchange(link, opener)?;
        while let Some(ev) = opener.poll_event() {
            match ev {
                OpenEvent::Opened { room, .. } => {
                    let (_, len) = opener.progress();
                    tracing::info!(
                        "netplay: the server opened room {room}; uploading {:.1} KiB of start state",
                        len as f64 / 1024.0
                    );
                    bar = DownloadBar::new(len as u64, "uploading the start state");
                }
                OpenEvent::Uploaded { room, .. } => return Ok(room),
                OpenEvent::Failed(e) => return Err(NetplayError::Join(e)),
            }
        }
        bar.at(opener.progress().0 as u64);
        if crate::app::interrupt::requested() {
            return Err(NetplayError::Interrupted);
        }
        sleep(link, opener, now)?;
    }
}

/// Runs the joiner's handshake to the end: the host's start state, or why not.
pub fn join_lobby(link: &mut Link, session: &mut JoinSession) -> Result<StartState, NetplayError> {
    let host = session.host();
    tracing::info!("netplay: joining {host}");
    let mut bar = DownloadBar(None);
    loop {
        let now = exchange(link, session)?;
        while let Some(ev) = session.poll_event() {
            match ev {
                JoinEvent::Welcomed {
                    slot,
                    packed_len,
                    mode,
                    keyframe_interval,
                    ..
                } => {
                    let kib = packed_len as f64 / 1024.0;
                    if slot == crate::session::msg::SPECTATOR {
                        tracing::info!(
                            "netplay: admitted as a spectator ({mode} mode); receiving \
                             {kib:.1} KiB of state"
                        );
                    } else {
                        tracing::info!(
                            "netplay: admitted as player {} ({mode} mode, K {keyframe_interval}); \
                             receiving {kib:.1} KiB of start state",
                            slot + 1
                        );
                    }
                    bar = DownloadBar::new(packed_len as u64, "start state");
                }
                JoinEvent::Ready(state) => return Ok(*state),
                // Only after Ready, when the frame loop's feed has the session.
                JoinEvent::Waiting { .. } => {}
                JoinEvent::Failed(e) => return Err(NetplayError::Join(e)),
                JoinEvent::PasswordChecked { admitted } => tracing::info!(
                    "netplay: a joiner {} the room's password",
                    if admitted { "knew" } else { "got wrong" }
                ),
            }
        }
        bar.at(session.progress().0 as u64);
        if crate::app::interrupt::requested() {
            session.leave("quit");
            goodbye(link, session);
            return Err(NetplayError::Interrupted);
        }
        sleep(link, session, now)?;
    }
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
