//! Proves that FBNeo's silently failing load of a missing or incomplete romset becomes a
//! `MissingRomset` error naming the set and the missing ROM files.

mod common;

use framelock::host::{Core, CoreSource, HostError};

/// A minimal zip archive (stored, no compression) holding the given files.
fn zip(files: &[(&str, &[u8])]) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    let (mut out, mut central) = (Vec::new(), Vec::new());
    for (name, data) in files {
        let offset = out.len() as u32;
        let (crc, len, name_len) = (crc32(data), data.len() as u32, name.len() as u16);
        // Fields after the signature: version, flags, method, time, date (stored: all 0).
        out.extend_from_slice(&[0x50, 0x4b, 0x03, 0x04, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        for v in [crc, len, len] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&name_len.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);

        central.extend_from_slice(&[0x50, 0x4b, 0x01, 0x02, 20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        for v in [crc, len, len] {
            central.extend_from_slice(&v.to_le_bytes());
        }
        central.extend_from_slice(&name_len.to_le_bytes());
        central.extend_from_slice(&[0; 12]); // extra, comment, disk, attributes
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let (cd_offset, cd_len, count) = (out.len() as u32, central.len() as u32, files.len() as u16);
    out.extend_from_slice(&central);
    out.extend_from_slice(&[0x50, 0x4b, 0x05, 0x06, 0, 0, 0, 0]);
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&cd_len.to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

fn load(dir: &std::path::Path, zip_bytes: &[u8]) -> HostError {
    let roms = dir.join("roms");
    std::fs::create_dir_all(&roms).unwrap();
    let zip = roms.join("sf2.zip");
    std::fs::write(&zip, zip_bytes).unwrap();
    let mut core = Core::open(
        &CoreSource::Path(common::core("fbneo")),
        &common::config(dir),
    )
    .unwrap();
    assert!(core.info().need_fullpath, "fbneo wants the zip path");
    core.load_game(Some(&zip))
        .expect_err("an incomplete romset must not load")
}

#[test]
fn fbneo_incomplete_romset_lists_missing_files() {
    let _one_core = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let err = load(dir.path(), &zip(&[("readme.txt", b"not a rom")]));
    let message = err.to_string();
    eprintln!("{message}");
    match err {
        HostError::MissingRomset { set, missing } => {
            assert_eq!(set, "sf2");
            assert!(!missing.is_empty(), "no missing rom named: {message}");
            assert!(message.contains(&missing[0]) && message.contains("sf2"));
        }
        other => panic!("expected MissingRomset, got {other:?}"),
    }
}

#[test]
fn fbneo_garbage_romset_names_the_set() {
    let _one_core = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let err = load(dir.path(), b"this is not a zip file");
    let message = err.to_string();
    eprintln!("{message}");
    assert!(
        matches!(&err, HostError::MissingRomset { set, .. } if set == "sf2"),
        "{err:?}"
    );
    assert!(message.contains("sf2"), "{message}");
}
