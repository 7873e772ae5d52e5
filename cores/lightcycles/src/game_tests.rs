//! Behaviour of `Game` through its public API: rules, coin/start, determinism, savestates.

use crate::game::{
    pad, Game, Mode, Phase, SeatKind, Settings, JOIN_FRAMES, MATCH_OVER_FRAMES, MAX_PLAYERS,
    OVER_FRAMES, READY_FRAMES, ROUND_BONUS, SCREEN_H, SCREEN_W,
};
use crate::grid::{step_from, Dir};
use crate::sound::AUDIO_SAMPLES;

const IDLE: [u16; MAX_PLAYERS] = [0; MAX_PLAYERS];

fn freeplay() -> Settings {
    Settings {
        freeplay: true,
        ..Settings::default()
    }
}

fn pads(port: usize, bits: u16) -> [u16; MAX_PLAYERS] {
    let mut p = IDLE;
    p[port] = bits;
    p
}

/// One frame with `bits` held on `port`, then one frame released.
fn tap(g: &mut Game, port: usize, bits: u16) {
    g.step(pads(port, bits));
    g.step(IDLE);
}

/// A match with the given human ports, stepped until the riders move.
fn riding_match(ports: &[usize], settings: Settings) -> Game {
    let mut g = Game::new(settings);
    for &p in ports {
        tap(&mut g, p, pad::START);
    }
    for _ in 0..JOIN_FRAMES + 1 {
        if g.mode() == Mode::Match {
            break;
        }
        g.step(IDLE);
    }
    assert_eq!(g.mode(), Mode::Match);
    run_until_riding(&mut g);
    g
}

fn run_until_riding(g: &mut Game) {
    for _ in 0..READY_FRAMES + 2 {
        if g.phase() == Phase::Riding {
            return;
        }
        g.step(IDLE);
    }
    assert_eq!(g.phase(), Phase::Riding);
}

/// Blocks the cell in front of `seat`'s cycle with another seat's trail.
fn block_ahead(g: &mut Game, seat: usize, with: u8) {
    let r = g.riders()[seat];
    let (x, y) = step_from(r.x, r.y, r.dir).expect("spawns face into the arena");
    g.grid.set(x, y, with);
}

/// A scripted stream of pads: coins, starts and turns on several ports.
fn script(len: usize, seed: u32) -> Vec<[u16; MAX_PLAYERS]> {
    let mut s = seed;
    let mut out = Vec::with_capacity(len);
    for f in 0..len {
        let mut p = IDLE;
        for (port, bits) in p.iter_mut().enumerate().take(4) {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            if s.is_multiple_of(9) {
                *bits = [pad::UP, pad::DOWN, pad::LEFT, pad::RIGHT][(s >> 8) as usize % 4];
            }
            if f == 10 + port * 3 {
                *bits |= pad::SELECT;
            }
            if f == 30 + port * 3 {
                *bits |= pad::START;
            }
        }
        out.push(p);
    }
    out
}

fn run_script(g: &mut Game, frames: &[[u16; MAX_PLAYERS]]) {
    for &f in frames {
        g.step(f);
    }
}

#[test]
fn same_inputs_give_same_state_video_and_audio() {
    let frames = script(3000, 7);
    let (mut a, mut b) = (Game::default(), Game::default());
    let mut fa = vec![0u32; SCREEN_W * SCREEN_H];
    let mut fb = fa.clone();
    let (mut aa, mut ab) = ([0i16; AUDIO_SAMPLES], [0i16; AUDIO_SAMPLES]);
    let mut saw_match = false;
    for chunk in frames.chunks(250) {
        run_script(&mut a, chunk);
        saw_match |= a.mode() == Mode::Match;
        run_script(&mut b, chunk);
        assert!(a.save() == b.save(), "states diverged");
        crate::render::draw(&a, &mut fa);
        crate::render::draw(&b, &mut fb);
        assert!(fa == fb, "frames diverged");
        a.audio(&mut aa);
        b.audio(&mut ab);
        assert_eq!(aa, ab);
    }
    // The script really played a match, so the comparison covered the rules.
    assert!(saw_match);
}

