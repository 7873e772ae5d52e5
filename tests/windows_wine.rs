//! framelock.exe (x86_64-pc-windows-gnu, built by `.ci/windows-build`) under Debian's Wine,
//! beside the Linux binary: the built-in game gives the Linux checksum; a Linux host and a
//! Windows joiner (and the other way round) stay in sync through the conditioner and each
//! one's recording verifies on the other system; `rooms` and a room join through a Linux
//! `serve`; the exe's own `cores\` folder; the errors a Windows user meets; a window under
//! Xvfb.
//!
//! Each test starts its Wine processes itself, in the Wine prefix that `.ci/wine-prefix`
//! makes under target/tmp (once per checkout; it gives Wine 8 the `bcryptprimitives.dll` of
//! Windows 10 that Rust's std imports). Without the Rust target, MinGW or Wine, every test
//! prints one line saying it was NOT RUN and returns.

mod play_common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use play_common::{checksum, free_port, start_xvfb, text};
use serde_json::Value;

const TARGET: &str = "x86_64-pc-windows-gnu";

/// What the tests run Windows programs with.
struct Wine {
    loader: PathBuf,
    prefix: PathBuf,
    exe: PathBuf,
    /// The built-in game as a Windows core.
    core_dll: PathBuf,
}

/// Wine, its prefix and the Windows build, made once per test binary; `Err`: why the
/// Windows checks cannot run here.
fn wine() -> Result<&'static Wine, &'static str> {
    static WINE: OnceLock<Result<Wine, String>> = OnceLock::new();
    WINE.get_or_init(setup).as_ref().map_err(|e| e.as_str())
}

