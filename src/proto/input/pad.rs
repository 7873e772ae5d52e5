//! The RetroPad state of one player for one frame.

/// Most players a session (and the built-in game) supports: RetroPad ports 0 to 7.
pub const MAX_PLAYERS: usize = 8;

/// One RetroPad's buttons as a bitmask. Bit `i` is libretro's `RETRO_DEVICE_ID_JOYPAD_*`
/// id `i`, so the value can be handed to a core as-is (including `JOYPAD_MASK` queries).
#[derive(Copy, Clone, Default, PartialEq, Eq, Hash, Debug)]
pub struct Pad(pub u16);

/// Every port's pad for one frame; unused ports stay neutral.
pub type Inputs = [Pad; MAX_PLAYERS];

/// RetroPad buttons, numbered as libretro numbers them.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum Button {
    B = 0,
    Y = 1,
    Select = 2,
    Start = 3,
    Up = 4,
    Down = 5,
    Left = 6,
    Right = 7,
    A = 8,
    X = 9,
    L = 10,
    R = 11,
    L2 = 12,
    R2 = 13,
    L3 = 14,
    R3 = 15,
}

impl Button {
    pub const ALL: [Button; 16] = [
        Button::B,
        Button::Y,
        Button::Select,
        Button::Start,
        Button::Up,
        Button::Down,
        Button::Left,
        Button::Right,
        Button::A,
        Button::X,
        Button::L,
        Button::R,
        Button::L2,
        Button::R2,
        Button::L3,
        Button::R3,
    ];

    /// The name used in config files (`up`, `start`, `l2`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Button::B => "b",
            Button::Y => "y",
            Button::Select => "select",
            Button::Start => "start",
            Button::Up => "up",
            Button::Down => "down",
            Button::Left => "left",
            Button::Right => "right",
            Button::A => "a",
            Button::X => "x",
            Button::L => "l",
            Button::R => "r",
            Button::L2 => "l2",
            Button::R2 => "r2",
            Button::L3 => "l3",
            Button::R3 => "r3",
        }
    }

    pub fn from_name(name: &str) -> Option<Button> {
        Button::ALL.into_iter().find(|b| b.name() == name)
    }
}

impl Pad {
    pub const NEUTRAL: Pad = Pad(0);

    pub fn pressed(self, b: Button) -> bool {
        self.0 & (1 << b as u16) != 0
    }

    pub fn set(&mut self, b: Button, down: bool) {
        if down {
            self.0 |= 1 << b as u16;
        } else {
            self.0 &= !(1 << b as u16);
        }
    }

    pub fn with(mut self, b: Button) -> Pad {
        self.set(b, true);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_follow_libretro_ids() {
        assert_eq!(Pad::NEUTRAL.with(Button::Start).0, 1 << 3);
        assert_eq!(Pad::NEUTRAL.with(Button::A).0, 1 << 8);
        let mut p = Pad::NEUTRAL.with(Button::Up).with(Button::B);
        p.set(Button::Up, false);
        assert!(p.pressed(Button::B) && !p.pressed(Button::Up));
        assert_eq!(Button::from_name("l2"), Some(Button::L2));
        assert_eq!(Button::from_name("nope"), None);
    }
}
