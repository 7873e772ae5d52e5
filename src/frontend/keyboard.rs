//! The keyboard as RetroPads: key names for config files, held keys, and hotkeys.
//!
//! Bindings use physical key positions (winit `KeyCode`), so "z" means the key where Z sits
//! on a US layout whatever the active layout is, as in most emulators.

#[cfg(feature = "gui")]
pub use winit::keyboard::KeyCode;

/// Without the window (cargo feature `gui`) no key is ever pressed: no key code exists.
#[cfg(not(feature = "gui"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyCode {}

#[cfg(feature = "gui")]
use crate::input::{KeyMap, Pad};

/// Config-file key names and the key codes they stand for, as `KEYS` (names with codes, in
/// the windowed build) and `NAMES` (names only: a server-only build still checks a config
/// file's keys, with no window library to name their codes).
macro_rules! keys {
    ($($name:literal => $code:ident,)*) => {
        /// Config-file key names and their key codes. The first name of a code is the
        /// canonical one.
        #[cfg(feature = "gui")]
        const KEYS: &[(&str, KeyCode)] = &[$(($name, KeyCode::$code)),*];
        /// Every config-file key name.
        const NAMES: &[&str] = &[$($name),*];
    };
}

keys! {
    "a" => KeyA,
    "b" => KeyB,
    "c" => KeyC,
    "d" => KeyD,
    "e" => KeyE,
    "f" => KeyF,
    "g" => KeyG,
    "h" => KeyH,
    "i" => KeyI,
    "j" => KeyJ,
    "k" => KeyK,
    "l" => KeyL,
    "m" => KeyM,
    "n" => KeyN,
    "o" => KeyO,
    "p" => KeyP,
    "q" => KeyQ,
    "r" => KeyR,
    "s" => KeyS,
    "t" => KeyT,
    "u" => KeyU,
    "v" => KeyV,
    "w" => KeyW,
    "x" => KeyX,
    "y" => KeyY,
    "z" => KeyZ,
    "0" => Digit0,
    "1" => Digit1,
    "2" => Digit2,
    "3" => Digit3,
    "4" => Digit4,
    "5" => Digit5,
    "6" => Digit6,
    "7" => Digit7,
    "8" => Digit8,
    "9" => Digit9,
    "up" => ArrowUp,
    "down" => ArrowDown,
    "left" => ArrowLeft,
    "right" => ArrowRight,
    "enter" => Enter,
    "return" => Enter,
    "space" => Space,
    "tab" => Tab,
    "backspace" => Backspace,
    "escape" => Escape,
    "lshift" => ShiftLeft,
    "rshift" => ShiftRight,
    "lctrl" => ControlLeft,
    "rctrl" => ControlRight,
    "lalt" => AltLeft,
    "ralt" => AltRight,
    "insert" => Insert,
    "delete" => Delete,
    "home" => Home,
    "end" => End,
    "pageup" => PageUp,
    "pagedown" => PageDown,
    "minus" => Minus,
    "equals" => Equal,
    "leftbracket" => BracketLeft,
    "rightbracket" => BracketRight,
    "semicolon" => Semicolon,
    "quote" => Quote,
    "backquote" => Backquote,
    "backslash" => Backslash,
    "comma" => Comma,
    "period" => Period,
    "slash" => Slash,
    "kp0" => Numpad0,
    "kp1" => Numpad1,
    "kp2" => Numpad2,
    "kp3" => Numpad3,
    "kp4" => Numpad4,
    "kp5" => Numpad5,
    "kp6" => Numpad6,
    "kp7" => Numpad7,
    "kp8" => Numpad8,
    "kp9" => Numpad9,
    "kpenter" => NumpadEnter,
    "kpplus" => NumpadAdd,
    "kpminus" => NumpadSubtract,
    "kpmultiply" => NumpadMultiply,
    "kpdivide" => NumpadDivide,
    "kpperiod" => NumpadDecimal,
    "f1" => F1,
    "f2" => F2,
    "f3" => F3,
    "f4" => F4,
    "f5" => F5,
    "f6" => F6,
    "f7" => F7,
    "f8" => F8,
    "f9" => F9,
    "f10" => F10,
    "f11" => F11,
    "f12" => F12,
}

/// The key code for a config-file key name (case-insensitive).
#[cfg(feature = "gui")]
pub fn key_code(name: &str) -> Option<KeyCode> {
    let name = name.to_ascii_lowercase();
    KEYS.iter().find(|(n, _)| *n == name).map(|&(_, c)| c)
}