/// Prints why a test is not run; the caller returns.
macro_rules! wine_or_skip {
    () => {
        match wine() {
            Ok(w) => w,
            Err(why) => {
                eprintln!("NOT RUN (Windows check): {why}");
                return;
            }
        }
    };
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs a `.ci` script: `Ok(stdout)`, or `Err` with its one line when it exits 3 (a tool
/// missing: the checks are not run); any other failure fails the test.
fn ci_script(name: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new("bash")
        .arg(root().join(".ci").join(name))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run .ci/{name}: {e}"));
    match out.status.code() {
        Some(0) => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        Some(3) => Err(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        _ => panic!(".ci/{name} failed:\n{}", text(&out)),
    }
}

fn setup() -> Result<Wine, String> {
    // Builds what changed: seconds when CI's .ci/test built it already.
    let t = Instant::now();
    ci_script("windows-build", &[])?;
    eprintln!(
        "windows build checked in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let lines = ci_script("wine-prefix", &[])?;
    eprintln!("Wine prefix ready in {:.1} s", t.elapsed().as_secs_f64());
    let mut lines = lines.lines();
    let (loader, prefix) = (lines.next(), lines.next());
    let (Some(loader), Some(prefix)) = (loader, prefix) else {
        panic!(".ci/wine-prefix printed no loader and prefix");
    };
    let release = root().join("target").join(TARGET).join("release");
    Ok(Wine {
        loader: loader.into(),
        prefix: prefix.into(),
        exe: release.join("framelock.exe"),
        core_dll: release.join("lightcycles.dll"),
    })
}

impl Wine {
    /// `framelock.exe ARGS` with config and data in `home` (through `--config`, since a
    /// Windows program finds %APPDATA% in the prefix, not in the environment).
    fn framelock(&self, exe: &Path) -> Command {
        let mut cmd = Command::new(&self.loader);
        cmd.arg(exe)
            .env("WINEPREFIX", &self.prefix)
            .env("WINEDEBUG", "-all")
            .env("WINEDLLOVERRIDES", "winemenubuilder.exe=d")
            .env_remove("DISPLAY")
            .env_remove("RUST_LOG");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.framelock(&self.exe).args(args).output().unwrap()
    }
}

/// `path` as Windows sees it through Wine's Z: drive, with a drive letter and backslashes.
fn win(path: &Path) -> String {
    format!("Z:{}", path.display()).replace('/', "\\")
}

fn linux(home: &Path) -> Command {
    play_common::framelock(home)
}

/// One running framelock (either system) with its log in a file, killed if it overruns.
struct Proc {
    label: String,
    child: Child,
    log: PathBuf,
    status: Option<ExitStatus>,
}

impl Proc {
    fn spawn(mut cmd: Command, dir: &Path, label: &str, args: &[String]) -> Proc {
        let log = dir.join(format!("{label}.log"));
        let child = cmd
            .args(args)
            .env("RUST_LOG", "info")
            .env("USER", label)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .expect("spawn framelock");
        Proc {
            label: label.into(),
            child,
            log,
            status: None,
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_for_log(&mut self, needle: &str, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if self.log_text().contains(needle) {
                return true;
            }
            if self.status.is_none() {
                self.status = self.child.try_wait().unwrap();
            }
            if self.status.is_some() {
                return self.log_text().contains(needle);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    fn wait_ok(&mut self, timeout: Duration) {
        let end = Instant::now() + timeout;
        while self.status.is_none() {
            self.status = self.child.try_wait().unwrap();
            if Instant::now() >= end {
                let _ = self.child.kill();
                panic!(
                    "{} still running after {timeout:?}:\n{}",
                    self.label,
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            self.status.is_some_and(|s| s.success()),
            "{} exited with {:?}:\n{}",
            self.label,
            self.status,
            self.log_text()
        );
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn stats(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no stats at {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_exe_plays_the_builtin_game_to_the_linux_checksum() {
    let w = wine_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let play = [
        "play",
        "--headless",
        "--frames",
        "3000",
        "--bot",
        "1",
        "--fast",
    ];
    let out = w
        .framelock(&w.exe)
        .args(play)
        .args(["--stats-json", &win(&d.join("win.json"))])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let out = linux(d)
        .args(play)
        .arg("--stats-json")
        .arg(d.join("linux.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let (win_stats, linux_stats) = (stats(&d.join("win.json")), stats(&d.join("linux.json")));
    assert_eq!(checksum(&win_stats), checksum(&linux_stats));
    assert_eq!(win_stats["frames"], 3000);
    // Report only: the headless speed under Wine against native Linux.
    eprintln!(
        "headless --fast fps: wine {} linux {}",
        win_stats["fps"], linux_stats["fps"]
    );

    // --version names the protocol, as on Linux.
    let out = w.run(&["--version"]);
    let version = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(version.contains("netplay protocol"), "{}", text(&out));
    let out = linux(d).arg("--version").output().unwrap();
    assert_eq!(version, String::from_utf8_lossy(&out.stdout));
}

/// A host on one system and a joiner on the other, both impairing their side; both end
/// with the same checksum, and each one's recording verifies on the other system.
fn cross_session(w: &Wine, windows_hosts: bool) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let frames = "600";
    let netsim = "delay=20ms,jitter=5ms,loss=5%";
    let (host_cmd, join_cmd) = if windows_hosts {
        (w.framelock(&w.exe), linux(d))
    } else {
        (linux(d), w.framelock(&w.exe))
    };
    // Each side names its files in its own system's spelling.
    let name = |file: &str, windows: bool| {
        if windows {
            win(&d.join(file))
        } else {
            d.join(file).display().to_string()
        }
    };
    let mut host = Proc::spawn(
        host_cmd,
        d,
        "host",
        &args(&[
            "host",
            "--headless",
            "--port",
            &port.to_string(),
            "--players",
            "2",
            "--frames",
            frames,
            "--bot",
            "1",
            "--netsim",
            netsim,
            "--record",
            &name("host.flr", windows_hosts),
            "--stats-json",
            &name("host.json", windows_hosts),
            "--lobby-timeout",
            "60",
        ]),
    );
    assert!(
        host.wait_for_log("hosting on udp port", Duration::from_secs(30)),
        "host did not start:\n{}",
        host.log_text()
    );
    let mut join = Proc::spawn(
        join_cmd,
        d,
        "join",
        &args(&[
            "join",
            &format!("127.0.0.1:{port}"),
            "--headless",
            "--frames",
            frames,
            "--bot",
            "2",
            "--netsim",
            netsim,
            "--record",
            &name("join.flr", !windows_hosts),
            "--stats-json",
            &name("join.json", !windows_hosts),
        ]),
    );
    join.wait_ok(Duration::from_secs(90));
    host.wait_ok(Duration::from_secs(30));
    let (h, j) = (stats(&d.join("host.json")), stats(&d.join("join.json")));
    assert_eq!(checksum(&h), checksum(&j), "host and joiner differ");
    assert_eq!(h["frames"], 600);
    assert!(h["netsim"]["dropped"].as_u64().unwrap_or(0) > 0, "{h}");

    // The Windows peer's recording on Linux, the Linux peer's under Wine.
    let (win_log, linux_log) = if windows_hosts {
        ("host.flr", "join.flr")
    } else {
        ("join.flr", "host.flr")
    };
    let out = linux(d)
        .args(["replay", "--headless", "--fast", "--verify"])
        .arg(d.join(win_log))
        .output()
        .unwrap();
    assert!(out.status.success(), "Windows log on Linux: {}", text(&out));
    let out = w.run(&[
        "replay",
        "--headless",
        "--fast",
        "--verify",
        &win(&d.join(linux_log)),
    ]);
    assert!(out.status.success(), "Linux log under Wine: {}", text(&out));
}

#[test]
fn a_linux_host_and_a_windows_joiner_stay_in_sync_and_verify_each_others_logs() {
    let w = wine_or_skip!();
    cross_session(w, false);
}

#[test]
fn a_windows_host_and_a_linux_joiner_stay_in_sync_and_verify_each_others_logs() {
    let w = wine_or_skip!();
    cross_session(w, true);
}

#[test]
fn the_exe_lists_rooms_and_joins_one_through_a_linux_server() {
    let w = wine_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let server_addr = format!("127.0.0.1:{port}");
    let mut server = Proc::spawn(
        linux(d),
        d,
        "server",
        &args(&["serve", "--port", &port.to_string(), "--bind", "127.0.0.1"]),
    );
    assert!(
        server.wait_for_log("serve: listening on udp", Duration::from_secs(15)),
        "{}",
        server.log_text()
    );
    let mut host = Proc::spawn(
        linux(d),
        d,
        "host",
        &args(&[
            "host",
            "--headless",
            "--server",
            &server_addr,
            "--room",
            "wine",
            "--path",
            "relayed",
            "--frames",
            "300",
            "--bot",
            "1",
            "--no-record",
            "--stats-json",
            &d.join("host.json").display().to_string(),
        ]),
    );
    assert!(
        host.wait_for_log("your friends join with", Duration::from_secs(15)),
        "{}",
        host.log_text()
    );
    let out = w.run(&["rooms", &server_addr]);
    assert!(out.status.success(), "{}", text(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("wine"), "no room `wine` in:\n{table}");
    let out = w.run(&["rooms", &server_addr, "--json"]);
    let rooms: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rooms.to_string().contains("\"wine\""), "{rooms}");

    let mut join = Proc::spawn(
        w.framelock(&w.exe),
        d,
        "join",
        &args(&[
            "join",
            &server_addr,
            "--room",
            "wine",
            "--headless",
            "--frames",
            "300",
            "--bot",
            "2",
            "--no-record",
            "--stats-json",
            &win(&d.join("join.json")),
        ]),
    );
    join.wait_ok(Duration::from_secs(90));
    host.wait_ok(Duration::from_secs(30));
    assert_eq!(
        checksum(&stats(&d.join("host.json"))),
        checksum(&stats(&d.join("join.json")))
    );
}

#[test]
fn cores_beside_the_exe_are_found_by_name_and_its_log_replays_on_linux_by_name() {
    let w = wine_or_skip!();
    // The layout of the zip: framelock.exe with a cores folder beside it.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("cores")).unwrap();
    let exe = d.join("framelock.exe");
    std::fs::hard_link(&w.exe, &exe)
        .or_else(|_| std::fs::copy(&w.exe, &exe).map(drop))
        .unwrap();
    std::fs::copy(&w.core_dll, d.join("cores/lightcycles_libretro.dll")).unwrap();
    let out = w
        .framelock(&exe)
        .args(["cores", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let cores: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cores[0]["name"], "lightcycles", "{cores}");
    assert!(
        cores[0]["path"]
            .as_str()
            .is_some_and(|p| p.ends_with(r"cores\lightcycles_libretro.dll")),
        "{cores}"
    );
    let out = w
        .framelock(&exe)
        .args(["play", "--core", "lightcycles", "--headless", "--fast"])
        .args(["--frames", "600", "--bot", "3", "--record"])
        .arg(win(&d.join("dll.flr")))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));

    // Its header names the core at a Windows path; Linux finds it by name in cores_dir.
    let home = d.join("home");
    std::fs::create_dir_all(home.join("cores")).unwrap();
    let so = root().join("target/release/liblightcycles.so");
    std::fs::copy(&so, home.join("cores/lightcycles_libretro.so"))
        .unwrap_or_else(|e| panic!("{}: {e} (cargo build --release --workspace)", so.display()));
    std::fs::write(
        home.join("config.toml"),
        "[paths]\r\ncores_dir = 'cores'\r\n",
    )
    .unwrap();
    let out = linux(&home)
        .arg("--config")
        .arg(home.join("config.toml"))
        .args(["replay", "--headless", "--fast", "--verify"])
        .arg(d.join("dll.flr"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the recorded core is gone; using") && err.contains("lightcycles_libretro.so"),
        "{err}"
    );
}

#[test]
fn errors_a_windows_user_meets_name_the_problem() {
    let w = wine_or_skip!();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    let fails_with = |out: &Output, needle: &str| {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "expected a failure: {}", text(out));
        assert!(!err.contains("panicked"), "{}", text(out));
        assert!(err.contains(needle), "expected {needle:?}: {}", text(out));
    };

    // A Linux core.
    let so = root().join("target/release/liblightcycles.so");
    let out = w.run(&["play", "--headless", "--core", &win(&so)]);
    fails_with(&out, "is not a libretro core: a Linux library (ELF)");
    fails_with(&out, "NAME_libretro.dll");

    // A core DLL whose own DLL is missing: made with MinGW, then its companion removed.
    let c = |name: &str, body: &str| {
        let path = d.join(name);
        std::fs::write(&path, body).unwrap();
        path
    };
    let foo = c(
        "foo.c",
        "__declspec(dllexport) int foo(void) { return 52; }\n",
    );
    let core = c(
        "needsfoo.c",
        "int foo(void);\n__declspec(dllexport) unsigned retro_api_version(void) { return foo(); }\n",
    );
    let gcc = |args: &[&Path]| {
        let out = Command::new("x86_64-w64-mingw32-gcc")
            .current_dir(d)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
    };
    gcc(&[
        &foo,
        Path::new("-shared"),
        Path::new("-o"),
        Path::new("libfoo52.dll"),
    ]);
    gcc(&[
        &core,
        Path::new("-shared"),
        Path::new("-o"),
        Path::new("needsfoo_libretro.dll"),
        Path::new("-L."),
        Path::new("-lfoo52"),
    ]);
    // Beside the core it loads (and then lacks libretro's functions)...
    let core_dll = win(&d.join("needsfoo_libretro.dll"));
    let out = w.run(&["play", "--headless", "--core", &core_dll]);
    fails_with(&out, "is not a libretro core: missing symbol retro_");
    // ... without it, the message names it.
    std::fs::remove_file(d.join("libfoo52.dll")).unwrap();
    let out = w.run(&["play", "--headless", "--core", &core_dll]);
    fails_with(
        &out,
        "it needs libfoo52.dll, found neither beside it nor on the system",
    );

    // Paths that do not exist, with drive letters and backslashes.
    let out = w.run(&[
        "play",
        "--headless",
        "--core",
        r"C:\cores\nope_libretro.dll",
    ]);
    // Wine words it "path not found", Windows "the system cannot find the path specified".
    fails_with(&out, r"cannot open core C:\cores\nope_libretro.dll: ");
    let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(
        err.contains("not found") || err.contains("cannot find"),
        "{err}"
    );
    let out = w.run(&[
        "play",
        "--headless",
        r"C:\roms\nope.md",
        "--core",
        &win(&w.core_dll),
    ]);
    fails_with(&out, r"C:\roms\nope.md");
    let out = w.run(&["replay", r"D:\nowhere\match.flr"]);
    fails_with(&out, r"D:\nowhere\match.flr");
    let out = w.run(&["play", "--headless", "--core", "nope"]);
    fails_with(&out, "no core named nope: looked for nope_libretro.dll in");

    // And on Linux, a Windows DLL given as a core.
    let out = linux(d)
        .args(["play", "--headless", "--core"])
        .arg(&w.core_dll)
        .output()
        .unwrap();
    fails_with(&out, "is not a libretro core: a Windows DLL");
}

#[test]
fn the_exe_opens_a_game_window_under_xvfb() {
    let w = wine_or_skip!();
    // A prefix of its own: the others' Wine desktop started without a display.
    let prefix = match ci_script("wine-prefix", &["wine-prefix-window"]) {
        Ok(lines) => PathBuf::from(lines.lines().nth(1).expect("the prefix")),
        Err(why) => {
            eprintln!("NOT RUN (Windows check): {why}");
            return;
        }
    };
    let x = start_xvfb();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut cmd = w.framelock(&w.exe);
    cmd.env("DISPLAY", &x.display).env("WINEPREFIX", &prefix);
    let mut game = Proc::spawn(
        cmd,
        d,
        "window",
        &args(&[
            "play",
            "--frames",
            "900",
            "--bot",
            "1",
            "--no-audio",
            "--scale",
            "2",
        ]),
    );
    // The first frames are on screen once the log says it runs; a little more for Wine.
    let shown = game.wait_for_log("bot (seed 1) plays player 1", Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(5));
    let png = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("wine-window.png");
    let grabbed = Command::new("import")
        .args(["-display", &x.display, "-window", "root"])
        .arg(&png)
        .status()
        .is_ok_and(|s| s.success());
    let log = game.log_text();
    if !shown || !grabbed {
        // What stopped it, in framelock's or Wine's words.
        let why = log
            .lines()
            .rev()
            .find(|l| l.contains("error") || l.contains("ERROR") || l.contains("WARN"))
            .unwrap_or("no game frame within 60 s");
        eprintln!("NOT RUN (Windows check): no window under Wine + Xvfb: {why}");
        return;
    }
    // The X screen is black (-br) but for the window: the game's arena and riders.
    let out = Command::new("convert")
        .arg(&png)
        .args([
            "-colorspace",
            "gray",
            "-threshold",
            "8%",
            "-format",
            "%[fx:mean]",
            "info:",
        ])
        .output()
        .unwrap();
    let lit: f64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0.0);
    // A 640x480 window on a 1280x1024 screen is 23% of it; the arena's lines and riders
    // light a fraction of that.
    assert!(
        lit > 0.002,
        "{:.4} of the screen lit; see {}\n{log}",
        lit,
        png.display()
    );
    eprintln!(
        "Wine window screenshot: {} ({:.2}% lit)",
        png.display(),
        lit * 100.0
    );
    game.wait_ok(Duration::from_secs(60));
}
