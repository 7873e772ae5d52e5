//! The UPDATE codec (server -> client; layout: the `msg` module doc). Imports the items
//! and the head codec.

use std::ops::RangeInclusive;

use crate::input::{Inputs, Pad, MAX_PLAYERS};
use crate::wire::{Header, Kind, WireError};

use super::super::codec::{self, put_rel, put_u32, put_varint, Reader};
use super::super::frame::{Frame, PeerId};
use super::head::*;
use super::items::*;

/// Players with a non-neutral pad somewhere in `frames`.
pub fn active_mask(frames: &[Inputs]) -> u8 {
    frames.iter().fold(0u8, |m, f| {
        f.iter()
            .enumerate()
            .filter(|(_, p)| **p != Pad::NEUTRAL)
            .fold(m, |m, (i, _)| m | (1 << i))
    })
}

/// Every slot of a session of `players`: the players an UPDATE carries unless it says.
pub fn session_mask(players: u8) -> u8 {
    ((1u16 << players.min(8)) - 1) as u8
}

/// Encodes an UPDATE datagram (header included) for a session of `players`. `refs`: the
/// frames the client may expect next (from the first it has not acknowledged to the end of
/// everything sent to it so far), which decide how short the run's start can be written;
/// `ack_held` as for `encode_ctrl`.
pub fn encode_update(
    session: u32,
    players: u8,
    u: &Update,
    refs: RangeInclusive<u32>,
    ack_held: Option<u16>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    Header {
        kind: Kind::Update,
        session,
    }
    .write(&mut out);
    let run = u.frames.as_ref().filter(|f| !f.frames.is_empty());
    let notices = &u.notices[..u.notices.len().min(MAX_NOTICES)];
    // The session's players, unless naming only the active ones is smaller (an idle or
    // departed player costs a bit per frame; naming the mask costs a byte).
    let (mask, bits) = match run {
        Some(fr) => {
            let all = session_mask(players);
            let bits = codec::encode_frames(&fr.frames, all, fr.base.as_ref());
            let active = active_mask(&fr.frames) & all;
            // Every player active (the usual case): one encoding, no choice to make.
            let fewer = (active != all)
                .then(|| codec::encode_frames(&fr.frames, active, fr.base.as_ref()))
                .filter(|fewer| fewer.len() + 1 < bits.len());
            match fewer {
                Some(fewer) => (Some(active), fewer),
                None => (None, bits),
            }
        }
        None => (None, Vec::new()),
    };
    let lead = run.and_then(|r| r.lead);
    let extras = notices.len() as u8
        | if lead.is_some() { X_LEAD } else { 0 }
        | if mask.is_some() { X_MASK } else { 0 };
    let body = flag(extras != 0, F_EXTRAS)
        | flag(u.up_lossy, F_KIND)
        | flag(u.advance.is_some(), F_ADVANCE)
        | run.map_or(0, |r| F_RUN | flag(r.base.is_some(), F_BASE));
    put_head(&mut out, &u.head, ack_held, None, body);
    if let Some(a) = u.advance {
        out.push(a as u8);
    }
    if extras != 0 {
        out.push(extras);
        out.extend(lead);
        out.extend(mask);
    }
    if let Some(fr) = run {
        put_rel(&mut out, fr.from.0, refs);
        put_varint(&mut out, fr.frames.len() as u32);
        out.extend(bits);
    }
    for n in notices {
        let (kind, peer, frame) = match *n {
            Notice::Left { peer, from } => (1u8, peer, from),
            Notice::Desync { peer, frame } => (2u8, peer, frame),
            Notice::Joined { peer, from, .. } => (3u8, peer, from),
            Notice::Paused { peer, at } => (4u8, peer, at),
            Notice::Resumed { peer, at } => (5u8, peer, at),
            Notice::PauseRefused { peer, why } => (6u8, peer, Frame(why.to_wire())),
        };
        out.push(kind << 4 | peer.0);
        put_u32(&mut out, frame.0);
        if let Notice::Joined { name, .. } = n {
            out.push(name.len);
            out.extend_from_slice(&name.bytes[..usize::from(name.len)]);
        }
    }
    shorten(&mut out);
    out
}

