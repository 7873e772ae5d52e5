//! The head both bodies start with (flags, sequence number, ack, timestamp, echo) and the
//! flag bits of the whole layout (the `msg` module doc). Imports the items only.

use crate::wire::{Kind, WireError, LOCKSTEP_HEADER_LEN, LOCKSTEP_SHORT};

use super::super::codec::{put_seq, put_u16, Reader};
use super::items::*;

pub(super) const F_ACK: u8 = 0x01;
pub(super) const F_ECHO: u8 = 0x02;
pub(super) const F_RUN: u8 = 0x04;
pub(super) const F_EXTRAS: u8 = 0x08;
/// CTRL: carries the input round trip. UPDATE: the server sees this client's CTRLs lost.
pub(super) const F_KIND: u8 = 0x10;
pub(super) const F_TS: u8 = 0x20;
/// UPDATE: the advance follows the head.
pub(super) const F_ADVANCE: u8 = 0x40;
/// CTRL: the newest sample's age follows the run's count.
pub(super) const F_AGE: u8 = 0x40;
/// The run's first item is delta-coded against the one before it.
pub(super) const F_BASE: u8 = 0x80;
/// CTRL age byte: the newest sample's age is not known (not in this datagram, or 255 ms or
/// more old).
pub(super) const AGE_UNKNOWN: u8 = 0xff;
/// The flags most datagrams carry (an ack, a run delta-coded against what the receiver
/// holds, nothing else): a datagram with these leaves the flags byte out and says so in its
/// header (`wire::LOCKSTEP_SHORT`).
pub(super) const USUAL_FLAGS: u8 = F_ACK | F_RUN | F_BASE;
/// UPDATE extras byte: the notice count, and which fields follow it.
pub(super) const X_NOTICES: u8 = 0x3f;
pub(super) const X_LEAD: u8 = 0x40;
pub(super) const X_MASK: u8 = 0x80;
/// CTRL extras byte: the checksum count, and whether a pause request follows them.
pub(super) const X_CHECKSUMS: u8 = 0x1f;
pub(super) const X_PAUSE: u8 = 0x80;
pub(super) const X_STOPPED: u8 = 0x40;

pub(super) fn malformed_ctrl() -> WireError {
    WireError::Malformed(Kind::Ctrl)
}

pub(super) fn malformed_update() -> WireError {
    WireError::Malformed(Kind::Update)
}

/// Writes the head; `irtt` (CTRL) sets the per-kind flag and its field; `body` are the flags
/// of what the caller writes after the head.
pub(super) fn put_head(
    out: &mut Vec<u8>,
    head: &LinkHeader,
    ack_held: Option<u16>,
    irtt: Option<u16>,
    body: u8,
) {
    let mut flags = body;
    if irtt.is_some() {
        flags |= F_KIND;
    }
    if head.ack.is_some() {
        flags |= F_ACK;
    }
    if head.echo.is_some() {
        flags |= F_ECHO;
    }
    if head.ts.is_some() {
        flags |= F_TS;
    }
    out.push(flags);
    put_u16(out, head.seq);
    if let Some(a) = head.ack {
        put_seq(out, a, ack_held);
    }
    if let Some(ts) = head.ts {
        put_u16(out, ts);
    }
    if let Some(e) = head.echo {
        put_u16(out, e.ts);
        out.push(e.hold_ms);
    }
    if let Some(v) = irtt {
        put_u16(out, v);
    }
}

/// `f` if `on`, else no flag.
pub(super) fn flag(on: bool, f: u8) -> u8 {
    if on {
        f
    } else {
        0
    }
}

/// Leaves the flags byte out of an encoded datagram if it holds `USUAL_FLAGS`.
pub(super) fn shorten(out: &mut Vec<u8>) {
    if out[LOCKSTEP_HEADER_LEN] == USUAL_FLAGS {
        out.remove(LOCKSTEP_HEADER_LEN);
        out[0] |= LOCKSTEP_SHORT;
    }
}

/// Reads the head; returns it with the flags and, for a CTRL (`ctrl`), the irtt field.
/// `short`: the flags byte is left out (`wire::is_short`). `ack_ref`: the newest ack
/// received from the sender (else our newest sequence number).
pub(super) fn read_head(
    r: &mut Reader<'_>,
    ctrl: bool,
    short: bool,
    ack_ref: u16,
) -> Option<(LinkHeader, u8, Option<u16>)> {
    let flags = if short { USUAL_FLAGS } else { r.u8()? };
    let known = F_ACK | F_ECHO | F_RUN | F_EXTRAS | F_KIND | F_TS | F_BASE;
    let known = known | if ctrl { F_AGE } else { F_ADVANCE };
    if flags & !known != 0 {
        return None;
    }
    let seq = r.u16()?;
    let ack = if flags & F_ACK != 0 {
        Some(r.seq(ack_ref)?)
    } else {
        None
    };
    let ts = if flags & F_TS != 0 {
        Some(r.u16()?)
    } else {
        None
    };
    let echo = if flags & F_ECHO != 0 {
        Some(Echo {
            ts: r.u16()?,
            hold_ms: r.u8()?,
        })
    } else {
        None
    };
    let irtt = if ctrl && flags & F_KIND != 0 {
        Some(r.u16()?)
    } else {
        None
    };
    let head = LinkHeader { seq, ack, ts, echo };
    Some((head, flags, irtt))
}
