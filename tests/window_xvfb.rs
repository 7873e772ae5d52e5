//! `framelock play` (not headless) opens a real window under Xvfb, draws the game with
//! Mesa's Vulkan driver (an X-level screenshot shows non-black game pixels), falls back
//! to silence without a sound card with one warning, and exits after --frames.

mod play_common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use play_common::{fixtures, framelock, free_port, start_xvfb, SETUP_HINT};

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

#[test]
fn the_lobby_shows_in_the_window_and_esc_leaves() {
    // A 3-seat host in a window (scale 2): before anyone joins, the lobby shows the seats
    // and the exact join command the host logs; when a headless joiner is in, it shows two
    // players in and the joiner's name. Esc leaves: the host exits cleanly and the joiner
    // hears that the host left.
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let x = start_xvfb();
    let dir = tempfile::tempdir().unwrap();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("window_xvfb/lobby");
    let _ = std::fs::remove_dir_all(&shots);
    std::fs::create_dir_all(&shots).unwrap();
    let port = free_port().to_string();
    let log_path = |label: &str| dir.path().join(format!("{label}.log"));
    let log = |label: &str| std::fs::read_to_string(log_path(label)).unwrap_or_default();
    let spawn = |label: &str, args: &[&str]| {
        framelock(&dir.path().join(label))
            .env("DISPLAY", &x.display)
            .env_remove("WAYLAND_DISPLAY")
            .args(args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log_path(label)).unwrap())
            .spawn()
            .unwrap()
    };
    let mut host = spawn(
        "host",
        &["host", "--port", &port, "--players", "3", "--scale", "2"],
    );
    let mut joiner: Option<Child> = None;
    // Grabs until `want` shows (or 30 s pass); the last grab and where each text was.
    let mut n = 0;
    let mut look_for = |want: &[&str]| -> Vec<Option<(u32, u32)>> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            std::thread::sleep(Duration::from_millis(250));
            let png = shots.join(format!("lobby-{n:02}.png"));
            n += 1;
            let found: Vec<_> = match grab_screen(&x.display, &png) {
                Some(screen) => want.iter().map(|t| find_text(&screen, t, 2)).collect(),
                None => vec![None; want.len()],
            };
            if found.iter().all(Option::is_some) || Instant::now() > deadline {
                return found;
            }
        }
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // The command the host logs is the one on screen.
        let deadline = Instant::now() + Duration::from_secs(30);
        let command = loop {
            let text = log("host");
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
        let found = look_for(&[&command, seats, "Esc leaves"]);
        assert!(
            found.iter().all(Option::is_some),
            "lobby text not on screen: {found:?} for {command:?}, {seats:?} ({})",
            shots.display()
        );
        // Drawn at scale 2 inside the 640x480 window at the top-left corner.
        for (x, y) in found.into_iter().flatten() {
            assert!(x < 640 && y < 480, "text at ({x},{y}), outside the window");
        }

        joiner = Some(spawn(
            "join",
            &[
                "join",
                &format!("127.0.0.1:{port}"),
                "--headless",
                "--name",
                "bob",
            ],
        ));
        let found = look_for(&["Players: 2 of 3 in, 1 seat free", "P2 bob"]);
        assert!(
            found.iter().all(Option::is_some),
            "the joiner does not show in the lobby: {found:?} ({})\n{}",
            shots.display(),
            log("join")
        );

        let esc = Command::new("xdotool")
            .env("DISPLAY", &x.display)
            .args(["search", "--name", "framelock", "windowfocus", "--sync"])
            .args(["key", "Escape"])
            .status()
            .unwrap();
        assert!(esc.success(), "xdotool could not press Esc");
        let deadline = Instant::now() + Duration::from_secs(20);
        while host.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        let status = host.try_wait().unwrap();
        assert!(
            status.is_some_and(|s| s.success()),
            "host after Esc: {status:?}\n{}",
            log("host")
        );
        assert!(
            log("host").contains("left before the game started"),
            "{}",
            log("host")
        );
        let j = joiner.as_mut().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while j.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        let status = j.try_wait().unwrap();
        assert!(
            status.is_some_and(|s| !s.success()),
            "joiner after the host left: {status:?}\n{}",
            log("join")
        );
        assert!(
            log("join").contains("the host left before the game started"),
            "{}",
            log("join")
        );
    }));
    for child in [Some(&mut host), joiner.as_mut()].into_iter().flatten() {
        let _ = child.kill();
        let _ = child.wait();
    }
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn p_in_the_joiners_window_pauses_the_hosts_too() {
    // A host in a window (scale 2) and a joiner "bob" in a smaller one (scale 1) on top of
    // its corner: P pressed in bob's window (xdotool) pauses both, and the host's status bar
    // says so; P again resumes, and both play to the end.
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let x = start_xvfb();
    let dir = tempfile::tempdir().unwrap();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("window_xvfb/pause");
    let _ = std::fs::remove_dir_all(&shots);
    std::fs::create_dir_all(&shots).unwrap();
    let port = free_port().to_string();
    let log_path = |label: &str| dir.path().join(format!("{label}.log"));
    let log = |label: &str| std::fs::read_to_string(log_path(label)).unwrap_or_default();
    let spawn = |label: &str, args: &[&str]| {
        framelock(&dir.path().join(label))
            .env("DISPLAY", &x.display)
            .env_remove("WAYLAND_DISPLAY")
            .args(args)
            .args(["--frames", "1200", "--bot", "1"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log_path(label)).unwrap())
            .spawn()
            .unwrap()
    };
    let mut host = spawn("host", &["host", "--port", &port, "--scale", "2"]);
    std::thread::sleep(Duration::from_millis(300));
    let addr = format!("127.0.0.1:{port}");
    let mut bob = spawn("bob", &["join", &addr, "--scale", "1", "--name", "bob"]);
    // Bob's window: the framelock window 320 pixels wide (the host's is 640).
    let xdo = |a: &[&str]| {
        Command::new("xdotool")
            .env("DISPLAY", &x.display)
            .args(a)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let press_p = || {
        let ids = xdo(&["search", "--name", "framelock"]);
        let bobs = ids
            .lines()
            .find(|id| xdo(&["getwindowgeometry", id]).contains("Geometry: 320x"));
        bobs.is_some_and(|id| {
            // No window manager: focus follows a click in the window, at the screen's
            // top-left corner where bob's opened.
            xdo(&["mousemove", "--window", id, "100", "100", "click", "1"]);
            xdo(&["windowfocus", "--sync", id]);
            Command::new("xdotool")
                .env("DISPLAY", &x.display)
                .args(["key", "p"])
                .status()
                .is_ok_and(|s| s.success())
        })
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !log("host").contains("bob (player 2) joined")
            && !log("bob").contains("in session")
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(200));
        }
        std::thread::sleep(Duration::from_secs(3));
        assert!(press_p(), "xdotool could not press P");
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut n = 0;
        let found = loop {
            std::thread::sleep(Duration::from_millis(300));
            let png = shots.join(format!("pause-{n:02}.png"));
            n += 1;
            let found = grab_screen(&x.display, &png).and_then(|s| find_text(&s, "PAUSED", 2));
            if found.is_some() || Instant::now() > deadline {
                break found;
            }
        };
        assert!(
            found.is_some_and(|(_, y)| y >= 480),
            "no PAUSED in the host's status bar: {found:?} ({})\n{}",
            shots.display(),
            log("host")
        );
        assert!(
            log("host").contains("bob (player 2) paused at frame"),
            "{}",
            log("host")
        );
        assert!(press_p(), "xdotool could not press P again");
    }));
    let deadline = Instant::now() + Duration::from_secs(40);
    while (host.try_wait().unwrap().is_none() || bob.try_wait().unwrap().is_none())
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    let (h, b) = (host.try_wait().unwrap(), bob.try_wait().unwrap());
    let _ = host.kill();
    let _ = bob.kill();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
    assert!(h.is_some_and(|s| s.success()), "{}", log("host"));
    assert!(b.is_some_and(|s| s.success()), "{}", log("bob"));
    assert!(log("host").contains("bob (player 2) resumed at frame"));
}

