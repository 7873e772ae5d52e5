//! Real processes on 127.0.0.1: what the host refuses and what it does not. Different content
//! or a different core is refused with a message naming the difference; different core options
//! are not (the joiner runs with the host's values and stays in sync); a password is checked.
//! A refused joiner exits non-zero at once, and the host keeps waiting for a valid player.

mod netplay_common;

use std::time::{Duration, Instant};

use netplay_common::{
    args, assert_sane_stats, checksum, fixture, free_port, genesis, start_host, start_join, Peer,
};

const FRAMES: &str = "360";

/// Runs a joiner that must be refused; returns its log.
fn refused(dir: &std::path::Path, port: u16, label: &str, extra: &[String]) -> String {
    let t0 = Instant::now();
    let mut j = start_join(dir, port, label, extra);
    let status = j.wait(Duration::from_secs(15));
    let log = j.log_text();
    assert!(!status.success(), "{label} was admitted\n{log}");
    assert!(
        log.contains("refused by the host"),
        "{label}: no refusal in the log\n{log}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(8),
        "{label} took {:?} to give up",
        t0.elapsed()
    );
    assert!(!j.stats.exists(), "{label} wrote stats without playing");
    log
}

/// The host and the admitted joiner both finish with the same checksum.
fn finish_in_sync(host: &mut Peer, joiner: &mut Peer) -> (serde_json::Value, serde_json::Value) {
    joiner.wait_ok(Duration::from_secs(40));
    host.wait_ok(Duration::from_secs(40));
    let (h, j) = (host.read_stats(), joiner.read_stats());
    let frames = FRAMES.parse().unwrap();
    assert_sane_stats("host", &h, frames);
    assert_sane_stats(&joiner.label, &j, frames);
    assert_eq!(checksum(&h), checksum(&j), "{}", joiner.log_text());
    (h, j)
}

#[test]
fn other_content_or_core_is_refused_other_options_are_not() {
    let g = genesis();
    let picodrive = fixture("stable_retro/cores/picodrive_libretro.so");
    let dir = tempfile::tempdir().unwrap();
    let (core, rom) = (g.core.to_str().unwrap(), g.rom.to_str().unwrap());
    // The same ROM with one byte changed, under another name.
    let mut bytes = std::fs::read(&g.rom).unwrap();
    bytes[0x1000] ^= 0x01;
    let patched = dir.path().join("airstriker-patched.md");
    std::fs::write(&patched, bytes).unwrap();

    let port = free_port();
    let mut host = start_host(
        dir.path(),
        port,
        &args(&[
            "--core",
            core,
            rom,
            "--frames",
            FRAMES,
            "--bot",
            "1",
            "--option",
            "genesis_plus_gx_addr_error=disabled",
        ]),
    );

    let log = refused(
        dir.path(),
        port,
        "patched",
        &args(&["--core", core, patched.to_str().unwrap(), "--bot", "2"]),
    );
    assert!(log.contains("content differs"), "{log}");
    assert!(
        log.contains("host has airstriker.md (xxh3 ")
            && log.contains("you have airstriker-patched.md (xxh3 "),
        "the message names both files\n{log}"
    );

    let log = refused(
        dir.path(),
        port,
        "picodrive",
        &args(&["--core", picodrive.to_str().unwrap(), rom, "--bot", "2"]),
    );
    assert!(log.contains("core differs"), "{log}");
    assert!(
        log.contains("host runs Genesis Plus GX") && log.contains("you run PicoDrive"),
        "the message names both cores\n{log}"
    );

    // PAL changes the game's timing (and so the checksum) when it is really applied; the
    // host's values (auto region, address errors off) must win.
    let mut joiner = start_join(
        dir.path(),
        port,
        "options",
        &args(&[
            "--core",
            core,
            rom,
            "--frames",
            FRAMES,
            "--bot",
            "2",
            "--option",
            "genesis_plus_gx_region_detect=pal",
            "--option",
            "genesis_plus_gx_addr_error=enabled",
        ]),
    );
    let (h, j) = finish_in_sync(&mut host, &mut joiner);
    let log = joiner.log_text();
    assert!(
        log.contains("genesis_plus_gx_region_detect = auto (the host's; yours was pal)"),
        "{log}"
    );
    assert!(
        log.contains("genesis_plus_gx_addr_error = disabled"),
        "{log}"
    );
    // The core's own rate, not the wall clock's: a stall on a busy machine lowers `fps`.
    let core_fps = j["core_fps"].as_f64().unwrap();
    assert!((59.0..61.0).contains(&core_fps), "PAL won: {j}");
    assert_eq!(h["core"], "Genesis Plus GX");
    let host_log = host.log_text();
    assert!(host_log.contains("content differs"), "{host_log}");
    assert!(host_log.contains("core differs"), "{host_log}");
}

#[test]
fn password_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut host = start_host(
        dir.path(),
        port,
        &args(&["--password", "s3cret", "--frames", FRAMES, "--bot", "1"]),
    );
    let log = refused(dir.path(), port, "nopass", &args(&["--bot", "2"]));
    assert!(log.contains("wrong password"), "{log}");
    let log = refused(
        dir.path(),
        port,
        "wrongpass",
        &args(&["--password", "secret", "--bot", "2"]),
    );
    assert!(log.contains("wrong password"), "{log}");
    // The password never shows up in a log.
    assert!(!host.log_text().contains("s3cret"));

    let mut joiner = start_join(
        dir.path(),
        port,
        "rightpass",
        &args(&["--password", "s3cret", "--frames", FRAMES, "--bot", "2"]),
    );
    finish_in_sync(&mut host, &mut joiner);
}