/// Decodes an UPDATE body for a session of `players`; `frame_ref` is the next frame the
/// client does not know yet, `ack_ref` as for `decode_ctrl`, and `held` gives the inputs of
/// a frame it holds (the base of a delta-coded first frame).
pub fn decode_update(
    body: &[u8],
    short: bool,
    frame_ref: u32,
    ack_ref: u16,
    players: u8,
    held: impl Fn(Frame) -> Option<Inputs>,
) -> Result<Update, WireError> {
    let mut r = Reader::new(body);
    let (head, flags, _) = read_head(&mut r, false, short, ack_ref).ok_or_else(malformed_update)?;
    let has_run = flags & F_RUN != 0;
    if flags & F_BASE != 0 && !has_run {
        return Err(malformed_update());
    }
    let advance = if flags & F_ADVANCE != 0 {
        Some(r.u8().ok_or_else(malformed_update)? as i8)
    } else {
        None
    };
    let extras = if flags & F_EXTRAS != 0 {
        Some(r.u8().ok_or_else(malformed_update)?).filter(|x| *x != 0)
    } else {
        Some(0)
    }
    .ok_or_else(malformed_update)?;
    let n_notices = usize::from(extras & X_NOTICES);
    if n_notices > MAX_NOTICES {
        return Err(malformed_update());
    }
    let lead = if extras & X_LEAD != 0 {
        Some(r.u8().ok_or_else(malformed_update)?)
    } else {
        None
    };
    let all = session_mask(players);
    let mask = if extras & X_MASK != 0 {
        let m = r.u8().ok_or_else(malformed_update)?;
        if m & !all != 0 {
            return Err(malformed_update());
        }
        m
    } else {
        all
    };
    if (lead.is_some() || extras & X_MASK != 0) && !has_run {
        return Err(malformed_update());
    }
    let frames = if has_run {
        let from = r.rel(frame_ref).ok_or_else(malformed_update)?;
        let count = r.varint().ok_or_else(malformed_update)? as usize;
        if count == 0 || count > 2 * MAX_RUN || from.checked_add(count as u32).is_none() {
            return Err(malformed_update());
        }
        let base = if flags & F_BASE != 0 {
            let before = from.checked_sub(1).ok_or_else(malformed_update)?;
            Some(held(Frame(before)).ok_or(WireError::MissingBase(Kind::Update, before))?)
        } else {
            None
        };
        let (frames, used) = codec::decode_frames(r.remaining(), count, mask, base.as_ref())
            .ok_or_else(malformed_update)?;
        r.advance(used).ok_or_else(malformed_update)?;
        Some(FrameRun {
            from: Frame(from),
            base,
            frames,
            lead,
        })
    } else {
        None
    };
    let mut notices = Vec::new();
    for _ in 0..n_notices {
        let tag = r.u8().ok_or_else(malformed_update)?;
        let frame = Frame(r.u32().ok_or_else(malformed_update)?);
        let peer = PeerId::new(tag & 0x0f).ok_or_else(malformed_update)?;
        notices.push(match tag >> 4 {
            1 => Notice::Left { peer, from: frame },
            2 => Notice::Desync { peer, frame },
            3 => {
                let len = r.u8().ok_or_else(malformed_update)?;
                let raw = r.bytes(usize::from(len)).ok_or_else(malformed_update)?;
                let name = NoticeName::from_wire(raw).ok_or_else(malformed_update)?;
                Notice::Joined {
                    peer,
                    from: frame,
                    name,
                }
            }
            4 => Notice::Paused { peer, at: frame },
            5 => Notice::Resumed { peer, at: frame },
            6 => Notice::PauseRefused {
                peer,
                why: PauseRefusal::from_wire(frame.0).ok_or_else(malformed_update)?,
            },
            _ => return Err(malformed_update()),
        });
    }
    if !r.is_empty() {
        return Err(malformed_update());
    }
    Ok(Update {
        head,
        up_lossy: flags & F_KIND != 0,
        advance,
        frames,
        notices,
    })
}

/// Most frames of `frames` whose masked, frame-major bits fit `budget_bits` (exact count).
pub fn frames_fitting(frames: &[Inputs], budget_bits: usize) -> usize {
    let mut mask = 0u8;
    // Bits each player's stream would cost if carried.
    let mut cost = [0usize; MAX_PLAYERS];
    for (i, f) in frames.iter().enumerate() {
        for p in 0..MAX_PLAYERS {
            cost[p] += if i == 0 {
                16
            } else {
                codec::delta_bits(frames[i - 1][p], f[p])
            };
        }
        mask |= active_mask(std::slice::from_ref(f));
        let bits: usize = (0..MAX_PLAYERS)
            .filter(|p| mask & (1 << p) != 0)
            .map(|p| cost[p])
            .sum();
        if bits > budget_bits || i >= MAX_RUN {
            return i;
        }
    }
    frames.len()
}
