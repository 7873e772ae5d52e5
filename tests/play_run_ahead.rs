//! `play --run-ahead N` and `play --sync-test N`: the rollback machinery on real cores.
//! Run-ahead shows the game N frames further on while the frames that count (recording,
//! checksum) stay those of plain play; the sync test passes on cores whose savestates
//! round-trip and names the frame on one whose loads do nothing.

mod play_common;

use play_common::{checksum, fixtures, framelock, headless_stats, text};
use serde_json::Value;

/// `(frames run, image hash)` of each image shown, from `--hash-shown`.
fn shown(stats: &Value) -> Vec<(u64, u64)> {
    stats["shown"]
        .as_array()
        .expect("shown hashes in the stats")
        .iter()
        .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
        .collect()
}

#[test]
fn run_ahead_shows_a_taps_effect_two_frames_sooner_and_records_the_same() {
    // The built-in game, paced (one frame per displayed frame), Select tapped for the one
    // frame 100. The game reacts on the frame itself: each image plain play shows from
    // then on, run-ahead 2 shows two displayed frames sooner.
    let home = tempfile::tempdir().unwrap();
    let run = |name: &str, run_ahead: &str| {
        let rec = home.path().join(format!("{name}.flr"));
        let stats = headless_stats(
            home.path(),
            name,
            &[
                "--frames",
                "130",
                "--tap",
                "100:select",
                "--hash-shown",
                "90:40",
                "--run-ahead",
                run_ahead,
                "--record",
                rec.to_str().unwrap(),
            ],
        );
        (stats, std::fs::read(&rec).unwrap())
    };
    let (plain, plain_log) = run("plain", "0");
    let (ahead, ahead_log) = run("ahead", "2");
    let (p, a) = (shown(&plain), shown(&ahead));
    let at = |list: &[(u64, u64)], frame: u64| list.iter().find(|(f, _)| *f == frame).map(|x| x.1);
    let mut compared = 0;
    for t in 103..=128 {
        if let (Some(plain_img), Some(ahead_img)) = (at(&p, t), at(&a, t - 2)) {
            assert_eq!(
                ahead_img,
                plain_img,
                "run-ahead 2 shows at {} what plain play shows at {t}",
                t - 2
            );
            compared += 1;
        }
    }
    assert!(
        compared >= 20,
        "only {compared} displayed frames to compare: {p:?}"
    );
    // The tap shows: without it the same frames look different.
    let untapped = headless_stats(
        home.path(),
        "untapped",
        &["--frames", "130", "--hash-shown", "90:40"],
    );
    assert_ne!(
        at(&shown(&untapped), 105),
        at(&p, 105),
        "the tap changed nothing"
    );
    // What counts is what plain play ran: the same checksum, and a recording that replays
    // (checksums verified on the way) to it. (Paced logs hold wall-clock times, so the
    // bytes differ run to run.)
    assert_eq!(checksum(&plain), checksum(&ahead));
    assert_eq!(plain_log.len(), ahead_log.len());
    let log = home.path().join("ahead.flr");
    let replayed = home.path().join("replayed.json");
    let out = framelock(home.path())
        .args(["replay", "--headless", "--fast", "--verify"])
        .arg(&log)
        .arg("--stats-json")
        .arg(&replayed)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let replayed: Value = serde_json::from_slice(&std::fs::read(&replayed).unwrap()).unwrap();
    assert_eq!(checksum(&replayed), checksum(&plain));

    assert_eq!(ahead["run_ahead"]["depth"], 2);
    // At least the newest frame each displayed frame; the others are reused while held.
    assert!(ahead["run_ahead"]["frames"].as_u64().unwrap() >= 120);
}

#[test]
fn run_ahead_on_genesis_plus_gx_keeps_the_checksum() {
    let f = fixtures();
    let home = tempfile::tempdir().unwrap();
    let (rom, core) = (f.airstriker.to_str().unwrap(), f.gpgx.to_str().unwrap());
    let args = |n: &'static str| {
        [
            "--core",
            core,
            rom,
            "--frames",
            "600",
            "--bot",
            "7",
            "--run-ahead",
            n,
            "--option",
            "genesis_plus_gx_addr_error=disabled",
        ]
    };
    let plain = headless_stats(home.path(), "plain", &args("0"));
    let ahead = headless_stats(home.path(), "ahead", &args("3"));
    assert_eq!(checksum(&plain), checksum(&ahead));
    assert!(ahead["run_ahead"]["frames"].as_u64().unwrap() >= 500);
}

#[test]
fn the_sync_test_passes_on_the_built_in_game_and_genesis_plus_gx() {
    let f = fixtures();
    let home = tempfile::tempdir().unwrap();
    let (rom, core) = (f.airstriker.to_str().unwrap(), f.gpgx.to_str().unwrap());
    for (name, args) in [
        ("builtin", vec!["--frames", "900", "--fast", "--bot", "3"]),
        (
            "gpgx",
            vec![
                "--core",
                core,
                rom,
                "--frames",
                "900",
                "--fast",
                "--bot",
                "3",
                "--option",
                "genesis_plus_gx_addr_error=disabled",
            ],
        ),
    ] {
        let out = framelock(home.path())
            .args(["play", "--headless", "--sync-test", "8"])
            .args(&args)
            .output()
            .unwrap();
        let log = text(&out);
        assert!(out.status.success(), "{name}: {log}");
        assert!(
            log.contains("sync test passed: 7136 frames re-run 8 deep"),
            "{name}: {log}"
        );
    }
}

