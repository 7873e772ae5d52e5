//! Checksums of frames as the players report them, and the desync verdict: against the
//! reference player's (the lowest slot in the session), or by majority on a server with no
//! machine of its own. Holds nothing of the players' links, inputs or streams and imports
//! nothing of the rest of the server: the server turns its verdicts into events and notices.

use std::collections::{BTreeMap, BTreeSet};

use crate::input::MAX_PLAYERS;

use super::super::frame::{Frame, PeerId};

/// Frames whose checksums are kept for comparison.
const MAX_CHECKSUM_FRAMES: usize = 512;

/// Checksums per frame and player, compared against the reference player's, or (with no
/// host's machine to trust, on a dedicated server) with each other.
#[derive(Debug, Default)]
pub(super) struct Checksums {
    frames: BTreeMap<u32, [Option<u64>; MAX_PLAYERS]>,
    /// Majority mode: frames already judged.
    decided: BTreeSet<u32>,
    /// Checksums are compared with each other, not with a reference player's (see
    /// [`Server::set_majority_checksums`](super::Server::set_majority_checksums)).
    pub majority: bool,
}

impl Checksums {
    /// Stores `from`'s checksum of `frame`; returns the `(peer, expected, got)` mismatches
    /// it reveals among the players `present` (in slot order; the first is the reference).
    pub fn record(
        &mut self,
        frame: Frame,
        from: PeerId,
        value: u64,
        present: &[PeerId],
    ) -> Vec<(PeerId, u64, u64)> {
        let Some(&reference) = present.first() else {
            return Vec::new();
        };
        if self.majority {
            self.insert_majority(frame, from, value, present)
        } else {
            self.insert(frame, from, value, reference)
        }
    }

    /// The value more than half of the players who reported `frame` reported.
    pub fn agreed(&self, frame: Frame) -> Option<u64> {
        let reported: Vec<u64> = self
            .frames
            .get(&frame.0)?
            .iter()
            .flatten()
            .copied()
            .collect();
        reported
            .iter()
            .find(|v| reported.iter().filter(|w| w == v).count() * 2 > reported.len())
            .copied()
    }

    /// Stores `peer`'s checksum of `frame`; `None` if it was there already or the frame is
    /// older than every one kept.
    fn store(
        &mut self,
        frame: Frame,
        peer: PeerId,
        value: u64,
    ) -> Option<&[Option<u64>; MAX_PLAYERS]> {
        if !self.frames.contains_key(&frame.0) && self.frames.len() >= MAX_CHECKSUM_FRAMES {
            // Keep the newest frames; a frame older than all kept ones is not worth it.
            match self.frames.keys().next() {
                Some(&oldest) if oldest < frame.0 => {
                    self.frames.remove(&oldest);
                    self.decided.remove(&oldest);
                }
                _ => return None,
            }
        }
        let entry = self.frames.entry(frame.0).or_default();
        if entry[peer.index()].is_some() {
            return None;
        }
        entry[peer.index()] = Some(value);
        Some(entry)
    }

    /// Stores `peer`'s checksum; returns the `(peer, expected, got)` mismatches it reveals
    /// against the reference player's.
    fn insert(
        &mut self,
        frame: Frame,
        peer: PeerId,
        value: u64,
        reference: PeerId,
    ) -> Vec<(PeerId, u64, u64)> {
        let Some(entry) = self.store(frame, peer, value) else {
            return Vec::new();
        };
        let Some(expected) = entry[reference.index()] else {
            return Vec::new();
        };
        if peer == reference {
            (0..MAX_PLAYERS)
                .filter(|&p| p != reference.index())
                .filter_map(|p| entry[p].map(|got| (PeerId(p as u8), got)))
                .filter(|&(_, got)| got != expected)
                .map(|(p, got)| (p, expected, got))
                .collect()
        } else if value != expected {
            vec![(peer, expected, value)]
        } else {
            Vec::new()
        }
    }