#[test]
fn different_inputs_give_different_state() {
    // A coin on another port mid-match.
    let frames = script(600, 7);
    let mut other = frames.clone();
    other[450][6] |= pad::SELECT;
    let (mut a, mut b) = (Game::default(), Game::default());
    run_script(&mut a, &frames);
    run_script(&mut b, &other);
    assert!(a.save() != b.save());
    assert_eq!(b.credits(), a.credits() + 1);

    // A single turn while riding.
    let mut a = riding_match(&[0, 1], freeplay());
    let mut b = a.clone();
    assert!(a.save() == b.save());
    let turn = match a.riders()[0].dir.left() {
        Dir::Up => pad::UP,
        Dir::Down => pad::DOWN,
        Dir::Left => pad::LEFT,
        Dir::Right => pad::RIGHT,
    };
    b.step(pads(0, turn));
    a.step(IDLE);
    for _ in 0..10 {
        a.step(IDLE);
        b.step(IDLE);
    }
    assert!(a.save() != b.save());
}

#[test]
fn save_run_load_run_gives_identical_bytes() {
    let frames = script(900, 11);
    let mut g = Game::default();
    run_script(&mut g, &frames[..500]);
    assert_eq!(g.mode(), Mode::Match);
    let saved = g.save();
    run_script(&mut g, &frames[500..600]);
    let first = g.save();
    let mut first_audio = [0i16; AUDIO_SAMPLES];
    g.audio(&mut first_audio);
    // Disturb the game, then rewind and replay the same 100 frames.
    run_script(&mut g, &frames[600..900]);
    g.load(&saved).unwrap();
    assert!(g.save() == saved);
    run_script(&mut g, &frames[500..600]);
    assert!(g.save() == first);
    let mut again = [0i16; AUDIO_SAMPLES];
    g.audio(&mut again);
    assert_eq!(again, first_audio);

    // A fresh machine loading the state continues identically too.
    let mut fresh = Game::default();
    fresh.load(&saved).unwrap();
    run_script(&mut fresh, &frames[500..600]);
    assert!(fresh.save() == first);
}

#[test]
fn coin_and_start() {
    let mut g = Game::default();
    tap(&mut g, 0, pad::START);
    assert_eq!(g.mode(), Mode::Attract, "no credit, no game");
    tap(&mut g, 3, pad::SELECT);
    tap(&mut g, 3, pad::SELECT);
    assert_eq!(g.credits(), 2);
    // Holding SELECT is one coin, not one per frame.
    for _ in 0..10 {
        g.step(pads(1, pad::SELECT));
    }
    assert_eq!(g.credits(), 3);
    tap(&mut g, 5, pad::START);
    assert_eq!(g.mode(), Mode::Join);
    assert_eq!(g.credits(), 2);
    assert_eq!(g.seats()[5].kind, SeatKind::Human);
    for _ in 0..JOIN_FRAMES {
        g.step(IDLE);
    }
    assert_eq!(g.mode(), Mode::Match);
    // One human gets one CPU rider in the lowest free seat.
    let kinds: Vec<SeatKind> = g.seats().iter().map(|s| s.kind).collect();
    assert_eq!(kinds[0], SeatKind::Cpu);
    assert_eq!(kinds.iter().filter(|k| **k != SeatKind::Absent).count(), 2);
}

#[test]
fn eight_players_can_join() {
    let mut g = Game::new(freeplay());
    g.step(pads(0, pad::START));
    assert_eq!(g.mode(), Mode::Join);
    tap(&mut g, 1, pad::START);
    assert_eq!(g.mode(), Mode::Join);
    // Port 0 and 1 keep holding START (no new press); the six others press it now.
    g.step([pad::START; MAX_PLAYERS]);
    // Everyone joined: the match starts without waiting for the timer.
    assert_eq!(g.mode(), Mode::Match);
    assert!(g.seats().iter().all(|s| s.kind == SeatKind::Human));
    run_until_riding(&mut g);
    assert!(g.riders().iter().all(|r| r.riding));
    let mut spots: Vec<(u8, u8)> = g.riders().iter().map(|r| (r.x, r.y)).collect();
    spots.sort();
    spots.dedup();
    assert_eq!(spots.len(), MAX_PLAYERS, "every rider has its own spawn");
}

