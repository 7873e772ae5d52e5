//! `framelock play` (not headless) opens a real window under Xvfb, draws the game with
//! Mesa's Vulkan driver (an X-level screenshot shows non-black game pixels), falls back
//! to silence without a sound card with one warning, and exits after --frames.

mod play_common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use play_common::{fixtures, framelock, SETUP_HINT};

/// An Xvfb server on a free display, killed on drop.
struct Xvfb {
    child: Child,
    display: String,
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_xvfb() -> Xvfb {
    assert!(
        Path::new("/usr/bin/Xvfb").exists(),
        "Xvfb is not installed: {SETUP_HINT}"
    );
    for n in 90..200 {
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
        if socket.exists() || Path::new(&format!("/tmp/.X{n}-lock")).exists() {
            continue;
        }
        let display = format!(":{n}");
        // -br: black root window, so every non-black pixel is ours.
        let mut child = Command::new("Xvfb")
            .args([
                &display,
                "-screen",
                "0",
                "1280x1024x24",
                "-br",
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start Xvfb");
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if socket.exists() {
                return Xvfb { child, display };
            }
            if child.try_wait().unwrap().is_some() {
                break; // lost a race for this display number; try the next
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("could not start Xvfb on any display :90..:199");
}

/// Grabs the whole X screen with ImageMagick's `import` into `png`; returns the number of
/// non-black pixels and the bounding box of them.
fn grab(display: &str, png: &Path) -> Option<(usize, (u32, u32, u32, u32))> {
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
    let mut decoder = png::Decoder::new(std::fs::File::open(png).ok()?);
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().ok()?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).ok()?;
    let channels = info.color_type.samples();
    let mut count = 0;
    let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
    for (i, px) in buf[..info.buffer_size()].chunks(channels).enumerate() {
        let lit = px.iter().take(3.min(channels)).any(|&c| c > 24);
        if lit {
            count += 1;
            let (x, y) = ((i as u32) % info.width, (i as u32) / info.width);
            (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
        }
    }
    Some((count, (x0, y0, x1, y1)))
}

#[test]
fn window_shows_the_game_under_xvfb() {
    assert!(
        Command::new("import").arg("-version").output().is_ok(),
        "ImageMagick `import` is missing: {SETUP_HINT}"
    );
    let f = fixtures();
    let x = start_xvfb();
    let home = tempfile::tempdir().unwrap();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("window_xvfb");
    std::fs::create_dir_all(&shots).unwrap();
    let stats = home.path().join("stats.json");
    let hook = shots.join("hook-frame-240.png");
    let log = home.path().join("stderr.log");

    let mut child = framelock(home.path())
        .env("DISPLAY", &x.display)
        .env_remove("WAYLAND_DISPLAY")
        .args([
            "play", "--frames", "300", "--bot", "2", "--scale", "2", "--core",
        ])
        .arg(&f.gpgx)
        .arg(&f.airstriker)
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

    // Grab the screen every 250 ms while the game runs; keep the brightest grab.
    let mut best: Option<(usize, (u32, u32, u32, u32), PathBuf)> = None;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut n = 0;
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        let png = shots.join(format!("screen-{n:02}.png"));
        n += 1;
        if let Some((count, bbox)) = grab(&x.display, &png) {
            if best.as_ref().is_none_or(|b| count > b.0) {
                best = Some((count, bbox, png));
            }
        }
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
    }
    let status = child.wait().unwrap();
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(stderr.contains("drawing with"), "{stderr}");

    let (count, (x0, y0, x1, y1), png) = best.expect("no screen grab succeeded");
    eprintln!(
        "brightest grab {}: {count} lit pixels in ({x0},{y0})-({x1},{y1})",
        png.display()
    );
    // The game's 320x224 frame at scale 2 fills a 640x448 window at the top-left corner
    // (no window manager): lit pixels must be there, and plenty of them.
    assert!(count > 2000, "only {count} non-black pixels on screen");
    assert!(
        x1 < 640 && y1 < 448,
        "pixels outside the window: ({x1},{y1})"
    );

    // The frame the app saved itself is the same game.
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
}
