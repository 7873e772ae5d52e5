//! The session's chat as the endpoint relays it: who hears it (the joiners that have the
//! start state), a joiner's line, the local player's line, and the lines for the local
//! player; [`ChatRelay`](super::super::chat::ChatRelay) does the relaying. Imports the
//! chat's line; nothing of the lockstep server, the resyncs or the start.

use std::time::Instant;

use super::super::chat::{ChatLine, Speaker};
use super::{Dropped, Endpoint, Frame, Handled, Kind, Slot};

impl Endpoint {
    /// Everyone in the session who hears chat: the joiners with the start state (players
    /// and spectators), by slot and name.
    pub(super) fn chat_roster(&self) -> Vec<(Slot, String)> {
        self.session
            .players()
            .into_iter()
            .chain(self.session.spectators())
            .filter(|p| p.ready && p.addr.is_some())
            .map(|p| (p.slot, p.name))
            .collect()
    }

    /// The slots of [`chat_roster`](Self::chat_roster).
    pub(super) fn chat_slots(&self) -> Vec<Slot> {
        self.chat_roster().into_iter().map(|(s, _)| s).collect()
    }

    /// A chat datagram's body from the joiner in `slot` (its tag checked).
    pub(super) fn handle_chat(
        &mut self,
        now: Instant,
        slot: Option<Slot>,
        body: &[u8],
    ) -> Handled<'static> {
        let roster = self.chat_roster();
        let Some((slot, name)) = roster.iter().find(|(s, _)| Some(*s) == slot) else {
            // Not a joiner with the start state (gone, or still in the handshake).
            return Handled::Dropped(Dropped::UnknownPeer(Kind::Chat));
        };
        let slots: Vec<Slot> = roster.iter().map(|(s, _)| *s).collect();
        self.chat.handle(now, *slot, name, body, &slots)
    }

    /// The local player (a direct host's) says `text` (sanitised, within the rate) at
    /// `frame`: it goes to everyone else. Returns the line as the others see it.
    pub fn say_local(&mut self, now: Instant, frame: Frame, text: String) -> ChatLine {
        let name = self
            .session
            .players()
            .into_iter()
            .find(|p| p.addr.is_none())
            .map_or_else(String::new, |p| p.name);
        let line = ChatLine {
            from: Speaker::HOST,
            name,
            frame,
            text,
        };
        let slots = self.chat_slots();
        self.chat.relay(now, line.clone(), &slots);
        line
    }

    /// The next chat message for the local player, in the order everyone hears them.
    pub fn poll_chat(&mut self) -> Option<ChatLine> {
        self.chat.poll_local()
    }
}
