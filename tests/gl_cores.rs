//! Hardware-rendered (OpenGL) cores, on Mesa's llvmpipe through a surfaceless EGL context:
//! quadpong, framelock's own GL core, headless (the same checksum and pictures twice, every
//! context and origin the same upright picture, the sync test), in netplay with
//! speculation over an impaired link, exported from a replay, in a window under Xvfb with
//! the status bar, and in RetroArch; the refusals (Vulkan, no EGL) in one line each; and
//! the wheel's real GL cores, parallel_n64 and melonDS, as far as no game lets us go. The
//! cores and refusals (`cores`) and the window (`window`) have files under gl_cores/.

#[path = "gl_cores/cores.rs"]
mod cores;
mod netplay_common;
mod play_common;
#[path = "gl_cores/window.rs"]
mod window;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use netplay_common::{
    args, assert_sane_stats, checksum, core, framelock, free_port, quadpong, start_host,
    start_join, text,
};
use serde_json::Value;

/// `framelock play --headless ARGS --stats-json`: the run's output and stats.
fn play(home: &Path, name: &str, a: &[&str]) -> (Output, Option<Value>) {
    let stats = home.join(format!("{name}.json"));
    let _ = std::fs::remove_file(&stats);
    let out = framelock(home)
        .arg("play")
        .arg("--headless")
        .args(a)
        .arg("--stats-json")
        .arg(&stats)
        .output()
        .expect("run framelock");
    let json = std::fs::read_to_string(&stats)
        .ok()
        .map(|t| serde_json::from_str(&t).expect("stats are JSON"));
    (out, json)
}

fn play_ok(home: &Path, name: &str, a: &[&str]) -> Value {
    let (out, stats) = play(home, name, a);
    assert!(out.status.success(), "{}", text(&out));
    stats.expect("stats written")
}

fn q() -> String {
    quadpong().display().to_string()
}

/// `(frames run, hash)` of every picture shown (`--hash-shown`).
fn shown(stats: &Value) -> Vec<(u64, u64)> {
    serde_json::from_value(stats["shown"].clone()).expect("shown hashes")
}

/// An RGB picture.
struct Picture {
    width: usize,
    height: usize,
    rgb: Vec<[u8; 3]>,
}

impl Picture {
    fn read(path: &Path) -> Picture {
        let file = std::fs::File::open(path)
            .unwrap_or_else(|e| panic!("no picture {}: {e}", path.display()));
        let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        let channels = info.color_type.samples();
        let rgb = buf[..info.buffer_size()]
            .chunks(channels)
            .map(|c| match c {
                [r, g, b, ..] => [*r, *g, *b],
                // A grey picture (an all-black screen grab is saved as one).
                [l, ..] => [*l; 3],
                [] => [0; 3],
            })
            .collect();
        Picture {
            width: info.width as usize,
            height: info.height as usize,
            rgb,
        }
    }

    /// Pixels in `x0..x1`, `y0..y1` for which `test` holds.
    fn count(
        &self,
        (x0, y0, x1, y1): (usize, usize, usize, usize),
        test: impl Fn([u8; 3]) -> bool,
    ) -> usize {
        let mut n = 0;
        for y in y0..y1.min(self.height) {
            for x in x0..x1.min(self.width) {
                n += usize::from(test(self.rgb[y * self.width + x]));
            }
        }
        n
    }
}

/// Quadpong's bottom wall and player 1's paddle are red-orange, the top's cyan.
fn reddish(p: [u8; 3]) -> bool {
    p[0] > 90 && u16::from(p[0]) > 2 * u16::from(p[1]) && u16::from(p[0]) > 2 * u16::from(p[2])
}
fn cyanish(p: [u8; 3]) -> bool {
    p[2] > 90 && p[1] > 60 && u16::from(p[0]) * 2 < u16::from(p[2])
}
fn white(p: [u8; 3]) -> bool {
    p.iter().all(|&c| c >= 200)
}

/// A 640x480 quadpong picture at `(x, y)` on a bigger one: upright (red at the bottom,
/// cyan at the top, not the other way round) with its balls drawn (white, which shows only
/// through a working depth and stencil buffer).
fn assert_upright_quadpong(p: &Picture, (x, y): (usize, usize), what: &str) {
    // The arena's top and bottom strips: walls and paddles.
    let top = (x + 80, y, x + 560, y + 30);
    let bottom = (x + 80, y + 450, x + 560, y + 480);
    let (red_bottom, cyan_top) = (p.count(bottom, reddish), p.count(top, cyanish));
    let (red_top, cyan_bottom) = (p.count(top, reddish), p.count(bottom, cyanish));
    assert!(
        red_bottom > 300 && cyan_top > 300 && red_top < 50 && cyan_bottom < 50,
        "{what}: not upright (red {red_bottom} below, {red_top} above; cyan {cyan_top} above, {cyan_bottom} below)"
    );
    let balls = p.count((x + 80, y + 4, x + 560, y + 476), white);
    // A ball's bright middle is about 30 pixels.
    assert!(balls > 20, "{what}: no balls drawn ({balls} white pixels)");
}

