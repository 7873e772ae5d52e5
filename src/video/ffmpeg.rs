//! The `ffmpeg` binary as an encoder: raw `bgr0` frames go down one pipe (its fd 3), raw
//! interleaved stereo `s16le` samples down another (fd 4); ffmpeg muxes them into the file.
//!
//! ffmpeg runs in a process group of its own, so the terminal's Ctrl-C reaches only
//! framelock, which then closes the pipes: ffmpeg sees the end of its input and finishes the
//! file properly. Closing the pipes is also what happens if framelock dies, so a file is
//! finished whichever way framelock stops. Its error output is kept (the last lines) to say
//! why it failed, e.g. a full disk.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;

use super::format::Format;
use super::VideoError;

/// The program run; `FRAMELOCK_FFMPEG` overrides it (tests point it at a missing one).
fn program() -> PathBuf {
    std::env::var_os("FRAMELOCK_FFMPEG").map_or_else(|| PathBuf::from("ffmpeg"), PathBuf::from)
}

/// What goes down the pipes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Input {
    pub width: u32,
    pub height: u32,
    /// Frames per second as an exact fraction (numerator, denominator).
    pub rate: (u64, u64),
    /// Samples per second per channel; `None`: no sound track.
    pub sample_rate: Option<u32>,
}

/// A running ffmpeg writing one file.
pub struct Ffmpeg {
    child: Child,
    video: Option<std::io::PipeWriter>,
    audio: Option<std::io::PipeWriter>,
    errors: Option<JoinHandle<String>>,
    path: PathBuf,
}

/// The write end of the sound pipe.
pub struct AudioPipe(std::io::PipeWriter);

impl AudioPipe {
    /// Writes interleaved stereo samples; an error means ffmpeg has stopped.
    pub fn write(&mut self, samples: &[i16]) -> std::io::Result<()> {
        let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
        self.0.write_all(&bytes)
    }
}

/// Lines of ffmpeg's error output kept for the error message.
const TAIL_LINES: usize = 4;

