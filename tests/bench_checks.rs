//! The benchmarks' checks (tests/benches/smoke.rs): a setting a benchmark cannot run, or a
//! missing fixture, ends it with a non-zero status and a message naming the problem. Runs
//! the bench executables `cargo build --release --all-targets` (`bash .ci/test`) left next
//! to this test's own, with settings that fail before any scenario starts, so it is quick.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "benches/smoke.rs"]
mod smoke;

/// The newest built executable of benchmark `name` (`target/release/deps/NAME-HASH`).
fn bench_exe(name: &str) -> PathBuf {
    let me = std::env::current_exe().unwrap();
    let deps = me.parent().unwrap();
    let is_exe = |p: &Path| {
        let file = p.file_name().unwrap().to_string_lossy().into_owned();
        file.strip_prefix(&format!("{name}-"))
            .is_some_and(|hash| hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()))
    };
    let newest = std::fs::read_dir(deps)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| is_exe(p))
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok());
    let exe = newest.unwrap_or_else(|| {
        panic!(
            "no built benchmark {name} in {}: build it first (`cargo build --release \
             --all-targets`, as `bash .ci/test` does)",
            deps.display()
        )
    });
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/benches/{name}.rs"));
    let modified = |p: &Path| p.metadata().unwrap().modified().unwrap();
    assert!(
        modified(&exe) >= modified(&source),
        "{} is older than {}: rebuild the benchmarks",
        exe.display(),
        source.display()
    );
    exe
}

/// Runs benchmark `name` with `env` (and no other FRAMELOCK_ variables); its exit code and
/// stderr.
fn run(name: &str, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = Command::new(bench_exe(name));
    for (k, _) in std::env::vars() {
        if k.starts_with("FRAMELOCK_") {
            cmd.env_remove(k);
        }
    }
    let out = cmd.envs(env.iter().copied()).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_impossible_room_count_is_named_and_fails() {
    for rooms in ["0", "10,0", "ten"] {
        let (code, err) = run("serve_capacity", &[("FRAMELOCK_BENCH_ROOMS", rooms)]);
        assert_eq!(code, Some(1), "FRAMELOCK_BENCH_ROOMS={rooms}: {err}");
        assert!(
            err.contains("bench serve_capacity: FRAMELOCK_BENCH_ROOMS"),
            "FRAMELOCK_BENCH_ROOMS={rooms}: {err}"
        );
    }
}

#[test]
fn a_session_too_short_for_spectators_says_so() {
    let (code, err) = run("spectators", &[("FRAMELOCK_BENCH_SECS", "2")]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("FRAMELOCK_BENCH_SECS=2 is too short"), "{err}");
}

#[test]
fn a_length_that_is_not_a_number_is_named() {
    let (code, err) = run("netplay_cpu", &[("FRAMELOCK_BENCH_SECS", "a minute")]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("FRAMELOCK_BENCH_SECS=\"a minute\""), "{err}");
}

#[test]
fn a_missing_fixture_is_named_and_fails() {
    let empty = tempfile::tempdir().unwrap();
    let dir = empty.path().to_str().unwrap();
    let (code, err) = run("netplay_cpu", &[("FRAMELOCK_FIXTURES", dir)]);
    assert!(code.is_some_and(|c| c != 0), "{code:?}: {err}");
    assert!(
        err.contains("missing fixture") && err.contains(dir),
        "{err}"
    );
}

#[test]
fn numbers_that_are_not_numbers_are_refused() {
    assert!(smoke::check("x", f64::NAN).is_err());
    assert!(smoke::check("x", f64::INFINITY).is_err());
    assert_eq!(smoke::check("x", 1.5), Ok(1.5));
    assert_eq!(smoke::parse_counts("V", "10, 250"), Ok(vec![10, 250]));
    assert!(smoke::parse_counts("V", "").is_err());
    assert_eq!(
        smoke::median_spread(vec![1.3, 1.1, 1.2, 2.0]),
        Some((1.25, 1.1, 2.0))
    );
    assert_eq!(smoke::median_spread(vec![f64::NAN]), None);
}
