//! Proves the built-in game is a real libretro core: Debian's RetroArch loads
//! `liblightcycles.so`, runs it headless for 300 frames and screenshots a lit 320x240 frame.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FRAMES: u32 = 300;

/// `target/release` (or whichever profile directory this test binary was built into).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/<test binary>
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary lives in <target>/<profile>/deps")
        .to_path_buf()
}

/// Builds the core's cdylib (a no-op when it is fresh) and returns its path.
fn build_core() -> PathBuf {
    let profile = profile_dir();
    let target_dir = profile.parent().expect("profile dir has a parent");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_string());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let mut child = Command::new(&cargo)
        .args(["build", "--release", "-p", "lightcycles", "--lib"])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cargo}: {e}"));
    let status = wait_with_deadline(&mut child, Duration::from_secs(900), "cargo build");
    let stderr = read_stderr(&mut child);
    assert!(
        status.success(),
        "cargo build -p lightcycles failed:\n{stderr}"
    );
    let so = profile.join("liblightcycles.so");
    assert!(so.is_file(), "{} was not built", so.display());
    so
}

fn read_stderr(child: &mut std::process::Child) -> String {
    use std::io::Read;
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s
}

/// Waits for `child`, killing it (and failing the test) after `limit`.
fn wait_with_deadline(
    child: &mut std::process::Child,
    limit: Duration,
    what: &str,
) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait for child") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn require_retroarch() {
    match Command::new("retroarch").arg("--version").output() {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "retroarch is not installed: run `bash .ci/setup` (CI installs it) to run this test"
        ),
        Err(e) => panic!("cannot run retroarch: {e}"),
    }
}

/// A config that keeps RetroArch away from displays, sound cards, pads and the user's files.
fn write_config(dir: &Path) -> PathBuf {
    for sub in ["saves", "states", "system", "screenshots"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let d = dir.display();
    let cfg = format!(
        r#"video_driver = "null"
audio_driver = "null"
audio_enable = "false"
input_driver = "null"
input_joypad_driver = "null"
menu_driver = "null"
camera_driver = "null"
location_driver = "null"
midi_driver = "null"
record_driver = "null"
wifi_driver = "null"
bluetooth_driver = "null"
video_fullscreen = "false"
video_vsync = "false"
gamemode_enable = "false"
config_save_on_exit = "false"
savefile_directory = "{d}/saves"
savestate_directory = "{d}/states"
system_directory = "{d}/system"
screenshot_directory = "{d}/screenshots"
core_options_path = "{d}/core-options.cfg"
log_verbosity = "true"
"#
    );
    let path = dir.join("retroarch.cfg");
    std::fs::write(&path, cfg).unwrap();
    path
}

/// Decodes an 8-bit RGB(A) PNG into (width, height, RGB triples).
fn read_png(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let file = std::fs::File::open(path)
        .unwrap_or_else(|e| panic!("no screenshot at {}: {e}", path.display()));
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().expect("screenshot is a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("screenshot decodes");
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected screenshot colour type {other:?}"),
    };
    let px = buf[..info.buffer_size()]
        .chunks_exact(channels)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    (info.width, info.height, px)
}

#[test]
fn retroarch_runs_builtin_core() {
    require_retroarch();
    let core = build_core();
    let tmp = tempfile::tempdir().unwrap();
    let cfg = write_config(tmp.path());
    let shot = tmp.path().join("last-frame.png");
    let log = tmp.path().join("retroarch.log");

    let mut child = Command::new("retroarch")
        .arg("-v")
        .arg("-L")
        .arg(&core)
        .arg(format!("--max-frames={FRAMES}"))
        .arg("--max-frames-ss")
        .arg(format!("--max-frames-ss-path={}", shot.display()))
        .arg("--config")
        .arg(&cfg)
        // Headless: no display, and RetroArch's own files stay in the temp dir.
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("HOME", tmp.path())
        .env("XDG_CONFIG_HOME", tmp.path().join("xdg"))
        // RetroArch's GameMode hook makes libdbus assert without a session bus; those
        // assertions abort the process unless made non-fatal.
        .env("DBUS_FATAL_WARNINGS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::fs::File::create(&log).unwrap()))
        .stderr(Stdio::from(
            std::fs::File::options().append(true).open(&log).unwrap(),
        ))
        .spawn()
        .expect("start retroarch");
    let status = wait_with_deadline(&mut child, Duration::from_secs(120), "retroarch");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        status.success(),
        "retroarch exited with {status}; log:\n{text}"
    );
    // The core's own log line, sent through RetroArch's log interface after load_game.
    assert!(
        text.contains("[lightcycles] lightcycles 0.1.0 loaded"),
        "the core did not log its start; log:\n{text}"
    );
    assert!(
        text.contains("SET_PIXEL_FORMAT: XRGB8888"),
        "XRGB8888 was not negotiated; log:\n{text}"
    );
    assert!(
        text.contains("Content ran for a total of"),
        "the core did not run; log:\n{text}"
    );

    // RetroArch's screenshot of the last frame shows the attract screen.
    let (w, h, px) = read_png(&shot);
    assert_eq!((w, h), (320, 240));
    let lit = px.iter().filter(|p| **p != [0, 0, 0]).count();
    assert!(lit > px.len() / 2, "only {lit} lit pixels");
    let mut colours: Vec<[u8; 3]> = px.clone();
    colours.sort_unstable();
    colours.dedup();
    assert!(colours.len() >= 5, "only {} colours", colours.len());
}
