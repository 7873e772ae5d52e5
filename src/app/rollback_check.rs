//! The rollback check a core passes before netplay speculates on it: a few hundred frames
//! with two bots playing, the state saved after each, and every [`DEPTH`] frames the state
//! of [`DEPTH`] frames back loaded and those frames run again, each frame's memory checksum
//! compared with its first run (`play --sync-test`, shorter). A core that saves too little,
//! loads wrong, depends on something outside its state or says its states are incomplete
//! (`RETRO_SERIALIZATION_QUIRK_INCOMPLETE`) fails. It also measures what a run, a save and a
//! load cost, which sets how deep `--speculate auto` may go.
//!
//! It runs once per core name, core version and game: the verdict is kept in the cache
//! directory, one small TOML file per key, written whole (a temporary file renamed), so a
//! crash never leaves half of one. A file that does not parse, or comes from another check
//! or framelock version, is ignored and written anew.
//!
//! [`Check`] runs in slices ([`Check::step`]) so that a lobby stays responsive while it
//! runs; it leaves the machine where it found it: its state, save RAM and pending sound.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::runner::Costs;
use super::sync_test::Checksummed;
use crate::input::{Bot, Inputs, Pad, MAX_PLAYERS};

/// Frames the check runs (about 5 s of play; each is run again once).
pub const FRAMES: u32 = 300;
/// How far back each comparison goes.
pub const DEPTH: usize = 8;
/// Bumped when the check changes: verdicts from an older check are made again.
const CHECK_VERSION: u32 = 1;

/// `RETRO_SERIALIZATION_QUIRK_INCOMPLETE`: the core says its states are not fit for
/// netplay or rerecording.
pub const QUIRK_INCOMPLETE: u64 = 1 << 0;

/// What the check is about: a core version and a game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckKey {
    pub core: String,
    pub version: String,
    /// xxh3 of the content file (`None`: the core runs without content).
    pub content: Option<u64>,
}

impl CheckKey {
    /// The cache file's name: readable, and safe on any file system.
    fn file_name(&self) -> String {
        let clean = |s: &str| -> String {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .take(48)
                .collect()
        };
        let content = self.content.map_or("none".into(), |h| format!("{h:016x}"));
        let version = xxhash_rust::xxh3::xxh3_64(self.version.as_bytes());
        format!(
            "{}-{}-{version:08x}-{content}.toml",
            clean(&self.core),
            clean(&self.version),
            version = version as u32
        )
    }
}

/// What the check found.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// `Err(why)` when the core failed.
    pub passed: Result<(), String>,
    pub costs: Costs,
    pub frames: u32,
    pub state_bytes: usize,
}

impl Verdict {
    /// The frames a rollback may run again within `budget` on this machine (see
    /// `Costs::affordable`).
    pub fn affordable(&self, budget: Duration) -> Option<u32> {
        self.costs.affordable(budget)
    }
}

/// The cache file's contents.
#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    check: u32,
    framelock: String,
    core: String,
    version: String,
    content: Option<String>,
    passed: bool,
    why: Option<String>,
    frames: u32,
    state_bytes: usize,
    run_us: f64,
    save_us: f64,
    load_us: f64,
}

/// Where `key`'s verdict is kept under `dir`.
pub fn cache_path(dir: &Path, key: &CheckKey) -> PathBuf {
    dir.join("rollback-check").join(key.file_name())
}

/// The verdict kept for `key`, if there is a sound one from this check and version.
pub fn cached(dir: &Path, key: &CheckKey) -> Option<Verdict> {
    let path = cache_path(dir, key);
    let text = std::fs::read_to_string(&path).ok()?;
    let stored: Stored = match toml::from_str(&text) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(
                "the rollback check's cache {} is damaged ({}); checking again",
                path.display(),
                e.message()
            );
            return None;
        }
    };
    let content = key.content.map(|h| format!("{h:016x}"));
    if stored.check != CHECK_VERSION
        || stored.framelock != env!("CARGO_PKG_VERSION")
        || stored.core != key.core
        || stored.version != key.version
        || stored.content != content
    {
        tracing::debug!("{} is from another check; checking again", path.display());
        return None;
    }
    let us = |v: f64| (v.is_finite() && v >= 0.0).then(|| Duration::from_secs_f64(v / 1e6));
    Some(Verdict {
        passed: match stored.passed {
            true => Ok(()),
            false => Err(stored.why.unwrap_or_else(|| "failed".into())),
        },
        costs: Costs {
            run: us(stored.run_us),
            save: us(stored.save_us),
            load: us(stored.load_us),
        },
        frames: stored.frames,
        state_bytes: stored.state_bytes,
    })
}