#[test]
fn quadpong_runs_headless_with_the_same_checksum_and_pictures_twice() {
    let home = tempfile::tempdir().unwrap();
    let a: &[&str] = &[
        "--core",
        &q(),
        "--frames",
        "300",
        "--fast",
        "--bot",
        "3:human",
        "--hash-shown",
        "0:300",
    ];
    let first = play_ok(home.path(), "first", a);
    let second = play_ok(home.path(), "second", a);
    assert_eq!(checksum(&first), checksum(&second));
    assert_eq!(first["frames"], 300);
    let (s1, s2) = (shown(&first), shown(&second));
    assert!(s1.len() > 30, "{first}");
    // Every picture both runs showed of a frame is the same picture.
    let mut compared = 0;
    for (f, h) in &s1 {
        if let Some((_, h2)) = s2.iter().find(|(f2, _)| f2 == f) {
            assert_eq!(h, h2, "frame {f} drawn differently");
            compared += 1;
        }
    }
    assert!(compared > 30, "only {compared} frames shown by both runs");
    // The game moves: the pictures are not one picture.
    let mut distinct: Vec<u64> = s1.iter().map(|(_, h)| *h).collect();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(distinct.len() > 20, "{} distinct pictures", distinct.len());
    // The context and the read-back, in the stats.
    let gl = &first["gl"];
    assert_eq!(gl["asked"], "OpenGL 3.3 core profile", "{gl}");
    assert!(
        gl["version"].as_str().unwrap().contains("Core Profile"),
        "{gl}"
    );
    assert!(!gl["renderer"].as_str().unwrap().is_empty(), "{gl}");
    assert_eq!(gl["frames_captured"], 300, "{gl}");
    assert!(
        gl["frames_read"].as_u64().unwrap() >= s1.len() as u64,
        "{gl}"
    );
    // Other pads, another game.
    let other = play_ok(
        home.path(),
        "other",
        &[
            "--core",
            &q(),
            "--frames",
            "300",
            "--fast",
            "--bot",
            "4:human",
        ],
    );
    assert_ne!(checksum(&first), checksum(&other));
}

#[test]
fn every_context_and_origin_draws_the_same_upright_picture() {
    let home = tempfile::tempdir().unwrap();
    let variants: [(&str, &str); 5] = [
        ("gl-core", "quadpong_context=gl-core"),
        ("gl-compat", "quadpong_context=gl"),
        ("gles2", "quadpong_context=gles2"),
        ("gles3", "quadpong_context=gles3"),
        ("top-left", "quadpong_origin=top-left"),
    ];
    let mut first: Option<(Vec<[u8; 3]>, String)> = None;
    for (name, option) in variants {
        let shot = home.path().join(format!("{name}.png"));
        let s = play_ok(
            home.path(),
            name,
            &[
                "--core",
                &q(),
                "--frames",
                "150",
                "--fast",
                "--bot",
                "5",
                "--option",
                option,
                "--screenshot-at",
                "150",
                shot.to_str().unwrap(),
            ],
        );
        let p = Picture::read(&shot);
        assert_eq!((p.width, p.height), (640, 480), "{name}");
        assert_upright_quadpong(&p, (0, 0), name);
        match &first {
            None => first = Some((p.rgb, checksum(&s))),
            Some((rgb, sum)) => {
                let differ = rgb.iter().zip(&p.rgb).filter(|(a, b)| a != b).count();
                assert_eq!(differ, 0, "{name}: {differ} pixels differ from gl-core's");
                assert_eq!(*sum, checksum(&s), "{name}");
            }
        }
        let asked = s["gl"]["asked"].as_str().unwrap().to_string();
        let want = match name {
            "gl-compat" => "OpenGL 2 (compatibility profile)",
            "gles2" => "OpenGL ES 2.0",
            "gles3" => "OpenGL ES 3.0",
            _ => "OpenGL 3.3 core profile",
        };
        assert_eq!(asked, want, "{name}");
    }
}

