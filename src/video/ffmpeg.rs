//! The `ffmpeg` binary as an encoder: raw `bgr0` frames go down one stream, raw interleaved
//! stereo `s16le` samples down another; ffmpeg muxes them into the file.
//!
//! On Unix the streams are pipes at ffmpeg's fd 3 and 4. Windows hands a child only its three
//! standard handles, so there ffmpeg reads two loopback TCP connections that it makes itself
//! (`tcp://127.0.0.1:PORT`); `FRAMELOCK_FFMPEG_LINK=tcp` picks that link on Unix too, which is
//! how the tests cover it.
//!
//! ffmpeg runs in a process group of its own, so the terminal's Ctrl-C reaches only
//! framelock, which then closes the streams: ffmpeg sees the end of its input and finishes
//! the file properly. Closing them is also what happens if framelock dies, so a file is
//! finished whichever way framelock stops. Its error output is kept (the last lines) to say
//! why it failed, e.g. a full disk.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
#[cfg(unix)]
use std::os::fd::{AsRawFd, OwnedFd};
#[cfg(unix)]
use std::os::unix::process::CommandExt;
#[cfg(windows)]
use std::os::windows::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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

/// Whether the streams go over loopback TCP rather than pipes (see the module doc).
fn tcp_link() -> bool {
    cfg!(not(unix)) || std::env::var_os("FRAMELOCK_FFMPEG_LINK").is_some_and(|v| v == "tcp")
}

/// Where one stream's bytes go.
enum Sink {
    #[cfg(unix)]
    Pipe(std::io::PipeWriter),
    /// ffmpeg's connection, taken from `listener` on the first write: ffmpeg opens its
    /// inputs one after the other, reading the first before it connects to the second.
    Tcp {
        listener: TcpListener,
        stream: Option<TcpStream>,
        child: Arc<Mutex<Child>>,
    },
}

impl Sink {
    /// Writes what it can without blocking (the picture stream).
    fn write_some(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self {
            #[cfg(unix)]
            Sink::Pipe(pipe) => {
                set_nonblocking(pipe.as_raw_fd());
                pipe.write(bytes)
            }
            Sink::Tcp {
                listener,
                stream,
                child,
            } => {
                let stream = connected(listener, stream, child)?;
                stream.set_nonblocking(true)?;
                stream.write(bytes)
            }
        }
    }

    /// Writes everything, waiting as long as ffmpeg takes (the sound stream).
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            #[cfg(unix)]
            Sink::Pipe(pipe) => pipe.write_all(bytes),
            Sink::Tcp {
                listener,
                stream,
                child,
            } => connected(listener, stream, child)?.write_all(bytes),
        }
    }

    /// Returns within `most` or when the stream can take more.
    fn wait_writable(&self, most: Duration) {
        match self {
            #[cfg(unix)]
            Sink::Pipe(pipe) => poll_out(pipe.as_raw_fd(), most),
            #[cfg(unix)]
            Sink::Tcp {
                stream: Some(s), ..
            } => poll_out(s.as_raw_fd(), most),
            // std has no readiness wait for a socket on Windows; a short nap keeps ffmpeg fed.
            _ => std::thread::sleep(most.min(Duration::from_millis(2))),
        }
    }
}

/// The connection from ffmpeg, waiting for it if it has not come yet.
fn connected<'a>(
    listener: &TcpListener,
    stream: &'a mut Option<TcpStream>,
    child: &Mutex<Child>,
) -> std::io::Result<&'a mut TcpStream> {
    if stream.is_none() {
        *stream = Some(accept(listener, child)?);
    }
    Ok(stream.as_mut().expect("just connected"))
}