/// Whether `name` is a key name a config file may use.
pub fn is_key_name(name: &str) -> bool {
    NAMES.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// The canonical name of a key code, if it has one.
#[cfg(feature = "gui")]
pub fn key_name(code: KeyCode) -> Option<&'static str> {
    KEYS.iter().find(|&&(_, c)| c == code).map(|&(n, _)| n)
}

/// Frontend actions bound to fixed keys.
#[cfg(feature = "gui")]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Hotkey {
    Pause,
    Fullscreen,
    Screenshot,
    Quit,
}

/// The hotkey a key press triggers: P pauses, F11 or Alt+Enter toggles fullscreen, F12 takes
/// a screenshot, Escape quits.
#[cfg(feature = "gui")]
pub fn hotkey(code: KeyCode, alt_held: bool) -> Option<Hotkey> {
    match code {
        KeyCode::KeyP => Some(Hotkey::Pause),
        KeyCode::F11 => Some(Hotkey::Fullscreen),
        KeyCode::Enter if alt_held => Some(Hotkey::Fullscreen),
        KeyCode::F12 => Some(Hotkey::Screenshot),
        KeyCode::Escape => Some(Hotkey::Quit),
        _ => None,
    }
}

/// Keyboard players' bindings resolved to key codes, and the keys currently held.
#[cfg(feature = "gui")]
#[derive(Debug, Default)]
pub struct Keyboard {
    /// Per keyboard player: (button bit, key) pairs.
    players: Vec<Vec<(u16, KeyCode)>>,
    held: Vec<KeyCode>,
}

#[cfg(feature = "gui")]
impl Keyboard {
    /// `maps[i]` drives player `i`. Names that are not keys are skipped (config validation
    /// reports them before we get here).
    pub fn new(maps: &[KeyMap]) -> Keyboard {
        let players = maps
            .iter()
            .map(|m| {
                m.bindings()
                    .filter_map(|(b, k)| key_code(k).map(|c| (1u16 << b as u16, c)))
                    .collect()
            })
            .collect();
        Keyboard {
            players,
            held: Vec::new(),
        }
    }

    pub fn players(&self) -> usize {
        self.players.len()
    }

    pub fn key_down(&mut self, code: KeyCode) {
        if !self.held.contains(&code) {
            self.held.push(code);
        }
    }

    pub fn key_up(&mut self, code: KeyCode) {
        self.held.retain(|&c| c != code);
    }

    /// Forget every held key (the window lost focus: releases would never arrive).
    pub fn release_all(&mut self) {
        self.held.clear();
    }

    /// Keyboard player `player`'s pad from the keys held now.
    pub fn pad(&self, player: usize) -> Pad {
        let Some(bindings) = self.players.get(player) else {
            return Pad::NEUTRAL;
        };
        let mut bits = 0;
        for &(bit, code) in bindings {
            if self.held.contains(&code) {
                bits |= bit;
            }
        }
        Pad(bits)
    }
}

#[cfg(all(test, feature = "gui"))]
mod tests {
    use super::*;
    use crate::input::Button;

    #[test]
    fn names_round_trip() {
        for &(name, code) in KEYS {
            assert_eq!(key_code(name), Some(code));
            assert_eq!(key_code(key_name(code).unwrap()), Some(code));
        }
        assert_eq!(key_code("RShift"), Some(KeyCode::ShiftRight));
        assert!(is_key_name("RShift"));
        assert!(!is_key_name("hyper"));
    }

    #[test]
    fn default_maps_are_valid_keys() {
        for p in 0..2 {
            for (_, k) in KeyMap::default_for(p).bindings() {
                assert!(is_key_name(k), "default key {k:?} has no code");
                assert!(
                    hotkey(key_code(k).unwrap(), false).is_none(),
                    "{k} is a hotkey"
                );
            }
        }
    }

    #[test]
    fn held_keys_make_pads() {
        let mut kb = Keyboard::new(&[KeyMap::default_for(0), KeyMap::default_for(1)]);
        kb.key_down(KeyCode::KeyZ);
        kb.key_down(KeyCode::ArrowLeft);
        kb.key_down(KeyCode::KeyI);
        assert_eq!(kb.pad(0), Pad::NEUTRAL.with(Button::B).with(Button::Left));
        assert_eq!(kb.pad(1), Pad::NEUTRAL.with(Button::Up));
        kb.key_up(KeyCode::KeyZ);
        assert_eq!(kb.pad(0), Pad::NEUTRAL.with(Button::Left));
        kb.release_all();
        assert_eq!(kb.pad(0), Pad::NEUTRAL);
        assert_eq!(kb.pad(5), Pad::NEUTRAL);
    }
}
