//! Spectators on the server: each is a [`PeerLink`] and a [`Stream`] of the published frames,
//! with no input. Nothing of the players' waits for them; a silent one is dropped, and one
//! too far behind gets no frames until its driver restarts its stream from a fresh state.
//! Imports the link and the stream, nothing of the players, the inputs or the publisher.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::time::{Duration, Instant};

use crate::wire::{self, Handled, Header, Kind, Transmit, WireError};

use super::super::frame::{Frame, SpectatorId};
use super::super::link::PeerLink;
use super::super::msg::{self, Notice};
use super::super::stats::{SpectatorStats, Traffic};
use super::super::Config;
use super::stream::{build_round, send_at, History, RoundCtx, SentUpdate, Stream};
use super::ServerEvent;

/// A spectator further behind the frontier than this (in seconds of play) gets no more
/// frames; its driver sends it a fresh state instead ([`ServerEvent::SpectatorBehind`]).
pub const SPECTATOR_LAG_SECS: f64 = 2.0;
/// A spectator silent this long is dropped: nothing waits for it, so it may be away longer
/// than a player (a closed laptop lid, a Wi-Fi hiccup) and get a fresh state when it is
/// back, as one that fell behind does.
pub const SPECTATOR_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a spectator just (re)started has to load its state and acknowledge its first
/// frames before lag or silence count against it.
fn grace() -> Duration {
    Duration::from_secs_f64(2.0 * SPECTATOR_LAG_SECS)
}

/// One spectator: its link, its stream, and how far it has come.
#[derive(Debug)]
struct Spectator {
    link: PeerLink<SentUpdate>,
    stream: Stream,
    /// The frame it was added at. Its CTRLs carry no samples, so the sample index they are
    /// read against stays here, and so does the lead its UPDATEs name (frames since then).
    since: Frame,
    /// When it was added (or restarted).
    added: Instant,
    /// Too far behind: sent no frames until restarted.
    behind: bool,
}

impl Spectator {
    /// A spectator is streamed frames until it has been silent `warn_after` (and through
    /// the grace after it was (re)started, while it loads its state).
    fn listening_until(&self, warn_after: Duration) -> Instant {
        (self.link.last_heard + warn_after).max(self.added + grace())
    }
}

/// The watchers by id (see the module doc).
#[derive(Debug, Default)]
pub(super) struct Spectators {
    by_id: BTreeMap<SpectatorId, Spectator>,
    /// Where `poll_transmit` looks first, so none starves.
    next: u8,
}