#[test]
fn quadpong_passes_the_sync_test_8_deep_and_runs_ahead() {
    let home = tempfile::tempdir().unwrap();
    // Run-ahead re-runs every frame from a loaded state; the real frames end the same.
    let base: &[&str] = &[
        "--core",
        &q(),
        "--frames",
        "180",
        "--fast",
        "--bot",
        "6:human",
    ];
    let plain = play_ok(home.path(), "plain", base);
    let ahead = play_ok(
        home.path(),
        "ahead",
        &[base, &["--run-ahead", "3"]].concat(),
    );
    assert_eq!(checksum(&plain), checksum(&ahead));
    let s = play_ok(
        home.path(),
        "sync",
        &[
            "--core",
            &q(),
            "--frames",
            "180",
            "--fast",
            "--bot",
            "6:human",
            "--sync-test",
            "8",
        ],
    );
    assert_eq!(s["frames"], 180);
    // And a core whose loads are ignored fails it: the test can fail on a GL core.
    let (out, _) = play(
        home.path(),
        "broken",
        &[
            "--core",
            &q(),
            "--frames",
            "180",
            "--fast",
            "--bot",
            "6:human",
            "--sync-test",
            "8",
            "--test-ignore-loads",
        ],
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("sync test failed"),
        "{}",
        text(&out)
    );
}

#[test]
fn host_and_join_stay_in_sync_over_a_bad_link_with_default_flags_rolling_back() {
    // No --speculate: rollback is on by default, after the GL core passes its check.
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let link = "delay=50ms,jitter=20ms,loss=5%";
    let common = ["--core", &q(), "--frames", "600", "--netsim", link];
    let mut h = args(&["--players", "2", "--bot", "1:human"]);
    h.extend(args(&common));
    let mut host = start_host(dir.path(), port, &h);
    let mut j = args(&["--bot", "2:human"]);
    j.extend(args(&common));
    let mut join = start_join(dir.path(), port, "join", &j);
    let budget = Duration::from_secs(60);
    join.wait_ok(budget);
    host.wait_ok(budget);
    let stats = [host.read_stats(), join.read_stats()];
    for (label, s) in ["host", "join"].iter().zip(&stats) {
        assert_sane_stats(label, s, 600);
        assert_eq!(s["gl"]["asked"], "OpenGL 3.3 core profile", "{label}: {s}");
        assert!(
            s["speculate_depth"].as_u64().unwrap_or(0) >= 1,
            "{label} did not speculate: {s}"
        );
    }
    assert_eq!(
        checksum(&stats[0]),
        checksum(&stats[1]),
        "the peers diverged"
    );
    // Both showed frames run ahead of the agreed ones and went back (loading a state into
    // the GL core); a wrong guess is run again too. On llvmpipe a frame takes a few
    // milliseconds, so the depth stays small and wrong guesses are few: counted, not
    // required.
    for (label, s) in ["host", "join"].iter().zip(&stats) {
        let ahead = s["run_ahead"]["frames"].as_u64().unwrap_or(0);
        assert!(
            ahead > 300,
            "{label} showed only {ahead} frames run ahead: {s}"
        );
    }
    let rollbacks: Vec<u64> = stats
        .iter()
        .map(|s| s["rollbacks"].as_u64().unwrap_or(0))
        .collect();
    eprintln!("rollbacks (host, join): {rollbacks:?}");
}

/// Frame `k` of a video file as RGB bytes.
fn decoded_frame(file: &Path, k: u64) -> Vec<u8> {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(file)
        .args(["-vf", &format!("select=eq(n\\,{k})"), "-frames:v", "1"])
        .args(["-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        .output()
        .expect("ffmpeg runs (bash .ci/setup installs it)");
    assert!(out.status.success(), "ffmpeg {}", text(&out));
    out.stdout
}

#[test]
fn a_replays_lossless_export_has_the_pictures_the_game_showed() {
    let home = tempfile::tempdir().unwrap();
    let flr = home.path().join("q.flr");
    let played = play_ok(
        home.path(),
        "played",
        &[
            "--core",
            &q(),
            "--frames",
            "200",
            "--fast",
            "--bot",
            "7:human",
            "--record",
            flr.to_str().unwrap(),
            "--hash-shown",
            "0:200",
        ],
    );
    let mkv = home.path().join("q.mkv");
    let out = framelock(home.path())
        .args(["replay"])
        .arg(&flr)
        .arg("--export")
        .arg(&mkv)
        .args(["--lossless", "--scale", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let mut compared = 0;
    for (frames_run, hash) in shown(&played).into_iter().step_by(10) {
        // Frame K of the video is the picture once K+1 frames have run.
        let rgb = decoded_frame(&mkv, frames_run - 1);
        assert_eq!(rgb.len(), 640 * 480 * 3, "frame {frames_run}");
        // `--hash-shown` hashes XRGB8888 pixels, little-endian.
        let xrgb: Vec<u8> = rgb
            .chunks_exact(3)
            .flat_map(|c| [c[2], c[1], c[0], 0])
            .collect();
        assert_eq!(
            xxhash_rust::xxh3::xxh3_64(&xrgb),
            hash,
            "video frame {} differs from the game's",
            frames_run - 1
        );
        compared += 1;
    }
    assert!(compared >= 5, "only {compared} frames compared");
}
