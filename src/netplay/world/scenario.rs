//! What the world's scenarios (the `*tests` files beside it) share:
//! the settings every simulated player runs with, and the end every scenario checks (every
//! machine on the same state, every log replaying).

use std::time::Duration;

use super::{Node, World};
use crate::session::{ParticipantConfig, ParticipantEvent};

pub const SEC: Duration = Duration::from_secs(1);

/// A player's settings: checksums every 30 frames, a minute to reconnect.
pub fn cfg() -> ParticipantConfig {
    ParticipantConfig {
        checksum_interval: 30,
        reconnect: Duration::from_secs(60),
        ..ParticipantConfig::default()
    }
}

/// Runs until every node ran every frame; then they agree on the last one and every log
/// replays.
pub fn finish_in_sync(w: &mut World, limit: Duration) {
    let done = w.run_until(limit, World::all_finished);
    let at: Vec<(String, u32)> = w
        .nodes
        .iter()
        .map(|n| (n.name.clone(), n.toy.frame))
        .collect();
    assert!(done, "not finished after {limit:?}: {at:?}");
    w.assert_in_sync(w.frames - 1);
    w.assert_logs_verify();
}

/// Runs until the nodes in `nodes` ran every frame; then they agree on the last one.
pub fn finish_some_in_sync(w: &mut World, nodes: &[usize], limit: Duration) {
    let done = w.run_until(limit, |w| nodes.iter().all(|&i| w.nodes[i].finished));
    let at: Vec<u32> = nodes.iter().map(|&i| w.frame(i)).collect();
    assert!(done, "not finished after {limit:?}: {at:?}");
    let last = w.frames - 1;
    let hashes: Vec<Option<u64>> = nodes
        .iter()
        .map(|&i| w.nodes[i].toy.hash_after(last))
        .collect();
    assert!(
        hashes[0].is_some() && hashes.windows(2).all(|p| p[0] == p[1]),
        "{hashes:?}"
    );
}

/// How many of node `n`'s events `pick` picks.
pub fn count(n: &Node, pick: impl Fn(&ParticipantEvent) -> bool) -> usize {
    n.events().filter(|e| pick(e)).count()
}
