//! What a click on an invite link runs, in a real window under Xvfb: `framelock open LINK`
//! with no terminal asks for the room's password in its window; typed there (xdotool) and
//! Enter, it joins and plays in sync with the room's host. A screenshot of the prompt is
//! kept to be looked at.

mod play_common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use play_common::{checksum, framelock, free_port, start_xvfb, xdotool, SETUP_HINT};
use serde_json::Value;

/// Kills its processes however the test ends.
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn wait_exit(child: &mut Child, limit: Duration, log: impl Fn() -> String) {
    let end = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "exited with {status}\n{}", log());
            return;
        }
        assert!(Instant::now() < end, "did not finish in time\n{}", log());
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn stats(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_rooms_password_is_asked_for_in_the_window_and_the_game_plays_in_sync() {
    let x = start_xvfb();
    let d = x.display.as_str();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let log_of =
        |name: &str| std::fs::read_to_string(h.join(format!("{name}.log"))).unwrap_or_default();
    let spawn = |name: &str, args: &[&str]| {
        let log = std::fs::File::create(h.join(format!("{name}.log"))).unwrap();
        framelock(h)
            .env("DISPLAY", d)
            .env("RUST_LOG", "info")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let port = free_port().to_string();
    let server = spawn("server", &["serve", "--port", &port, "--bind", "127.0.0.1"]);
    let mut procs = Procs(vec![server]);
    let end = Instant::now() + Duration::from_secs(15);
    while !log_of("server").contains("listening on udp") {
        assert!(Instant::now() < end, "no server\n{}", log_of("server"));
        std::thread::sleep(Duration::from_millis(100));
    }
    let addr = format!("127.0.0.1:{port}");
    let host_stats = h.join("host.json");
    let host = spawn(
        "host",
        &[
            "host",
            "--headless",
            "--server",
            &addr,
            "--room",
            "den",
            "--path",
            "relayed",
            "--password",
            "sesame",
            "--frames",
            "600",
            "--bot",
            "1",
            "--no-record",
            "--stats-json",
            host_stats.to_str().unwrap(),
        ],
    );
    procs.0.push(host);
    let end = Instant::now() + Duration::from_secs(15);
    while !log_of("host").contains("or the link framelock://") {
        assert!(Instant::now() < end, "no room\n{}", log_of("host"));
        std::thread::sleep(Duration::from_millis(100));
    }

    // No terminal, a display: the window asks.
    let open_stats = h.join("open.json");
    let open = spawn(
        "open",
        &[
            "open",
            &format!("framelock://{addr}/den"),
            "--frames",
            "600",
            "--bot",
            "2",
            "--no-audio",
            "--no-record",
            "--stats-json",
            open_stats.to_str().unwrap(),
        ],
    );
    let pid = open.id();
    procs.0.push(open);
    let end = Instant::now() + Duration::from_secs(30);
    let win = loop {
        let found = xdotool(d, &["search", "--pid", &pid.to_string()]);
        if let Some(id) = found.lines().last() {
            break id.to_string();
        }
        assert!(Instant::now() < end, "no window\n{}", log_of("open"));
        std::thread::sleep(Duration::from_millis(200));
    };
    std::thread::sleep(Duration::from_millis(500));
    xdotool(d, &["windowfocus", "--sync", &win]);
    xdotool(d, &["type", "--delay", "40", "sesame"]);
    std::thread::sleep(Duration::from_millis(300));
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("window-open");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("prompt.png");
    let grabbed = Command::new("import")
        .args(["-display", d, "-window", "root"])
        .arg(&shot)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(grabbed, "import could not grab the screen: {SETUP_HINT}");
    xdotool(d, &["key", "Return"]);

    wait_exit(&mut procs.0[2], Duration::from_secs(40), || log_of("open"));
    wait_exit(&mut procs.0[1], Duration::from_secs(20), || log_of("host"));
    let (hs, os) = (stats(&host_stats), stats(&open_stats));
    assert_eq!(os["frames"].as_u64(), Some(600), "{os}");
    assert_eq!(
        checksum(&hs),
        checksum(&os),
        "host and the link's joiner differ"
    );
    assert!(
        log_of("open").contains("open: framelock://"),
        "{}",
        log_of("open")
    );
}
