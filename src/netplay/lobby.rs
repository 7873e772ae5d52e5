//! Before the first frame: the host waits for its players to join and receive the start
//! state; a joiner runs the handshake until it has the host's state. Both drive a sans-IO
//! session (`session`) over the endpoint the same way: [`exchange`], react, [`sleep`].

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::lockstep::PeerId;
use crate::net::Link;
use crate::session::{HostEvent, HostSession, JoinEvent, JoinSession, StartState, Transmit};

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

impl Handshake for HostSession {
    fn datagram(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> bool {
        self.handle_datagram(now, from, bytes).is_ok()
    }
    fn timers(&mut self, now: Instant) {
        self.handle_timeout(now)
    }
    fn transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.poll_transmit(now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.poll_timeout()
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
        self.poll_timeout()
    }
}

/// One turn: takes in what arrived (counting rejects), runs the timers, sends what is due.
fn exchange(endpoint: &mut Link, session: &mut impl Handshake) -> Result<Instant, NetplayError> {
    let now = Instant::now();
    for (from, bytes) in endpoint.recv(now)? {
        if !session.datagram(now, from, &bytes) {
            endpoint.note_invalid();
        }
    }
    session.timers(now);
    send_queued(endpoint, session, now);
    Ok(now)
}

fn send_queued(endpoint: &mut Link, session: &mut impl Handshake, now: Instant) {
    while let Some(t) = session.transmit(now) {
        endpoint.send(now, t.to, t.bytes);
    }
    endpoint.flush_due(now);
}

/// Until a datagram arrives, the session's next timer, or `POLL`.
fn sleep(endpoint: &Link, session: &impl Handshake, now: Instant) -> Result<(), NetplayError> {
    let wake = session
        .poll_timeout()
        .map_or(now + POLL, |t| t.min(now + POLL));
    endpoint.wait_until(now, Some(wake))?;
    Ok(())
}

/// Sends the goodbyes the session queued and lets them leave the conditioner.
fn goodbye(endpoint: &mut Link, session: &mut impl Handshake) {
    send_queued(endpoint, session, Instant::now());
    endpoint.drain(super::GOODBYE_DRAIN);
}

/// Waits until `want` players (the host's included) are in and ready, or `limit` passes.
/// Returns the slots that are ready (the host's own slot 0 included).
pub fn host_lobby(
    endpoint: &mut Link,
    session: &mut HostSession,
    want: u8,
    limit: Option<Duration>,
) -> Result<Vec<u8>, NetplayError> {
    let start = Instant::now();
    let mut announced = 0;
    let port = endpoint.local_addr().port();
    tracing::info!(
        "netplay: hosting on udp port {port}; waiting for {} more player(s)",
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
        let now = exchange(endpoint, session)?;
        while let Some(ev) = session.poll_event() {
            match ev {
                HostEvent::Joined { slot, name, addr } => {
                    let player = PeerId(slot);
                    match own_name(&name, slot) {
                        Some(name) => tracing::info!("netplay: {name} ({addr}) joined as {player}"),
                        None => tracing::info!("netplay: {player} ({addr}) joined"),
                    }
                }
                HostEvent::Ready { slot } => {
                    tracing::info!("netplay: player {} has the start state", slot + 1)
                }
                // It loads its content while the lobby waits for the others: alive, and the
                // feed says so if the game then has to wait for it.
                HostEvent::Loading { .. } => {}
                HostEvent::Left { slot, reason } => {
                    tracing::warn!("netplay: player {} {reason}", slot + 1)
                }
                HostEvent::Refused { addr, reason } => {
                    tracing::warn!("netplay: refused {addr}: {reason}")
                }
            }
        }
        let ready: Vec<u8> = session
            .players()
            .iter()
            .filter(|p| p.ready)
            .map(|p| p.slot)
            .collect();
        if crate::app::interrupt::requested() {
            session.shutdown("the host stopped before the game started");
            goodbye(endpoint, session);
            return Err(NetplayError::Interrupted);
        }
        if ready.len() >= usize::from(want) && session.all_ready() {
            session.close_lobby();
            return Ok(ready);
        }
        if ready.len() > announced {
            announced = ready.len();
            tracing::info!("netplay: {}/{} players ready", ready.len(), want);
        }
        if let Some(limit) = limit {
            if now.duration_since(start) >= limit {
                return Err(NetplayError::LobbyTimeout {
                    secs: limit.as_secs(),
                    ready: ready.len(),
                    want,
                });
            }
        }
        sleep(endpoint, session, now)?;
    }
}

/// Runs the joiner's handshake to the end: the host's start state, or why not.
pub fn join_lobby(
    endpoint: &mut Link,
    session: &mut JoinSession,
) -> Result<StartState, NetplayError> {
    let host = session.host();
    tracing::info!("netplay: joining {host}");
    let mut bar = DownloadBar(None);
    loop {
        let now = exchange(endpoint, session)?;
        while let Some(ev) = session.poll_event() {
            match ev {
                JoinEvent::Welcomed {
                    slot, packed_len, ..
                } => {
                    tracing::info!(
                        "netplay: admitted as player {}; receiving {:.1} KiB of start state",
                        slot + 1,
                        packed_len as f64 / 1024.0
                    );
                    bar = DownloadBar::new(packed_len as u64);
                }
                JoinEvent::Ready(state) => return Ok(*state),
                // Only after Ready, when the frame loop's feed has the session.
                JoinEvent::Waiting { .. } => {}
                JoinEvent::Failed(e) => return Err(NetplayError::Join(e)),
            }
        }
        bar.at(session.progress().0 as u64);
        if crate::app::interrupt::requested() {
            session.leave("quit");
            goodbye(endpoint, session);
            return Err(NetplayError::Interrupted);
        }
        sleep(endpoint, session, now)?;
    }
}

/// The start state's download on stderr, once its size is known: long at long round trips
/// (the transfer's window starts small and grows a round at a time). indicatif draws it only
/// when stderr is a terminal; it is cleared when the lobby ends, however it ends.
struct DownloadBar(Option<ProgressBar>);

impl DownloadBar {
    fn new(len: u64) -> DownloadBar {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            "start state [{bar:30}] {binary_bytes}/{binary_total_bytes}, \
             {binary_bytes_per_sec}, eta {eta}",
        ) {
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
