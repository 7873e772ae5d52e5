//! Frame numbers, player and spectator ids (and [`Slot`], either of them), and the 16-bit wrapping numbers used on the wire.

use std::fmt;

use crate::input::MAX_PLAYERS;

/// An emulated frame, counted from 0 at the start of the session.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Frame(pub u32);

impl Frame {
    /// The first frame of a session.
    pub const ZERO: Frame = Frame(0);

    /// The frame after this one.
    pub fn next(self) -> Frame {
        Frame(self.0.saturating_add(1))
    }

    /// `n` frames later.
    pub fn plus(self, n: u32) -> Frame {
        Frame(self.0.saturating_add(n))
    }

    /// Frames from `earlier` to `self` (0 if `earlier` is later).
    pub fn since(self, earlier: Frame) -> u32 {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "frame {}", self.0)
    }
}

/// A player slot, 0..8; also names the client that plays it. Slot 0 is the host's player.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct PeerId(pub u8);

impl PeerId {
    /// `None` for slots beyond [`MAX_PLAYERS`].
    pub fn new(slot: u8) -> Option<PeerId> {
        (usize::from(slot) < MAX_PLAYERS).then_some(PeerId(slot))
    }

    /// The slot as an array index.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl fmt::Display for PeerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "player {}", self.0 + 1)
    }
}

/// A spectator, named by its session slot (16 and up). It watches and has no seat, so it is
/// never a [`PeerId`]: the two kinds of identity cannot be mixed up.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct SpectatorId(pub u8);

impl SpectatorId {
    /// The first spectator's slot number: players take 0..8, spectators 16..=254.
    pub const FIRST: u8 = 16;
}

impl fmt::Display for SpectatorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "spectator {}",
            self.0.saturating_sub(SpectatorId::FIRST) + 1
        )
    }
}

/// Who in a session: a seat or a spectator. The session numbers both in one slot space (a
/// seat 0..8, a spectator from [`SpectatorId::FIRST`]); that number ([`Slot::number`]) is
/// for the wire and for tables.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Slot {
    /// A seat in the game.
    Player(PeerId),
    /// A spectator: it watches and has no seat.
    Spectator(SpectatorId),
}

impl Slot {
    /// Its number in the session's slot space.
    pub fn number(self) -> u8 {
        match self {
            Slot::Player(p) => p.0,
            Slot::Spectator(s) => s.0,
        }
    }

    /// The seat, if it is one.
    pub fn player(self) -> Option<PeerId> {
        match self {
            Slot::Player(p) => Some(p),
            Slot::Spectator(_) => None,
        }
    }

    /// True for a spectator.
    pub fn is_spectator(self) -> bool {
        matches!(self, Slot::Spectator(_))
    }
}

impl From<PeerId> for Slot {
    fn from(p: PeerId) -> Slot {
        Slot::Player(p)
    }
}

impl From<SpectatorId> for Slot {
    fn from(s: SpectatorId) -> Slot {
        Slot::Spectator(s)
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Slot::Player(p) => p.fmt(f),
            Slot::Spectator(s) => s.fmt(f),
        }
    }
}

/// True if wrapping sequence number `a` is newer than `b` (RFC 1982 style, half range).
pub(crate) fn seq_newer(a: u16, b: u16) -> bool {
    a != b && a.wrapping_sub(b) < 0x8000
}

/// Expands the low `bits` bits of a counter to the full value nearest to `reference`: within
/// `-2^(bits-1)..2^(bits-1)` of it. `None` if that would fall below 0 (a corrupt or hostile
/// value).
pub(crate) fn unwrap_low(low: u32, bits: u32, reference: u32) -> Option<u32> {
    let m = 1i64 << bits;
    let mut diff = (i64::from(low) - i64::from(reference)).rem_euclid(m);
    if diff >= m / 2 {
        diff -= m;
    }
    u32::try_from(i64::from(reference) + diff).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_wrap() {
        assert!(seq_newer(1, 0));
        assert!(seq_newer(0, 0xffff));
        assert!(!seq_newer(0xffff, 0));
        assert!(!seq_newer(7, 7));
        assert!(seq_newer(0x7fff, 0));
        assert!(!seq_newer(0x8000, 0));
    }

    #[test]
    fn unwrap_low_picks_the_nearest_value() {
        assert_eq!(unwrap_low(5, 16, 3), Some(5));
        assert_eq!(unwrap_low(0xfffe, 16, 3), None);
        assert_eq!(unwrap_low(0xfffe, 16, 0x1_0003), Some(0xfffe));
        assert_eq!(unwrap_low(2, 16, 0x1_fff0), Some(0x2_0002));
        assert_eq!(unwrap_low(0x10, 16, 0x5_0000), Some(0x5_0010));
        // 7 bits: -64..=63 around the reference.
        assert_eq!(unwrap_low(100, 7, 163), Some(100));
        assert_eq!(unwrap_low(99, 7, 163), Some(99));
        assert_eq!(unwrap_low(226 % 128, 7, 163), Some(226));
        assert_eq!(unwrap_low(227 % 128, 7, 163), Some(99));
        assert_eq!(unwrap_low(127, 7, 0), None);
        assert_eq!(PeerId::new(8), None);
        assert_eq!(PeerId::new(7), Some(PeerId(7)));
    }

    #[test]
    fn slots_keep_their_numbers_and_say_who_they_are() {
        let (p, s) = (Slot::Player(PeerId(3)), Slot::Spectator(SpectatorId(17)));
        assert_eq!((p.number(), s.number()), (3, 17));
        assert_eq!((p.player(), s.player()), (Some(PeerId(3)), None));
        assert_eq!(
            (p.to_string().as_str(), s.to_string().as_str()),
            ("player 4", "spectator 2")
        );
    }
}
