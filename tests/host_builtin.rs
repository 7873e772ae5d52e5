//! Proves that the built-in core runs through the host and that a savestate round trip
//! reproduces the same machine checksum.

mod common;

use framelock::host::{Core, CoreSource};
use framelock::input::{Button, Inputs, Pad, MAX_PLAYERS};

/// Two players join, then steer with a fixed pattern.
fn inputs(frame: u32) -> Inputs {
    let mut all = [Pad::NEUTRAL; MAX_PLAYERS];
    for (port, pad) in all.iter_mut().take(2).enumerate() {
        pad.set(Button::Select, frame < 4);
        pad.set(Button::Start, (8..12).contains(&frame));
        let turn = [Button::Up, Button::Left, Button::Down, Button::Right];
        pad.set(turn[(frame as usize / 17 + port) % 4], frame % 17 < 3);
    }
    all
}

#[test]
fn builtin_core_savestate_round_trip_reproduces_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let mut core = Core::open(&CoreSource::Builtin, &common::config(dir.path())).unwrap();
    assert!(core.info().support_no_game, "{:?}", core.info());
    core.load_game(None).unwrap();
    let av = core.av_info();
    assert!(av.fps > 0.0 && av.base_width > 0, "{av:?}");

    for frame in 0..100 {
        core.run_frame(&inputs(frame));
    }
    let state = core.serialize().unwrap();
    let at_save = core.checksum();
    for frame in 100..200 {
        core.run_frame(&inputs(frame));
    }
    let a = core.checksum();
    assert_ne!(a, at_save, "100 frames of play changed nothing");
    let video = core.video();
    assert_eq!(video.pixels.len(), (video.width * video.height) as usize);
    assert!(video.pixels.iter().any(|&p| p != 0), "black frame");
    let mut audio = Vec::new();
    core.drain_audio(&mut audio);
    assert!(
        !audio.is_empty() && audio.len() % 2 == 0,
        "{} samples",
        audio.len()
    );

    core.unserialize(&state).unwrap();
    for frame in 100..200 {
        core.run_frame(&inputs(frame));
    }
    assert_eq!(core.checksum(), a, "replay after unserialize diverged");
    assert_eq!(core.frame_count(), 300);
}
