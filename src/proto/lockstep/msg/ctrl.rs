//! The CTRL codec (client -> server; layout: the `msg` module doc). Imports the items and
//! the head codec.

use std::ops::RangeInclusive;

use crate::input::Pad;
use crate::wire::{Header, Kind, WireError};

use super::super::codec::{self, put_rel, put_u32, put_varint, Reader};
use super::super::frame::Frame;
use super::head::*;
use super::items::*;

/// The age byte a CTRL's run carries: none for 0 ms (a CTRL usually leaves the moment its
/// newest sample is pushed), `AGE_UNKNOWN` when the age is not known or does not fit.
fn age_byte(age_ms: Option<u8>) -> Option<u8> {
    match age_ms {
        Some(0) => None,
        Some(a) if a != AGE_UNKNOWN => Some(a),
        _ => Some(AGE_UNKNOWN),
    }
}

/// Encodes a CTRL datagram (header included). `refs`: the sample indices the server may
/// expect next (from the first unacknowledged to the end of everything sent so far), which
/// decide how short the run's first index can be written; `ack_held`: the ack carried by the
/// newest CTRL the server acknowledged (it holds that one or a newer), which decides how
/// short the ack can be.
pub fn encode_ctrl(
    session: u32,
    c: &Ctrl,
    refs: RangeInclusive<u32>,
    ack_held: Option<u16>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    Header {
        kind: Kind::Ctrl,
        session,
    }
    .write(&mut out);
    let run = c.samples.as_ref().filter(|s| !s.pads.is_empty());
    let checksums = &c.checksums[..c.checksums.len().min(MAX_CHECKSUMS)];
    let age = run.and_then(|r| age_byte(r.age_ms));
    let extras = checksums.len() as u8
        | if c.pause.is_some() { X_PAUSE } else { 0 }
        | if c.stopped { X_STOPPED } else { 0 };
    let body = flag(extras != 0, F_EXTRAS)
        | run.map_or(0, |r| {
            F_RUN | flag(r.base.is_some(), F_BASE) | flag(age.is_some(), F_AGE)
        });
    put_head(&mut out, &c.head, ack_held, c.input_rtt_ms, body);
    if extras != 0 {
        out.push(extras);
        for (f, v) in checksums {
            put_varint(&mut out, f.0);
            // The low half: a desync still shows at the first check with odds of 1 in 4e9
            // against, and a checksum rides in every CTRL until acknowledged.
            put_u32(&mut out, *v as u32);
        }
        if let Some(p) = c.pause {
            out.push((p.id & 0x7f) << 1 | u8::from(p.pause));
        }
    }
    // Last: the run takes the rest of the datagram, so it needs no count.
    if let Some(s) = run {
        put_rel(&mut out, s.first, refs);
        out.extend(age);
        out.extend(codec::encode_pads(s.pads.iter().copied(), s.base));
    }
    shorten(&mut out);
    out
}

/// Decodes a CTRL body; `sample_ref` is the next sample index the server expects, `ack_ref`
/// the newest ack the client sent it (before any, the newest UPDATE sequence number sent),
/// and `held` gives a sample it holds (the base of a delta-coded first sample).
pub fn decode_ctrl(
    body: &[u8],
    short: bool,
    sample_ref: u32,
    ack_ref: u16,
    held: impl Fn(u32) -> Option<Pad>,
) -> Result<Ctrl, WireError> {
    let mut r = Reader::new(body);
    let (head, flags, input_rtt_ms) =
        read_head(&mut r, true, short, ack_ref).ok_or_else(malformed_ctrl)?;
    let (has_run, has_extras) = (flags & F_RUN != 0, flags & F_EXTRAS != 0);
    if flags & (F_BASE | F_AGE) != 0 && !has_run {
        return Err(malformed_ctrl());
    }
    let mut checksums = Vec::new();
    let mut pause = None;
    let mut stopped = false;
    if has_extras {
        let x = r.u8().ok_or_else(malformed_ctrl)?;
        let n = usize::from(x & X_CHECKSUMS);
        if x == 0 || x & !(X_CHECKSUMS | X_PAUSE | X_STOPPED) != 0 || n > MAX_CHECKSUMS {
            return Err(malformed_ctrl());
        }
        stopped = x & X_STOPPED != 0;
        for _ in 0..n {
            let f = r.varint().ok_or_else(malformed_ctrl)?;
            let v = r.u32().ok_or_else(malformed_ctrl)?;
            checksums.push((Frame(f), u64::from(v)));
        }
        if x & X_PAUSE != 0 {
            let b = r.u8().ok_or_else(malformed_ctrl)?;
            pause = Some(PauseRequest {
                id: b >> 1,
                pause: b & 1 != 0,
            });
        }
    }
    let samples = if has_run {
        let first = r.rel(sample_ref).ok_or_else(malformed_ctrl)?;
        let age_ms = if flags & F_AGE != 0 {
            Some(r.u8().ok_or_else(malformed_ctrl)?).filter(|&a| a != AGE_UNKNOWN)
        } else {
            Some(0)
        };
        let base = if flags & F_BASE != 0 {
            let before = first.checked_sub(1).ok_or_else(malformed_ctrl)?;
            Some(held(before).ok_or(WireError::MissingBase(Kind::Ctrl, before))?)
        } else {
            None
        };
        let pads = codec::decode_pads(r.remaining(), base, 2 * MAX_RUN)
            .filter(|p| first.checked_add(p.len() as u32).is_some())
            .ok_or_else(malformed_ctrl)?;
        r.advance(r.remaining().len()).ok_or_else(malformed_ctrl)?;
        Some(SampleRun {
            first,
            base,
            pads,
            age_ms,
        })
    } else {
        None
    };
    if !r.is_empty() {
        return Err(malformed_ctrl());
    }
    Ok(Ctrl {
        head,
        input_rtt_ms,
        samples,
        checksums,
        pause,
        stopped,
    })
}

/// Most samples of `pads` whose delta-coded bits fit `budget_bits`.
pub fn pads_fitting(pads: impl IntoIterator<Item = Pad>, budget_bits: usize) -> usize {
    let mut bits = 0usize;
    let mut prev: Option<Pad> = None;
    let mut n = 0;
    for p in pads {
        bits += prev.map_or(16, |pr| codec::delta_bits(pr, p));
        if bits > budget_bits || n >= MAX_RUN {
            break;
        }
        prev = Some(p);
        n += 1;
    }
    n
}
