//! Cores found by name: `--core genesis_plus_gx`, content alone picking the one core that
//! takes its extension, the messages when none or several do, `framelock cores`, and a
//! replay whose recorded core is gone finding it by the name and version the log names.

#[allow(clippy::duplicate_mod)]
#[path = "fixtures/mod.rs"]
mod fixtures;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fixtures::{core, framelock, genesis, text};

/// A home with a config whose `[paths] cores_dir` holds links to the named fixture cores.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn with_cores(names: &[&str]) -> Home {
        let dir = tempfile::tempdir().unwrap();
        let cores = dir.path().join("cores");
        std::fs::create_dir_all(&cores).unwrap();
        for name in names {
            std::os::unix::fs::symlink(core(name), cores.join(format!("{name}_libretro.so")))
                .unwrap();
        }
        let config = dir.path().join("config/framelock");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("config.toml"),
            format!("[paths]\ncores_dir = \"{}\"\n", cores.display()),
        )
        .unwrap();
        Home { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn cores(&self) -> PathBuf {
        self.path().join("cores")
    }

    /// framelock with this home's config, and `HOME` here so that no RetroArch cores of
    /// the machine's are found.
    fn framelock(&self, args: &[&str]) -> Output {
        let mut cmd: Command = framelock(self.path());
        cmd.env("HOME", self.path()).args(args).output().unwrap()
    }

    fn stats(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(self.path().join("stats.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

#[test]
fn a_core_is_found_by_name_or_by_the_extension_of_its_content() {
    let home = Home::with_cores(&["genesis_plus_gx"]);
    let rom = genesis().rom;
    let stats = home.path().join("stats.json");
    for by_name in [true, false] {
        let mut args = vec!["play", "--headless", "--fast", "--frames", "30"];
        if by_name {
            args.extend(["--core", "genesis_plus_gx"]);
        }
        args.extend([
            rom.to_str().unwrap(),
            "--stats-json",
            stats.to_str().unwrap(),
        ]);
        let out = home.framelock(&args);
        assert!(out.status.success(), "{}", text(&out));
        let s = home.stats();
        assert_eq!(s["core"], "Genesis Plus GX", "{s:#}");
        let linked = home.cores().join("genesis_plus_gx_libretro.so");
        assert_eq!(s["core_path"], linked.display().to_string(), "{s:#}");
    }
}

#[test]
fn a_core_not_found_is_told_with_where_framelock_looked() {
    let home = Home::with_cores(&[]);
    let out = home.framelock(&["play", "--headless", "--core", "nosuch"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no core named nosuch: looked for nosuch_libretro.so in"),
        "{err}"
    );
    for dir in [
        home.cores().display().to_string(),
        home.path()
            .join(".config/retroarch/cores")
            .display()
            .to_string(),
        "/usr/lib/x86_64-linux-gnu/libretro".into(),
        "/usr/lib/libretro".into(),
    ] {
        assert!(err.contains(&dir), "{dir} not named: {err}");
    }
    let rom = genesis().rom;
    let out = home.framelock(&["play", "--headless", rom.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no core found takes"), "{err}");
    assert!(err.contains(&home.cores().display().to_string()), "{err}");
}

#[test]
fn two_cores_taking_the_same_extension_ask_for_core() {
    // PicoDrive runs Mega Drive games too.
    let home = Home::with_cores(&["genesis_plus_gx", "picodrive"]);
    let rom = genesis().rom;
    let out = home.framelock(&["play", "--headless", rom.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("several cores take") && err.contains("genesis_plus_gx, picodrive"),
        "{err}"
    );
    assert!(err.contains("--core NAME"), "{err}");
}

#[test]
fn cores_lists_name_version_extensions_and_path() {
    let home = Home::with_cores(&["genesis_plus_gx", "picodrive"]);
    let out = home.framelock(&["cores"]);
    assert!(out.status.success(), "{}", text(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    let row = table
        .lines()
        .find(|l| l.starts_with("genesis_plus_gx "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("Genesis Plus GX"), "{row}");
    assert!(row.contains("md"), "{row}");
    assert!(row.contains(&home.cores().display().to_string()), "{row}");
    assert!(
        table.lines().any(|l| l.starts_with("picodrive ")),
        "{table}"
    );
    let out = home.framelock(&["cores", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let gpgx = json
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "genesis_plus_gx")
        .unwrap_or_else(|| panic!("{json:#}"));
    assert_eq!(gpgx["core"], "Genesis Plus GX");
    assert!(gpgx["version"].as_str().is_some_and(|v| !v.is_empty()));
    assert!(gpgx["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e == "md"));
    // None found: where framelock looked.
    let empty = Home::with_cores(&[]);
    let out = empty.framelock(&["cores"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with("no libretro cores found; looked in"),
        "{said}"
    );
}

#[test]
fn a_replay_finds_a_moved_core_by_the_name_the_log_names() {
    let home = Home::with_cores(&["genesis_plus_gx"]);
    // Recorded with the core at a path that is then removed.
    let elsewhere = home.path().join("old");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let old = elsewhere.join("genesis_plus_gx_libretro.so");
    std::fs::copy(core("genesis_plus_gx"), &old).unwrap();
    let rom = genesis().rom;
    let log = home.path().join("m.flr");
    let out = home.framelock(&[
        "play",
        "--headless",
        "--fast",
        "--frames",
        "120",
        "--bot",
        "3",
        "--core",
        old.to_str().unwrap(),
        rom.to_str().unwrap(),
        "--record",
        log.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::remove_file(&old).unwrap();
    let out = home.framelock(&[
        "replay",
        "--headless",
        "--fast",
        "--verify",
        log.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the recorded core is gone; using"), "{err}");
}
