//! A server that takes over a running game (see `lockstep::handover`): it starts at the
//! newest agreed frame, with the agreed frames before it as its history, each player's
//! samples from the index its client resends from, and every stream from that frame.

use super::*;
use inputs::InputQueue;

impl Server {
    /// The new authority of a running game (see `lockstep::handover`): `agreed` are the
    /// agreed frames from `first` on (at least one), `players` each player that goes on
    /// with the index of its first sample no agreed frame carries (what
    /// [`Client::rehome`](crate::lockstep::Client::rehome) returned), `spectators` each
    /// spectator that goes on. Every one of them holds every agreed frame: their streams
    /// start at the next one, delta-coded against the last. `paused`: the game was paused
    /// by that player at the next frame, and stays paused until a resume.
    pub fn resume(
        now: Instant,
        cfg: Config,
        first: Frame,
        agreed: Vec<Inputs>,
        players: &[(PeerId, u32)],
        spectators: &[(SpectatorId, usize)],
        paused: Option<PeerId>,
    ) -> Result<Server, LockstepError> {
        let Some(&last) = agreed.last() else {
            return Err(LockstepError::Config("a hand-over needs an agreed frame"));
        };
        let mut s = Server::new(now, cfg)?;
        s.history.base = first;
        s.history.frames = agreed.into();
        s.started = true;
        let frontier = s.frontier();
        for &(peer, sample) in players {
            if peer.0 >= s.cfg.players {
                return Err(LockstepError::NoSuchSlot(peer));
            }
            let mut p = s.new_peer(peer, now, frontier);
            p.input = InputQueue::new(Frame(sample));
            p.input.last = last[peer.index()];
            s.seat(p);
        }
        for &(id, header) in spectators {
            s.add_spectator(now, id, frontier, header)?;
        }
        if let Some(by) = paused {
            if s.pauses.pause(now, by, frontier).is_some() {
                s.announce_pause(by, frontier);
            }
        }
        Ok(s)
    }
}
