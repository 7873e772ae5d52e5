//! FBNeo with a missing romset (an empty sf2.zip) fails with a message naming the set.

mod play_common;

use play_common::{fixtures, framelock, text};

#[test]
fn missing_romset_is_a_clear_error() {
    let f = fixtures();
    let home = tempfile::tempdir().unwrap();
    let roms = home.path().join("roms");
    std::fs::create_dir_all(&roms).unwrap();
    let zip = roms.join("sf2.zip");
    std::fs::write(&zip, b"").unwrap();
    let out = framelock(home.path())
        .args(["play", "--headless", "--frames", "10", "--core"])
        .arg(&f.fbneo)
        .arg(&zip)
        .arg("--system-dir")
        .arg(home.path().join("system"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line\n{}", text(&out)));
    assert!(
        error.contains("sf2"),
        "error does not name the set: {error}"
    );
    assert!(error.contains("romset"), "{error}");
}