impl Spectators {
    pub fn contains(&self, id: SpectatorId) -> bool {
        self.by_id.contains_key(&id)
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Adds spectator `id`, streamed from `start` over a link of its own budget.
    pub fn add(&mut self, link: PeerLink<SentUpdate>, id: SpectatorId, start: Frame, now: Instant) {
        let s = Spectator {
            link,
            stream: Stream::new(start),
            since: start,
            added: now,
            behind: false,
        };
        self.by_id.insert(id, s);
    }

    /// Starts `id`'s stream again at `start`; false if there is no such spectator.
    pub fn restart(&mut self, now: Instant, id: SpectatorId, start: Frame) -> bool {
        let Some(s) = self.by_id.get_mut(&id) else {
            return false;
        };
        s.stream.restart(start);
        s.behind = false;
        s.added = now;
        true
    }

    pub fn remove(&mut self, id: SpectatorId) -> bool {
        self.by_id.remove(&id).is_some()
    }

    /// Spectator `id`'s link: (round trip, frames it holds all before, traffic).
    pub fn get(&self, id: SpectatorId) -> Option<SpectatorStats> {
        self.by_id.get(&id).map(|s| SpectatorStats {
            rtt: s.link.rtt.srtt(),
            acked: s.stream.acked,
            traffic: s.link.traffic,
        })
    }

    /// A notice for every spectator.
    pub fn notify(&mut self, n: Notice) {
        for s in self.by_id.values_mut() {
            s.stream.notify(n);
        }
    }

    /// New frames were published: every stream has something to send.
    pub fn published(&mut self) {
        for s in self.by_id.values_mut() {
            s.stream.dirty = true;
        }
    }

    /// The oldest frame a spectator that is not behind lacks (history to keep for it).
    pub fn oldest_acked(&self) -> Option<Frame> {
        self.by_id
            .values()
            .filter(|s| !s.behind)
            .map(|s| s.stream.acked)
            .min()
    }

    /// Takes a datagram from spectator `id`: a CTRL with acks (and the link's timestamps)
    /// only. Anything else is dropped and counted, in `total` too.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        id: SpectatorId,
        datagram: &[u8],
        total: &mut Traffic,
    ) -> Handled<'static> {
        let Some(s) = self.by_id.get_mut(&id) else {
            total.packets_dropped_invalid += 1;
            return Handled::Dropped(super::unknown_peer(datagram));
        };
        total.received(datagram.len(), s.link.header);
        s.link.count_received(datagram.len());
        let ctrl = match Header::parse(datagram) {
            Ok((h, body)) if h.kind == Kind::Ctrl => msg::decode_ctrl(
                body,
                wire::is_short(datagram),
                s.since.0,
                s.link.ack_reference(),
                |_| None,
            ),
            Ok((h, _)) => Err(WireError::Malformed(h.kind)),
            Err(e) => Err(e),
        };
        let ctrl = match ctrl {
            Ok(c) if c.samples.is_none() && s.link.plausible(&c.head) => c,
            other => {
                total.packets_dropped_invalid += 1;
                s.link.traffic.packets_dropped_invalid += 1;
                let why = other.err().unwrap_or(WireError::Malformed(Kind::Ctrl));
                return Handled::Dropped(why.into());
            }
        };
        s.link.heard(now);
        if s.link.received(now, &ctrl.head) {
            if let Some(ack) = ctrl.head.ack {
                if let Some(rec) = s.link.acked(ack) {
                    s.stream.acked(rec);
                }
            }
        }
        Handled::Taken
    }

    /// The next datagram to a spectator, with its id; `None` once none is due. A
    /// spectator's frames go out `batch` apart at the most.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        cfg: &Config,
        batch: Duration,
        history: &History,
        total: &mut Traffic,
    ) -> Option<Transmit<SpectatorId>> {
        let resend = cfg.resend_interval();
        let frontier = history.frontier();
        let ids: Vec<SpectatorId> = self
            .by_id
            .range((Bound::Included(SpectatorId(self.next)), Bound::Unbounded))
            .chain(self.by_id.range(..SpectatorId(self.next)))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            let s = self.by_id.get_mut(&id)?;
            if let Some(bytes) = s.stream.queued.pop_front() {
                return Some(Transmit::new(id, bytes));
            }
            // A silent one (a closed lid) is sent acks only, at the resend interval: back
            // within `SPECTATOR_LAG_SECS` it is streamed from its ack, later it gets a fresh
            // state, rather than a socket buffer full of stale frames.
            let listening = now < s.listening_until(cfg.warn_after);
            // Its frames wait until it is heard again, and so does the batch timer.
            s.stream.dirty &= listening;
            let dirty = s.stream.dirty;
            let due = s
                .link
                .last_send
                .is_none_or(|t| now >= t + resend || (dirty && listening && now >= t + batch));
            if due && s.link.budget.allows(now) {
                self.next = id.0.wrapping_add(1);
                let ctx = RoundCtx {
                    frontier,
                    history,
                    advance: 0.0,
                    session: cfg.session,
                    players: cfg.players,
                    frames: !s.behind && listening,
                };
                build_round(&mut s.link, &mut s.stream, s.since.0, &ctx, now, total);
                return s
                    .stream
                    .queued
                    .pop_front()
                    .map(|bytes| Transmit::new(id, bytes));
            }
        }
        None
    }

    /// When each spectator's next UPDATE or timeout is due (see `poll_transmit`).
    pub fn timers<'a>(
        &'a self,
        cfg: &'a Config,
        batch: Duration,
    ) -> impl Iterator<Item = Option<Instant>> + 'a {
        let resend = cfg.resend_interval();
        self.by_id.values().flat_map(move |s| {
            let until = s.listening_until(cfg.warn_after);
            [
                send_at(&s.link, &s.stream, batch, resend, Some(until)),
                Some(s.link.last_heard + cfg.timeout.max(SPECTATOR_TIMEOUT)),
            ]
        })
    }

    /// Drops the spectators silent past the timeout; their events go to `events`.
    pub fn drop_silent(&mut self, now: Instant, cfg: &Config, events: &mut VecDeque<ServerEvent>) {
        let timeout = cfg.timeout.max(SPECTATOR_TIMEOUT);
        let gone: Vec<SpectatorId> = self
            .by_id
            .iter()
            .filter(|(_, s)| now.saturating_duration_since(s.link.last_heard) >= timeout)
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            tracing::info!("spectator {}: silent, dropped", id.0);
            self.by_id.remove(&id);
            events.push_back(ServerEvent::SpectatorLeft { id });
        }
    }

    /// Marks spectators that fell more than `SPECTATOR_LAG_SECS` behind `frontier`. One
    /// just (re)started gets twice that to load its state and acknowledge its first frames.
    pub fn check_behind(
        &mut self,
        now: Instant,
        cfg: &Config,
        frontier: Frame,
        events: &mut VecDeque<ServerEvent>,
    ) {
        let limit = (SPECTATOR_LAG_SECS * cfg.fps) as u32;
        for (id, s) in &mut self.by_id {
            let lag = frontier.since(s.stream.acked);
            // One that went silent is away, not behind: it times out, or is sent a fresh
            // state once it is heard again.
            let heard = now < s.link.last_heard + cfg.warn_after;
            if !s.behind && lag > limit && now >= s.added + grace() && heard {
                s.behind = true;
                tracing::info!(
                    "spectator {}: {lag} frames behind; it needs a fresh state",
                    id.0
                );
                events.push_back(ServerEvent::SpectatorBehind {
                    id: *id,
                    frames: lag,
                });
            }
        }
    }
}
