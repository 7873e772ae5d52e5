//! Proves that the desync checksum of a real core (Genesis Plus GX running Airstriker) is
//! equal in two processes fed the same inputs and differs for other inputs.

mod common;

use framelock::host::{Core, CoreSource, MemoryRegion};
use framelock::input::{Button, Inputs, Pad, MAX_PLAYERS};

const FRAMES: u32 = 600;
const TEST: &str = "gpgx_checksum_is_equal_across_processes";

/// Waits for the title, presses Start once, then steers and fires from a seeded LCG.
fn inputs(frame: u32, seed: u64) -> Inputs {
    let mut pad = Pad::NEUTRAL;
    pad.set(Button::Start, (380..386).contains(&frame));
    if frame >= 400 {
        let x = (seed ^ u64::from(frame / 10))
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let dirs = [Button::Up, Button::Down, Button::Left, Button::Right];
        pad.set(dirs[(x >> 33) as usize % 4], true);
        pad.set(Button::B, (x >> 40) & 1 == 1);
        pad.set(Button::A, frame % 4 < 2);
    }
    let mut all = [Pad::NEUTRAL; MAX_PLAYERS];
    all[0] = pad;
    all
}

fn child(seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    // With 68k address errors emulated (the default) Airstriker stops at an "68K Address
    // Error" screen around frame 400, in RetroArch too; without them it plays.
    config.options = vec![("genesis_plus_gx_addr_error".into(), "disabled".into())];
    let gpgx = CoreSource::Path(common::core("genesis_plus_gx"));
    let mut core = Core::open(&gpgx, &config).unwrap();
    core.load_game(Some(&common::airstriker())).unwrap();
    let mut audio = Vec::new();
    for frame in 0..FRAMES {
        core.run_frame(&inputs(frame, seed));
        core.drain_audio(&mut audio);
    }
    common::report("checksum", format!("{:016x}", core.checksum()));
    let video = core.video();
    let lit = video.pixels.iter().filter(|&&p| p != 0).count();
    common::report("lit", lit);
    common::report("size", format!("{}x{}", video.width, video.height));
    common::report("audio", audio.len());
    for region in [
        MemoryRegion::SystemRam,
        MemoryRegion::SaveRam,
        MemoryRegion::VideoRam,
    ] {
        let len = core.memory(region).map_or(0, <[u8]>::len);
        common::report(&format!("{region:?}"), len);
    }
    let state = core.serialize().unwrap();
    let path = std::env::temp_dir().join(format!("framelock-gpgx-{}.state", std::process::id()));
    std::fs::write(&path, state).unwrap();
    common::report("state", path.display());
}

#[test]
fn gpgx_checksum_is_equal_across_processes() {
    if let Some(role) = common::child_role() {
        return child(role.parse().unwrap());
    }
    // Fail here, not in a child, when the fixtures are missing.
    common::core("genesis_plus_gx");
    common::airstriker();
    let a1 = common::run_child(TEST, "1");
    let a2 = common::run_child(TEST, "1");
    let b = common::run_child(TEST, "2");
    let get = |out: &str, k: &str| common::result(out, k);

    let lit: usize = get(&a1, "lit").parse().unwrap();
    let audio: usize = get(&a1, "audio").parse().unwrap();
    assert!(lit > 0, "frame {FRAMES} is black");
    assert!(audio > 0, "no audio samples");
    assert_eq!(
        get(&a1, "checksum"),
        get(&a2, "checksum"),
        "same inputs, different checksum"
    );
    assert_ne!(
        get(&a1, "checksum"),
        get(&b, "checksum"),
        "other inputs, same checksum"
    );

    // Measured, not asserted: how far raw savestates of identical runs differ.
    let s1 = std::fs::read(get(&a1, "state")).unwrap();
    let s2 = std::fs::read(get(&a2, "state")).unwrap();
    let differing = s1.iter().zip(&s2).filter(|(x, y)| x != y).count();
    eprintln!(
        "gpgx: {} lit pixels of {}, {audio} audio samples, ram {}/{}/{} bytes (system/save/video), \
         savestates of {} bytes differ in {differing} bytes",
        lit,
        get(&a1, "size"),
        get(&a1, "SystemRam"),
        get(&a1, "SaveRam"),
        get(&a1, "VideoRam"),
        s1.len()
    );
    for out in [&a1, &a2, &b] {
        let _ = std::fs::remove_file(get(out, "state"));
    }
}
