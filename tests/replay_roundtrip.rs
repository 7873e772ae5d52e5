//! `play --record` then `replay --verify`, through the binary: the replay reproduces every
//! recorded checksum and ends on the same final checksum as the recorded run, for the
//! built-in game and for Genesis Plus GX + Airstriker; replays honour --to-frame and --speed.

mod replay_common;

use replay_common::{assert_ok, checksum, genesis, run, stats, text, GENESIS_OPTION};

/// Records `frames` frames of bot play with `extra` args, replays the log with `--verify`
/// and checks both runs agree. Returns the replay's stats.
fn round_trip(home: &std::path::Path, frames: u64, extra: &[&str]) -> serde_json::Value {
    let frames_s = frames.to_string();
    let mut play = vec![
        "play",
        "--headless",
        "--fast",
        "--frames",
        &frames_s,
        "--bot",
        "5",
        "--record",
        "a.flr",
        "--stats-json",
        "p.json",
    ];
    play.extend_from_slice(extra);
    let out = run(home, &play);
    assert_ok(&out);
    assert!(
        replay_common::stderr(&out)
            .contains(&format!("recording saved to a.flr ({frames} frames)")),
        "{}",
        replay_common::text(&out)
    );
    let out = run(
        home,
        &[
            "replay",
            "a.flr",
            "--headless",
            "--fast",
            "--verify",
            "--stats-json",
            "r.json",
        ],
    );
    assert_ok(&out);
    let p = stats(&home.join("p.json"));
    let r = stats(&home.join("r.json"));
    assert_eq!(checksum(&r), checksum(&p), "replay ended elsewhere");
    assert_eq!(r["frames"], frames);
    assert_eq!(r["end"], "feedended");
    let v = &r["replay"];
    assert_eq!(v["log_status"], "complete");
    assert_eq!(v["frames_replayed"], frames, "{v}");
    assert_eq!(v["frames_to_replay"], frames, "{v}");
    assert_eq!(v["checksums_checked"], frames / 60, "{v}");
    assert_eq!(v["checksums_matched"], frames / 60, "{v}");
    assert_eq!(v["first_desync"], serde_json::Value::Null);
    assert!(r["fps"].as_f64().unwrap() > 0.0 && r["wall_s"].as_f64().unwrap() > 0.0);
    r
}

#[test]
fn builtin_game_replays_to_the_same_checksum() {
    let home = tempfile::tempdir().unwrap();
    let r = round_trip(home.path(), 1200, &[]);
    assert_eq!(r["core"], "lightcycles");
}

#[test]
fn genesis_replays_to_the_same_checksum_without_being_told_core_or_content() {
    let g = genesis();
    let home = tempfile::tempdir().unwrap();
    let (core, rom) = (g.core.to_str().unwrap(), g.rom.to_str().unwrap());
    // The log remembers where core and content were, so the replay needs neither.
    let r = round_trip(
        home.path(),
        1200,
        &["--core", core, rom, "--option", GENESIS_OPTION],
    );
    assert_eq!(r["core"], "Genesis Plus GX");

    // Given explicitly, and stopped early: the checksum is that of a 600-frame play.
    let out = run(
        home.path(),
        &[
            "replay",
            "a.flr",
            rom,
            "--core",
            core,
            "--headless",
            "--fast",
            "--to-frame",
            "600",
            "--verify",
            "--stats-json",
            "r600.json",
        ],
    );
    assert_ok(&out);
    assert!(
        replay_common::stderr(&out)
            .contains("replayed 600 frames (as far as --to-frame); 10 of 10 checksums match"),
        "{}",
        text(&out)
    );
    let out = run(
        home.path(),
        &[
            "play",
            "--headless",
            "--fast",
            "--frames",
            "600",
            "--bot",
            "5",
            "--core",
            core,
            rom,
            "--option",
            GENESIS_OPTION,
            "--stats-json",
            "p600.json",
        ],
    );
    assert_ok(&out);
    let r600 = stats(&home.path().join("r600.json"));
    assert_eq!(r600["frames"], 600);
    assert_eq!(r600["replay"]["checksums_matched"], 10);
    // Stopped where asked: the end of the log was not wanted, nothing was cut short.
    assert_eq!(r600["replay"]["log_status"], "not reached");
    assert_eq!(r600["replay"]["frames_to_replay"], 600);
    assert_eq!(
        checksum(&r600),
        checksum(&stats(&home.path().join("p600.json")))
    );
}