/// Keeps `verdict` for `key` under `dir`; a failure to write is logged (the check then runs
/// again next time), never an error.
pub fn store(dir: &Path, key: &CheckKey, verdict: &Verdict) {
    let path = cache_path(dir, key);
    let us = |d: Option<Duration>| d.map_or(-1.0, |d| d.as_secs_f64() * 1e6);
    let stored = Stored {
        check: CHECK_VERSION,
        framelock: env!("CARGO_PKG_VERSION").into(),
        core: key.core.clone(),
        version: key.version.clone(),
        content: key.content.map(|h| format!("{h:016x}")),
        passed: verdict.passed.is_ok(),
        why: verdict.passed.clone().err(),
        frames: verdict.frames,
        state_bytes: verdict.state_bytes,
        run_us: us(verdict.costs.run),
        save_us: us(verdict.costs.save),
        load_us: us(verdict.costs.load),
    };
    let result = (|| -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let text = toml::to_string(&stored).map_err(std::io::Error::other)?;
        let tmp = dir.join(format!(".{}.tmp", std::process::id()));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &path)
    })();
    if let Err(e) = result {
        tracing::warn!(
            "could not keep the rollback check's verdict in {} ({e}); it runs again next time",
            path.display()
        );
    }
}

/// One frame of the window compared: its inputs, the memory checksum after it, the state
/// after it.
struct Step {
    inputs: Inputs,
    checksum: u64,
    state: Vec<u8>,
}

/// The machine as the check found it: its state, save RAM and the sound not drained yet.
struct Found {
    state: Vec<u8>,
    sram: Option<Vec<u8>>,
    sound: Vec<i16>,
}

/// A check under way (see the module doc).
pub struct Check {
    bots: [Bot; 2],
    /// The machine as it was found.
    start: Option<Found>,
    window: VecDeque<Step>,
    spare: Vec<Vec<u8>>,
    frame: u32,
    frames: u32,
    costs: Costs,
    state_bytes: usize,
    failed: Option<String>,
}

impl Check {
    /// A check of `frames` frames.
    pub fn new(frames: u32) -> Check {
        Check {
            bots: [Bot::for_port(0x5eed, 0), Bot::for_port(0x5eed, 1)],
            start: None,
            window: VecDeque::new(),
            spare: Vec::new(),
            frame: 0,
            frames,
            costs: Costs::default(),
            state_bytes: 0,
            failed: None,
        }
    }

    /// Runs the check until it is done or `budget` of wall time passed; `Some` when done,
    /// with the machine back where it was found.
    pub fn step<M: Checksummed>(&mut self, machine: &mut M, budget: Duration) -> Option<Verdict> {
        let t0 = Instant::now();
        if self.start.is_none() {
            if machine.serialization_quirks() & QUIRK_INCOMPLETE != 0 {
                self.failed = Some("the core says its savestates are incomplete".into());
                return Some(self.verdict());
            }
            let Some(state) = machine.save_state() else {
                self.failed = Some("the core cannot save its state".into());
                return Some(self.verdict());
            };
            let sram = machine.save_ram();
            let sound = machine.take_audio();
            self.start = Some(Found { state, sram, sound });
        }
        while self.failed.is_none() && self.frame < self.frames {
            self.one_frame(machine);
            if t0.elapsed() >= budget {
                return None;
            }
        }
        Some(self.finish(machine))
    }

    /// Runs the check to its end at once.
    pub fn run<M: Checksummed>(mut self, machine: &mut M) -> Verdict {
        loop {
            if let Some(v) = self.step(machine, Duration::from_secs(3600)) {
                return v;
            }
        }
    }

