//! `framelock play` (not headless) opens a real window under Xvfb, draws the game with
//! Mesa's Vulkan driver (an X-level screenshot shows non-black game pixels), falls back
//! to silence without a sound card with one warning, and exits after --frames.

mod play_common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use play_common::{fixtures, framelock, free_port, start_xvfb, xdotool, SETUP_HINT};

/// An RGB screen grab.
struct Screen {
    width: u32,
    rgb: Vec<[u8; 3]>,
}

impl Screen {
    /// Pixels in the rectangle `x0..x1`, `y0..y1` for which `test` holds.
    fn count(
        &self,
        (x0, y0, x1, y1): (u32, u32, u32, u32),
        test: impl Fn([u8; 3]) -> bool,
    ) -> usize {
        self.rgb
            .iter()
            .enumerate()
            .filter(|(i, px)| {
                let (x, y) = ((*i as u32) % self.width, (*i as u32) / self.width);
                (x0..x1).contains(&x) && (y0..y1).contains(&y) && test(**px)
            })
            .count()
    }
}

/// Grabs the whole X screen with ImageMagick's `import` into `png`.
fn grab_screen(display: &str, png: &Path) -> Option<Screen> {
    let ok = Command::new("import")
        .args(["-display", display, "-window", "root"])
        .arg(png)
        .stderr(Stdio::null())
        .status()
        .ok()?
        .success();
    if !ok {
        return None;
    }
    grab_png(png)
}

/// An RGB image from a PNG file.
fn grab_png(png: &Path) -> Option<Screen> {
    let mut decoder = png::Decoder::new(std::fs::File::open(png).ok()?);
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().ok()?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).ok()?;
    let channels = info.color_type.samples();
    let rgb = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|px| match px {
            [r, g, b, ..] => [*r, *g, *b],
            [l, ..] => [*l; 3],
            [] => [0; 3],
        })
        .collect();
    Some(Screen {
        width: info.width,
        rgb,
    })
}

/// Lit: brighter than the black background anywhere.
fn lit(px: [u8; 3]) -> bool {
    px.iter().any(|&c| c > 24)
}

impl Screen {
    /// The number of lit pixels and their bounding box.
    fn lit_box(&self) -> (usize, (u32, u32, u32, u32)) {
        let mut count = 0;
        let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
        for (i, px) in self.rgb.iter().enumerate() {
            if lit(*px) {
                count += 1;
                let (x, y) = ((i as u32) % self.width, (i as u32) / self.width);
                (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
            }
        }
        (count, (x0, y0, x1, y1))
    }
}

/// Grabs the X screen into `shots` every 250 ms while `child` runs, 60 s at most (then it is
/// killed), handing each grab and its file to `look`.
fn watch(child: &mut Child, display: &str, shots: &Path, mut look: impl FnMut(&Screen, PathBuf)) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut n = 0;
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        let png = shots.join(format!("screen-{n:02}.png"));
        n += 1;
        if let Some(screen) = grab_screen(display, &png) {
            look(&screen, png);
        }
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
    }
}

/// Only one window test at a time: they share the screen-grab directory.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What a window showed: the grab with the most lit pixels (their bounding box) and the
/// core's own frame 240 (`--screenshot-at`).
struct Shown {
    log: String,
    lit_box: (u32, u32, u32, u32),
    frame_240: PathBuf,
}

