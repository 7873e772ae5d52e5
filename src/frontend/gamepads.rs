//! Gamepads through gilrs: hot-plug, port assignment, and RetroPad mapping.
//!
//! Port rule: keyboard players hold the first ports (P1..Pk, k = `keyboard_players`);
//! each gamepad that connects takes the lowest port not held by a keyboard player or by
//! another gamepad, and gives it back when it disconnects. With `keyboard_players = 2`
//! (the default) the first gamepad is P3; set it to 0 to put the first gamepad on P1.
//! Without udev or without gamepads there are simply no gamepads.

#[cfg(feature = "gui")]
use gilrs::{Axis, Button as GButton, EventType, GamepadId, Gilrs};

use crate::input::MAX_PLAYERS;
#[cfg(feature = "gui")]
use crate::input::{Button, Inputs, Pad};

/// Stick deflection that counts as a d-pad press.
#[cfg(feature = "gui")]
const STICK_THRESHOLD: f32 = 0.5;

#[cfg(feature = "gui")]
const BUTTONS: [(GButton, Button); 16] = [
    (GButton::South, Button::B),
    (GButton::East, Button::A),
    (GButton::West, Button::Y),
    (GButton::North, Button::X),
    (GButton::LeftTrigger, Button::L),
    (GButton::RightTrigger, Button::R),
    (GButton::LeftTrigger2, Button::L2),
    (GButton::RightTrigger2, Button::R2),
    (GButton::LeftThumb, Button::L3),
    (GButton::RightThumb, Button::R3),
    (GButton::Select, Button::Select),
    (GButton::Start, Button::Start),
    (GButton::DPadUp, Button::Up),
    (GButton::DPadDown, Button::Down),
    (GButton::DPadLeft, Button::Left),
    (GButton::DPadRight, Button::Right),
];

/// Which device holds which port. Generic over the device id so the rule can be tested
/// without hardware.
#[derive(Debug)]
pub struct PortAssigner<Id> {
    reserved: usize,
    ports: [Option<Id>; MAX_PLAYERS],
}

impl<Id: PartialEq + Copy> PortAssigner<Id> {
    /// The first `keyboard_players` ports belong to the keyboard.
    pub fn new(keyboard_players: usize) -> PortAssigner<Id> {
        PortAssigner {
            reserved: keyboard_players.min(MAX_PLAYERS),
            ports: [None; MAX_PLAYERS],
        }
    }

    /// Gives `id` the first free port (or the one it already has); `None` when all are taken.
    pub fn connect(&mut self, id: Id) -> Option<usize> {
        if let Some(p) = self.port_of(id) {
            return Some(p);
        }
        let port = (self.reserved..MAX_PLAYERS).find(|&p| self.ports[p].is_none())?;
        self.ports[port] = Some(id);
        Some(port)
    }

    /// Frees `id`'s port and says which it was.
    pub fn disconnect(&mut self, id: Id) -> Option<usize> {
        let port = self.port_of(id)?;
        self.ports[port] = None;
        Some(port)
    }

    pub fn port_of(&self, id: Id) -> Option<usize> {
        self.ports.iter().position(|p| *p == Some(id))
    }

    pub fn assigned(&self) -> impl Iterator<Item = (usize, Id)> + '_ {
        self.ports
            .iter()
            .enumerate()
            .filter_map(|(port, id)| id.map(|id| (port, id)))
    }
}

/// Connected gamepads and their ports.
#[cfg(feature = "gui")]
pub struct Gamepads {
    gilrs: Option<Gilrs>,
    ports: PortAssigner<GamepadId>,
}

#[cfg(feature = "gui")]
impl Gamepads {
    /// Starts gamepad support; any failure (no udev, unsupported platform) means none.
    pub fn new(keyboard_players: usize) -> Gamepads {
        let gilrs = match Gilrs::new() {
            Ok(g) => Some(g),
            Err(e) => {
                tracing::debug!("gamepads unavailable: {e}");
                None
            }
        };
        let mut pads = Gamepads {
            gilrs,
            ports: PortAssigner::new(keyboard_players),
        };
        // Pads plugged in before start do not send Connected events.
        let present: Vec<(GamepadId, String)> = pads
            .gilrs
            .iter()
            .flat_map(|g| g.gamepads())
            .map(|(id, gp)| (id, gp.name().to_string()))
            .collect();
        for (id, name) in present {
            pads.attach(id, &name);
        }
        pads
    }

