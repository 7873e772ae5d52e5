//! Before the first frame: the host waits for its players to join and receive the start
//! state; a joiner runs the handshake until it has the host's state.

use std::time::{Duration, Instant};

use crate::net::Endpoint;
use crate::session::{HostEvent, HostSession, JoinEvent, JoinSession, StartState, Transmit};

use super::NetplayError;

/// Sends what the session queued (its goodbyes) and lets it leave the conditioner.
fn goodbye(endpoint: &mut Endpoint, mut poll: impl FnMut(Instant) -> Option<Transmit>) {
    let now = Instant::now();
    while let Some(t) = poll(now) {
        endpoint.send(now, t.to, t.bytes);
    }
    endpoint.flush_due(now);
    endpoint.drain(super::GOODBYE_DRAIN);
}

/// Waits until `want` players (the host's included) are in and ready, or `limit` passes.
/// Returns the slots that are ready (the host's own slot 0 included).
pub fn host_lobby(
    endpoint: &mut Endpoint,
    session: &mut HostSession,
    want: u8,
    limit: Option<Duration>,
) -> Result<Vec<u8>, NetplayError> {
    let start = Instant::now();
    let mut announced = 0;
    tracing::info!(
        "netplay: hosting on udp port {}; waiting for {} more player(s)",
        endpoint.local_addr().port(),
        want.saturating_sub(1)
    );
    loop {
        let now = Instant::now();
        for (from, bytes) in endpoint.recv(now)? {
            if session.handle_datagram(now, from, &bytes).is_err() {
                endpoint.note_invalid();
            }
        }
        session.handle_timeout(now);
        while let Some(t) = session.poll_transmit(now) {
            endpoint.send(now, t.to, t.bytes);
        }
        endpoint.flush_due(now);
        while let Some(ev) = session.poll_event() {
            match ev {
                HostEvent::Joined { slot, name, addr } => {
                    tracing::info!("netplay: {name} ({addr}) joined as player {}", slot + 1)
                }
                HostEvent::Ready { slot } => {
                    tracing::info!("netplay: player {} has the start state", slot + 1)
                }
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
            goodbye(endpoint, |now| session.poll_transmit(now));
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
        let wake = session
            .poll_timeout()
            .map_or(now + Duration::from_millis(50), |t| {
                t.min(now + Duration::from_millis(50))
            });
        endpoint.wait_until(now, Some(wake))?;
    }
}

/// Runs the joiner's handshake to the end: the host's start state, or why not.
pub fn join_lobby(
    endpoint: &mut Endpoint,
    session: &mut JoinSession,
) -> Result<StartState, NetplayError> {
    let host = session.host();
    tracing::info!("netplay: joining {host}");
    loop {
        let now = Instant::now();
        for (from, bytes) in endpoint.recv(now)? {
            if from != host || session.handle_datagram(now, from, &bytes).is_err() {
                endpoint.note_invalid();
            }
        }
        session.handle_timeout(now);
        while let Some(t) = session.poll_transmit(now) {
            endpoint.send(now, t.to, t.bytes);
        }
        endpoint.flush_due(now);
        while let Some(ev) = session.poll_event() {
            match ev {
                JoinEvent::Welcomed {
                    slot, packed_len, ..
                } => tracing::info!(
                    "netplay: admitted as player {}; receiving {} KiB of start state",
                    slot + 1,
                    packed_len.div_ceil(1024)
                ),
                JoinEvent::Ready(state) => return Ok(*state),
                JoinEvent::Failed(e) => return Err(NetplayError::Join(e)),
            }
        }
        if crate::app::interrupt::requested() {
            session.leave("quit");
            goodbye(endpoint, |now| session.poll_transmit(now));
            return Err(NetplayError::Interrupted);
        }
        let wake = session
            .poll_timeout()
            .map_or(now + Duration::from_millis(50), |t| {
                t.min(now + Duration::from_millis(50))
            });
        endpoint.wait_until(now, Some(wake))?;
    }
}