    fn one_frame<M: Checksummed>(&mut self, machine: &mut M) {
        let frame = u64::from(self.frame);
        let mut inputs = [Pad::NEUTRAL; MAX_PLAYERS];
        inputs[0] = self.bots[0].next(frame);
        inputs[1] = self.bots[1].next(frame);
        let t = Instant::now();
        machine.run_frame(&inputs);
        smooth(&mut self.costs.run, t.elapsed());
        machine.discard_audio();
        let checksum = machine.checksum();
        let mut state = self.spare.pop().unwrap_or_default();
        let t = Instant::now();
        if !machine.save_state_into(&mut state) {
            self.failed = Some(format!(
                "the core could not save its state after frame {}",
                frame + 1
            ));
            return;
        }
        smooth(&mut self.costs.save, t.elapsed());
        self.state_bytes = self.state_bytes.max(state.len());
        self.window.push_back(Step {
            inputs,
            checksum,
            state,
        });
        self.frame += 1;
        if self.window.len() > DEPTH {
            if let Some(old) = self.window.pop_front() {
                self.spare.push(old.state);
            }
        }
        if self.window.len() == DEPTH && self.frame.is_multiple_of(DEPTH as u32) {
            self.compare(machine);
        }
    }

    /// Back to the oldest frame of the window, then the newer ones again, silently.
    fn compare<M: Checksummed>(&mut self, machine: &mut M) {
        let first = self.frame - DEPTH as u32 + 1;
        let t = Instant::now();
        if !machine.load_state(&self.window[0].state) {
            self.failed = Some(format!("the core refused its own state of frame {first}"));
            return;
        }
        smooth(&mut self.costs.load, t.elapsed());
        for (i, step) in self.window.iter().enumerate().skip(1) {
            machine.run_frame(&step.inputs);
            machine.discard_audio();
            let again = machine.checksum();
            if again != step.checksum {
                self.failed = Some(format!(
                    "frame {} run again from the state of frame {first} has memory checksum \
                     {again:016x}, its first run had {:016x}",
                    first + i as u32,
                    step.checksum
                ));
                return;
            }
        }
    }

    fn finish<M: Checksummed>(&mut self, machine: &mut M) -> Verdict {
        if let Some(Found { state, sram, sound }) = self.start.take() {
            if !machine.load_state(&state) && self.failed.is_none() {
                self.failed = Some("the core refused its own state".into());
            }
            if let Some(sram) = sram {
                machine.restore_save_ram(&sram);
            }
            machine.put_back_audio(sound);
        }
        self.verdict()
    }

    fn verdict(&self) -> Verdict {
        Verdict {
            passed: self.failed.clone().map_or(Ok(()), Err),
            costs: self.costs,
            frames: self.frame,
            state_bytes: self.state_bytes,
        }
    }
}

