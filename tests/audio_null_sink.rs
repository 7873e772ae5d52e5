//! The live audio path: cpal's real output callback, through ALSA's pulse plugin into a
//! PulseAudio null sink (a device on a real clock that plays nowhere), for a minute of the
//! built-in game in a window under Xvfb. After the first second of sound, dynamic rate
//! control keeps the buffer off both ends, and no output callback finds it short. (ALSA's
//! own `null` device is no use here: it takes samples as fast as they come, on no clock.)
//!
//! This device asks for nothing for half a second or more after its first callbacks: the
//! game's sound of that time is dropped (the ring is full), the callback skips the backlog
//! when the device starts, and the first second counts from there.
//!
//! Needs `pulseaudio` and `libasound2-plugins` (`.ci/setup` installs them).

mod play_common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use play_common::{framelock, start_xvfb, text, SETUP_HINT};

/// A PulseAudio daemon with a 48 kHz null sink as its default, on a socket in `home`.
struct Pulse {
    child: Child,
    socket: PathBuf,
}

impl Drop for Pulse {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_pulse(home: &Path) -> Pulse {
    assert!(
        Path::new("/usr/bin/pulseaudio").exists(),
        "pulseaudio is not installed: {SETUP_HINT}"
    );
    let socket = home.join("pulse.sock");
    let script = home.join("null.pa");
    std::fs::write(
        &script,
        format!(
            "load-module module-null-sink sink_name=framelock_null rate=48000\n\
             set-default-sink framelock_null\n\
             load-module module-native-protocol-unix auth-anonymous=1 socket={}\n",
            socket.display()
        ),
    )
    .unwrap();
    let child = Command::new("pulseaudio")
        .args([
            "-n",
            "--daemonize=no",
            "--exit-idle-time=-1",
            "--use-pid-file=no",
            "-F",
        ])
        .arg(&script)
        .env("HOME", home)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start pulseaudio");
    let mut pulse = Pulse { child, socket };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pulse.socket.exists() {
        assert!(
            Instant::now() < deadline && pulse.child.try_wait().unwrap().is_none(),
            "pulseaudio did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    pulse
}

#[test]
fn a_minute_of_sound_keeps_the_buffer_within_bounds() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let pulse = start_pulse(h);
    // ALSA's default device is PulseAudio's (libasound2-plugins).
    std::fs::write(
        h.join(".asoundrc"),
        "pcm.!default { type pulse }\nctl.!default { type pulse }\n",
    )
    .unwrap();
    let x = start_xvfb();
    let stats = h.join("stats.json");
    let out = framelock(h)
        .env("DISPLAY", &x.display)
        .env("HOME", h)
        .env("PULSE_SERVER", format!("unix:{}", pulse.socket.display()))
        .args(["play", "--frames", "3600", "--bot", "1", "--stats-json"])
        .arg(&stats)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let a = &s["audio"];
    let ctx = format!("{a:#}\n{}", text(&out));
    assert_eq!(a["live"], true, "no sound device was open: {ctx}");
    // A callback about every 10-20 ms for a minute.
    assert!(a["callbacks"].as_u64().unwrap() > 2000, "{ctx}");
    assert_eq!(a["underruns_after_1s"], 0, "{ctx}");
    let (lo, hi) = (
        a["fill_min"].as_f64().unwrap(),
        a["fill_max"].as_f64().unwrap(),
    );
    eprintln!("audio: {a}");
    // Rate control aims at half full; a frame's samples (800 of a 6,144-frame ring) and
    // the callbacks' timing move it by about a tenth either way, and a machine busy with
    // other work (a build beside the test) by a few hundredths more.
    assert!(
        lo > 0.10 && hi < 0.90,
        "buffer fill {lo:.2}..{hi:.2}: {ctx}"
    );
}
