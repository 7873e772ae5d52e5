//! Proves that save RAM is loaded from `<save_dir>/<content stem>.srm` after loading
//! content and written back (atomically) when the core is dropped.

mod common;

use framelock::host::{Core, CoreSource, MemoryRegion};
use framelock::input::{Pad, MAX_PLAYERS};

#[test]
fn sram_round_trips_through_the_save_dir() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::config(dir.path());
    let srm = config.save_dir.join("airstriker.srm");
    std::fs::create_dir_all(&config.save_dir).unwrap();
    // GPGX reports save ram up to its last byte that is not 0xff: avoid 0xff.
    let pattern: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&srm, &pattern).unwrap();

    let gpgx = CoreSource::Path(common::core("genesis_plus_gx"));
    let mut core = Core::open(&gpgx, &config).unwrap();
    core.load_game(Some(&common::airstriker())).unwrap();
    for _ in 0..10 {
        core.run_frame(&[Pad::NEUTRAL; MAX_PLAYERS]);
    }
    let sram = core
        .memory(MemoryRegion::SaveRam)
        .expect("gpgx exposes save ram")
        .to_vec();
    assert_eq!(
        &sram[..pattern.len()],
        &pattern[..],
        "save ram not loaded from {}",
        srm.display()
    );
    // Remove the file so that finding it again proves the drop wrote it.
    std::fs::remove_file(&srm).unwrap();
    drop(core);

    let written = std::fs::read(&srm).unwrap();
    assert_eq!(written, sram, "save ram not written back on drop");
    let leftovers: Vec<_> = std::fs::read_dir(&config.save_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "airstriker.srm")
        .collect();
    assert!(
        leftovers
            .iter()
            .all(|n| !n.to_string_lossy().contains(".tmp")),
        "{leftovers:?}"
    );
}