#[test]
fn the_sync_test_names_the_frame_where_a_core_that_ignores_loads_diverges() {
    let home = tempfile::tempdir().unwrap();
    let out = framelock(home.path())
        .args([
            "play",
            "--headless",
            "--fast",
            "--frames",
            "300",
            "--bot",
            "3",
        ])
        .args(["--sync-test", "4", "--test-ignore-loads"])
        .output()
        .unwrap();
    let log = text(&out);
    assert!(!out.status.success(), "{log}");
    // Checked after frame 4 (five frames in), from the state of frame 0: frame 1 differs.
    assert!(
        log.contains("sync test failed: frame 1 re-run from the state of frame 0 has checksum"),
        "{log}"
    );
    assert!(log.contains("the first run had"), "{log}");
}

#[test]
fn speculation_records_byte_for_byte_what_plain_play_records() {
    // One timeline: frames run ahead and kept when their guess held, wrong guesses run
    // again. With a busy bot (its pad changes on about a quarter of the frames) most
    // guesses of "held" are right and many are wrong; the recording, with a checksum of
    // the machine every 5 frames, is the same file byte for byte as plain play's, on the
    // built-in game and on Genesis Plus GX, and replays with every checksum verified.
    let f = fixtures();
    let home = tempfile::tempdir().unwrap();
    let (rom, core) = (f.airstriker.to_str().unwrap(), f.gpgx.to_str().unwrap());
    let games: [(&str, Vec<&str>); 2] = [
        ("builtin", vec![]),
        (
            "gpgx",
            vec![
                "--core",
                core,
                rom,
                "--option",
                "genesis_plus_gx_addr_error=disabled",
            ],
        ),
    ];
    for (game, game_args) in games {
        let run = |name: &str, run_ahead: &str| {
            let rec = home.path().join(format!("{game}-{name}.flr"));
            let stats = home.path().join(format!("{game}-{name}.json"));
            let out = framelock(home.path())
                .env("SOURCE_DATE_EPOCH", "1700000000")
                .arg("play")
                .args(&game_args)
                .args(["--headless", "--fast", "--frames", "3000", "--bot", "5"])
                .args(["--test-checksum-interval", "5", "--run-ahead", run_ahead])
                .arg("--record")
                .arg(&rec)
                .arg("--stats-json")
                .arg(&stats)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", text(&out));
            let stats: Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
            (stats, std::fs::read(&rec).unwrap(), rec)
        };
        let (plain, plain_log, _) = run("plain", "0");
        let (ahead, ahead_log, ahead_path) = run("ahead", "8");
        assert_eq!(checksum(&plain), checksum(&ahead), "{game}");
        assert!(
            plain_log.len() > 3000 / 5 * 8,
            "{game}: {} bytes",
            plain_log.len()
        );
        if game == "builtin" {
            assert!(
                plain_log == ahead_log,
                "{game}: the recordings differ ({} and {} bytes)",
                plain_log.len(),
                ahead_log.len()
            );
        } else {
            // Genesis Plus GX's start snapshot in the header holds pointers of its process
            // (see libretro-host-notes), and the records' CRCs chain from the header: two
            // plain runs differ in those bytes too. Record for record they are the same.
            assert_same_records(&plain_log, &ahead_log, game);
        }
        let t = &ahead["run_ahead"];
        let confirmed = t["frames_confirmed"].as_u64().unwrap();
        let rollbacks = ahead["rollbacks"].as_u64().unwrap();
        // Fast play runs many frames a tick, only the first few of them run ahead before:
        // on the built-in game (0.05 ms a frame) about one in twenty.
        assert!(confirmed > 100, "{game}: {ahead:#}");
        assert!(rollbacks > 30, "{game}: {ahead:#}");
        let replayed = home.path().join(format!("{game}-replayed.json"));
        let out = framelock(home.path())
            .args(["replay", "--headless", "--fast", "--verify"])
            .arg(&ahead_path)
            .arg("--stats-json")
            .arg(&replayed)
            .output()
            .unwrap();
        assert!(out.status.success(), "{game}: {}", text(&out));
    }
}

/// Two recordings hold the same header (but for the start snapshot and the time) and the
/// same records: every frame's inputs, every checksum, every event.
fn assert_same_records(a: &[u8], b: &[u8], what: &str) {
    use framelock::replay::Replay;
    let open =
        |bytes: &[u8]| Replay::from_reader(std::io::Cursor::new(bytes.to_vec()), "x.flr").unwrap();
    let (mut a, mut b) = (open(a), open(b));
    let (ha, hb) = (a.header().clone(), b.header().clone());
    assert_eq!(ha.core_name, hb.core_name);
    assert_eq!(ha.core_options, hb.core_options);
    assert_eq!(ha.checksum_interval, hb.checksum_interval);
    assert_eq!(ha.start_frame, hb.start_frame);
    let mut n = 0;
    loop {
        let (x, y) = (a.next_item().unwrap(), b.next_item().unwrap());
        assert_eq!(x, y, "{what}: record {n} differs");
        if x.is_none() {
            break;
        }
        n += 1;
    }
    assert!(n > 3000, "{what}: {n} records");
}
