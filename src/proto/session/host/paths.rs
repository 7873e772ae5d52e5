//! A joiner's move to a new address (its NAT mapping changed, it moved to another network),
//! as QUIC validates a path: a datagram with its tag from the new address starts a check,
//! and the seat moves once the new address echoes the challenge.

use super::*;

/// A new address of a joiner (its NAT mapping changed, it moved to another network), until
/// it answers a challenge sent there: only then does the seat move to it. Until then the
/// seat's datagrams keep going to the old address, and the new one gets at most
/// `PATH_AMPLIFICATION` times the bytes it sent (the challenges).
#[derive(Debug)]
pub(super) struct PathCheck {
    pub(super) addr: SocketAddr,
    pub(super) token: [u8; PATH_TOKEN_LEN],
    pub(super) received: u64,
    pub(super) sent: u64,
    pub(super) next: Instant,
    pub(super) tries: u8,
}

impl HostSession {
    /// A datagram from an address no joiner has: a stranger's handshake, or a joiner's
    /// datagram from a new address (its tag says whose; tried within `TRIALS_PER_SECOND`).
    pub(super) fn open_unknown<'a>(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &'a [u8],
    ) -> Option<&'a [u8]> {
        let kind = Header::parse(datagram).ok().map(|(h, _)| h.kind);
        if matches!(kind, Some(Kind::Hello)) || datagram.len() <= TAG_LEN {
            return Some(datagram);
        }
        if !self.take_trial(now) {
            return Some(datagram);
        }
        let Some(i) = self
            .peers
            .iter()
            .position(|p| p.keyed() && p.keys.open(datagram).is_some())
        else {
            return Some(datagram);
        };
        let mut token = [0; PATH_TOKEN_LEN];
        self.rng.fill(&mut token);
        let peer = &mut self.peers[i];
        tracing::debug!(slot = peer.slot.number(), old = %peer.addr, new = %from, "session: a joiner's datagram from a new address; checking the path");
        peer.path = Some(PathCheck {
            addr: from,
            token,
            received: datagram.len() as u64,
            sent: 0,
            next: now,
            tries: 0,
        });
        self.send_path_challenges(now);
        self.peers[i].keys.open(datagram)
    }

    /// One more datagram from an unknown address may have its tag tried against joiners'
    /// keys: false once `TRIALS_PER_SECOND` were this second. The session's own address
    /// changes and a hosted room's direct paths ([`open_from_any`](Self::open_from_any))
    /// spend the one budget, so a flood costs the same whichever it aims at.
    fn take_trial(&mut self, now: Instant) -> bool {
        let (since, count) = &mut self.trials;
        if since.is_none_or(|t| now >= t + Duration::from_secs(1)) {
            (*since, *count) = (Some(now), 0);
        }
        if *count >= TRIALS_PER_SECOND {
            return false;
        }
        *count += 1;
        true
    }

    /// A datagram from an address no joiner has that may carry the tag of one of the
    /// joiners at `addrs` (a hosted room's direct path): whose, and the datagram without
    /// its tag. Tried within `TRIALS_PER_SECOND`; no `addrs` spend nothing.
    pub fn open_from_any<'a>(
        &mut self,
        now: Instant,
        addrs: &[SocketAddr],
        datagram: &'a [u8],
    ) -> Option<(SocketAddr, &'a [u8])> {
        if addrs.is_empty() || !self.take_trial(now) {
            return None;
        }
        addrs
            .iter()
            .find_map(|&a| Some((a, self.open_from(a, datagram)?)))
    }

    /// Sends the challenges due of the path checks under way, within the new addresses'
    /// byte allowance; gives up a check after `PATH_TRIES`.
    pub(super) fn send_path_challenges(&mut self, now: Instant) {
        let id = self.cfg.session_id;
        for peer in &mut self.peers {
            let Some(check) = &mut peer.path else {
                continue;
            };
            if now < check.next {
                continue;
            }
            if check.tries >= PATH_TRIES {
                tracing::debug!(slot = peer.slot.number(), addr = %check.addr, "session: path check unanswered");
                peer.path = None;
                continue;
            }
            let mut bytes = Msg::Path(PathMsg::Challenge(check.token)).encode(id);
            peer.keys.seal(&mut bytes);
            check.next = now + PATH_RETRY;
            if check.sent + bytes.len() as u64 > PATH_AMPLIFICATION * check.received {
                continue;
            }
            check.tries += 1;
            check.sent += bytes.len() as u64;
            self.queue.push_back(Transmit::new(check.addr, bytes));
        }
    }

    /// A path message from a joiner (its tag checked): a probe is a sign of life, a
    /// challenge is answered where it came from, and the answer to ours moves the seat.
    pub(super) fn handle_path(
        &mut self,
        now: Instant,
        from: SocketAddr,
        path: PathMsg,
    ) -> Result<(), Dropped> {
        let i = self
            .peers
            .iter()
            .position(|p| p.at(from))
            .ok_or(Dropped::UnknownPeer(Kind::Path))?;
        match path {
            // A punch reaches the session only if its room's routes were not there to take it.
            PathMsg::Probe | PathMsg::Punch(_) | PathMsg::PunchBack(_) | PathMsg::Candidates(_) => {
            }
            PathMsg::Challenge(token) => {
                let mut bytes = Msg::Path(PathMsg::Response(token)).encode(self.cfg.session_id);
                self.peers[i].keys.seal(&mut bytes);
                self.queue.push_back(Transmit::new(from, bytes));
            }
            PathMsg::Response(token) => {
                let peer = &mut self.peers[i];
                let answered = peer
                    .path
                    .as_ref()
                    .is_some_and(|c| c.addr == from && c.token == token);
                if answered {
                    let old = std::mem::replace(&mut peer.addr, from);
                    peer.path = None;
                    tracing::info!(slot = peer.slot.number(), %old, new = %from, "session: a joiner moved to a new address");
                    self.events.push_back(HostEvent::PathChanged {
                        slot: peer.slot,
                        from: old,
                        to: from,
                    });
                }
            }
        }
        if self.peers[i].addr == from {
            self.peers[i].last_heard = now;
        }
        Ok(())
    }
}
