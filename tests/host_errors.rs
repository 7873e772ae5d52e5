//! Proves that bad cores, bad content and bad options fail with errors that name the problem.

mod common;

use std::path::{Path, PathBuf};

use framelock::host::{Core, CoreSource, HostError};

fn open(path: PathBuf) -> Result<Core, HostError> {
    let dir = tempfile::tempdir().unwrap();
    Core::open(&CoreSource::Path(path), &common::config(dir.path()))
}

#[test]
fn nonexistent_core_is_named() {
    let err = open(PathBuf::from("/nonexistent/foo_libretro.so"))
        .err()
        .unwrap();
    assert!(matches!(err, HostError::OpenCore { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "cannot open core /nonexistent/foo_libretro.so: no such file or directory (os error 2)"
    );
    // The OS error is in the message, lowercase, and not again as a capitalised cause.
    assert!(std::error::Error::source(&err).is_none());
}

#[test]
fn a_directory_is_not_a_core() {
    let dir = tempfile::tempdir().unwrap();
    let err = open(dir.path().to_owned()).err().unwrap();
    assert_eq!(
        err.to_string(),
        format!("cannot open core {}: is a directory", dir.path().display())
    );
}

#[test]
fn text_file_is_not_a_core() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes_libretro.so");
    std::fs::write(&path, "just some text\n").unwrap();
    let err = open(path.clone()).err().unwrap();
    let message = err.to_string();
    assert!(matches!(err, HostError::NotACore { .. }), "{err:?}");
    // The path once: dlopen's own "PATH: " before its reason is left out.
    let shown = path.display().to_string();
    assert!(
        message.starts_with(&format!("{shown} is not a libretro core: "))
            && message.matches(&shown).count() == 1,
        "{message}"
    );
}

#[test]
fn library_without_retro_symbols_names_the_symbol() {
    let libz = [
        "/lib/x86_64-linux-gnu/libz.so.1",
        "/usr/lib/x86_64-linux-gnu/libz.so.1",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
    .expect("libz.so.1 (zlib1g) must be installed");
    let err = open(libz).err().unwrap();
    let message = err.to_string();
    assert!(
        matches!(
            err,
            HostError::MissingSymbol {
                symbol: "retro_set_environment",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        message.contains("missing symbol retro_set_environment"),
        "{message}"
    );
}

#[test]
fn refused_content_is_named() {
    let _one_core = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("bogus.gba");
    std::fs::write(&bogus, b"not a game boy advance rom").unwrap();
    let mut core = Core::open(
        &CoreSource::Path(common::core("mgba")),
        &common::config(dir.path()),
    )
    .unwrap();
    let err = core.load_game(Some(&bogus)).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, HostError::ContentRefused { .. }), "{err:?}");
    assert!(
        message.contains("core refused content") && message.contains("bogus.gba"),
        "{message}"
    );
}

#[test]
fn content_errors_and_one_core_per_process() {
    let _one_core = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let gpgx = CoreSource::Path(common::core("genesis_plus_gx"));
    let mut core = Core::open(&gpgx, &common::config(dir.path())).unwrap();
    assert!(dir.path().join("system").is_dir() && dir.path().join("saves").is_dir());

    let second = Core::open(&gpgx, &common::config(dir.path()))
        .err()
        .unwrap();
    assert!(matches!(second, HostError::AlreadyOpen), "{second:?}");

    let missing = dir.path().join("missing.md");
    let err = core.load_game(Some(&missing)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot read content {}: no such file or directory (os error 2)",
            missing.display()
        )
    );
    assert!(std::error::Error::source(&err).is_none());
    let err = core.load_game(Some(dir.path())).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot read content {}: is a directory",
            dir.path().display()
        )
    );
    let err = core.load_game(Some(Path::new("/dev/null"))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot read content /dev/null: not a regular file"
    );

    let err = core.load_game(None).unwrap_err();
    assert!(matches!(err, HostError::ContentRequired { .. }), "{err:?}");

    core.load_game(Some(&common::airstriker())).unwrap();
    assert_eq!(
        core.content_hash(),
        Some(xxhash(&std::fs::read(common::airstriker()).unwrap()))
    );
    let err = core.load_game(Some(&common::airstriker())).unwrap_err();
    assert!(matches!(err, HostError::AlreadyLoaded), "{err:?}");
    drop(core);

    // The slot is free again once the core is dropped.
    let again = Core::open(&gpgx, &common::config(dir.path()));
    assert!(again.is_ok(), "{:?}", again.err());
}