    /// No gamepad support at all (headless runs).
    pub fn none() -> Gamepads {
        Gamepads {
            gilrs: None,
            ports: PortAssigner::new(MAX_PLAYERS),
        }
    }

    fn attach(&mut self, id: GamepadId, name: &str) {
        match self.ports.connect(id) {
            Some(port) => tracing::info!("gamepad {name:?} connected as player {}", port + 1),
            None => tracing::warn!("gamepad {name:?} connected, but every port is taken"),
        }
    }

    /// Handles hot-plug events; call once per loop iteration.
    pub fn poll(&mut self) {
        let Some(gilrs) = &mut self.gilrs else {
            return;
        };
        let mut changes = Vec::new();
        while let Some(ev) = gilrs.next_event() {
            match ev.event {
                EventType::Connected => changes.push((ev.id, true)),
                EventType::Disconnected => changes.push((ev.id, false)),
                _ => {}
            }
        }
        for (id, connected) in changes {
            let name = self
                .gilrs
                .as_ref()
                .map(|g| g.gamepad(id).name().to_string())
                .unwrap_or_default();
            if connected {
                self.attach(id, &name);
            } else if let Some(port) = self.ports.disconnect(id) {
                tracing::info!("gamepad {name:?} (player {}) disconnected", port + 1);
            }
        }
    }

    /// ORs each assigned gamepad's state into its port.
    pub fn read(&self, inputs: &mut Inputs) {
        let Some(gilrs) = &self.gilrs else {
            return;
        };
        for (port, id) in self.ports.assigned() {
            let Some(gp) = gilrs.connected_gamepad(id) else {
                continue;
            };
            let mut pad = Pad::NEUTRAL;
            for (gb, b) in BUTTONS {
                if gp.is_pressed(gb) {
                    pad.set(b, true);
                }
            }
            let x = gp.value(Axis::LeftStickX);
            let y = gp.value(Axis::LeftStickY);
            // gilrs: +Y is up.
            pad.set(
                Button::Left,
                pad.pressed(Button::Left) || x < -STICK_THRESHOLD,
            );
            pad.set(
                Button::Right,
                pad.pressed(Button::Right) || x > STICK_THRESHOLD,
            );
            pad.set(Button::Up, pad.pressed(Button::Up) || y > STICK_THRESHOLD);
            pad.set(
                Button::Down,
                pad.pressed(Button::Down) || y < -STICK_THRESHOLD,
            );
            inputs[port].0 |= pad.0;
        }
    }

    pub fn count(&self) -> usize {
        self.ports.assigned().count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_fill_ports_after_keyboard_players() {
        let mut a = PortAssigner::<u32>::new(2);
        assert_eq!(a.connect(10), Some(2));
        assert_eq!(a.connect(11), Some(3));
        assert_eq!(a.connect(10), Some(2), "reconnect keeps the port");
        assert_eq!(a.disconnect(10), Some(2));
        assert_eq!(a.disconnect(10), None);
        assert_eq!(a.connect(12), Some(2), "lowest free port is reused");
        for id in 13..20 {
            a.connect(id);
        }
        assert_eq!(a.assigned().count(), 6);
        assert_eq!(a.connect(99), None, "all ports taken");
        let mut b = PortAssigner::<u32>::new(0);
        assert_eq!(b.connect(1), Some(0));
    }

    #[cfg(feature = "gui")]
    #[test]
    fn no_gamepad_support_is_no_gamepads() {
        let pads = Gamepads::none();
        let mut inputs = [Pad::NEUTRAL; MAX_PLAYERS];
        pads.read(&mut inputs);
        assert_eq!(inputs, [Pad::NEUTRAL; MAX_PLAYERS]);
        assert_eq!(pads.count(), 0);
    }
}
