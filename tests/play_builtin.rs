//! The built-in game (no CONTENT, no --core) is deterministic across processes: the same bot
//! seed gives the same checksum twice, a different seed a different one.

mod play_common;

use play_common::{checksum, headless_stats};

#[test]
fn bot_seed_decides_the_checksum() {
    let home = tempfile::tempdir().unwrap();
    let run = |name: &str, seed: &str| {
        headless_stats(
            home.path(),
            name,
            &["--fast", "--frames", "1200", "--bot", seed],
        )
    };
    let a = run("a", "11");
    let b = run("b", "11");
    let c = run("c", "12");
    assert_eq!(checksum(&a), checksum(&b), "same seed, different result");
    assert_ne!(checksum(&a), checksum(&c), "the bot's seed changed nothing");
    assert_eq!(a["frames"], 1200);
    assert_eq!(a["content"], serde_json::Value::Null);
    assert_eq!(a["core_path"], "built-in core");
    assert!(
        a["core"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("lightcycles"),
        "{a}"
    );
}
