//! Chat in real windows under Xvfb: a joiner presses T, types a line with xdotool and
//! presses Enter; the host's window then shows it over the picture, the sender's name in
//! player 2's colour (an X-level grab of the host's window).

mod play_common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use play_common::{framelock, free_port, start_xvfb, xdotool, SETUP_HINT};

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

/// The window of process `pid`, once it has one.
fn window_of(display: &str, pid: u32, log: impl Fn() -> String) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = xdotool(display, &["search", "--pid", &pid.to_string()]);
        if let Some(id) = found.lines().last() {
            return id.to_string();
        }
        assert!(Instant::now() < deadline, "no window\n{}", log());
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Pixels of the window `id` within `tolerance` of `rgb`, from a grab of the screen with
/// ImageMagick's `import` (a window's own grab is blank under Xvfb), within the window's
/// geometry.
fn pixels_like(display: &str, id: &str, png: &Path, rgb: [u8; 3], tolerance: u8) -> usize {
    let geometry = xdotool(display, &["getwindowgeometry", "--shell", id]);
    let field = |k: &str| -> usize {
        geometry
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in {geometry:?}"))
    };
    let (x0, y0, w, h) = (field("X"), field("Y"), field("WIDTH"), field("HEIGHT"));
    let ok = Command::new("import")
        .args(["-display", display, "-window", "root"])
        .arg(png)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "import could not grab the window: {SETUP_HINT}");
    let mut decoder = png::Decoder::new(std::fs::File::open(png).unwrap());
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let width = info.width as usize;
    buf[..info.buffer_size()]
        .chunks(info.color_type.samples())
        .enumerate()
        .filter(|(i, _)| (x0..x0 + w).contains(&(i % width)) && (y0..y0 + h).contains(&(i / width)))
        .filter(|(_, px)| px.len() >= 3 && (0..3).all(|i| px[i].abs_diff(rgb[i]) <= tolerance))
        .count()
}

#[test]
fn a_line_typed_in_one_window_shows_in_the_others() {
    let x = start_xvfb();
    let d = x.display.as_str();
    let home = tempfile::tempdir().unwrap();
    let port = free_port().to_string();
    let spawn = |name: &str, args: &[&str]| {
        let log = std::fs::File::create(home.path().join(format!("{name}.log"))).unwrap();
        framelock(home.path())
            .env("DISPLAY", d)
            .args(args)
            .args(["--name", name, "--frames", "7200", "--no-audio"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let log_of = |name: &str| {
        std::fs::read_to_string(home.path().join(format!("{name}.log"))).unwrap_or_default()
    };
    let host = spawn("host", &["host", "--port", &port]);
    std::thread::sleep(Duration::from_millis(500));
    let ana = spawn("ana", &["join", &format!("127.0.0.1:{port}")]);
    let (host_pid, ana_pid) = (host.id(), ana.id());
    let _procs = Procs(vec![host, ana]);
    let host_win = window_of(d, host_pid, || log_of("host"));
    let ana_win = window_of(d, ana_pid, || log_of("ana"));
    // Side by side, nearly: ana's window leaves the host's in view.
    xdotool(d, &["windowmove", "--sync", &host_win, "0", "0"]);
    xdotool(d, &["windowmove", "--sync", &ana_win, "1100", "900"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !log_of("ana").contains("netplay: in session") {
        assert!(
            Instant::now() < deadline,
            "ana never played\n{}",
            log_of("ana")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    let png = home.path().join("grab.png");
    let blue = [64, 128, 255];
    let before = pixels_like(d, &host_win, &png, blue, 40);

    xdotool(d, &["windowfocus", "--sync", &ana_win]);
    xdotool(d, &["key", "t"]);
    std::thread::sleep(Duration::from_millis(200));
    xdotool(d, &["type", "--delay", "30", "rematch"]);
    xdotool(d, &["key", "Return"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !log_of("host").contains("chat: ana: rematch") {
        assert!(
            Instant::now() < deadline,
            "the host did not get ana's line\nhost:\n{}\nana:\n{}",
            log_of("host"),
            log_of("ana")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    let after = pixels_like(d, &host_win, &png, blue, 40);
    assert!(
        after > before + 50,
        "the host's window shows ana's name in player 2's colour ({before} -> {after} pixels)"
    );
    // It fades after 8 s.
    std::thread::sleep(Duration::from_secs(9));
    let faded = pixels_like(d, &host_win, &png, blue, 40);
    assert!(
        faded < after,
        "the line stays after 8 s ({after} -> {faded})"
    );
    assert!(
        log_of("ana").contains("chat: ana: rematch"),
        "{}",
        log_of("ana")
    );
}
