//! Genesis Plus GX + Airstriker, headless, in separate processes: the same bot gives the same
//! checksum, and --stats-json reports frames, checksum, fps, wall_s, core and content.

mod play_common;

use play_common::{checksum, fixtures, headless_stats};

#[test]
fn same_bot_same_checksum_across_processes() {
    let f = fixtures();
    let home = tempfile::tempdir().unwrap();
    let (rom, core) = (f.airstriker.to_str().unwrap(), f.gpgx.to_str().unwrap());
    let args = [
        "--core", core, rom, "--frames", "600", "--fast", "--bot", "7",
    ];
    let a = headless_stats(home.path(), "a", &args);
    let b = headless_stats(home.path(), "b", &args);
    assert_eq!(checksum(&a), checksum(&b), "two processes diverged");

    assert_eq!(a["frames"], 600);
    assert!(a["fps"].as_f64().unwrap() > 0.0);
    assert!(a["wall_s"].as_f64().unwrap() > 0.0);
    assert_eq!(a["core"], "Genesis Plus GX");
    assert_eq!(a["content"], rom);
    assert_eq!(a["stall_frames"], 0);
    assert_eq!(a["end"], "framelimit");
}

#[test]
fn paced_run_keeps_the_core_frame_rate() {
    let f = fixtures();
    let home = tempfile::tempdir().unwrap();
    let (rom, core) = (f.airstriker.to_str().unwrap(), f.gpgx.to_str().unwrap());
    let s = headless_stats(
        home.path(),
        "paced",
        &["--core", core, rom, "--frames", "120"],
    );
    let fps = s["fps"].as_f64().unwrap();
    // Genesis Plus GX runs NTSC at 59.92 fps; allow scheduler noise on a busy machine.
    assert!((50.0..=62.0).contains(&fps), "paced run at {fps} fps");
    assert!(s["catch_up_frames"].as_u64().unwrap() <= 20);
}
