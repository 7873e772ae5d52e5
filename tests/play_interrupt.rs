//! Ctrl-C (SIGINT) in headless `play` is an exit like any other: save RAM is written back to
//! the save directory, and `--stats-json` says the player quit.

mod netplay_common;

use std::time::Duration;

use netplay_common::{args, genesis, Peer};

#[test]
fn ctrl_c_in_headless_play_writes_save_ram() {
    let g = genesis();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let saves = d.join("saves");
    std::fs::create_dir_all(&saves).unwrap();
    let srm = saves.join("airstriker.srm");
    // Genesis Plus GX reports save RAM up to its last byte that is not 0xff.
    let pattern: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&srm, &pattern).unwrap();
    let mut play = Peer::spawn(
        d,
        "play",
        &args(&[
            "play",
            "--headless",
            "--core",
            g.core.to_str().unwrap(),
            g.rom.to_str().unwrap(),
            "--save-dir",
            saves.to_str().unwrap(),
            "--bot",
            "1",
        ]),
    );
    assert!(
        play.wait_for_log("Genesis Plus GX", Duration::from_secs(20))
            .is_some(),
        "{}",
        play.log_text()
    );
    std::thread::sleep(Duration::from_secs(2));
    // Finding the file again proves the exit wrote it.
    std::fs::remove_file(&srm).unwrap();
    play.interrupt();
    let status = play.wait(Duration::from_secs(20));
    assert!(status.success(), "{status:?}\n{}", play.log_text());
    let written = std::fs::read(&srm)
        .unwrap_or_else(|e| panic!("no save RAM after Ctrl-C ({e})\n{}", play.log_text()));
    assert_eq!(&written[..pattern.len()], &pattern[..]);
    let stats = play.read_stats();
    assert_eq!(stats["end"], "quit", "{stats:#}");
    assert!(stats["frames"].as_u64().unwrap() > 60, "{stats:#}");
}
