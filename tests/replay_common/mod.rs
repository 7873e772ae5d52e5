//! Helpers for the `replay_*` tests: the framelock binary in a sandboxed home, fixtures, and
//! an independent walk over a log's record framing.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

// A test crate may use two harnesses, each with its own copy of this module.
#[allow(clippy::duplicate_mod)]
#[path = "../fixtures/mod.rs"]
mod fixtures;
#[allow(unused_imports)] // each test crate uses a different subset
pub use fixtures::{checksum, genesis, text, Genesis, SETUP_HINT};

/// The options every Genesis run uses (the core's address-error emulation trips on
/// Airstriker).
pub const GENESIS_OPTION: &str = "genesis_plus_gx_addr_error=disabled";

/// The framelock binary sandboxed in `home` (see `fixtures::framelock`), run from `home`.
pub fn framelock(home: &Path) -> Command {
    let mut cmd = fixtures::framelock(home);
    cmd.current_dir(home);
    cmd
}

/// Runs framelock with `args` in `home`.
pub fn run(home: &Path, args: &[&str]) -> Output {
    framelock(home).args(args).output().expect("run framelock")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts a clean failure: non-zero exit, `needle` in stderr, no panic.
pub fn assert_fails_with(out: &Output, needle: &str) {
    let err = stderr(out);
    assert!(!out.status.success(), "expected failure\n{}", text(out));
    assert!(!err.contains("panicked"), "panicked\n{}", text(out));
    assert!(err.contains(needle), "expected {needle:?}\n{}", text(out));
}

pub fn assert_ok(out: &Output) {
    assert!(out.status.success(), "{}", text(out));
    assert!(!stderr(out).contains("panicked"), "{}", text(out));
}

/// Records `frames` frames of the built-in game (a bot with `bot`, if any) into `log` in
/// `home`, headless and unthrottled.
pub fn record_builtin(home: &Path, frames: u32, bot: Option<u32>, log: &str) {
    let frames = frames.to_string();
    let mut args = vec!["play", "--headless", "--fast", "--frames", &frames];
    let bot = bot.map(|b| b.to_string());
    if let Some(b) = &bot {
        args.extend(["--bot", b]);
    }
    args.extend(["--record", log]);
    assert_ok(&run(home, &args));
}

pub fn stats(path: &Path) -> Value {
    let json = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("stats {} not written: {e}", path.display()));
    serde_json::from_str(&json).expect("stats file is JSON")
}

fn varint(b: &[u8], pos: &mut usize) -> usize {
    let mut v = 0usize;
    for i in 0..5 {
        let byte = b[*pos];
        *pos += 1;
        v |= usize::from(byte & 0x7F) << (7 * i);
        if byte & 0x80 == 0 {
            break;
        }
    }
    v
}

/// One record of a log, found by walking the framing without the library's reader.
#[derive(Clone, Copy, Debug)]
pub struct RecordAt {
    pub start: usize,
    pub tag: u8,
    /// Where the payload starts and how long it is.
    pub payload: usize,
    pub len: usize,
    /// One past the record's 4-byte check.
    pub end: usize,
}

/// The header length and every record of `file`.
pub fn layout(file: &[u8]) -> (usize, Vec<RecordAt>) {
    let body_len = u32::from_le_bytes(file[10..14].try_into().unwrap()) as usize;
    let header_len = 14 + body_len + 8;
    let mut pos = header_len;
    let mut records = Vec::new();
    while pos < file.len() {
        let start = pos;
        let tag = file[pos];
        pos += 1;
        let len = varint(file, &mut pos);
        let payload = pos;
        pos += len + 4;
        records.push(RecordAt {
            start,
            tag,
            payload,
            len,
            end: pos,
        });
    }
    (header_len, records)
}