/// Runs `framelock play ARGS --frames 300` in a window on a fresh Xvfb, grabbing the X screen
/// every 250 ms. Checks the run and returns what it showed.
fn play_in_window(name: &str, args: &[&std::ffi::OsStr], window: (u32, u32)) -> Shown {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    assert!(
        Command::new("import").arg("-version").output().is_ok(),
        "ImageMagick `import` is missing: {SETUP_HINT}"
    );
    let x = start_xvfb();
    let home = tempfile::tempdir().unwrap();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("window_xvfb")
        .join(name);
    let _ = std::fs::remove_dir_all(&shots);
    std::fs::create_dir_all(&shots).unwrap();
    let stats = home.path().join("stats.json");
    let hook = shots.join("hook-frame-240.png");
    let log = home.path().join("stderr.log");

    let mut child = framelock(home.path())
        .env("DISPLAY", &x.display)
        .env_remove("WAYLAND_DISPLAY")
        .args(["play", "--frames", "300", "--scale", "2"])
        .args(args)
        .arg("--stats-json")
        .arg(&stats)
        .arg("--screenshot-at")
        .arg("240")
        .arg(&hook)
        .stdout(Stdio::null())
        // A file, not a pipe: nobody reads a pipe until the end, and a full one blocks.
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();

    // Keep the grab with the most lit pixels: (count, bounding box, file).
    type Grab = (usize, (u32, u32, u32, u32), PathBuf);
    let mut best: Option<Grab> = None;
    watch(&mut child, &x.display, &shots, |screen, png| {
        let (count, bbox) = screen.lit_box();
        if best.as_ref().is_none_or(|b| count > b.0) {
            best = Some((count, bbox, png));
        }
    });
    let status = child.wait().unwrap();
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(stderr.contains("drawing with"), "{stderr}");

    let (count, (x0, y0, x1, y1), png) = best.expect("no screen grab succeeded");
    eprintln!(
        "{name}: brightest grab {}: {count} lit pixels in ({x0},{y0})-({x1},{y1})",
        png.display()
    );
    // Without a window manager the window sits at the top-left corner, sized to the game's
    // frame at scale 2: lit pixels must be there, and plenty of them.
    assert!(count > 2000, "only {count} non-black pixels on screen");
    assert!(
        x1 < window.0 && y1 < window.1,
        "lit pixels outside the {window:?} window: ({x1},{y1})"
    );
    assert!(
        hook.exists(),
        "--screenshot-at did not write {}",
        hook.display()
    );

    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(s["frames"], 300);
    assert_eq!(s["headless"], false);

    let warnings = stderr.matches("no audio output").count();
    assert!(warnings <= 1, "audio warned {warnings} times:\n{stderr}");
    if !Path::new("/dev/snd").exists() {
        assert_eq!(warnings, 1, "no sound card, but no warning:\n{stderr}");
    }
    Shown {
        log: stderr,
        lit_box: (x0, y0, x1, y1),
        frame_240: hook,
    }
}

#[test]
fn builtin_game_in_a_window() {
    // `framelock play --frames 300`: the built-in game, 320x240.
    play_in_window("builtin", &[], (640, 480));
}

#[test]
fn genesis_game_in_a_window() {
    let f = fixtures();
    let args = [
        "--bot".as_ref(),
        "2".as_ref(),
        "--core".as_ref(),
        f.gpgx.as_os_str(),
        f.airstriker.as_os_str(),
    ];
    // Airstriker's 320x224 at the core's aspect: the window opens at the core's initial
    // 256x192 geometry and follows the image's size, 585x448 at scale 2. Genesis Plus GX
    // gives the NTSC pixel shape of its 320-pixel mode, 32:35 (1.306:1 for the image,
    // about 4:3).
    let shown = play_in_window("genesis", &args, (585, 448));
    // The title's logo stands still: on screen it is twice as tall as in the core's frame,
    // and 32/35 of that as wide.
    let frame = grab_png(&shown.frame_240).expect("frame 240 readable");
    let (_, (fx0, fy0, fx1, fy1)) = frame.lit_box();
    let (x0, y0, x1, y1) = shown.lit_box;
    let sx = f64::from(x1 - x0 + 1) / f64::from(fx1 - fx0 + 1);
    let sy = f64::from(y1 - y0 + 1) / f64::from(fy1 - fy0 + 1);
    let shape = sx / sy;
    eprintln!("genesis: logo scaled {sx:.3} x {sy:.3} (pixel aspect {shape:.3})");
    assert!((sy - 2.0).abs() < 0.02, "height scaled {sy:.3}, not 2");
    assert!(
        (shape - 32.0 / 35.0).abs() < 0.02,
        "pixels shown {shape:.3} as wide as tall, not 0.914 (32:35)"
    );
    assert!(shown
        .log
        .contains("image 320x224 shown at the core's aspect 1.306"));
}

