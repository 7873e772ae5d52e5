//! The replay archive on a small disk: a full disk costs the replay being written and
//! nothing else, and the oldest replays go first when the archive is full.

use super::*;

/// A tmpfs mounted for the test and unmounted when it ends, passed or failed.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Plays a short match in room `room` to its end.
fn play_match(d: &Path, addr: &str, room: &str) -> (Value, Value) {
    let mut host = open_room(
        d,
        addr,
        room,
        &["--frames", "180", "--bot", "1", "--no-record"],
    );
    let mut join = netplay_common::join_room(
        d,
        &format!("{room}-join"),
        addr,
        room,
        &["--frames", "180", "--bot", "2", "--no-record"],
    );
    join.wait_ok(Duration::from_secs(40));
    host.wait_ok(Duration::from_secs(20));
    (host.read_stats(), join.read_stats())
}

#[test]
fn a_full_disk_costs_the_replay_being_written_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let disk = d.join("disk");
    let Some(_mounted) = Tmpfs::mount(&disk, "256k") else {
        // Mounting needs root, as CI runs; say so rather than pass quietly.
        panic!("cannot mount a tmpfs for the full disk (run as root, as CI does)");
    };
    let archive = disk.join("archive");
    let archive_s = archive.display().to_string();
    let (mut server, addr, http) = web_server(d, &["--archive", &archive_s]);
    play_match(d, &addr, "first");
    server.expect_log("archive: kept room first's replay", Duration::from_secs(10));
    let kept: Vec<PathBuf> = std::fs::read_dir(&archive)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let before: Vec<(PathBuf, Vec<u8>)> = kept
        .iter()
        .map(|p| (p.clone(), std::fs::read(p).unwrap()))
        .collect();
    assert_eq!(before.len(), 2, "{kept:?}");

    // The disk fills up: the next replay cannot be written.
    let filler = disk.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let block = vec![0u8; 4096];
    while f.write_all(&block).and_then(|()| f.sync_all()).is_ok() {}
    drop(f);
    let (h, j) = play_match(d, &addr, "second");
    assert_eq!(checksum(&h), checksum(&j), "the room played on");
    server.expect_log(
        "archive: cannot keep room second's replay",
        Duration::from_secs(10),
    );
    for (path, bytes) in &before {
        assert_eq!(
            &std::fs::read(path).unwrap(),
            bytes,
            "{} changed",
            path.display()
        );
    }
    let tmp: Vec<_> = std::fs::read_dir(&archive)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(tmp.is_empty(), "half-written files left: {tmp:?}");
    let page = wait_page(&http, "/", |p| p.contains("Recent replays (1)"));
    assert!(page.contains("first"));

    // Room on the disk again: the next one is kept.
    std::fs::remove_file(&filler).unwrap();
    play_match(d, &addr, "third");
    server.expect_log("archive: kept room third's replay", Duration::from_secs(10));
    server.interrupt();
    server.wait_ok(Duration::from_secs(15));
    let a = &server.read_stats()["archive"];
    assert_eq!(
        (a["kept"].as_u64(), a["write_errors"].as_u64()),
        (Some(2), Some(1)),
        "{a}"
    );
}

#[test]
fn the_oldest_replays_go_first_when_the_archive_is_full() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let archive = d.join("archive");
    let archive_s = archive.display().to_string();
    // Replays of these matches take about 2 KiB: a 1 MiB cap is far. A cap can only be
    // given in MiB, so the archive is filled with old replays of its own first.
    std::fs::create_dir_all(&archive).unwrap();
    for i in 0..3u32 {
        let id = format!("{:016x}", 0xdead_0000u64 + u64::from(i));
        let entry = json!({
            "id": id, "room": format!("old{i}"), "game": "", "core": "lightcycles",
            "players": "x", "created_unix": 1_700_000_000 + i64::from(i), "frames": 60,
            "fps_milli": 60000, "bytes": 400 * 1024, "server": "", "kept_unix": 1_700_000_000 + i64::from(i),
        });
        std::fs::write(archive.join(format!("{id}.json")), entry.to_string()).unwrap();
        std::fs::write(archive.join(format!("{id}.flr")), vec![0u8; 400 * 1024]).unwrap();
    }
    let (mut server, addr, _http) = web_server(d, &["--archive", &archive_s, "--archive-mib", "1"]);
    server.expect_log("(3 kept, 1 of 1 MiB)", Duration::from_secs(5));
    play_match(d, &addr, "fresh");
    server.expect_log("archive: kept room fresh's replay", Duration::from_secs(10));
    server.expect_log(
        "dropped the oldest replay 00000000dead0000",
        Duration::from_secs(5),
    );
    let out = netplay_common::framelock(d)
        .args(["replays", &addr, "--json"])
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rooms: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["room"].as_str())
        .collect();
    assert_eq!(rooms, ["fresh", "old2", "old1"]);
    assert!(!archive.join("00000000dead0000.flr").exists());
}
