//! The keyboard as RetroPads: key names for config files, held keys, and hotkeys.
//!
//! Bindings use physical key positions (winit `KeyCode`), so "z" means the key where Z sits
//! on a US layout whatever the active layout is, as in most emulators.

use winit::keyboard::KeyCode;

use crate::input::{KeyMap, Pad};

/// Config-file key names and their key codes. The first name of a code is the canonical one.
const KEYS: &[(&str, KeyCode)] = &[
    ("a", KeyCode::KeyA),
    ("b", KeyCode::KeyB),
    ("c", KeyCode::KeyC),
    ("d", KeyCode::KeyD),
    ("e", KeyCode::KeyE),
    ("f", KeyCode::KeyF),
    ("g", KeyCode::KeyG),
    ("h", KeyCode::KeyH),
    ("i", KeyCode::KeyI),
    ("j", KeyCode::KeyJ),
    ("k", KeyCode::KeyK),
    ("l", KeyCode::KeyL),
    ("m", KeyCode::KeyM),
    ("n", KeyCode::KeyN),
    ("o", KeyCode::KeyO),
    ("p", KeyCode::KeyP),
    ("q", KeyCode::KeyQ),
    ("r", KeyCode::KeyR),
    ("s", KeyCode::KeyS),
    ("t", KeyCode::KeyT),
    ("u", KeyCode::KeyU),
    ("v", KeyCode::KeyV),
    ("w", KeyCode::KeyW),
    ("x", KeyCode::KeyX),
    ("y", KeyCode::KeyY),
    ("z", KeyCode::KeyZ),
    ("0", KeyCode::Digit0),
    ("1", KeyCode::Digit1),
    ("2", KeyCode::Digit2),
    ("3", KeyCode::Digit3),
    ("4", KeyCode::Digit4),
    ("5", KeyCode::Digit5),
    ("6", KeyCode::Digit6),
    ("7", KeyCode::Digit7),
    ("8", KeyCode::Digit8),
    ("9", KeyCode::Digit9),
    ("up", KeyCode::ArrowUp),
    ("down", KeyCode::ArrowDown),
    ("left", KeyCode::ArrowLeft),
    ("right", KeyCode::ArrowRight),
    ("enter", KeyCode::Enter),
    ("return", KeyCode::Enter),
    ("space", KeyCode::Space),
    ("tab", KeyCode::Tab),
    ("backspace", KeyCode::Backspace),
    ("escape", KeyCode::Escape),
    ("lshift", KeyCode::ShiftLeft),
    ("rshift", KeyCode::ShiftRight),
    ("lctrl", KeyCode::ControlLeft),
    ("rctrl", KeyCode::ControlRight),
    ("lalt", KeyCode::AltLeft),
    ("ralt", KeyCode::AltRight),
    ("insert", KeyCode::Insert),
    ("delete", KeyCode::Delete),
    ("home", KeyCode::Home),
    ("end", KeyCode::End),
    ("pageup", KeyCode::PageUp),
    ("pagedown", KeyCode::PageDown),
    ("minus", KeyCode::Minus),
    ("equals", KeyCode::Equal),
    ("leftbracket", KeyCode::BracketLeft),
    ("rightbracket", KeyCode::BracketRight),
    ("semicolon", KeyCode::Semicolon),
    ("quote", KeyCode::Quote),
    ("backquote", KeyCode::Backquote),
    ("backslash", KeyCode::Backslash),
    ("comma", KeyCode::Comma),
    ("period", KeyCode::Period),
    ("slash", KeyCode::Slash),
    ("kp0", KeyCode::Numpad0),
    ("kp1", KeyCode::Numpad1),
    ("kp2", KeyCode::Numpad2),
    ("kp3", KeyCode::Numpad3),
    ("kp4", KeyCode::Numpad4),
    ("kp5", KeyCode::Numpad5),
    ("kp6", KeyCode::Numpad6),
    ("kp7", KeyCode::Numpad7),
    ("kp8", KeyCode::Numpad8),
    ("kp9", KeyCode::Numpad9),
    ("kpenter", KeyCode::NumpadEnter),
    ("kpplus", KeyCode::NumpadAdd),
    ("kpminus", KeyCode::NumpadSubtract),
    ("kpmultiply", KeyCode::NumpadMultiply),
    ("kpdivide", KeyCode::NumpadDivide),
    ("kpperiod", KeyCode::NumpadDecimal),
    ("f1", KeyCode::F1),
    ("f2", KeyCode::F2),
    ("f3", KeyCode::F3),
    ("f4", KeyCode::F4),
    ("f5", KeyCode::F5),
    ("f6", KeyCode::F6),
    ("f7", KeyCode::F7),
    ("f8", KeyCode::F8),
    ("f9", KeyCode::F9),
    ("f10", KeyCode::F10),
    ("f11", KeyCode::F11),
    ("f12", KeyCode::F12),
];

/// The key code for a config-file key name (case-insensitive).
pub fn key_code(name: &str) -> Option<KeyCode> {
    let name = name.to_ascii_lowercase();
    KEYS.iter().find(|(n, _)| *n == name).map(|&(_, c)| c)
}

/// Whether `name` is a key name a config file may use.
pub fn is_key_name(name: &str) -> bool {
    key_code(name).is_some()
}

/// The canonical name of a key code, if it has one.
pub fn key_name(code: KeyCode) -> Option<&'static str> {
    KEYS.iter().find(|&&(_, c)| c == code).map(|&(n, _)| n)
}

/// Frontend actions bound to fixed keys.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Hotkey {
    Pause,
    Fullscreen,
    Screenshot,
    Quit,
}

/// The hotkey a key press triggers: P pauses, F11 or Alt+Enter toggles fullscreen, F12 takes
/// a screenshot, Escape quits.
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
#[derive(Debug, Default)]
pub struct Keyboard {
    /// Per keyboard player: (button bit, key) pairs.
    players: Vec<Vec<(u16, KeyCode)>>,
    held: Vec<KeyCode>,
}

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

#[cfg(test)]
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