#[test]
fn a_netplay_window_shows_its_status_bar_below_the_game() {
    // A host in a window (scale 2) with a headless joiner: the game's 320x240 takes the
    // window's top 640x480 and the status bar (2 rows of the 5x7 font: 20 pixel rows,
    // doubled) the 40 rows below; the status is white text, drawn from the first frame on.
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let x = start_xvfb();
    let dir = tempfile::tempdir().unwrap();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("window_xvfb/netplay");
    let _ = std::fs::remove_dir_all(&shots);
    std::fs::create_dir_all(&shots).unwrap();
    let port = free_port().to_string();
    let spawn = |label: &str, args: &[&str]| {
        framelock(&dir.path().join(label))
            .env("DISPLAY", &x.display)
            .env_remove("WAYLAND_DISPLAY")
            .args(args)
            .args(["--frames", "420", "--bot", "1"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join(format!("{label}.log"))).unwrap())
            .spawn()
            .unwrap()
    };
    let mut host = spawn("host", &["host", "--port", &port, "--scale", "2"]);
    std::thread::sleep(Duration::from_millis(300));
    let joiner_addr = format!("127.0.0.1:{port}");
    let mut join = spawn("join", &["join", &joiner_addr, "--headless"]);

    let (game, bar) = ((0, 0, 640, 480), (0, 480, 640, 520));
    // Most white pixels seen in the bar, and lit pixels ever seen outside the window.
    let (mut text, mut outside) = (0, 0);
    watch(&mut host, &x.display, &shots, |screen, _| {
        if screen.count(game, lit) > 2000 {
            text = text.max(screen.count(bar, |px| px.iter().all(|&c| c >= 250)));
        }
        outside = outside.max(screen.count((0, 520, 1280, 1024), lit));
        outside = outside.max(screen.count((640, 0, 1280, 520), lit));
    });
    if join.try_wait().unwrap().is_none() {
        let _ = join.kill();
    }
    let log = |label: &str| std::fs::read_to_string(dir.path().join(format!("{label}.log")));
    let host_log = log("host").unwrap_or_default();
    assert!(host.wait().unwrap().success(), "{host_log}");
    assert!(
        join.wait().unwrap().success(),
        "{}",
        log("join").unwrap_or_default()
    );
    // The window opens on the lobby, 640x480, and becomes 640x520 with the game: its
    // 640x480 plus the bar's 2 x 20 rows.
    assert!(host_log.contains("window 640x480, drawing"), "{host_log}");
    assert!(
        host_log.contains("window 640x520 for the image"),
        "{host_log}"
    );
    // "K 2 LEAD 2 STALLS 0 ..." in white, doubled: hundreds of pixels.
    assert!(
        text > 300,
        "only {text} white pixels in the status bar ({})",
        shots.display()
    );
    assert_eq!(outside, 0, "lit pixels outside the 640x520 window");
}