#[test]
fn eight_players_can_start_on_the_same_frame() {
    let mut g = Game::new(Settings::default());
    for p in 0..MAX_PLAYERS {
        tap(&mut g, p, pad::SELECT);
    }
    assert_eq!(g.credits(), 8);
    g.step([pad::START; MAX_PLAYERS]);
    assert_eq!(g.mode(), Mode::Match);
    assert_eq!(g.credits(), 0);
    assert!(g.seats().iter().all(|s| s.kind == SeatKind::Human));
}

#[test]
fn one_frame_tap_turns_and_reversing_is_ignored() {
    let mut g = riding_match(&[0, 1], freeplay());
    let dir = g.riders()[0].dir;
    let turn = dir.left();
    let bit = match turn {
        Dir::Up => pad::UP,
        Dir::Down => pad::DOWN,
        Dir::Left => pad::LEFT,
        Dir::Right => pad::RIGHT,
    };
    tap(&mut g, 0, bit);
    g.step(IDLE);
    assert_eq!(g.riders()[0].dir, turn);
    let reverse = match turn.opposite() {
        Dir::Up => pad::UP,
        Dir::Down => pad::DOWN,
        Dir::Left => pad::LEFT,
        Dir::Right => pad::RIGHT,
    };
    tap(&mut g, 0, reverse);
    g.step(IDLE);
    assert_eq!(g.riders()[0].dir, turn);
    assert!(g.riders()[0].riding);
}

#[test]
fn a_crash_ends_a_riders_round_and_the_last_rider_scores() {
    let mut g = riding_match(&[0, 1, 2], freeplay());
    block_ahead(&mut g, 0, 3);
    g.step(IDLE);
    g.step(IDLE);
    assert!(!g.riders()[0].riding);
    assert!(g.riders()[1].riding && g.riders()[2].riding);
    assert_eq!(g.phase(), Phase::Riding, "two still ride");
    // The wreck's trail is gone.
    assert!(g.grid().as_bytes().iter().all(|&c| c != 1));
    block_ahead(&mut g, 1, 3);
    g.step(IDLE);
    g.step(IDLE);
    assert_eq!(g.phase(), Phase::Over);
    assert_eq!(g.round_winner(), Some(2));
    assert_eq!(g.seats()[2].points, 1);
    assert_eq!(g.seats()[0].points, 0);
    assert_eq!(g.seats()[1].points, 0);
    assert!(g.seats()[2].score >= ROUND_BONUS);
    assert_eq!(g.hiscore(), g.seats()[2].score);
    // The next round starts after the result screen.
    for _ in 0..OVER_FRAMES {
        g.step(IDLE);
    }
    assert_eq!(g.round(), 2);
    assert_eq!(g.phase(), Phase::Ready);
    assert!(g.riders().iter().take(3).all(|r| r.riding));
}

#[test]
fn simultaneous_crash_scores_nobody() {
    let mut g = riding_match(&[0, 1], freeplay());
    block_ahead(&mut g, 0, 8);
    block_ahead(&mut g, 1, 8);
    g.step(IDLE);
    g.step(IDLE);
    assert_eq!(g.phase(), Phase::Over);
    assert_eq!(g.round_winner(), None);
    assert!(g.seats().iter().all(|s| s.points == 0));
}

#[test]
fn riding_into_the_wall_crashes() {
    let mut g = riding_match(
        &[0, 1],
        Settings {
            fast: true,
            ..freeplay()
        },
    );
    // Nobody steers: both ride straight into a wall within one arena width.
    for _ in 0..200 {
        g.step(IDLE);
    }
    assert_eq!(g.phase(), Phase::Over);
    assert!(g.riders().iter().all(|r| !r.riding));
}

