//! The start state the host hands each joiner: packed once for the lobby (or for one joiner
//! admitted to the running game, [`HostSession::handle_state`]), announced in the joiner's
//! Welcome, sent in chunks round robin over the joiners, acknowledged, and then the
//! joiner's loading until it runs. Holds the packed payload and each joiner's transfer
//! ([`Phase`]); imports the session's transfer and payload, nothing of the handshake
//! (`admission`) or of a joiner's path.

use std::net::SocketAddr;
use std::time::Instant;

use super::super::msg::{Msg, StateAck, Welcome, CHUNK_SIZE};
use super::super::payload::{Packed, StartPayload};
use super::super::transfer::{Progress, Rtt, Sender};
use super::super::{Dropped, SessionError, Transmit, LOADING_LIMIT};
use super::admission::welcome_slot;
use super::{HostEvent, HostSession, Phase};
use crate::lockstep::{Frame, Slot};
use crate::wire::Kind;

impl HostSession {
    /// Replaces the state sent to joiners admitted from now on (ongoing transfers finish
    /// with the old one).
    pub fn set_start_state(&mut self, state: Vec<u8>, sram: Vec<u8>) -> Result<(), SessionError> {
        let payload = StartPayload {
            options: self.info.options.clone(),
            state,
            sram,
        };
        let Packed {
            raw_len,
            hash,
            bytes,
        } = payload.pack()?;
        self.packed = bytes.into();
        self.raw_len = raw_len;
        self.hash = hash;
        Ok(())
    }

    /// Size of the compressed start payload each joiner receives.
    pub fn packed_len(&self) -> usize {
        self.packed.len()
    }

    /// The frame the start state of the joiner in `slot` is at.
    pub fn start_frame(&self, slot: Slot) -> Option<Frame> {
        self.peers.iter().find(|p| p.slot == slot).map(|p| p.frame)
    }

    /// True while the joiner in `slot` waits for [`handle_state`](Self::handle_state).
    pub fn awaits_state(&self, slot: Slot) -> bool {
        self.peers
            .iter()
            .any(|p| p.slot == slot && matches!(p.phase, Phase::AwaitingState))
    }

    /// The state at the start of `frame` for a joiner admitted to the running game (asked
    /// for by [`HostEvent::StateWanted`]): it is welcomed with it.
    pub fn handle_state(
        &mut self,
        now: Instant,
        slot: Slot,
        frame: Frame,
        state: Vec<u8>,
        sram: Vec<u8>,
    ) -> Result<(), SessionError> {
        let payload = StartPayload {
            options: self.info.options.clone(),
            state,
            sram,
        };
        let packed = payload.pack()?;
        let players = self.roster();
        let (session, slots, k, fps) = (
            self.cfg.session_id,
            self.cfg.max_players,
            self.cfg.keyframe_interval,
            self.cfg.fps,
        );
        let Some(peer) = self
            .peers
            .iter_mut()
            .find(|p| p.slot == slot && matches!(p.phase, Phase::AwaitingState))
        else {
            return Ok(());
        };
        let mut players = players;
        if let Slot::Player(seat) = slot {
            players.set(seat, peer.name.clone());
        }
        peer.welcome = Msg::Welcome(Welcome {
            slot: welcome_slot(slot),
            fps,
            frame: frame.0,
            raw_len: packed.raw_len,
            packed_len: packed.bytes.len() as u32,
            payload_hash: packed.hash,
            chunk_size: CHUNK_SIZE as u16,
            slots,
            keyframe_interval: k,
            mode: self.cfg.mode,
            key: self.key_pair.public(),
            seat_key: peer.seat_key,
            players,
        })
        .encode(session);
        peer.frame = frame;
        peer.payload = packed.bytes.into();
        peer.phase = Phase::Welcomed {
            sent_at: now,
            resent: false,
        };
        self.queue
            .push_back(Transmit::new(peer.addr, peer.tagged_welcome()));
        Ok(())
    }