#[test]
fn chat_works_in_the_lobby_windows() {
    // A 3-seat host "ann" in a window (scale 2) and bob in one (scale 1) beside it: bob has
    // the start state and waits for the game, the host waits for a third player. A line
    // typed in the host's lobby (xdotool) reaches bob's log and shows on bob's waiting
    // screen; a line typed on bob's shows on the host's lobby screen.
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let x = start_xvfb();
    let dir = tempfile::tempdir().unwrap();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("window_xvfb/lobby_chat");
    let _ = std::fs::remove_dir_all(&shots);
    std::fs::create_dir_all(&shots).unwrap();
    let port = free_port().to_string();
    let log_path = |label: &str| dir.path().join(format!("{label}.log"));
    let log = |label: &str| std::fs::read_to_string(log_path(label)).unwrap_or_default();
    let spawn = |label: &str, args: &[&str]| {
        framelock(&dir.path().join(label))
            .env("DISPLAY", &x.display)
            .env_remove("WAYLAND_DISPLAY")
            .args(args)
            .args(["--name", label, "--no-audio"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log_path(label)).unwrap())
            .spawn()
            .unwrap()
    };
    let xdo = |a: &[&str]| {
        Command::new("xdotool")
            .env("DISPLAY", &x.display)
            .args(a)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let mut host = spawn(
        "ann",
        &["host", "--port", &port, "--players", "3", "--scale", "2"],
    );
    std::thread::sleep(Duration::from_millis(300));
    let addr = format!("127.0.0.1:{port}");
    let mut bob = spawn("bob", &["join", &addr, "--scale", "1"]);
    // Types `text` in the window of `pid`: T opens the line, Enter says it.
    let say = |pid: u32, text: &str| {
        let id = xdo(&["search", "--pid", &pid.to_string()]);
        let id = id.lines().last().unwrap_or_default();
        xdo(&["windowfocus", "--sync", id]);
        xdo(&["key", "t"]);
        std::thread::sleep(Duration::from_millis(200));
        xdo(&["type", "--delay", "30", text]);
        xdo(&["key", "Return"]);
    };
    let wait_for = |label: &str, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !log(label).contains(what) {
            assert!(
                Instant::now() < deadline,
                "no {what:?} in {label}'s log\nann:\n{}\nbob:\n{}",
                log("ann"),
                log("bob")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    // Grabs the screen until `text` shows at `scale` in the columns `xs` (or 10 s pass).
    let mut n = 0;
    let mut look_for = |text: &str, scale: u32, xs: std::ops::Range<u32>| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            std::thread::sleep(Duration::from_millis(250));
            let png = shots.join(format!("chat-{n:02}.png"));
            n += 1;
            let found = grab_screen(&x.display, &png).and_then(|s| find_text(&s, text, scale));
            if found.is_some_and(|(x, _)| xs.contains(&x)) || Instant::now() > deadline {
                return found;
            }
        }
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for("bob", "netplay: in session");
        // Side by side: bob's window right of the host's 640x480.
        let id = xdo(&["search", "--pid", &bob.id().to_string()]);
        let id = id.lines().last().unwrap_or_default().to_string();
        xdo(&["windowmove", "--sync", &id, "700", "0"]);
        std::thread::sleep(Duration::from_millis(500));

        say(host.id(), "hello bob");
        wait_for("bob", "chat: ann: hello bob");
        let found = look_for("hello bob", 1, 700..1020);
        assert!(
            found.is_some_and(|(x, _)| x >= 700),
            "ann's line not on bob's waiting screen: {found:?} ({})",
            shots.display()
        );

        say(bob.id(), "hi ann");
        wait_for("ann", "chat: bob: hi ann");
        let found = look_for("hi ann", 2, 0..640);
        assert!(
            found.is_some_and(|(x, y)| x < 640 && y < 480),
            "bob's line not on the host's lobby screen: {found:?} ({})",
            shots.display()
        );
    }));
    for child in [&mut host, &mut bob] {
        let _ = child.kill();
        let _ = child.wait();
    }
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}