#[test]
fn match_ends_at_points_to_win_then_attract() {
    let settings = Settings {
        points_to_win: 2,
        ..freeplay()
    };
    let mut g = riding_match(&[0, 4], settings);
    for round in 1..=2 {
        block_ahead(&mut g, 4, 1);
        g.step(IDLE);
        g.step(IDLE);
        assert_eq!(g.seats()[0].points, round);
        for _ in 0..OVER_FRAMES {
            g.step(IDLE);
        }
        if round == 1 {
            run_until_riding(&mut g);
        }
    }
    assert_eq!(g.mode(), Mode::MatchOver);
    assert_eq!(g.match_winner(), Some(0));
    let hi = g.hiscore();
    assert!(hi > 0);
    for _ in 0..MATCH_OVER_FRAMES {
        g.step(IDLE);
    }
    assert_eq!(g.mode(), Mode::Attract);
    assert_eq!(g.hiscore(), hi, "the session high score survives the match");
}

#[test]
fn attract_demo_keeps_playing_rounds() {
    let mut g = Game::default();
    let mut rounds_over = 0;
    let mut was_over = false;
    for _ in 0..20_000 {
        g.step(IDLE);
        let over = g.phase() == Phase::Over;
        if over && !was_over {
            rounds_over += 1;
        }
        was_over = over;
    }
    assert_eq!(g.mode(), Mode::Attract);
    assert!(rounds_over >= 3, "only {rounds_over} demo rounds ended");
    assert_eq!(g.hiscore(), 0, "CPU demo riders do not set the high score");
}

#[test]
fn attract_mode_renders_non_black() {
    let mut g = Game::default();
    let mut fb = vec![0u32; SCREEN_W * SCREEN_H];
    for frame in 0..120 {
        g.step(IDLE);
        fb.fill(0);
        crate::render::draw(&g, &mut fb);
        let lit = fb.iter().filter(|&&p| p != 0).count();
        assert!(
            lit > SCREEN_W * SCREEN_H / 2,
            "frame {frame}: {lit} lit pixels"
        );
    }
    let colours: std::collections::HashSet<u32> = fb.iter().copied().collect();
    assert!(colours.len() >= 6, "title, floor, walls and riders");
}

#[test]
fn a_crash_makes_sound() {
    let mut g = riding_match(&[0, 1, 2], freeplay());
    let mut out = [0i16; AUDIO_SAMPLES];
    let quiet_energy = {
        g.step(IDLE);
        g.audio(&mut out);
        out.iter().map(|&s| i64::from(s).abs()).sum::<i64>()
    };
    block_ahead(&mut g, 1, 1);
    g.step(IDLE);
    g.step(IDLE);
    assert!(!g.riders()[1].riding);
    g.audio(&mut out);
    let energy: i64 = out.iter().map(|&s| i64::from(s).abs()).sum();
    assert!(
        energy > quiet_energy * 2 && energy > 1_000_000,
        "crash {energy} vs hum {quiet_energy}"
    );
    // Stereo: both channels carry sound.
    assert!(out.iter().step_by(2).any(|&s| s != 0));
    assert!(out.iter().skip(1).step_by(2).any(|&s| s != 0));
}

#[test]
fn reset_powers_on_again() {
    let mut g = Game::default();
    tap(&mut g, 0, pad::SELECT);
    run_script(&mut g, &script(400, 3));
    g.reset();
    assert!(g.save() == Game::default().save());
}

#[test]
fn fast_speed_moves_every_frame() {
    let mut normal = riding_match(&[0, 1], freeplay());
    let mut fast = riding_match(
        &[0, 1],
        Settings {
            fast: true,
            ..freeplay()
        },
    );
    let count = |g: &Game| g.grid().as_bytes().iter().filter(|&&c| c != 0).count();
    let (n0, f0) = (count(&normal), count(&fast));
    for _ in 0..20 {
        normal.step(IDLE);
        fast.step(IDLE);
    }
    assert_eq!(count(&normal) - n0, 2 * 10);
    assert_eq!(count(&fast) - f0, 2 * 20);
}
