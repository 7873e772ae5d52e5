//! [`Roster`]: who sits in a session's seats, by name. Here, beside [`PeerId`], because
//! every layer that names players uses it: the session's handshake, the recording (`app`,
//! which imports nothing of `session`) and netplay's reports. It imports only [`PeerId`] and [`Slot`].

use super::{PeerId, Slot};

/// The players of a session: each seat in it and the name its player goes by, in seat order
/// (a spectator has no seat and is not in it). The wire (a `Welcome`) and the
/// recording's header carry it as port numbers; inside, a seat is a [`PeerId`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Roster(Vec<(PeerId, String)>);

impl Roster {
    /// No one.
    pub fn new() -> Roster {
        Roster::default()
    }

    /// Names `seat`'s player `name` (a seat already in takes the new name).
    pub fn set(&mut self, seat: PeerId, name: String) {
        match self.0.binary_search_by_key(&seat, |(s, _)| *s) {
            Ok(i) => self.0[i].1 = name,
            Err(i) => self.0.insert(i, (seat, name)),
        }
    }

    /// Takes `seat` out; its name, if it was in.
    pub fn remove(&mut self, seat: PeerId) -> Option<String> {
        let i = self.0.iter().position(|(s, _)| *s == seat)?;
        Some(self.0.remove(i).1)
    }

    /// The name `seat`'s player goes by, if it is in.
    pub fn name(&self, seat: PeerId) -> Option<&str> {
        self.0
            .iter()
            .find(|(s, _)| *s == seat)
            .map(|(_, n)| n.as_str())
    }

    /// `seat`'s own name, if it is in and has one (see [`own_name`]).
    pub fn own_name(&self, seat: PeerId) -> Option<&str> {
        own_name(self.name(seat)?, Slot::Player(seat))
    }

    /// How log lines name `seat`'s player: "ana (player 2)", its name and its place, since
    /// two players may go by the same name; just "player 2" when it has no name of its own.
    pub fn label(&self, seat: PeerId) -> String {
        match self.own_name(seat) {
            Some(name) => format!("{name} ({seat})"),
            None => seat.to_string(),
        }
    }

    /// Its own name if it has one, else its place ("player 2"): where "ana (player 2)" is
    /// too long (the status bar).
    pub fn short_name(&self, seat: PeerId) -> String {
        self.own_name(seat)
            .map_or_else(|| seat.to_string(), str::to_string)
    }

    /// Each seat and its name, in seat order.
    pub fn iter(&self) -> impl Iterator<Item = (PeerId, &str)> {
        self.0.iter().map(|(s, n)| (*s, n.as_str()))
    }

    /// Players in.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No one is in.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<(PeerId, String)> for Roster {
    /// Put in seat order; a seat is expected once (the first of several is the one found).
    fn from_iter<I: IntoIterator<Item = (PeerId, String)>>(iter: I) -> Roster {
        let mut seats: Vec<_> = iter.into_iter().collect();
        seats.sort_by_key(|(s, _)| *s);
        Roster(seats)
    }
}

/// `name`, the name of whoever is in `slot`, if it is one of its own: not empty, and not the
/// "player N" or "spectator N" the host names a nameless joiner after its place (said once
/// is enough).
pub fn own_name(name: &str, slot: Slot) -> Option<&str> {
    (!name.is_empty() && name != slot.to_string()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn players_are_named_with_their_place() {
        let names: Roster = [
            (PeerId(0), "ana".to_string()),
            (PeerId(1), "ana".into()),
            (PeerId(2), "player 3".into()),
        ]
        .into_iter()
        .collect();
        // Two players called ana are told apart.
        assert_eq!(names.label(PeerId(0)), "ana (player 1)");
        assert_eq!(names.label(PeerId(1)), "ana (player 2)");
        // A player the host named by its slot, or not at all, is not named twice.
        assert_eq!(names.label(PeerId(2)), "player 3");
        let nameless: Roster = [(PeerId(3), String::new())].into_iter().collect();
        assert_eq!(nameless.label(PeerId(3)), "player 4");
        assert_eq!(names.label(PeerId(5)), "player 6");
        assert_eq!(names.short_name(PeerId(1)), "ana");
        assert_eq!(names.short_name(PeerId(2)), "player 3");
    }

    #[test]
    fn seats_stay_in_order_renamed_in_place_and_one_taken_out_is_gone() {
        let mut r: Roster = [(PeerId(3), "cy".to_string()), (PeerId(1), "bob".into())]
            .into_iter()
            .collect();
        r.set(PeerId(0), "ana".into());
        r.set(PeerId(3), "eve".into());
        let order: Vec<_> = r.iter().collect();
        assert_eq!(
            order,
            [(PeerId(0), "ana"), (PeerId(1), "bob"), (PeerId(3), "eve")]
        );
        assert_eq!(r.remove(PeerId(0)), Some("ana".into()));
        assert_eq!(r.remove(PeerId(1)), Some("bob".into()));
        assert_eq!(r.remove(PeerId(1)), None);
        assert_eq!((r.len(), r.name(PeerId(3))), (1, Some("eve")));
    }
}