    /// Holds (`true`) or releases the start-state transfer to the joiner at `addr`, whether
    /// or not it has begun or the joiner is here yet: its chunks wait while it is held (the
    /// Welcome does not). A hosted room holds it while the first direct attempt runs, so
    /// that the state crosses the direct path rather than the server.
    pub fn hold_transfer(&mut self, addr: SocketAddr, hold: bool) {
        self.held.retain(|a| *a != addr);
        if hold {
            self.held.push(addr);
        }
    }

    /// How far a joiner's start-state transfer got, in packed bytes, once it has begun.
    pub fn transfer_progress(&self, slot: Slot) -> Option<Progress> {
        let peer = self.peers.iter().find(|p| p.slot == slot)?;
        match &peer.phase {
            Phase::Sending(s) => {
                let total = peer.payload.len();
                let done = (s.acked() as usize * CHUNK_SIZE).min(total);
                Some(Progress { done, total })
            }
            _ => None,
        }
    }

    pub(super) fn handle_ack(
        &mut self,
        now: Instant,
        from: SocketAddr,
        ack: &StateAck,
    ) -> Result<(), Dropped> {
        let peer = self
            .peers
            .iter_mut()
            .find(|p| p.at(from))
            .ok_or(Dropped::UnknownPeer(Kind::StateAck))?;
        peer.last_heard = now;
        if let Phase::Welcomed { sent_at, resent } = peer.phase {
            let mut rtt = Rtt::default();
            if !resent {
                rtt.sample(now.saturating_duration_since(sent_at));
            }
            let chunk = CHUNK_SIZE;
            peer.phase =
                Phase::Sending(Box::new(Sender::new(now, peer.payload.clone(), chunk, rtt)));
        }
        if let Phase::Sending(sender) = &mut peer.phase {
            sender.handle_ack(now, ack);
            if sender.is_complete() {
                tracing::debug!(slot = peer.slot.number(), rtt = ?sender.rtt().smoothed(),
                    sent = sender.sent, resent = sender.resent, "session: start state delivered");
                self.stats.chunks_sent += sender.sent;
                self.stats.chunks_resent += sender.resent;
                peer.phase = Phase::Ready {
                    rtt: sender.rtt().measured(),
                    since: now,
                    loading: false,
                };
                self.events.push_back(HostEvent::Ready { slot: peer.slot });
            }
        }
        Ok(())
    }

    /// A joiner that has the start state says it still loads. Before `LOADING_LIMIT` has
    /// passed that is a sign of life; after, it is ignored, and the silence timeout drops
    /// the player. (One whose final ack was lost is alive too: the chunks the host resends
    /// make it ack again.)
    pub(super) fn handle_loading(&mut self, now: Instant, from: SocketAddr) -> Result<(), Dropped> {
        let peer = self
            .peers
            .iter_mut()
            .find(|p| p.at(from))
            .ok_or(Dropped::UnknownPeer(Kind::Loading))?;
        match &mut peer.phase {
            Phase::Ready { since, loading, .. } => {
                let since = now.saturating_duration_since(*since);
                if since < LOADING_LIMIT {
                    *loading = true;
                    peer.last_heard = now;
                    self.events.push_back(HostEvent::Loading {
                        slot: peer.slot,
                        since,
                    });
                }
            }
            _ => peer.last_heard = now,
        }
        Ok(())
    }

    pub(super) fn poll_transmit_inner(&mut self, now: Instant) -> Option<Transmit> {
        if let Some(t) = self.queue.pop_front() {
            return Some(t);
        }
        // Round robin over the transfers so that one slow joiner does not starve the others.
        let n = self.peers.len();
        for k in 0..n {
            let i = (self.next_peer + k) % n;
            let peer = &mut self.peers[i];
            if self.held.contains(&peer.addr) {
                continue;
            }
            if let Phase::Sending(sender) = &mut peer.phase {
                if let Some((index, seq)) = sender.poll_chunk(now) {
                    self.next_peer = i + 1;
                    let msg = Msg::StateChunk {
                        index,
                        seq,
                        data: sender.chunk(index),
                    };
                    let mut bytes = msg.encode(self.cfg.session_id);
                    peer.keys.seal(&mut bytes);
                    return Some(Transmit::new(peer.addr, bytes));
                }
            }
        }
        None
    }
}