#[test]
fn core_options_are_validated_and_readable() {
    let _one_core = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let gpgx = CoreSource::Path(common::core("genesis_plus_gx"));
    let key = "genesis_plus_gx_region_detect";

    let mut config = common::config(dir.path());
    config.options = vec![(key.into(), "mars".into())];
    let err = Core::open(&gpgx, &config).err().unwrap();
    let message = err.to_string();
    assert!(matches!(err, HostError::InvalidOption { .. }), "{err:?}");
    assert!(
        message.contains(key) && message.contains("ntsc-u"),
        "{message}"
    );

    config.options = vec![
        (key.into(), "pal".into()),
        ("no_such_option".into(), "1".into()),
    ];
    let mut core = Core::open(&gpgx, &config).unwrap();
    core.load_game(Some(&common::airstriker())).unwrap();
    let options = core.options();
    assert!(options.len() > 5, "{options:?}");
    assert!(
        options.contains(&(key.to_owned(), "pal".to_owned())),
        "{options:?}"
    );
    assert!(
        (core.av_info().fps - 50.0).abs() < 0.5,
        "pal runs at 50 fps: {:?}",
        core.av_info()
    );

    let err = core.set_option(key, "mars").unwrap_err().to_string();
    assert!(err.contains("auto|"), "{err}");
    assert!(core.set_option("no_such_option", "1").is_err());
    core.set_option(key, "ntsc-u").unwrap();
    assert!(core
        .options()
        .contains(&(key.to_owned(), "ntsc-u".to_owned())));
}

/// What `framelock play` prints for core and content paths that are wrong: the path once and
/// the OS's words in lowercase, as replays, recordings and netplay say them; and a save RAM
/// file that cannot be read is left alone instead of being replaced at exit.
#[test]
fn the_binary_names_wrong_files_once_in_plain_words() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let gpgx = common::core("genesis_plus_gx");
    let rom = common::airstriker();
    let (gpgx, rom) = (gpgx.to_str().unwrap(), rom.to_str().unwrap());
    std::fs::write(h.join("notes.so"), "just some text\n").unwrap();
    let dir = h.to_str().unwrap();
    let play = |args: &[&str]| {
        common::framelock(h)
            .current_dir(h)
            .args(["play", "--headless", "--frames", "10"])
            .args(args)
            .output()
            .unwrap()
    };
    for (args, want) in [
        (
            vec!["--core", "/nope"],
            "error: cannot open core /nope: no such file or directory (os error 2)\n".to_string(),
        ),
        (
            vec!["--core", dir],
            format!("error: cannot open core {dir}: is a directory\n"),
        ),
        (
            vec!["--core", gpgx, "/nope.md"],
            "error: cannot read content /nope.md: no such file or directory (os error 2)\n"
                .to_string(),
        ),
        (
            vec!["--core", gpgx, dir],
            format!("error: cannot read content {dir}: is a directory\n"),
        ),
    ] {
        let out = play(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {}", common::text(&out));
        assert!(err.ends_with(&want), "{args:?}: {}", common::text(&out));
        assert_eq!(err.matches("error:").count(), 1, "{}", common::text(&out));
    }
    let out = play(&["--core", "notes.so"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: notes.so is not a libretro core: ")
            && err.matches("notes.so").count() == 1,
        "{}",
        common::text(&out)
    );

    // A save RAM file that cannot be read (here a directory) is said so when the game loads,
    // and is not written over at exit.
    let srm = h.join("saves/airstriker.srm");
    std::fs::create_dir_all(&srm).unwrap();
    let saves = h.join("saves");
    let out = play(&["--core", gpgx, rom, "--save-dir", saves.to_str().unwrap()]);
    assert!(out.status.success(), "{}", common::text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "cannot read save ram {}: is a directory (os error 21); playing without it, and \
             not saving over it",
            srm.display()
        )),
        "{}",
        common::text(&out)
    );
    assert!(!err.contains("cannot write save ram"), "{err}");
    assert!(srm.is_dir());
}

fn xxhash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}
