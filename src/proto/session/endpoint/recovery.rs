//! How the endpoint recovers a player from a desync: each seat's standing, and the states
//! it asks of a player in the majority when it has no machine of its own. Imports only the
//! session's resync transfer and the lockstep's frame numbers.

use std::time::{Duration, Instant};

use crate::lockstep::{Frame, PeerId, Slot};

use super::super::ResyncRecv;

/// How long a server waits for a player's state it asked for before it gives up (a later
/// desync report asks again, maybe another player).
pub(super) const FETCH_LIMIT: Duration = Duration::from_secs(10);

/// With no machine of its own: a state asked of a player in the majority, for the players
/// in `for_slots`.
#[derive(Debug)]
pub(super) struct StateFetch {
    pub(super) id: u32,
    pub(super) from: PeerId,
    pub(super) for_slots: Vec<Slot>,
    pub(super) rx: ResyncRecv,
    /// When the request last went out.
    pub(super) asked: Option<Instant>,
    pub(super) since: Instant,
}

impl StateFetch {
    /// Asks player `from` for its state on behalf of `for_slot`, joining a request to `from`
    /// already under way; a new request takes the next of the resync ids.
    pub(super) fn ask(
        fetches: &mut Vec<StateFetch>,
        ids: &mut u32,
        now: Instant,
        from: PeerId,
        for_slot: Slot,
    ) {
        match fetches.iter_mut().find(|f| f.from == from) {
            Some(f) => {
                if !f.for_slots.contains(&for_slot) {
                    f.for_slots.push(for_slot);
                }
            }
            None => {
                *ids += 1;
                fetches.push(StateFetch {
                    id: *ids,
                    from,
                    for_slots: vec![for_slot],
                    rx: ResyncRecv::default(),
                    // Asked with the next poll_transmit.
                    asked: None,
                    since: now,
                });
            }
        }
    }
}

/// Where a seat stands in recovering from a desync: its checksum reports start a recovery
/// only while they count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Recovery {
    /// Its reports count from `from` on (0, or its last resync's frame).
    Counting { from: Frame },
    /// A state was asked for (`Desync { send_state: true }`) and not handed in yet.
    Awaiting,
    /// The state is handed in and on its way; reports count again once it is in.
    Sending,
}

impl Default for Recovery {
    fn default() -> Recovery {
        Recovery::Counting { from: Frame(0) }
    }
}

impl Recovery {
    /// A desync reported for `frame` starts a recovery.
    pub(super) fn counts(self, frame: Frame) -> bool {
        matches!(self, Recovery::Counting { from } if frame >= from)
    }
}
