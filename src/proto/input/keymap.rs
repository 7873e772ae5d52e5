//! Keyboard bindings: which key drives which RetroPad button of a keyboard player.
//!
//! Keys are named by strings (`"z"`, `"up"`, `"enter"`, `"rshift"`, ...) so this module does
//! not depend on the windowing library; `frontend::keyboard` turns names into key codes.

use super::{Button, MAX_PLAYERS};

/// Players that have default keyboard bindings (P1 and P2).
pub const KEYBOARD_PLAYERS: usize = 2;

/// Player 1, like RetroArch's defaults.
const P1_DEFAULTS: [(Button, &str); 12] = [
    (Button::Up, "up"),
    (Button::Down, "down"),
    (Button::Left, "left"),
    (Button::Right, "right"),
    (Button::B, "z"),
    (Button::A, "x"),
    (Button::Y, "a"),
    (Button::X, "s"),
    (Button::L, "q"),
    (Button::R, "w"),
    (Button::Start, "enter"),
    (Button::Select, "rshift"),
];

/// Player 2: directions on I/J/K/L for the right hand, buttons on V/B/F/G/R/T for the left
/// hand, Start on 6 and Select on 5. None of them collides with P1 or the hotkeys.
const P2_DEFAULTS: [(Button, &str); 12] = [
    (Button::Up, "i"),
    (Button::Down, "k"),
    (Button::Left, "j"),
    (Button::Right, "l"),
    (Button::B, "v"),
    (Button::A, "b"),
    (Button::Y, "f"),
    (Button::X, "g"),
    (Button::L, "r"),
    (Button::R, "t"),
    (Button::Start, "6"),
    (Button::Select, "5"),
];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyMapError {
    #[error("unknown button {0:?}")]
    UnknownButton(String),
}

/// One keyboard player's bindings: at most one key per button.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyMap {
    keys: [Option<String>; 16],
}

impl KeyMap {
    /// No key bound.
    pub fn empty() -> KeyMap {
        KeyMap::default()
    }

    /// The built-in bindings of `player` (0-based); players past P2 have none.
    pub fn default_for(player: usize) -> KeyMap {
        let table: &[(Button, &str)] = match player {
            0 => &P1_DEFAULTS,
            1 => &P2_DEFAULTS,
            _ => &[],
        };
        debug_assert!(player < MAX_PLAYERS);
        let mut map = KeyMap::empty();
        for &(b, k) in table {
            map.bind(b, Some(k));
        }
        map
    }

    /// Binds `button` to `key` (a lowercase key name), or unbinds it with `None`.
    pub fn bind(&mut self, button: Button, key: Option<&str>) {
        self.keys[button as usize] = key.map(str::to_ascii_lowercase);
    }

    /// Binds by button name, as written in config files.
    pub fn bind_named(&mut self, button: &str, key: Option<&str>) -> Result<(), KeyMapError> {
        let b = Button::from_name(button)
            .ok_or_else(|| KeyMapError::UnknownButton(button.to_string()))?;
        self.bind(b, key);
        Ok(())
    }

    pub fn key(&self, button: Button) -> Option<&str> {
        self.keys[button as usize].as_deref()
    }

    /// Every (button, key) pair that is bound.
    pub fn bindings(&self) -> impl Iterator<Item = (Button, &str)> + '_ {
        Button::ALL
            .into_iter()
            .filter_map(|b| self.key(b).map(|k| (b, k)))
    }

    pub fn is_empty(&self) -> bool {
        self.keys.iter().all(Option::is_none)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_do_not_overlap() {
        let p1 = KeyMap::default_for(0);
        let p2 = KeyMap::default_for(1);
        for (_, k1) in p1.bindings() {
            assert!(p2.bindings().all(|(_, k2)| k1 != k2), "{k1} bound twice");
        }
        assert_eq!(p1.key(Button::B), Some("z"));
        assert_eq!(p1.key(Button::Select), Some("rshift"));
        assert!(KeyMap::default_for(2).is_empty());
    }

    #[test]
    fn rebinding() {
        let mut m = KeyMap::default_for(0);
        m.bind_named("b", Some("C")).unwrap();
        m.bind_named("start", None).unwrap();
        assert_eq!(m.key(Button::B), Some("c"));
        assert_eq!(m.key(Button::Start), None);
        assert_eq!(
            m.bind_named("turbo", Some("t")),
            Err(KeyMapError::UnknownButton("turbo".into()))
        );
    }
}
