//! `replay LOG --export FILE` through the binary, checked with Debian's ffprobe and ffmpeg:
//! one video frame per frame of the log and a sound track as long, for the built-in game and
//! Genesis Plus GX; a lossless file's frame K is the emulator's frame K pixel for pixel;
//! clips and GIFs have exactly their frames; Genesis Plus GX's resolution changes at boot give
//! one size; Ctrl-C leaves a playable file; bad output paths fail clearly. The loopback TCP
//! link that Windows uses in place of the pipes exports the same file and fails the same way.

mod replay_common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use replay_common::{
    assert_fails_with, assert_ok, genesis, record_builtin, run, stderr, text, GENESIS_OPTION,
};

/// ffprobe's answer for `entries` of stream `stream` (`v:0`, `a:0`), packets counted.
fn probe(file: &Path, stream: &str, entries: &str) -> String {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-count_packets", "-select_streams", stream])
        .args(["-show_entries", &format!("stream={entries}")])
        .args(["-of", "default=noprint_wrappers=1:nokey=1"])
        .arg(file)
        .output()
        .expect("ffprobe runs (bash .ci/setup installs ffmpeg)");
    assert!(out.status.success(), "ffprobe {}", text(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn video_frames(file: &Path) -> u64 {
    probe(file, "v:0", "nb_read_packets").parse().unwrap()
}

/// The sound track's length in seconds, from its decoded samples.
fn audio_seconds(file: &Path) -> f64 {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(file)
        .args([
            "-map", "0:a:0", "-f", "s16le", "-ac", "1", "-ar", "48000", "-",
        ])
        .output()
        .expect("ffmpeg runs");
    assert!(out.status.success(), "ffmpeg {}", text(&out));
    out.stdout.len() as f64 / 2.0 / 48_000.0
}

/// Frame `k` of `file` as RGB bytes, and its size.
fn decoded_frame(file: &Path, k: u64) -> Vec<u8> {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(file)
        .args(["-vf", &format!("select=eq(n\\,{k})"), "-frames:v", "1"])
        .args(["-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        .output()
        .expect("ffmpeg runs");
    assert!(out.status.success(), "ffmpeg {}", text(&out));
    out.stdout
}

fn png_rgb(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    let rgb = match info.color_type {
        png::ColorType::Rgb => buf,
        png::ColorType::Rgba => buf.chunks(4).flat_map(|p| [p[0], p[1], p[2]]).collect(),
        other => panic!("screenshot is {other:?}"),
    };
    (info.width, info.height, rgb)
}

#[test]
fn the_builtin_game_exports_every_frame_with_its_sound() {
    let home = tempfile::tempdir().unwrap();
    record_builtin(home.path(), 600, Some(3), "a.flr");
    let out = run(
        home.path(),
        &["replay", "a.flr", "--export", "a.mp4", "--scale", "2"],
    );
    assert_ok(&out);
    let file = home.path().join("a.mp4");
    assert_eq!(video_frames(&file), 600, "{}", text(&out));
    assert_eq!(
        probe(&file, "v:0", "codec_name,width,height"),
        "h264\n640\n480"
    );
    assert_eq!(probe(&file, "v:0", "r_frame_rate"), "60/1");
    assert_eq!(probe(&file, "a:0", "codec_name,sample_rate"), "aac\n48000");
    // 10 s of sound, within a frame and AAC's own framing (1024 samples of priming).
    let secs = audio_seconds(&file);
    assert!(
        (secs - 10.0).abs() < 1.0 / 60.0 + 1024.0 / 48_000.0,
        "{secs} s of sound"
    );
    assert!(
        stderr(&out).contains("600 frames (640x480)"),
        "{}",
        text(&out)
    );

    // The file is there now: not overwritten without --force.
    let out = run(home.path(), &["replay", "a.flr", "--export", "a.mp4"]);
    assert_fails_with(&out, "a.mp4 exists; pass --force to overwrite it");
    assert_eq!(video_frames(&file), 600, "the file is untouched");
    let out = run(
        home.path(),
        &[
            "replay",
            "a.flr",
            "--export",
            "a.mp4",
            "--force",
            "--to-frame",
            "60",
            "--scale",
            "1",
        ],
    );
    assert_ok(&out);
    assert_eq!(video_frames(&file), 60);
}

#[test]
fn genesis_plus_gx_exports_at_its_own_rate_in_one_size() {
    let g = genesis();
    let home = tempfile::tempdir().unwrap();
    let (core, rom) = (g.core.to_str().unwrap(), g.rom.to_str().unwrap());
    let out = run(
        home.path(),
        &[
            "play",
            "--headless",
            "--fast",
            "--frames",
            "900",
            "--bot",
            "2",
            "--core",
            core,
            rom,
            "--option",
            GENESIS_OPTION,
            "--record",
            "g.flr",
        ],
    );
    assert_ok(&out);
    let out = run(
        home.path(),
        &["replay", "g.flr", "--export", "g.mp4", "--scale", "1"],
    );
    assert_ok(&out);
    let file = home.path().join("g.mp4");
    assert_eq!(video_frames(&file), 900, "{}", text(&out));
    // NTSC's 59.92 fps, not 60.
    let rate = probe(&file, "v:0", "r_frame_rate");
    let (n, d) = rate.split_once('/').unwrap();
    let fps = n.parse::<f64>().unwrap() / d.parse::<f64>().unwrap();
    assert!((fps - 59.9227).abs() < 1e-3, "{rate}");
    let secs = audio_seconds(&file);
    assert!(
        (secs - 900.0 / fps).abs() < 1.0 / fps + 1024.0 / 44_100.0,
        "{secs} s of sound"
    );
    // The core starts at 256x192 and 320x192 before Airstriker's 320x224: every decoded
    // frame has the one size, 224 lines at the core's aspect.
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-show_entries"])
        .args(["frame=width,height", "-of", "csv=p=0"])
        .arg(&file)
        .output()
        .unwrap();
    let sizes: std::collections::BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim_end_matches(',').to_owned())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(sizes.len(), 1, "{sizes:?}");
    let size = sizes.into_iter().next().unwrap();
    assert!(size.ends_with(",224"), "{size}");
}

#[test]
fn a_lossless_frame_is_the_emulators_frame_pixel_for_pixel() {
    let home = tempfile::tempdir().unwrap();
    record_builtin(home.path(), 300, Some(7), "a.flr");
    let out = run(
        home.path(),
        &[
            "replay",
            "a.flr",
            "--export",
            "a.mkv",
            "--lossless",
            "--scale",
            "1",
        ],
    );
    assert_ok(&out);
    let file = home.path().join("a.mkv");
    assert_eq!(video_frames(&file), 300);
    assert_eq!(probe(&file, "a:0", "codec_name,sample_rate"), "flac\n48000");
    // Every sample: the game makes 800 a frame at 60 fps.
    assert_eq!(audio_seconds(&file), 300.0 / 60.0);
    for k in [0u64, 150, 299] {
        // The screenshot once K+1 frames have run is frame K (counted from 0).
        let shot = home.path().join(format!("k{k}.png"));
        let out = run(
            home.path(),
            &[
                "replay",
                "a.flr",
                "--headless",
                "--fast",
                "--to-frame",
                &(k + 1).to_string(),
                "--screenshot-at",
                &(k + 1).to_string(),
                shot.to_str().unwrap(),
            ],
        );
        assert_ok(&out);
        let (w, h, want) = png_rgb(&shot);
        assert_eq!((w, h), (320, 240));
        let got = decoded_frame(&file, k);
        assert_eq!(got.len(), want.len(), "frame {k}");
        let differ = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        assert_eq!(differ, 0, "frame {k}: {differ} bytes differ");
    }
    // And it is not the same picture every time.
    assert_ne!(decoded_frame(&file, 0), decoded_frame(&file, 299));
}

#[test]
fn clips_and_gifs_have_exactly_their_frames() {
    let home = tempfile::tempdir().unwrap();
    record_builtin(home.path(), 900, Some(4), "a.flr");
    let out = run(
        home.path(),
        &[
            "replay",
            "a.flr",
            "--export",
            "clip.webm",
            "--from-frame",
            "200",
            "--to-frame",
            "500",
            "--scale",
            "1",
        ],
    );
    assert_ok(&out);
    let clip = home.path().join("clip.webm");
    assert_eq!(video_frames(&clip), 300, "{}", text(&out));
    assert_eq!(probe(&clip, "a:0", "codec_name"), "opus");
    // The clip's first frame is the log's frame 200, not its first.
    let all = home.path().join("all.mkv");
    assert_ok(&run(
        home.path(),
        &[
            "replay",
            "a.flr",
            "--export",
            "all.mkv",
            "--lossless",
            "--scale",
            "1",
            "--to-frame",
            "201",
        ],
    ));
    let from = home.path().join("from.mkv");
    assert_ok(&run(
        home.path(),
        &[
            "replay",
            "a.flr",
            "--export",
            "from.mkv",
            "--lossless",
            "--scale",
            "1",
            "--from-frame",
            "200",
            "--to-frame",
            "201",
        ],
    ));
    assert_eq!(video_frames(&from), 1);
    assert_eq!(decoded_frame(&from, 0), decoded_frame(&all, 200));

    let out = run(
        home.path(),
        &[
            "replay",
            "a.flr",
            "--export",
            "a.gif",
            "--from-frame",
            "300",
            "--to-frame",
            "600",
        ],
    );
    assert_ok(&out);
    let gif = home.path().join("a.gif");
    assert_eq!(video_frames(&gif), 300);
    assert_eq!(
        probe(&gif, "v:0", "codec_name,width,height"),
        "gif\n1280\n960"
    );
}

#[test]
fn bad_outputs_fail_before_anything_runs() {
    let home = tempfile::tempdir().unwrap();
    record_builtin(home.path(), 60, None, "a.flr");
    let out = run(home.path(), &["replay", "a.flr", "--export", "a.avi"]);
    assert_fails_with(&out, "unknown video format .avi: use .mp4, .webm, .mkv");
    let out = run(
        home.path(),
        &["replay", "a.flr", "--export", "a.mp4", "--lossless"],
    );
    assert_fails_with(&out, "--lossless needs a .mkv file");
    let out = run(
        home.path(),
        &["replay", "a.flr", "--export", "no/such/dir/a.mp4"],
    );
    assert_fails_with(
        &out,
        "cannot write no/such/dir/a.mp4: no such file or directory",
    );
    let out = replay_common::framelock(home.path())
        .env("FRAMELOCK_FFMPEG", "/nonexistent/ffmpeg")
        .args(["replay", "a.flr", "--export", "b.mp4"])
        .output()
        .unwrap();
    assert_fails_with(&out, "install ffmpeg (apt install ffmpeg) to export video");
    // A full disk (a name for /dev/full): ffmpeg's own words.
    std::os::unix::fs::symlink("/dev/full", home.path().join("full.mp4")).unwrap();
    let out = run(
        home.path(),
        &[
            "replay", "a.flr", "--export", "full.mp4", "--force", "--scale", "1",
        ],
    );
    assert_fails_with(&out, "ffmpeg failed writing full.mp4");
    assert_fails_with(&out, "No space left on device");
    // The log was only read.
    let log = std::fs::read(home.path().join("a.flr")).unwrap();
    assert!(!log.is_empty());
}

#[test]
fn the_windows_tcp_link_exports_the_same_frames_and_fails_as_clearly() {
    let home = tempfile::tempdir().unwrap();
    record_builtin(home.path(), 300, Some(3), "a.flr");
    let export = |file: &str, link: Option<&str>| {
        let mut cmd = replay_common::framelock(home.path());
        if let Some(link) = link {
            cmd.env("FRAMELOCK_FFMPEG_LINK", link);
        }
        cmd.args([
            "replay", "a.flr", "--export", file, "--scale", "1", "--force",
        ]);
        if file.ends_with(".mkv") {
            cmd.arg("--lossless");
        }
        cmd.output().unwrap()
    };
    let out = export("tcp.mkv", Some("tcp"));
    assert_ok(&out);
    let out_pipe = export("pipe.mkv", None);
    assert_ok(&out_pipe);
    let (tcp, pipe) = (home.path().join("tcp.mkv"), home.path().join("pipe.mkv"));
    assert_eq!(video_frames(&tcp), 300, "{}", text(&out));
    assert_eq!(decoded_frame(&tcp, 299), decoded_frame(&pipe, 299));
    let (a, b) = (audio_seconds(&tcp), audio_seconds(&pipe));
    assert!(
        (a - 5.0).abs() < 0.05 && (a - b).abs() < 1e-6,
        "{a} s / {b} s of sound"
    );
    // ffmpeg's own words when it cannot write, as over the pipes (ffmpeg exits 0 when only
    // a Matroska trailer fails to write, so this writes MP4).
    std::os::unix::fs::symlink("/dev/full", home.path().join("full.mp4")).unwrap();
    let out = export("full.mp4", Some("tcp"));
    assert_fails_with(&out, "ffmpeg failed writing full.mp4");
    assert_fails_with(&out, "No space left on device");
}

#[test]
fn ctrl_c_leaves_a_playable_file_and_says_so() {
    let home = tempfile::tempdir().unwrap();
    record_builtin(home.path(), 36_000, Some(1), "long.flr");
    // In a process group of its own, as a terminal runs it: Ctrl-C goes to the whole group.
    let child = replay_common::framelock(home.path())
        .args(["replay", "long.flr", "--export", "long.mkv", "--scale", "4"])
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let file = home.path().join("long.mkv");
    // Wait until the encoder has written something, then interrupt.
    let started = std::time::Instant::now();
    while std::fs::metadata(&file).map_or(0, |m| m.len()) < 200_000 {
        assert!(started.elapsed().as_secs() < 60, "no video written");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: kill(2) on the process group of our own child.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("holds the first"), "{err}");
    assert!(err.contains("and plays"), "{err}");
    let frames = video_frames(&file);
    assert!(frames > 0 && frames < 36_000, "{frames} frames");
    // Every frame decodes.
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(&file)
        .args(["-f", "null", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        text(&out)
    );
}

#[test]
fn play_video_keeps_every_frames_sound_while_running_ahead() {
    // Running ahead plays a frame's sound when it first runs ahead and silences the real
    // run of it; the video still gets each frame's own sound, once.
    let home = tempfile::tempdir().unwrap();
    let out = run(
        home.path(),
        &[
            "play",
            "--headless",
            "--fast",
            "--frames",
            "300",
            "--bot",
            "2",
            "--run-ahead",
            "2",
            "--video",
            "ahead.mkv",
            "--lossless",
            "--scale",
            "1",
        ],
    );
    assert_ok(&out);
    let file = home.path().join("ahead.mkv");
    assert_eq!(video_frames(&file), 300, "{}", text(&out));
    // 800 samples a frame at 48 kHz, every one of them.
    assert_eq!(audio_seconds(&file), 300.0 / 60.0);
}