/// Where `text` shows on `screen` in the 5x7 font at `scale` (white on black, lower case
/// drawn as upper case): the top-left corner of the first match.
fn find_text(screen: &Screen, text: &str, scale: u32) -> Option<(u32, u32)> {
    use lightcycles::font::{glyph, ADVANCE, GLYPH_H, GLYPH_W};
    let height = screen.rgb.len() as u32 / screen.width;
    let cols = text.chars().count() as u32;
    let (w, h) = (cols * ADVANCE as u32 * scale, GLYPH_H as u32 * scale);
    // Font pixels on (white) and off (dark), sampled at the middle of each scaled pixel.
    let mut pattern = Vec::new();
    for (i, c) in text.chars().enumerate() {
        for (gy, bits) in glyph(c.to_ascii_uppercase()).iter().enumerate() {
            for gx in 0..ADVANCE {
                let on = gx < GLYPH_W && bits & (1 << (GLYPH_W - 1 - gx)) != 0;
                let (x, y) = ((i * ADVANCE + gx) as u32, gy as u32);
                pattern.push((x * scale + scale / 2, y * scale + scale / 2, on));
            }
        }
    }
    let px = |x: u32, y: u32| screen.rgb[(y * screen.width + x) as usize];
    (0..height.saturating_sub(h)).find_map(|y0| {
        (0..screen.width.saturating_sub(w))
            .find(|&x0| {
                pattern.iter().all(|&(x, y, on)| {
                    let p = px(x0 + x, y0 + y);
                    if on {
                        p.iter().all(|&c| c >= 250)
                    } else {
                        p.iter().all(|&c| c < 24)
                    }
                })
            })
            .map(|x0| (x0, y0))
    })
}

/// A netplay test's windows under an Xvfb of their own: one home and log per process in a
/// temporary directory, a free port, the screen grabs numbered in a directory of the
/// test's, and the processes by label, killed however the test ends. Holds the serial lock.
struct WindowSession {
    children: Vec<(String, Child)>,
    x: play_common::Xvfb,
    dir: tempfile::TempDir,
    /// Where the grabs go, and the next one's name and number.
    shots: PathBuf,
    name: String,
    grabs: usize,
    port: String,
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl WindowSession {
    /// A fresh Xvfb and port; the grabs go to `window_xvfb/NAME` (emptied first).
    fn new(name: &str) -> WindowSession {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("window_xvfb")
            .join(name);
        let _ = std::fs::remove_dir_all(&shots);
        std::fs::create_dir_all(&shots).unwrap();
        WindowSession {
            children: Vec::new(),
            x: start_xvfb(),
            dir: tempfile::tempdir().unwrap(),
            shots,
            name: name.to_string(),
            grabs: 0,
            port: free_port().to_string(),
            _serial: serial,
        }
    }

    fn log_path(&self, label: &str) -> PathBuf {
        self.dir.path().join(format!("{label}.log"))
    }

    /// What process `label` logged so far.
    fn log(&self, label: &str) -> String {
        std::fs::read_to_string(self.log_path(label)).unwrap_or_default()
    }

    /// Starts `framelock ARGS` on this display as `label`, its stderr in its log.
    fn spawn(&mut self, label: &str, args: &[&str]) {
        let child = framelock(&self.dir.path().join(label))
            .env("DISPLAY", &self.x.display)
            .env_remove("WAYLAND_DISPLAY")
            .args(args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.log_path(label)).unwrap())
            .spawn()
            .unwrap();
        self.children.push((label.to_string(), child));
    }

    fn child(&mut self, label: &str) -> &mut Child {
        let found = self.children.iter_mut().find(|(l, _)| l == label);
        &mut found.unwrap_or_else(|| panic!("no process {label}")).1
    }

    /// `xdotool ARGS` on this display: what it printed.
    fn xdo(&self, args: &[&str]) -> String {
        xdotool(&self.x.display, args)
    }

    /// Grabs the screen every 250 ms, reading each grab (`None`: it failed), until `done`
    /// holds for what was read or `timeout` passes; what was read last.
    fn look_for<T>(
        &mut self,
        timeout: Duration,
        mut read: impl FnMut(Option<&Screen>) -> T,
        done: impl Fn(&T) -> bool,
    ) -> T {
        let deadline = Instant::now() + timeout;
        loop {
            std::thread::sleep(Duration::from_millis(250));
            let png = self
                .shots
                .join(format!("{}-{:02}.png", self.name, self.grabs));
            self.grabs += 1;
            let found = read(grab_screen(&self.x.display, &png).as_ref());
            if done(&found) || Instant::now() > deadline {
                return found;
            }
        }
    }

