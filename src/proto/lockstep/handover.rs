//! A hand-over of the lockstep server: the authority moves to another process (its host
//! left or crashed, or another place has shorter round trips) and the game goes on from
//! the frames everyone already agreed on. Sans-IO like the rest: who becomes the authority,
//! and when, is the session's call; this is what the two ends do.
//!
//! 1. Every player that goes on offers the agreed frames it holds
//!    ([`Client::agreed`](super::Client::agreed): every frame any server published is
//!    agreed, and each client keeps the last 68 s of them).
//! 2. [`merge_agreed`] joins the offers: the new authority starts from the newest frame
//!    anyone holds (players who are ahead hand theirs over first), and an offer whose
//!    frames differ from another's for the same frame is refused and named.
//! 3. Each player is moved with [`Client::rehome`](super::Client::rehome), given the agreed
//!    frames it lacked (never a made-up frame): its link starts afresh, and its samples
//!    from the first that no agreed frame carries are sent again, so no press is lost; it
//!    says from which sample the new server takes them.
//! 4. The new authority starts with [`Server::resume`](super::Server::resume) at the
//!    newest agreed frame, each player's samples from that index on, each stream from the
//!    frame every player now holds; a game paused there stays paused until a resume.
//!
//! A player's samples are numbered like the frames of its stream; a frame carries sample
//! `frame - lead`, and each client is told its lead with the frames. The frames a behind
//! player lacked carry its samples at the lead it last knew, unless the lead grew or
//! shrank meanwhile (by repeating a sample, or dropping one equal to the one before): the
//! client then resends from the nearest sample whose predecessor is its input on the
//! newest agreed frame, so the changes go on from that input with none made up or lost.

use crate::input::Inputs;

use super::frame::{Frame, PeerId};

/// Two players offered different inputs for the same agreed frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{peer} offered inputs for {frame} that differ from {other}'s")]
pub struct HandoverConflict {
    /// The player whose offer was refused.
    pub peer: PeerId,
    /// The first frame where it differs.
    pub frame: Frame,
    /// The player whose offer it differs from.
    pub other: PeerId,
}

/// Joins the players' offers (each the first frame of its agreed frames and the frames) into
/// the frames the new authority starts with: the offer that reaches furthest, checked
/// against every other where they overlap. The first offer that differs is refused and
/// named; `None` frames for no offer.
pub fn merge_agreed(
    offers: &[(PeerId, Frame, Vec<Inputs>)],
) -> Result<(Frame, Vec<Inputs>), HandoverConflict> {
    let end = |o: &(PeerId, Frame, Vec<Inputs>)| o.1 .0 + o.2.len() as u32;
    let Some(best) = offers
        .iter()
        .max_by_key(|o| (end(o), std::cmp::Reverse(o.0 .0)))
    else {
        return Ok((Frame::ZERO, Vec::new()));
    };
    for o in offers.iter().filter(|o| o.0 != best.0) {
        for (k, f) in o.2.iter().enumerate() {
            let frame = o.1.plus(k as u32);
            let Some(i) = frame.0.checked_sub(best.1 .0) else {
                continue;
            };
            if best.2.get(i as usize).is_some_and(|b| b != f) {
                return Err(HandoverConflict {
                    peer: o.0,
                    frame,
                    other: best.0,
                });
            }
        }
    }
    Ok((best.1, best.2.clone()))
}
