//! Proves that bad cores, bad content and bad options fail with errors that name the problem.

mod common;

use std::path::PathBuf;

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
    assert!(matches!(err, HostError::CoreNotFound(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "core not found: /nonexistent/foo_libretro.so"
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
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("is not a libretro core"), "{message}");
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
        format!("content not found: {}", missing.display())
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

fn xxhash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}