/// ffmpeg's connection to `listener`; an error if it exits first or makes none in time.
fn accept(listener: &TcpListener, child: &Mutex<Child>) -> std::io::Result<TcpStream> {
    listener.set_nonblocking(true)?;
    let start = Instant::now();
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false)?;
                return Ok(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Ok(mut c) = child.try_lock() {
                    if c.try_wait()?.is_some() {
                        return Err(std::io::ErrorKind::BrokenPipe.into());
                    }
                }
                if start.elapsed() >= STALL * 2 {
                    return Err(std::io::ErrorKind::TimedOut.into());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(unix)]
fn set_nonblocking(fd: std::os::fd::RawFd) {
    // SAFETY: fcntl on a descriptor the caller owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 && flags & libc::O_NONBLOCK == 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

#[cfg(unix)]
fn poll_out(fd: std::os::fd::RawFd, most: Duration) {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    let ms = most.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd, for the duration of the call.
    unsafe { libc::poll(&mut poll, 1, ms) };
}

/// The two streams' ends before ffmpeg starts: pipes (whose read ends ffmpeg inherits at fd
/// 3 and 4) or listening sockets (which ffmpeg connects to).
enum Link {
    #[cfg(unix)]
    Pipes {
        video: (OwnedFd, std::io::PipeWriter),
        audio: Option<(OwnedFd, std::io::PipeWriter)>,
    },
    Tcp {
        video: TcpListener,
        audio: Option<TcpListener>,
    },
}

impl Link {
    fn new(audio: bool) -> Result<Link, VideoError> {
        let listen = || TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(VideoError::Pipe);
        if tcp_link() {
            return Ok(Link::Tcp {
                video: listen()?,
                audio: audio.then(listen).transpose()?,
            });
        }
        #[cfg(unix)]
        {
            let pipe = || {
                std::io::pipe()
                    .map(|(r, w)| (OwnedFd::from(r), w))
                    .map_err(VideoError::Pipe)
            };
            Ok(Link::Pipes {
                video: pipe()?,
                audio: audio.then(pipe).transpose()?,
            })
        }
        #[cfg(not(unix))]
        unreachable!("only the TCP link exists here")
    }

    fn url(listener: &TcpListener) -> String {
        let port = listener.local_addr().map_or(0, |a| a.port());
        format!("tcp://127.0.0.1:{port}")
    }

    fn video_url(&self) -> String {
        match self {
            #[cfg(unix)]
            Link::Pipes { .. } => "pipe:3".into(),
            Link::Tcp { video, .. } => Link::url(video),
        }
    }

    fn audio_url(&self) -> String {
        match self {
            #[cfg(unix)]
            Link::Pipes { .. } => "pipe:4".into(),
            Link::Tcp { audio, .. } => audio.as_ref().map(Link::url).unwrap_or_default(),
        }
    }

    /// Hands the pipes' read ends to the child at fd 3 and 4.
    fn before_spawn(&self, cmd: &mut Command) {
        #[cfg(unix)]
        if let Link::Pipes { video, audio } = self {
            let vfd = video.0.as_raw_fd();
            // Without sound, fd 4 is a second copy of the picture's read end, never read.
            let afd = audio.as_ref().map_or(vfd, |a| a.0.as_raw_fd());
            // SAFETY: between fork and exec only async-signal-safe calls (dup, dup2, fcntl)
            // run.
            unsafe {
                cmd.pre_exec(move || {
                    // Both ends are close-on-exec; dup2 gives copies without the flag at the
                    // fds ffmpeg reads. Moving audio out of the way first keeps it from being
                    // overwritten when it sits at fd 3.
                    let afd = if afd == 3 { libc::dup(afd) } else { afd };
                    if afd < 0 || libc::dup2(vfd, 3) < 0 || libc::dup2(afd, 4) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    // dup2 onto itself keeps the flag: clear it outright.
                    if libc::fcntl(3, libc::F_SETFD, 0) < 0 || libc::fcntl(4, libc::F_SETFD, 0) < 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let _ = cmd;
    }

    /// The write ends. The read ends are closed here: the child holds its own copies, and
    /// ours would keep the pipes open after it exits.
    fn after_spawn(self, child: &Arc<Mutex<Child>>) -> (Sink, Option<Sink>) {
        match self {
            #[cfg(unix)]
            Link::Pipes { video, audio } => {
                (Sink::Pipe(video.1), audio.map(|(_, w)| Sink::Pipe(w)))
            }
            Link::Tcp { video, audio } => {
                let sink = |listener| Sink::Tcp {
                    listener,
                    stream: None,
                    child: child.clone(),
                };
                (sink(video), audio.map(sink))
            }
        }
    }
}

/// A running ffmpeg writing one file.
pub struct Ffmpeg {
    /// Locked to wait for ffmpeg, or to kill it when it is stuck.
    child: Arc<Mutex<Child>>,
    video: Option<Sink>,
    /// The sound stream, written by the sound thread through an [`AudioPipe`]; here to close
    /// it when ffmpeg stops taking frames (see `write_video`).
    audio: Arc<Mutex<Option<Sink>>>,
    has_audio: bool,
    errors: Option<JoinHandle<String>>,
    path: PathBuf,
}

/// The write end of the sound pipe, shared with [`Ffmpeg`].
pub struct AudioPipe(Arc<Mutex<Option<Sink>>>);

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

/// `write_all` without blocking, calling `stuck` once after [`STALL`] without progress;
/// after twice that, gives up with `TimedOut`.
fn write_patiently(sink: &mut Sink, mut bytes: &[u8], stuck: impl FnOnce()) -> std::io::Result<()> {
    let mut stuck = Some(stuck);
    let mut since = Instant::now();
    while !bytes.is_empty() {
        match sink.write_some(bytes) {
            Ok(n) => {
                bytes = &bytes[n..];
                since = Instant::now();
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
                sink.wait_writable(Duration::from_millis(200));
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
        let mut cmd = Command::new(program());
        cmd.args([
            "-hide_banner",
            "-nostdin",
            "-nostats",
            "-loglevel",
            "error",
            "-y",
        ]);
        let link = Link::new(input.sample_rate.is_some())?;
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
        cmd.args(["-i", &link.video_url()]);
        if let Some(rate) = input.sample_rate {
            cmd.args(quick).args(["-f", "s16le", "-ac", "2"]);
            cmd.args(["-ar", &rate.to_string(), "-i", &link.audio_url()]);
        }
        cmd.args(format.output_args(input.sample_rate.unwrap_or(0), realtime));
        cmd.arg(path);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        cmd.process_group(0);
        // CREATE_NEW_PROCESS_GROUP: the console's Ctrl-C and Ctrl-Break skip ffmpeg.
        #[cfg(windows)]
        cmd.creation_flags(0x0000_0200);
        link.before_spawn(&mut cmd);
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => VideoError::FfmpegMissing,
            _ => VideoError::Spawn(e),
        })?;
        let stderr = child.stderr.take();
        let child = Arc::new(Mutex::new(child));
        let (video, audio) = link.after_spawn(&child);
        let errors = stderr.map(|stderr| {
            std::thread::Builder::new()
                .name("ffmpeg-stderr".into())
                .spawn(move || tail(stderr))
                .ok()
        });
        Ok(Ffmpeg {
            child,
            video: Some(video),
            audio: Arc::new(Mutex::new(audio)),
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