#[test]
fn speed_scales_the_replay_frame_rate() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    replay_common::record_builtin(h, 240, Some(2), "s.flr");
    for (speed, frames, lo, hi) in [("2", "240", 100.0, 125.0), ("0.5", "60", 25.0, 32.0)] {
        let json = format!("speed{speed}.json");
        let out = run(
            h,
            &[
                "replay",
                "s.flr",
                "--headless",
                "--speed",
                speed,
                "--to-frame",
                frames,
                "--stats-json",
                &json,
            ],
        );
        assert_ok(&out);
        let fps = stats(&h.join(&json))["fps"].as_f64().unwrap();
        // The built-in game runs at 60 fps; allow scheduler noise on a busy machine.
        assert!((lo..=hi).contains(&fps), "--speed {speed}: {fps} fps");
    }
}

#[test]
fn record_refuses_to_overwrite_a_file() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("taken.flr"), b"precious").unwrap();
    let out = run(
        home.path(),
        &[
            "play",
            "--headless",
            "--frames",
            "10",
            "--record",
            "taken.flr",
        ],
    );
    replay_common::assert_fails_with(&out, "already exists");
    assert_eq!(
        std::fs::read(home.path().join("taken.flr")).unwrap(),
        b"precious"
    );
}

/// Ctrl-C or SIGTERM during `replay --verify` ends the replay cleanly, but a verification that
/// did not reach the end of the log is no pass: non-zero, saying how far it got. Without
/// --verify, stopping early is fine.
#[test]
fn an_interrupted_verify_fails_as_incomplete() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    replay_common::record_builtin(h, 1200, Some(3), "i.flr");
    for (signal, verify) in [("-TERM", true), ("-INT", true), ("-TERM", false)] {
        // At normal speed the 1200 frames take 20 s; stop it after about one.
        let json = format!("i{signal}{verify}.json");
        let mut cmd = replay_common::framelock(h);
        cmd.args(["replay", "i.flr", "--headless", "--stats-json", &json]);
        if verify {
            cmd.arg("--verify");
        }
        let child = cmd
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run framelock");
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let sent = std::process::Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let out = child.wait_with_output().unwrap();
        let err = replay_common::stderr(&out);
        assert!(
            err.contains("stopping (a second Ctrl-C or SIGTERM exits at once)"),
            "{signal}: {}",
            text(&out)
        );
        let s = stats(&h.join(&json));
        assert_eq!(s["end"], "quit", "{s:#}");
        let ran = s["frames"].as_u64().unwrap();
        assert!((1..1200).contains(&ran), "{s:#}");
        // The stats say what the terminal says: stopped after `ran` of 1200 frames.
        let r = &s["replay"];
        assert_eq!(r["log_status"], "stopped early", "{s:#}");
        assert_eq!(r["frames_replayed"], ran, "{s:#}");
        assert_eq!(r["frames_to_replay"], 1200, "{s:#}");
        if verify {
            replay_common::assert_fails_with(
                &out,
                &format!(
                    "error: i.flr: verification incomplete: the replay stopped after {ran} of \
                     1200 frames ("
                ),
            );
        } else {
            assert_ok(&out);
            let err = replay_common::stderr(&out);
            assert!(
                err.contains(&format!("replayed {ran} of 1200 frames (stopped early); ")),
                "{}",
                text(&out)
            );
        }
    }
}

#[test]
fn a_log_moved_with_its_game_finds_the_game_by_name_beside_it() {
    let g = genesis();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    for d in ["recorded", "elsewhere", "cwd"] {
        std::fs::create_dir(h.join(d)).unwrap();
    }
    std::fs::copy(&g.rom, h.join("recorded/airstriker.md")).unwrap();
    let core = g.core.to_str().unwrap();
    let out = run(
        h,
        &[
            "play",
            "recorded/airstriker.md",
            "--core",
            core,
            "--option",
            GENESIS_OPTION,
            "--headless",
            "--fast",
            "--frames",
            "240",
            "--bot",
            "2",
            "--record",
            "recorded/a.flr",
        ],
    );
    assert_ok(&out);
    // Both moved, as a log and its game copied to another machine; the recorded path is gone.
    for f in ["a.flr", "airstriker.md"] {
        std::fs::rename(h.join("recorded").join(f), h.join("elsewhere").join(f)).unwrap();
    }
    let verify = |cwd: &str, log: &str| {
        replay_common::framelock(h)
            .current_dir(h.join(cwd))
            .args([
                "replay",
                "--headless",
                "--fast",
                "--verify",
                "--core",
                core,
                log,
            ])
            .output()
            .unwrap()
    };
    let out = verify("cwd", "../elsewhere/a.flr");
    assert_ok(&out);
    assert!(
        replay_common::stderr(&out).contains("the recorded content is ../elsewhere/airstriker.md"),
        "{}",
        text(&out)
    );
    // Another game under the same name is not taken for it.
    std::fs::write(h.join("elsewhere/airstriker.md"), b"not the game").unwrap();
    let out = verify("cwd", "../elsewhere/a.flr");
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        replay_common::stderr(&out).contains("airstriker.md (xxh3"),
        "{}",
        text(&out)
    );
}
