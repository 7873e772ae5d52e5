//! The game's only source of randomness: a xorshift32 kept in the saved state.

/// Power-on seed: every machine starts from the same sequence.
pub const POWER_ON_SEED: u32 = 0x2545_F491;

/// Marsaglia's xorshift32. Never zero; advanced only by game events, never by time.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Rng(u32);

impl Default for Rng {
    fn default() -> Self {
        Rng(POWER_ON_SEED)
    }
}

impl Rng {
    /// Restores a saved generator; zero (which would stick at zero) is rejected.
    pub fn from_state(s: u32) -> Option<Rng> {
        (s != 0).then_some(Rng(s))
    }

    pub fn state(self) -> u32 {
        self.0
    }

    pub fn next_u32(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }

    /// A value in `0..n` (`n > 0`); the small modulo bias does not matter for a game.
    pub fn below(&mut self, n: u32) -> u32 {
        self.next_u32() % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_is_fixed_and_nonzero() {
        let mut a = Rng::default();
        let mut b = Rng::default();
        for _ in 0..1000 {
            let v = a.next_u32();
            assert_ne!(v, 0);
            assert_eq!(v, b.next_u32());
        }
        assert!(Rng::from_state(0).is_none());
        assert!(a.below(7) < 7);
    }
}