fn smooth(old: &mut Option<Duration>, new: Duration) {
    *old = Some(match *old {
        Some(old) => old.mul_f64(0.9) + new.mul_f64(0.1),
        None => new,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::runner::Machine;

    /// A machine whose memory is a hash of its inputs; `forgets` makes its loads drop part
    /// of the state (a core that saves too little).
    #[derive(Default)]
    struct Hashy {
        hash: u64,
        extra: u64,
        forgets: bool,
        sram: Vec<u8>,
        quirks: u64,
    }

    impl Machine for Hashy {
        fn run_frame(&mut self, inputs: &Inputs) {
            self.extra = self.extra.wrapping_add(1);
            self.hash = inputs.iter().fold(self.hash ^ self.extra, |h, p| {
                (h ^ u64::from(p.0)).wrapping_mul(0x100_0000_01b3)
            });
            self.sram = self.hash.to_le_bytes().to_vec();
        }
        fn fps(&self) -> f64 {
            60.0
        }
        fn save_state(&mut self) -> Option<Vec<u8>> {
            let mut v = self.hash.to_le_bytes().to_vec();
            v.extend(self.extra.to_le_bytes());
            Some(v)
        }
        fn load_state(&mut self, s: &[u8]) -> bool {
            self.hash = u64::from_le_bytes(s[..8].try_into().unwrap());
            if !self.forgets {
                self.extra = u64::from_le_bytes(s[8..].try_into().unwrap());
            }
            true
        }
    }

    impl Checksummed for Hashy {
        fn checksum(&mut self) -> u64 {
            self.hash
        }
        fn take_audio(&mut self) -> Vec<i16> {
            vec![1, 2, 3]
        }
        fn put_back_audio(&mut self, _samples: Vec<i16>) {}
        fn save_ram(&mut self) -> Option<Vec<u8>> {
            Some(self.sram.clone())
        }
        fn restore_save_ram(&mut self, sram: &[u8]) {
            self.sram = sram.to_vec();
        }
        fn serialization_quirks(&self) -> u64 {
            self.quirks
        }
    }

    #[test]
    fn a_sound_core_passes_and_is_left_where_it_was_found() {
        let mut m = Hashy::default();
        m.run_frame(&[Pad(3); MAX_PLAYERS]);
        let (hash, extra, sram) = (m.hash, m.extra, m.sram.clone());
        let mut check = Check::new(FRAMES);
        // In slices, as a lobby runs it.
        let verdict = loop {
            if let Some(v) = check.step(&mut m, Duration::ZERO) {
                break v;
            }
        };
        assert_eq!(verdict.passed, Ok(()));
        assert_eq!(verdict.frames, FRAMES);
        assert!(verdict.costs.run.is_some() && verdict.costs.load.is_some());
        assert_eq!((m.hash, m.extra, m.sram), (hash, extra, sram));
    }

    #[test]
    fn a_core_that_loads_too_little_fails_naming_the_frame() {
        let mut m = Hashy {
            forgets: true,
            ..Hashy::default()
        };
        let verdict = Check::new(FRAMES).run(&mut m);
        let why = verdict.passed.unwrap_err();
        assert!(
            why.contains("run again from the state of frame 1 "),
            "{why}"
        );
        let mut m = Hashy {
            quirks: QUIRK_INCOMPLETE,
            ..Hashy::default()
        };
        let why = Check::new(FRAMES).run(&mut m).passed.unwrap_err();
        assert!(why.contains("savestates are incomplete"), "{why}");
    }

    #[test]
    fn verdicts_are_kept_by_core_version_and_game_and_damaged_files_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let key = CheckKey {
            core: "Genesis Plus GX".into(),
            version: "v1.7.4 61f7c2a".into(),
            content: Some(0x1a2b_3c4d_5e6f_7081),
        };
        assert_eq!(cached(dir.path(), &key), None);
        let verdict = Verdict {
            passed: Err("frame 9 differs".into()),
            costs: Costs {
                run: Some(Duration::from_micros(250)),
                save: Some(Duration::from_micros(20)),
                load: Some(Duration::from_micros(140)),
            },
            frames: 9,
            state_bytes: 1 << 20,
        };
        store(dir.path(), &key, &verdict);
        let back = cached(dir.path(), &key).expect("kept");
        assert_eq!(back.passed, verdict.passed);
        assert_eq!(back.frames, 9);
        let run = back.costs.run.unwrap().as_secs_f64();
        assert!((run - 250e-6).abs() < 1e-9, "{run}");
        // Another version or another game is another key.
        let other = CheckKey {
            version: "v1.7.5".into(),
            ..key.clone()
        };
        assert_eq!(cached(dir.path(), &other), None);
        let other = CheckKey {
            content: Some(1),
            ..key.clone()
        };
        assert_eq!(cached(dir.path(), &other), None);
        // A damaged file is ignored, then written anew.
        let path = cache_path(dir.path(), &key);
        std::fs::write(&path, "passed = tru").unwrap();
        assert_eq!(cached(dir.path(), &key), None);
        store(dir.path(), &key, &verdict);
        assert!(cached(dir.path(), &key).is_some());
        // One from another check version is ignored.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("check = 1", "check = 0")).unwrap();
        assert_eq!(cached(dir.path(), &key), None);
        // The file name is safe whatever the core calls itself.
        let odd = CheckKey {
            core: "../../etc/passwd".into(),
            version: "a/b\\c".into(),
            content: None,
        };
        let name = odd.file_name();
        assert!(!name.contains('/') && !name.contains('\\'), "{name}");
    }
}
