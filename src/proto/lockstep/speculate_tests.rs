//! Speculation over the simulated network (`Client::predict`, `Client::shown`): a player
//! who shows frames run ahead with its own samples and the others' last input sees its
//! own input at once, and nothing of what the session agrees on changes.

use std::time::Duration;

use super::sim::{PathSpec, Sim};
use super::tests::{secs, uniform};

/// 100 ms round trip, ±20 ms jitter, 5% loss each way, for 60 s.
fn session(players: usize, seed: u64, speculate: u32) -> Sim {
    let link = PathSpec {
        jitter: Duration::from_millis(20),
        loss: 0.05,
        ..PathSpec::rtt_ms(100)
    };
    let mut cfg = uniform(players, link, seed);
    cfg.speculate = speculate;
    let mut sim = Sim::new(cfg);
    sim.run_until(secs(60));
    sim
}

#[test]
fn speculation_shows_a_players_own_input_at_once_and_changes_nothing_agreed() {
    // Allowed 16 frames, each player runs as far as its lead (9-10 frames here).
    for players in [2, 3] {
        for seed in [1, 2, 3] {
            let plain = session(players, seed, 0);
            let ahead = session(players, seed, 16);
            for (p, a) in plain.players.iter().zip(&ahead.players) {
                // Same seed, same frames: every frame's inputs and the checksums on them.
                assert_eq!(p.applied.len(), a.applied.len(), "{players}p seed {seed}");
                assert!(
                    p.applied == a.applied,
                    "{players}p seed {seed}: inputs differ"
                );
                assert!(a.deepest <= 16, "ran {} frames ahead", a.deepest);
                let (was, now) = (p.client.stats().perceived, a.client.stats().perceived);
                eprintln!(
                    "{players}p seed {seed} {:?}: perceived median {:?} p95 {:?} (plain {:?} \
                     / {:?}), deepest {}",
                    a.id,
                    now.median(),
                    now.p95(),
                    was.median(),
                    was.p95(),
                    a.deepest
                );
                assert!(now.count() > 1000);
                // Its own input ran ahead where the server put it.
                let me = usize::from(a.id.0);
                let guessed: Vec<bool> = a
                    .own_guess
                    .iter()
                    .zip(&a.applied)
                    .filter_map(|(g, applied)| g.map(|g| g == applied[me]))
                    .collect();
                let right = guessed.iter().filter(|r| **r).count();
                assert!(guessed.len() > 3000);
                assert!(
                    right * 1000 >= guessed.len() * 998,
                    "{players}p seed {seed}: own input placed right on {right} of {}",
                    guessed.len()
                );
                assert!(now.median() <= Some(1), "{players}p seed {seed} {:?}", a.id);
                assert!(now.p95() <= Some(1), "{players}p seed {seed} {:?}", a.id);
                assert!(was.median() >= Some(6), "plain play hides nothing");
            }
        }
    }
}

#[test]
fn speculation_never_runs_further_ahead_than_allowed() {
    // `--speculate auto` allows 8: a lead of 9-10 frames leaves 1-2 unhidden.
    for players in [2, 3] {
        let plain = session(players, 7, 0);
        let ahead = session(players, 7, 8);
        for (p, a) in plain.players.iter().zip(&ahead.players) {
            assert!(p.applied == a.applied);
            assert!(
                a.deepest <= 8 && a.deepest >= 7,
                "ran {} frames ahead",
                a.deepest
            );
            let (was, now) = (p.client.stats().perceived, a.client.stats().perceived);
            let hidden = was.median().unwrap() - now.median().unwrap();
            assert!((7..=8).contains(&hidden), "hid {hidden} frames");
        }
    }
}