    /// Waits until `label` logged `what`; fails the test, with every log, after `timeout`.
    fn wait_log(&self, label: &str, what: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.log(label).contains(what) {
            let logs: Vec<String> = self
                .children
                .iter()
                .map(|(l, _)| format!("{l}:\n{}", self.log(l)))
                .collect();
            assert!(
                Instant::now() < deadline,
                "no {what:?} in {label}'s log\n{}",
                logs.join("\n")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits up to `timeout` for `label` to exit: its status, `None` if it still runs.
    fn wait_exit(&mut self, label: &str, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        let child = self.child(label);
        while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        child.try_wait().unwrap()
    }

    /// `label` exits within 20 s, successfully if `ok` (else with an error), having logged
    /// `said`.
    fn assert_exit(&mut self, label: &str, ok: bool, said: &str) {
        let status = self.wait_exit(label, Duration::from_secs(20));
        let log = self.log(label);
        assert!(
            status.is_some_and(|s| s.success() == ok),
            "{label} exited with {status:?}, not {}\n{log}",
            if ok { "success" } else { "an error" }
        );
        assert!(log.contains(said), "no {said:?} in {label}'s log\n{log}");
    }
}

impl Drop for WindowSession {
    fn drop(&mut self) {
        for (_, child) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn the_lobby_shows_in_the_window_and_esc_leaves() {
    // A 3-seat host in a window (scale 2): before anyone joins, the lobby shows the seats
    // and the exact join command the host logs; when a headless joiner is in, it shows two
    // players in and the joiner's name. Esc leaves: the host exits cleanly and the joiner
    // hears that the host left.
    let mut s = WindowSession::new("lobby");
    let port = s.port.clone();
    s.spawn(
        "host",
        &["host", "--port", &port, "--players", "3", "--scale", "2"],
    );
    // Grabs until every text of `want` shows at scale 2 (or 30 s pass): where each was.
    let look_for = |s: &mut WindowSession, want: &[&str]| -> Vec<Option<(u32, u32)>> {
        s.look_for(
            Duration::from_secs(30),
            |screen| {
                want.iter()
                    .map(|t| screen.and_then(|screen| find_text(screen, t, 2)))
                    .collect()
            },
            |found: &Vec<_>| found.iter().all(Option::is_some),
        )
    };
    // The command the host logs is the one on screen.
    let deadline = Instant::now() + Duration::from_secs(30);
    let command = loop {
        let text = s.log("host");
        if let Some(cmd) = text
            .split("players join with `")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
        {
            break cmd.to_string();
        }
        assert!(Instant::now() < deadline, "no join command logged:\n{text}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(command.starts_with("framelock join "), "{command}");
    assert!(command.ends_with(&format!(":{port}")), "{command}");
    let seats = "Players: 1 of 3 in, 2 seats free";
    let found = look_for(&mut s, &[&command, seats, "Esc leaves"]);
    assert!(
        found.iter().all(Option::is_some),
        "lobby text not on screen: {found:?} for {command:?}, {seats:?} ({})",
        s.shots.display()
    );
    // Drawn at scale 2 inside the 640x480 window at the top-left corner.
    for (x, y) in found.into_iter().flatten() {
        assert!(x < 640 && y < 480, "text at ({x},{y}), outside the window");
    }

    let addr = format!("127.0.0.1:{port}");
    s.spawn("join", &["join", &addr, "--headless", "--name", "bob"]);
    let found = look_for(&mut s, &["Players: 2 of 3 in, 1 seat free", "P2 bob"]);
    assert!(
        found.iter().all(Option::is_some),
        "the joiner does not show in the lobby: {found:?} ({})\n{}",
        s.shots.display(),
        s.log("join")
    );

    let esc = Command::new("xdotool")
        .env("DISPLAY", &s.x.display)
        .args(["search", "--name", "framelock", "windowfocus", "--sync"])
        .args(["key", "Escape"])
        .status()
        .unwrap();
    assert!(esc.success(), "xdotool could not press Esc");
    s.assert_exit("host", true, "left before the game started");
    s.assert_exit("join", false, "the host left before the game started");
}

#[test]
fn p_in_the_joiners_window_pauses_the_hosts_too() {
    // A host in a window (scale 2) and a joiner "bob" in a smaller one (scale 1) on top of
    // its corner: P pressed in bob's window (xdotool) pauses both, and the host's status bar
    // says so; P again resumes, and both play to the end.
    let mut s = WindowSession::new("pause");
    let port = s.port.clone();
    let run = ["--frames", "1200", "--bot", "1"];
    s.spawn(
        "host",
        &[&["host", "--port", &port, "--scale", "2"], &run[..]].concat(),
    );
    std::thread::sleep(Duration::from_millis(300));
    let addr = format!("127.0.0.1:{port}");
    let bob = ["join", &addr, "--scale", "1", "--name", "bob"];
    s.spawn("bob", &[&bob[..], &run[..]].concat());
    // Bob's window: the framelock window 320 pixels wide (the host's is 640).
    let press_p = |s: &WindowSession| {
        let ids = s.xdo(&["search", "--name", "framelock"]);
        let bobs = ids
            .lines()
            .find(|id| s.xdo(&["getwindowgeometry", id]).contains("Geometry: 320x"));
        bobs.is_some_and(|id| {
            // No window manager: focus follows a click in the window, at the screen's
            // top-left corner where bob's opened.
            s.xdo(&["mousemove", "--window", id, "100", "100", "click", "1"]);
            s.xdo(&["windowfocus", "--sync", id]);
            Command::new("xdotool")
                .env("DISPLAY", &s.x.display)
                .args(["key", "p"])
                .status()
                .is_ok_and(|s| s.success())
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s.log("host").contains("bob (player 2) joined")
        && !s.log("bob").contains("in session")
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(3));
    assert!(press_p(&s), "xdotool could not press P");
    let found = s.look_for(
        Duration::from_secs(20),
        |screen| screen.and_then(|screen| find_text(screen, "PAUSED", 2)),
        Option::is_some,
    );
    assert!(
        found.is_some_and(|(_, y)| y >= 480),
        "no PAUSED in the host's status bar: {found:?} ({})\n{}",
        s.shots.display(),
        s.log("host")
    );
    let host_log = s.log("host");
    assert!(
        host_log.contains("bob (player 2) paused at frame"),
        "{host_log}"
    );
    assert!(press_p(&s), "xdotool could not press P again");
    let h = s.wait_exit("host", Duration::from_secs(40));
    let b = s.wait_exit("bob", Duration::from_secs(10));
    assert!(h.is_some_and(|s| s.success()), "{}", s.log("host"));
    assert!(b.is_some_and(|s| s.success()), "{}", s.log("bob"));
    assert!(s.log("host").contains("bob (player 2) resumed at frame"));
}

#[test]
fn chat_works_in_the_lobby_windows() {
    // A 3-seat host "ann" in a window (scale 2) and bob in one (scale 1) beside it: bob has
    // the start state and waits for the game, the host waits for a third player. A line
    // typed in the host's lobby (xdotool) reaches bob's log and shows on bob's waiting
    // screen; a line typed on bob's shows on the host's lobby screen.
    let mut s = WindowSession::new("lobby_chat");
    let port = s.port.clone();
    let ann = ["host", "--port", &port, "--players", "3", "--scale", "2"];
    s.spawn(
        "ann",
        &[&ann[..], &["--name", "ann", "--no-audio"]].concat(),
    );
    std::thread::sleep(Duration::from_millis(300));
    let addr = format!("127.0.0.1:{port}");
    let bob = ["join", &addr, "--scale", "1", "--name", "bob", "--no-audio"];
    s.spawn("bob", &bob);
    // Types `text` in the window of `label`: T opens the line, Enter says it.
    let say = |s: &mut WindowSession, label: &str, text: &str| {
        let pid = s.child(label).id().to_string();
        let id = s.xdo(&["search", "--pid", &pid]);
        let id = id.lines().last().unwrap_or_default();
        s.xdo(&["windowfocus", "--sync", id]);
        s.xdo(&["key", "t"]);
        std::thread::sleep(Duration::from_millis(200));
        s.xdo(&["type", "--delay", "30", text]);
        s.xdo(&["key", "Return"]);
    };
    // Grabs the screen until `text` shows at `scale` in the columns `xs` (or 10 s pass).
    let look_for = |s: &mut WindowSession, text: &str, scale: u32, xs: std::ops::Range<u32>| {
        s.look_for(
            Duration::from_secs(10),
            |screen| screen.and_then(|screen| find_text(screen, text, scale)),
            |found| found.is_some_and(|(x, _)| xs.contains(&x)),
        )
    };
    let patience = Duration::from_secs(30);
    s.wait_log("bob", "netplay: in session", patience);
    // Side by side: bob's window right of the host's 640x480.
    let pid = s.child("bob").id().to_string();
    let id = s.xdo(&["search", "--pid", &pid]);
    let id = id.lines().last().unwrap_or_default().to_string();
    s.xdo(&["windowmove", "--sync", &id, "700", "0"]);
    std::thread::sleep(Duration::from_millis(500));

    say(&mut s, "ann", "hello bob");
    s.wait_log("bob", "chat: ann: hello bob", patience);
    let found = look_for(&mut s, "hello bob", 1, 700..1020);
    assert!(
        found.is_some_and(|(x, _)| x >= 700),
        "ann's line not on bob's waiting screen: {found:?} ({})",
        s.shots.display()
    );

    say(&mut s, "bob", "hi ann");
    s.wait_log("ann", "chat: bob: hi ann", patience);
    let found = look_for(&mut s, "hi ann", 2, 0..640);
    assert!(
        found.is_some_and(|(x, y)| x < 640 && y < 480),
        "bob's line not on the host's lobby screen: {found:?} ({})",
        s.shots.display()
    );
}

#[test]
fn the_status_bar_shows_rollbacks_delay_and_how_far_the_picture_runs_ahead() {
    // A host in a window (scale 2) with default flags and a headless joiner 100 ms away
    // (each side delays what it sends by 50 ms): rollback is on, and the host's status bar
    // reads "delay 0 ahead N rollbacks R/s".
    let mut s = WindowSession::new("rollback");
    let port = s.port.clone();
    let run = [
        "--frames",
        "1500",
        "--bot",
        "1:human",
        "--netsim",
        "delay=50ms",
    ];
    s.spawn(
        "host",
        &[&["host", "--port", &port, "--scale", "2"], &run[..]].concat(),
    );
    std::thread::sleep(Duration::from_millis(300));
    let addr = format!("127.0.0.1:{port}");
    s.spawn(
        "join",
        &[
            "join",
            &addr,
            "--headless",
            "--frames",
            "1500",
            "--bot",
            "2:human",
            "--netsim",
            "delay=50ms",
        ],
    );
    s.wait_log("host", "joined", Duration::from_secs(30));
    let found = s.look_for(
        Duration::from_secs(25),
        |screen| {
            screen.map(|screen| {
                (
                    find_text(screen, "DELAY 0 AHEAD", 2),
                    find_text(screen, "ROLLBACKS", 2),
                )
            })
        },
        |f| f.is_some_and(|(a, b)| a.is_some() && b.is_some()),
    );
    let (delay, rollbacks) = found.unwrap_or_default();
    assert!(
        delay.is_some_and(|(_, y)| y >= 480) && rollbacks.is_some(),
        "no \"delay 0 ahead\" and \"rollbacks\" in the host's status bar: {delay:?} {rollbacks:?} \
         ({})\n{}",
        s.shots.display(),
        s.log("host")
    );
    assert!(s.log("host").contains("rollback on"), "{}", s.log("host"));
    let h = s.wait_exit("host", Duration::from_secs(60));
    assert!(h.is_some_and(|s| s.success()), "{}", s.log("host"));
}
