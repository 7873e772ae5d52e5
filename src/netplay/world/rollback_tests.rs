//! Rollback on simulated time (`world`): the real participants and the real frame runner
//! speculating on toy machines. A guess that held costs no second run; wrong guesses are run
//! again and leave the agreed frames, every checksum and the recordings exactly as without
//! speculation; the rollback check passes a sound machine once (then its verdict comes from
//! the cache) and fails a broken one, which plays plain lockstep; a machine whose saves fail
//! mid-game stops speculating and plays on in sync.

use super::scenario::{cfg, finish_in_sync, SEC};
use super::World;
use crate::app::rollback_check::{CheckKey, FRAMES};
use crate::app::Machine;
use crate::netplay::speculation::{RollbackCheck, Speculate};

/// A 2-player direct session of `frames` frames on `netsim`, speculating `speculate` frames.
fn session(netsim: &str, frames: u32, speculate: u32, bots: bool) -> World {
    let mut w = World::new(netsim, frames);
    w.speculate = speculate;
    w.bots = bots;
    let host = w.host(2, cfg());
    w.join("ana", w.addr_of(host), None, cfg());
    w
}

#[test]
fn speculation_leaves_agreed_frames_checksums_and_recordings_exactly_as_without() {
    // The same links, bots and seeds, once in plain lockstep and once speculating 30
    // frames ahead: every frame's state is the same, on both players, and each player's
    // recording is the same, byte for byte. The speculating joiner guessed wrong often.
    let link = "delay=50ms,jitter=20ms,loss=5%";
    let mut plain = session(link, 1800, 0, true);
    finish_in_sync(&mut plain, 120 * SEC);
    let mut spec = session(link, 1800, 30, true);
    finish_in_sync(&mut spec, 120 * SEC);
    for i in 0..2 {
        let name = &spec.nodes[i].name;
        for frame in 0..1800 {
            assert_eq!(
                plain.nodes[i].toy.hash_after(frame),
                spec.nodes[i].toy.hash_after(frame),
                "{name}: frame {frame} differs with speculation"
            );
        }
        let (a, b) = (plain.nodes[i].log.bytes(), spec.nodes[i].log.bytes());
        assert!(a.len() > 100, "{name}'s log: {} bytes", a.len());
        assert!(
            a == b,
            "{name}'s recordings differ ({} and {} bytes)",
            a.len(),
            b.len()
        );
    }
    let joiner = &mut spec.nodes[1];
    let rollbacks = joiner.feed().rollbacks;
    assert!(rollbacks > 30, "{rollbacks} rollbacks");
    let stats = joiner.runner.stats();
    assert!(stats.timeline.confirmed > 1000, "{:?}", stats.timeline);
    assert!(stats.timeline.rerun > 0, "{:?}", stats.timeline);
    // The picture ran ahead: the joiner saw its own input within a frame or so.
    let perceived = joiner
        .feed()
        .participant
        .client()
        .map(|c| c.stats().perceived)
        .expect("a client");
    assert!(perceived.median() <= Some(1), "{:?}", perceived.median());
}

#[test]
fn a_guess_that_held_costs_no_second_run() {
    // Nobody presses anything, so every guess holds: each frame runs once, but every 30th
    // (the checksum's frame runs on the agreed state, and then the newest picture once
    // more), plus the frames run ahead past the last one.
    let frames = 1800u64;
    let mut w = session("delay=50ms,jitter=10ms", frames as u32, 30, false);
    finish_in_sync(&mut w, 120 * SEC);
    for n in &mut w.nodes {
        let stats = n.runner.stats();
        assert_eq!(stats.rollbacks, 0, "{}", n.name);
        let bound = frames + 2 * (frames / 30) + 32;
        assert!(
            (frames..=bound).contains(&n.toy.runs),
            "{}: {} runs for {frames} frames ({:?})",
            n.name,
            n.toy.runs,
            stats.timeline
        );
        assert!(
            stats.timeline.confirmed > frames * 9 / 10,
            "{:?}",
            stats.timeline
        );
        assert_eq!(stats.timeline.verified, stats.timeline.materialized);
    }
}

#[test]
fn the_rollback_check_runs_once_per_game_and_a_machine_that_fails_it_plays_plain_lockstep() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let key = |content| CheckKey {
        core: "toy".into(),
        version: "1".into(),
        content: Some(content),
    };
    // The first time, the check runs on the machine, in slices, and its verdict is kept.
    let mut toy = super::toy::Toy::default();
    let mut check = RollbackCheck::for_key(key(1), 60.0, Speculate::Auto, dir.path());
    assert!(check.line().is_some_and(|l| l.contains("checking")));
    for _ in 0..3 {
        check.step(&mut toy);
    }
    let first = check.finish(&mut toy);
    assert!(first.depth > 0 && first.off.is_none(), "{first:?}");
    assert!(toy.runs >= u64::from(FRAMES), "{} runs", toy.runs);
    // It left the machine where it found it.
    assert_eq!((toy.frame, toy.hash), (0, 0));
    // The next time, from the cache: nothing runs.
    let mut again = super::toy::Toy::default();
    let second =
        RollbackCheck::for_key(key(1), 60.0, Speculate::Auto, dir.path()).finish(&mut again);
    assert_eq!(again.runs, 0);
    assert_eq!(second.depth, first.depth);
    // Off: no check at all.
    let off = RollbackCheck::for_key(key(2), 60.0, Speculate::Off, dir.path());
    assert_eq!(off.line(), None);
    // A machine whose loads do not restore its state fails, and says why.
    let mut broken = super::toy::Toy::default();
    broken.broken_loads = true;
    let failed =
        RollbackCheck::for_key(key(3), 60.0, Speculate::Auto, dir.path()).finish(&mut broken);
    assert_eq!(failed.depth, 0);
    assert!(
        failed
            .off
            .as_deref()
            .is_some_and(|o| o.contains("failed the rollback check")),
        "{failed:?}"
    );
    // Its session plays plain lockstep, in sync: no frame runs ahead.
    let mut w = session("delay=50ms,jitter=20ms,loss=5%", 900, failed.depth, true);
    for n in &mut w.nodes {
        n.toy.broken_loads = true;
    }
    finish_in_sync(&mut w, 60 * SEC);
    for n in &mut w.nodes {
        assert_eq!(n.runner.stats().timeline.ahead, 0, "{}", n.name);
    }
}

#[test]
fn a_machine_whose_saves_fail_mid_game_stops_speculating_and_plays_on_in_sync() {
    let mut w = session("delay=50ms,jitter=20ms,loss=5%", 1800, 30, true);
    // Ana's machine cannot save from frame 600 on.
    w.nodes[1].toy.saves_fail_from = Some(600);
    finish_in_sync(&mut w, 120 * SEC);
    let ana = &mut w.nodes[1];
    let s = ana.runner.stats_json();
    let stopped = s["run_ahead"]["stopped"].as_str().unwrap_or_default();
    assert!(stopped.contains("could not save its state"), "{s:?}");
    // It ran ahead before, not after: nothing was saved past frame 600 + the depth.
    assert!(ana.runner.stats().timeline.ahead > 0);
    assert!(ana.toy.save_state().is_none());
}
