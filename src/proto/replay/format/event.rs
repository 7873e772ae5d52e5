//! The payload of an `Event` record: something noteworthy that happened at a frame.

use crate::input::MAX_PLAYERS;

use super::{
    compress_state, decompress_state, put_bytes, put_varint, Bytes, Reason, MAX_STATE_LEN,
};

const EV_JOINED: u8 = 0x01;
const EV_LEFT: u8 = 0x02;
const EV_DESYNC: u8 = 0x03;
const EV_RESYNC: u8 = 0x04;
const EV_CHAT: u8 = 0x05;
const EV_PAUSED: u8 = 0x06;
const EV_RESUMED: u8 = 0x07;
/// Something noteworthy that happened at a frame.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Event {
    /// A player took port `slot` (0-based).
    Joined {
        /// The port, 0-based.
        slot: u8,
        /// The player's name.
        name: String,
    },
    /// The player on port `slot` left; the port is neutral from this frame on.
    Left {
        /// The port, 0-based.
        slot: u8,
    },
    /// Local and remote state checksums differed.
    Desync {
        /// This machine's checksum.
        local: u64,
        /// The other machine's.
        remote: u64,
    },
    /// Emulation was resynchronised; `state` (uncompressed) was loaded at this frame, if any.
    Resync {
        /// The state loaded, if the log keeps it.
        state: Option<Vec<u8>>,
    },
    /// A chat message, at the frame its sender was at.
    Chat {
        /// The sender's slot (16 and up: a spectator's).
        slot: u8,
        /// The sender's name.
        name: String,
        /// What it said.
        text: String,
    },
    /// The player on port `slot` paused the game before this frame (every peer stood still
    /// there until `Resumed`; a replay goes straight on).
    Paused {
        /// The port, 0-based.
        slot: u8,
    },
    /// The player on port `slot` resumed the game from this frame.
    Resumed {
        /// The port, 0-based.
        slot: u8,
    },
    /// An event kind this build does not know (from a newer framelock); `data` is its body.
    Other {
        /// The event kind.
        kind: u8,
        /// Its body, unread.
        data: Vec<u8>,
    },
}

impl Event {
    fn kind(&self) -> u8 {
        match self {
            Event::Joined { .. } => EV_JOINED,
            Event::Left { .. } => EV_LEFT,
            Event::Desync { .. } => EV_DESYNC,
            Event::Resync { .. } => EV_RESYNC,
            Event::Chat { .. } => EV_CHAT,
            Event::Paused { .. } => EV_PAUSED,
            Event::Resumed { .. } => EV_RESUMED,
            Event::Other { kind, .. } => *kind,
        }
    }
}
pub fn encode_event(frame: u32, ev: &Event) -> Result<Vec<u8>, Reason> {
    let mut p = Vec::new();
    put_varint(&mut p, frame);
    p.push(ev.kind());
    match ev {
        Event::Joined { slot, name } => {
            check_slot(*slot)?;
            p.push(*slot);
            put_bytes(&mut p, name.as_bytes());
        }
        Event::Left { slot } | Event::Paused { slot } | Event::Resumed { slot } => {
            check_slot(*slot)?;
            p.push(*slot);
        }
        Event::Desync { local, remote } => {
            p.extend_from_slice(&local.to_le_bytes());
            p.extend_from_slice(&remote.to_le_bytes());
        }
        Event::Resync { state } => match state {
            None => p.push(0),
            Some(s) => {
                if s.len() > MAX_STATE_LEN {
                    return Err("resync state too large");
                }
                p.push(1);
                compress_state(&mut p, s);
            }
        },
        Event::Chat { slot, name, text } => {
            p.push(*slot);
            put_bytes(&mut p, name.as_bytes());
            put_bytes(&mut p, text.as_bytes());
        }
        Event::Other { kind, data } => {
            if (EV_JOINED..=EV_RESUMED).contains(kind) {
                return Err("event kind is taken by a known event");
            }
            p.extend_from_slice(data);
        }
    }
    Ok(p)
}

fn check_slot(slot: u8) -> Result<(), Reason> {
    if usize::from(slot) < MAX_PLAYERS {
        Ok(())
    } else {
        Err("player slot out of range")
    }
}

/// Whether an event payload starts as a resync carrying a state (frame, kind 0x04, flag 1):
/// the one record that may be far longer than 64 KiB. Looks at those few bytes only.
pub fn starts_resync_state(payload: &[u8]) -> bool {
    let mut b = Bytes::new(payload);
    b.varint().is_ok() && b.u8() == Ok(EV_RESYNC) && b.u8() == Ok(1)
}

pub fn decode_event(payload: &[u8]) -> Result<(u32, Event), Reason> {
    let mut b = Bytes::new(payload);
    let frame = b.varint()?;
    let kind = b.u8()?;
    let ev = match kind {
        EV_JOINED => {
            let slot = b.u8()?;
            check_slot(slot)?;
            Event::Joined {
                slot,
                name: b.string()?,
            }
        }
        EV_LEFT => {
            let slot = b.u8()?;
            check_slot(slot)?;
            Event::Left { slot }
        }
        EV_PAUSED | EV_RESUMED => {
            let slot = b.u8()?;
            check_slot(slot)?;
            if kind == EV_PAUSED {
                Event::Paused { slot }
            } else {
                Event::Resumed { slot }
            }
        }
        EV_DESYNC => Event::Desync {
            local: b.u64()?,
            remote: b.u64()?,
        },
        EV_RESYNC => Event::Resync {
            state: match b.u8()? {
                0 => None,
                1 => Some(decompress_state(&mut b)?),
                _ => return Err("bad resync state flag"),
            },
        },
        // As written: whoever shows the strings makes them printable.
        EV_CHAT => Event::Chat {
            slot: b.u8()?,
            name: b.string()?,
            text: b.string()?,
        },
        _ => {
            return Ok((
                frame,
                Event::Other {
                    kind,
                    data: b.remaining().to_vec(),
                },
            ))
        }
    };
    if !b.remaining().is_empty() {
        return Err("event record too long");
    }
    Ok((frame, ev))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_and_unknown_kinds_pass_through() {
        let evs = [
            Event::Joined {
                slot: 3,
                name: "cy".into(),
            },
            Event::Left { slot: 7 },
            Event::Desync {
                local: 1,
                remote: u64::MAX,
            },
            Event::Resync { state: None },
            Event::Paused { slot: 1 },
            Event::Resumed { slot: 0 },
            Event::Resync {
                state: Some(vec![9; 1000]),
            },
            Event::Chat {
                slot: 17,
                name: "eve".into(),
                text: "gg, rematch?".into(),
            },
            Event::Other {
                kind: 0x40,
                data: vec![1, 2, 3],
            },
        ];
        for ev in evs {
            let p = encode_event(77, &ev).unwrap();
            assert_eq!(decode_event(&p).unwrap(), (77, ev));
        }
        assert!(encode_event(0, &Event::Left { slot: 8 }).is_err());
        let taken = Event::Other {
            kind: EV_LEFT,
            data: vec![],
        };
        assert!(encode_event(0, &taken).is_err());
    }
}