impl Ffmpeg {
    /// Starts ffmpeg writing `path` (which it may overwrite: the caller checked).
    /// `realtime`: favour speed, the recording runs beside a game being played.
    pub fn spawn(
        path: &Path,
        format: Format,
        input: &Input,
        realtime: bool,
    ) -> Result<Ffmpeg, VideoError> {
        let (video_r, video_w) = std::io::pipe().map_err(VideoError::Pipe)?;
        let (audio_r, audio_w) = std::io::pipe().map_err(VideoError::Pipe)?;
        let video_r: OwnedFd = video_r.into();
        let audio_r: OwnedFd = audio_r.into();
        let mut cmd = Command::new(program());
        cmd.args([
            "-hide_banner",
            "-nostdin",
            "-nostats",
            "-loglevel",
            "error",
            "-y",
        ]);
        // Raw inputs need no probing: read as little as possible before starting.
        let quick = [
            "-probesize",
            "32",
            "-analyzeduration",
            "0",
            "-thread_queue_size",
            "1024",
        ];
        cmd.args(quick).args(["-f", "rawvideo", "-pix_fmt", "bgr0"]);
        cmd.args(["-video_size", &format!("{}x{}", input.width, input.height)]);
        cmd.args(["-framerate", &format!("{}/{}", input.rate.0, input.rate.1)]);
        cmd.args(["-i", "pipe:3"]);
        if let Some(rate) = input.sample_rate {
            cmd.args(quick).args(["-f", "s16le", "-ac", "2"]);
            cmd.args(["-ar", &rate.to_string(), "-i", "pipe:4"]);
        }
        cmd.args(format.output_args(input.sample_rate.unwrap_or(0), realtime));
        cmd.arg(path);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        let (vfd, afd) = (video_r.as_raw_fd(), audio_r.as_raw_fd());
        // SAFETY: between fork and exec only async-signal-safe calls (dup2, fcntl) run.
        unsafe {
            cmd.pre_exec(move || {
                // Both ends are close-on-exec; dup2 gives copies without the flag at the fds
                // ffmpeg reads. Moving audio out of the way first keeps it from being
                // overwritten when it sits at fd 3.
                let afd = if afd == 3 { libc::dup(afd) } else { afd };
                if afd < 0 || libc::dup2(vfd, 3) < 0 || libc::dup2(afd, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // dup2 onto itself keeps the flag: clear it outright.
                if libc::fcntl(3, libc::F_SETFD, 0) < 0 || libc::fcntl(4, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => VideoError::FfmpegMissing,
            _ => VideoError::Spawn(e),
        })?;
        // The child holds its own copies; ours would keep the pipes open after it exits.
        drop(video_r);
        drop(audio_r);
        let errors = child.stderr.take().map(|stderr| {
            std::thread::Builder::new()
                .name("ffmpeg-stderr".into())
                .spawn(move || tail(stderr))
                .ok()
        });
        Ok(Ffmpeg {
            child,
            video: Some(video_w),
            audio: input.sample_rate.map(|_| audio_w),
            errors: errors.flatten(),
            path: path.to_path_buf(),
        })
    }

    /// Writes one frame of `width * height * 4` bytes.
    pub fn write_video(&mut self, bytes: &[u8]) -> Result<(), VideoError> {
        match self.video.as_mut().map(|v| v.write_all(bytes)) {
            Some(Err(e)) => Err(self.failed(e)),
            _ => Ok(()),
        }
    }

    /// The sound pipe (`None` without a sound track), to be written from a thread of its
    /// own: ffmpeg reads its inputs in turn while it starts, so one thread writing both
    /// would wait on a full picture pipe while ffmpeg waits for sound.
    pub fn take_audio(&mut self) -> Option<AudioPipe> {
        self.audio.take().map(AudioPipe)
    }

    /// Closes the pipes and waits for ffmpeg to finish the file.
    pub fn finish(mut self) -> Result<(), VideoError> {
        self.video = None;
        self.audio = None;
        let status = self.child.wait().map_err(VideoError::Spawn)?;
        let errors = self.errors.take().and_then(|h| h.join().ok());
        if status.success() {
            Ok(())
        } else {
            Err(VideoError::Ffmpeg {
                path: self.path.clone(),
                message: errors
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| format!("ffmpeg {status}")),
            })
        }
    }

    /// A write failed: ffmpeg has stopped. Its own words say why better than the pipe's.
    fn failed(&mut self, e: std::io::Error) -> VideoError {
        self.video = None;
        self.audio = None;
        let _ = self.child.wait();
        let errors = self.errors.take().and_then(|h| h.join().ok());
        VideoError::Ffmpeg {
            path: self.path.clone(),
            message: errors
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| e.to_string()),
        }
    }
}

impl Drop for Ffmpeg {
    fn drop(&mut self) {
        // Dropped without `finish` (a panic, an error elsewhere): still end the file.
        self.video = None;
        self.audio = None;
        let _ = self.child.wait();
    }
}

/// The last lines of `r`, joined with "; ".
fn tail(r: impl Read) -> String {
    let mut lines = std::collections::VecDeque::new();
    for line in BufReader::new(r).lines().map_while(Result::ok) {
        let line = line.trim().to_string();
        if line.is_empty() {
            continue;
        }
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }
    Vec::from(lines).join("; ")
}

/// `fps` as a fraction with a denominator of at most 100000: 60 -> 60/1, NTSC's
/// 59.922743... -> a fraction within a billionth, so video and sound stay together.
pub fn rational(fps: f64) -> (u64, u64) {
    if !fps.is_finite() || fps <= 0.0 {
        return (60, 1);
    }
    const MAX_DEN: u64 = 100_000;
    // Continued fraction convergents h/k.
    let (mut h0, mut h1, mut k0, mut k1) = (0u64, 1u64, 1u64, 0u64);
    let mut x = fps;
    loop {
        let a = x.floor();
        let ai = a as u64;
        let (h2, k2) = (ai * h1 + h0, ai * k1 + k0);
        if k2 > MAX_DEN {
            break;
        }
        (h0, h1, k0, k1) = (h1, h2, k1, k2);
        let frac = x - a;
        if frac < 1e-12 || (h1 as f64 / k1 as f64 - fps).abs() < 1e-12 * fps {
            break;
        }
        x = 1.0 / frac;
    }
    (h1, k1.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_rates_are_exact_fractions() {
        assert_eq!(rational(60.0), (60, 1));
        assert_eq!(rational(50.0), (50, 1));
        assert_eq!(rational(60_000.0 / 1001.0), (60_000, 1001));
        let (n, d) = rational(59.922_743_404_312_21);
        assert!(d <= 100_000);
        let err = (n as f64 / d as f64 - 59.922_743_404_312_21).abs();
        // Over 10 minutes that is far under a millisecond.
        assert!(err < 1e-7, "{n}/{d}: {err}");
        assert_eq!(rational(f64::NAN), (60, 1));
    }

    #[test]
    fn keeps_the_last_lines_of_errors() {
        let text = "a\n\nb\nc\nd\ne\n";
        assert_eq!(tail(text.as_bytes()), "b; c; d; e");
    }
}
