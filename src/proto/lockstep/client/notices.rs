//! The notices the server repeats in its UPDATEs until they are acknowledged, each raised
//! once: which were seen, and the event each of the plain ones makes (the pause notices
//! change the client's pause state, so the client words those). Imports nothing of the
//! client.

use std::collections::VecDeque;

use super::super::msg::Notice;
use super::event::ClientEvent;

/// Notices remembered to raise each event once.
const MAX_SEEN_NOTICES: usize = 256;

/// The newest notices seen (the oldest forgotten past `MAX_SEEN_NOTICES`).
#[derive(Debug, Default)]
pub(super) struct SeenNotices(VecDeque<Notice>);

impl SeenNotices {
    /// `n` was seen before.
    pub fn contains(&self, n: &Notice) -> bool {
        self.0.contains(n)
    }

    /// Remembers `n`; false if it was seen before.
    pub fn first_time(&mut self, n: Notice) -> bool {
        if self.0.contains(&n) {
            return false;
        }
        if self.0.len() >= MAX_SEEN_NOTICES {
            self.0.pop_front();
        }
        self.0.push_back(n);
        true
    }
}

/// The event a player's arrival, departure or a desync makes; `None` for the pause notices.
pub(super) fn event(n: Notice) -> Option<ClientEvent> {
    Some(match n {
        Notice::Left { peer, from } => ClientEvent::PlayerLeft {
            peer,
            from_frame: from,
        },
        Notice::Desync { peer, frame } => ClientEvent::Desync { frame, peer },
        Notice::Joined { peer, from, name } => ClientEvent::PlayerJoined {
            peer,
            from_frame: from,
            name: name.as_str().to_string(),
        },
        Notice::Paused { .. } | Notice::Resumed { .. } | Notice::PauseRefused { .. } => {
            return None
        }
    })
}