    /// Stores `peer`'s checksum; once every player in `present` reported `frame`, the value
    /// most of them have is the truth (on a tie, the lowest present slot's: player 1's while
    /// it plays), and the players that differ from it are returned.
    fn insert_majority(
        &mut self,
        frame: Frame,
        peer: PeerId,
        value: u64,
        present: &[PeerId],
    ) -> Vec<(PeerId, u64, u64)> {
        let Some(entry) = self.store(frame, peer, value) else {
            return Vec::new();
        };
        let values: Vec<(PeerId, u64)> = present
            .iter()
            .filter_map(|p| entry[p.index()].map(|v| (*p, v)))
            .collect();
        if values.len() < present.len() || present.is_empty() {
            return Vec::new();
        }
        if !self.decided.insert(frame.0) {
            return Vec::new();
        }
        let count = |v: u64| values.iter().filter(|(_, x)| *x == v).count();
        let most = values.iter().map(|(_, v)| count(*v)).max().unwrap_or(0);
        let leaders: Vec<u64> = values
            .iter()
            .filter(|(_, v)| count(*v) == most)
            .map(|(_, v)| *v)
            .collect();
        // A strict majority, or on a tie the lowest slot's (`present` is in slot order).
        let truth = if most * 2 > values.len() || leaders.iter().all(|v| *v == leaders[0]) {
            leaders[0]
        } else {
            values[0].1
        };
        values
            .into_iter()
            .filter(|(_, v)| *v != truth)
            .map(|(p, v)| (p, truth, v))
            .collect()
    }

    /// The lowest slot, other than `except`, whose checksum of `frame` was `value`.
    pub fn holder(&self, frame: Frame, value: u64, except: PeerId) -> Option<PeerId> {
        let entry = self.frames.get(&frame.0)?;
        (0..MAX_PLAYERS)
            .filter(|&p| p != except.index())
            .find(|&p| entry[p] == Some(value))
            .map(|p| PeerId(p as u8))
    }
}

#[cfg(test)]
mod majority_tests {
    use super::*;

    fn judge(values: &[(u8, u64)]) -> Vec<(PeerId, u64, u64)> {
        let mut c = Checksums::default();
        let present: Vec<PeerId> = values.iter().map(|(p, _)| PeerId(*p)).collect();
        let mut out = Vec::new();
        for (p, v) in values {
            out.extend(c.insert_majority(Frame(59), PeerId(*p), *v, &present));
        }
        out
    }

    #[test]
    fn the_odd_one_out_is_the_desynced_one_and_player_1_breaks_ties() {
        // Nothing is judged before every player reported.
        let mut c = Checksums::default();
        let all = [PeerId(0), PeerId(1), PeerId(2)];
        assert!(c.insert_majority(Frame(9), PeerId(1), 7, &all).is_empty());
        assert!(c.insert_majority(Frame(9), PeerId(2), 8, &all).is_empty());
        assert_eq!(
            c.insert_majority(Frame(9), PeerId(0), 7, &all),
            [(PeerId(2), 7, 8)]
        );
        // A late duplicate judges nothing again.
        assert!(c.insert_majority(Frame(9), PeerId(2), 8, &all).is_empty());
        assert_eq!(c.holder(Frame(9), 7, PeerId(2)), Some(PeerId(0)));
        assert_eq!(c.holder(Frame(9), 7, PeerId(0)), Some(PeerId(1)));
        // Player 1 can be the odd one out too: no player is trusted over a majority.
        assert_eq!(judge(&[(0, 5), (1, 6), (2, 6)]), [(PeerId(0), 6, 5)]);
        // Two against two, or one against one: player 1's value wins.
        assert_eq!(judge(&[(0, 1), (1, 2)]), [(PeerId(1), 1, 2)]);
        assert_eq!(
            judge(&[(0, 1), (1, 2), (2, 1), (3, 2)]),
            [(PeerId(1), 1, 2), (PeerId(3), 1, 2)]
        );
        // Without player 1, the lowest slot present breaks the tie.
        assert_eq!(judge(&[(2, 4), (5, 3)]), [(PeerId(5), 4, 3)]);
        // A plurality is no tie: 2 of 4 agree, the other two each differ.
        assert_eq!(
            judge(&[(0, 9), (1, 8), (2, 8), (3, 7)]),
            [(PeerId(0), 8, 9), (PeerId(3), 8, 7)]
        );
        assert!(judge(&[(0, 3), (1, 3), (2, 3)]).is_empty());
    }
}
