//! Prints how many frames per second `Game::step` + `render` + `audio` reach on this machine,
//! in attract mode and in an 8-player free-play match.
//!
//!     cargo run --release -p lightcycles --example speed

use std::time::Instant;

use lightcycles::game::pad;
use lightcycles::{Game, Mode, Settings, AUDIO_SAMPLES, MAX_PLAYERS, SCREEN_H, SCREEN_W};

const FRAMES: u32 = 20_000;

fn measure(name: &str, game: &mut Game, mut inputs: impl FnMut(u32) -> [u16; MAX_PLAYERS]) {
    let mut fb = vec![0u32; SCREEN_W * SCREEN_H];
    let mut audio = [0i16; AUDIO_SAMPLES];
    let mut checksum = 0u64;
    let start = Instant::now();
    for f in 0..FRAMES {
        game.step(inputs(f));
        lightcycles::render::draw(game, &mut fb);
        game.audio(&mut audio);
        checksum = checksum.wrapping_add(u64::from(fb[(f as usize * 7919) % fb.len()]));
        checksum = checksum.wrapping_add(audio[f as usize % AUDIO_SAMPLES] as u64);
    }
    let secs = start.elapsed().as_secs_f64();
    let fps = f64::from(FRAMES) / secs;
    println!(
        "{name:<28} {fps:>9.0} frames/s ({:.1} us/frame, checksum {checksum:x})",
        1e6 / fps
    );
}

fn main() {
    let mut attract = Game::default();
    measure("attract (4 CPU riders)", &mut attract, |_| [0; MAX_PLAYERS]);

    let mut game = Game::new(Settings {
        freeplay: true,
        ..Settings::default()
    });
    game.step([pad::START; MAX_PLAYERS]);
    assert_eq!(game.mode(), Mode::Match);
    let mut s = 0x1234_5678u32;
    measure("match (8 humans turning)", &mut game, move |_| {
        let mut p = [0u16; MAX_PLAYERS];
        for bits in p.iter_mut() {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            if s.is_multiple_of(16) {
                *bits = [pad::UP, pad::DOWN, pad::LEFT, pad::RIGHT][(s >> 8) as usize % 4];
            }
        }
        p
    });

    let mut g = Game::default();
    let start = Instant::now();
    let mut rounds = 0;
    let mut was_over = false;
    for _ in 0..FRAMES {
        g.step([0; MAX_PLAYERS]);
        let over = g.phase() == lightcycles::Phase::Over;
        rounds += u32::from(over && !was_over);
        was_over = over;
    }
    let fps = f64::from(FRAMES) / start.elapsed().as_secs_f64();
    println!("{:<28} {fps:>9.0} frames/s", "step only (attract)");
    println!(
        "attract demo rounds          {rounds} in {FRAMES} frames ({:.1} s each at 60 fps)",
        f64::from(FRAMES) / f64::from(rounds.max(1)) / 60.0
    );
    let saves = 2_000;
    let start = Instant::now();
    let mut len = 0;
    for _ in 0..saves {
        let state = g.save();
        len = state.len();
        g.load(&state).expect("own state loads");
    }
    let us = start.elapsed().as_secs_f64() * 1e6 / f64::from(saves);
    println!("save+load of {len} bytes      {us:>9.1} us");
}
