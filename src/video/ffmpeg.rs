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
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

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
    /// Locked to wait for ffmpeg, or to kill it when it is stuck.
    child: Arc<Mutex<Child>>,
    video: Option<std::io::PipeWriter>,
    /// The sound pipe, written by the sound thread through an [`AudioPipe`]; here to close
    /// it when ffmpeg stops taking frames (see `write_video`).
    audio: Arc<Mutex<Option<std::io::PipeWriter>>>,
    has_audio: bool,
    errors: Option<JoinHandle<String>>,
    path: PathBuf,
}

/// The write end of the sound pipe, shared with [`Ffmpeg`].
pub struct AudioPipe(Arc<Mutex<Option<std::io::PipeWriter>>>);

impl AudioPipe {
    /// Writes interleaved stereo samples; an error means ffmpeg has stopped.
    pub fn write(&mut self, samples: &[i16]) -> std::io::Result<()> {
        let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
        let mut pipe = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match pipe.as_mut() {
            Some(p) => p.write_all(&bytes),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        }
    }

    /// Closes the pipe: the sound ends here.
    pub fn close(self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// How long a picture write may make no progress before ffmpeg counts as stuck.
pub const STALL: Duration = Duration::from_secs(5);

/// `write_all` on a pipe made non-blocking, calling `stuck` once after [`STALL`] without
/// progress; after twice that, gives up with `TimedOut`.
fn write_patiently(
    pipe: &mut std::io::PipeWriter,
    mut bytes: &[u8],
    stuck: impl FnOnce(),
) -> std::io::Result<()> {
    let fd = pipe.as_raw_fd();
    // SAFETY: fcntl on a descriptor this pipe owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 && flags & libc::O_NONBLOCK == 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
    let mut stuck = Some(stuck);
    let mut since = std::time::Instant::now();
    while !bytes.is_empty() {
        match pipe.write(bytes) {
            Ok(n) => {
                bytes = &bytes[n..];
                since = std::time::Instant::now();
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let waited = since.elapsed();
                if waited >= STALL * 2 {
                    return Err(std::io::ErrorKind::TimedOut.into());
                }
                if waited >= STALL {
                    if let Some(f) = stuck.take() {
                        f();
                    }
                }
                let mut poll = libc::pollfd {
                    fd,
                    events: libc::POLLOUT,
                    revents: 0,
                };
                // SAFETY: one valid pollfd, for the duration of the call.
                unsafe { libc::poll(&mut poll, 1, 200) };
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
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
        let stderr = child.stderr.take();
        let child = Arc::new(Mutex::new(child));
        let errors = stderr.map(|stderr| {
            std::thread::Builder::new()
                .name("ffmpeg-stderr".into())
                .spawn(move || tail(stderr))
                .ok()
        });
        Ok(Ffmpeg {
            child,
            video: Some(video_w),
            audio: Arc::new(Mutex::new(input.sample_rate.map(|_| audio_w))),
            has_audio: input.sample_rate.is_some(),
            errors: errors.flatten(),
            path: path.to_path_buf(),
        })
    }

    /// Writes one frame of `width * height * 4` bytes.
    ///
    /// A write that makes no progress for [`STALL`] means ffmpeg is stuck: after an output
    /// error it waits for its input threads, one of which may wait for sound that never
    /// comes while this waits for it to take the picture. Closing the sound pipe lets it end
    /// (and say why); if it still takes nothing, it is killed.
    pub fn write_video(&mut self, bytes: &[u8]) -> Result<(), VideoError> {
        let Some(pipe) = self.video.as_mut() else {
            return Ok(());
        };
        let result = write_patiently(pipe, bytes, || match self.audio.try_lock() {
            Ok(mut audio) if audio.is_some() => *audio = None,
            _ => {
                let _ = self.child.lock().map(|mut c| c.kill());
            }
        });
        match result {
            Err(e) => Err(self.failed(e)),
            Ok(()) => Ok(()),
        }
    }

    /// The sound pipe (`None` without a sound track), to be written from a thread of its
    /// own: ffmpeg reads its inputs in turn while it starts, so one thread writing both
    /// would wait on a full picture pipe while ffmpeg waits for sound.
    pub fn take_audio(&mut self) -> Option<AudioPipe> {
        self.has_audio.then(|| AudioPipe(self.audio.clone()))
    }

    /// Closes the pipes and waits for ffmpeg to finish the file.
    pub fn finish(mut self) -> Result<(), VideoError> {
        // The sound pipe is closed by the sound thread once it has written everything.
        self.video = None;
        let status = self.wait().map_err(VideoError::Spawn)?;
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

    fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.child.lock().unwrap_or_else(|e| e.into_inner()).wait()
    }

    /// A write failed: ffmpeg has stopped. Its own words say why better than the pipe's.
    fn failed(&mut self, e: std::io::Error) -> VideoError {
        self.video = None;
        if let Ok(mut audio) = self.audio.try_lock() {
            *audio = None;
        }
        let _ = self.wait();
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
        let _ = self.wait();
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
