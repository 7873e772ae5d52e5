//! A player as the server sees it: its [`PeerLink`], its [`InputQueue`], its [`Stream`] of the
//! published frames, and what only a player has (its clock's phase, its reported input
//! round trip, late join, loading, the stop rules of `pause`). Imports the link, the inputs
//! and the stream; nothing of the publisher, the spectators or the server facade.

use std::time::{Duration, Instant};

use crate::wire::{self, Dropped, Header, Kind, WireError};

use super::super::frame::{Frame, PeerId};
use super::super::link::PeerLink;
use super::super::msg::{self, Ctrl, LinkHeader, NoticeName};
use super::super::stats::Placement;
use super::super::stats::Traffic;
use super::super::timesync::Phase;
use super::inputs::InputQueue;
use super::stream::{SentUpdate, Stream};

/// A player who has not acknowledged anything of this server yet is dropped only after this
/// much silence: until the server's first UPDATE reaches it, a joiner that has the start
/// state speaks at the lobby's pace, once a second (`session::LOBBY_KEEPALIVE`), and its
/// first CTRLs may have reached the lobby before this server was there to hear them; on a
/// slow, lossy link two of those lost in a row are not a player gone. (One that says it is
/// still loading, see `Server::starting`, keeps the 2-s rule: its keepalives come faster.)
pub const UNCONTACTED_SILENCE: Duration = Duration::from_secs(5);
/// A late joiner plays once it has caught up, or after this much time of CTRLs anyway.
const ACTIVATE_ANYWAY: Duration = Duration::from_secs(3);

/// One player (see the module doc).
#[derive(Debug)]
pub(super) struct Player {
    pub id: PeerId,
    pub link: PeerLink<SentUpdate>,
    pub input: InputQueue,
    pub stream: Stream,
    /// The client's reported input round trip (see `lead`).
    pub input_rtt: Option<Duration>,
    pub phase: Phase,
    /// Added after the start and not caught up yet: neutral input, not waited for.
    pub pending: bool,
    /// When it was added.
    pub added: Instant,
    /// It acknowledged a datagram of ours: it hears us, and speaks at the game's pace.
    contact: bool,
    /// It said it is still loading (see `Server::starting`) and sent no CTRL since.
    pub loading: bool,
    /// A late joiner's name, for the notice that it plays.
    pub name: NoticeName,
    /// How its samples were placed (optimistic mode counts late and merged ones).
    pub placed: Placement,
    /// After a stop its samples say nothing of its clock's phase until then, and its input
    /// round trips nothing of the link (see `pause`).
    pub settle_until: Option<Instant>,
    pub taint_until: Option<Instant>,
}

impl Player {
    /// Player `id`, added at `now` over `link`, its stream and samples starting at `first`.
    pub fn new(id: PeerId, link: PeerLink<SentUpdate>, now: Instant, first: Frame) -> Player {
        Player {
            id,
            link,
            input: InputQueue::new(first),
            stream: Stream::new(first),
            input_rtt: None,
            phase: Phase::default(),
            pending: false,
            added: now,
            contact: false,
            loading: false,
            name: NoticeName::default(),
            placed: Placement::default(),
            settle_until: None,
            taint_until: None,
        }
    }

    /// How long this player may be silent before it is dropped: `base`, or
    /// `UNCONTACTED_SILENCE` while it has not heard us yet (unless it says it is loading).
    pub fn silence_limit(&self, base: Duration) -> Duration {
        if !self.contact && !self.loading {
            base.max(UNCONTACTED_SILENCE)
        } else {
            base
        }
    }

    /// A valid CTRL with `head` arrived: the player is heard; if it is the newest datagram,
    /// its sequence number (loss), timestamp, echo (RTT) and ack count. True if newest.
    pub fn heard(&mut self, now: Instant, head: &LinkHeader) -> bool {
        self.link.heard(now);
        self.loading = false;
        if !self.link.received(now, head) {
            return false;
        }
        // Only the newest datagram's ack (see `Client::handle_datagram`).
        if let Some(ack) = head.ack {
            self.contact = true;
            if let Some(rec) = self.link.acked(ack) {
                self.stream.acked(rec);
            }
        }
        true
    }

    /// Reads a datagram of this player's, with every frame before `frontier` published: the
    /// CTRL, if it is one and valid. Anything else is dropped and counted (in `total` too),
    /// but a late CTRL, which carries nothing new (`Err(None)`).
    pub fn read_ctrl(
        &mut self,
        datagram: &[u8],
        frontier: Frame,
        total: &mut Traffic,
    ) -> Result<Ctrl, Option<Dropped>> {
        let from = self.id;
        total.received(datagram.len(), self.link.header);
        self.link.count_received(datagram.len());
        let ctrl = match Header::parse(datagram) {
            Ok((h, body)) if h.kind == Kind::Ctrl => msg::decode_ctrl(
                body,
                wire::is_short(datagram),
                self.input.recv_end(),
                self.link.ack_reference(),
                |i| self.input.sample(i),
            ),
            Ok((h, _)) => {
                tracing::debug!("{from}: dropped a {:?} datagram", h.kind);
                total.packets_dropped_invalid += 1;
                self.link.traffic.packets_dropped_invalid += 1;
                return Err(Some(Dropped::Unexpected(h.kind)));
            }
            Err(e) => Err(e),
        };
        // A run must continue the samples we hold and fit the buffer (see
        // `InputQueue::fits`). Its head must be one the client can have sent, and its
        // checksums of frames it can have run (published ones): a checksum of a frame to
        // come would be a desync when it comes.
        let ctrl = ctrl.and_then(|c| {
            let fits = c.samples.as_ref().is_none_or(|run| self.input.fits(run));
            let plausible =
                self.link.plausible(&c.head) && c.checksums.iter().all(|(f, _)| *f < frontier);
            if fits && plausible {
                Ok(c)
            } else {
                Err(WireError::Malformed(Kind::Ctrl))
            }
        });
        match ctrl {
            Ok(c) => Ok(c),
            Err(WireError::MissingBase(_, i)) if i < self.input.used_base => {
                // Coded against a sample we let go of after a newer CTRL: this one is late
                // and carries nothing new.
                tracing::trace!("{from}: dropped a late CTRL");
                Err(None)
            }
            Err(e) => {
                tracing::debug!("{from}: dropped datagram: {e}");
                total.packets_dropped_invalid += 1;
                self.link.traffic.packets_dropped_invalid += 1;
                Err(Some(e.into()))
            }
        }
    }

    /// A late joiner whose newest sample is within `lead` frames of `frontier` (or that
    /// has sent for `ACTIVATE_ANYWAY`) caught up: it plays from the frontier on, with the
    /// newest of the samples it pushed meanwhile (see [`InputQueue::catch_up`]). The index
    /// of that sample, if it did; `None` for a player not pending.
    pub fn try_activate(&mut self, now: Instant, frontier: Frame, lead: u32) -> Option<u32> {
        if !self.pending {
            return None;
        }
        let newest = self
            .input
            .recv_end()
            .checked_sub(1)
            .filter(|n| *n >= self.input.next)?;
        let caught_up = newest + lead >= frontier.0;
        if !caught_up && now < self.added + ACTIVATE_ANYWAY {
            return None;
        }
        self.input.catch_up();
        self.pending = false;
        Some(newest)
    }
}
