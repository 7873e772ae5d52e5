//! `--video FILE` and `replay --export FILE`: a frame observer handing every emulated frame
//! that counts, and its sound, to a [`video::Encoder`](crate::video::Encoder).
//!
//! Observers see each frame once, after it ran with the inputs everyone agreed on: netplay's
//! speculation and run-ahead show frames that are taken back, and those never reach the
//! video. The encoder starts with the first frame recorded, when the core's geometry is
//! settled; the file itself is checked before the core loads ([`check`]).

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

use serde_json::{json, Value};

use super::runner::{EndReason, FrameObserver, ObserverError};
use crate::host::Core;
use crate::input::Inputs;
use crate::video::{Encoder, Frame, Stream, Summary, VideoError, VideoSettings};

/// A video to write while a session runs.
#[derive(Clone, Debug, PartialEq)]
pub struct VideoOutput {
    pub settings: VideoSettings,
    /// The first frame (counted from the session's first, 0) that goes into the video.
    pub from_frame: u64,
}

/// Refuses an existing file (without `--force`) and an unwritable path before anything runs.
pub fn check(video: &VideoOutput) -> Result<(), VideoError> {
    crate::video::encoder::prepare_output(&video.settings.path, video.settings.force)
}

/// State shared by the observer (in the runner) and the session that finishes it.
struct Capture {
    output: VideoOutput,
    encoder: Option<Encoder>,
    /// Frames held until the encoder starts, and the core's stream as of the newest.
    pending: Vec<Frame>,
    stream: Option<Stream>,
    last_size: Option<(u32, u32)>,
    error: Option<VideoError>,
    /// The error ended the session and reaches the player that way.
    ended_run: bool,
}

/// The session's handle on its video.
pub struct VideoCapture(Rc<RefCell<Capture>>);

/// How the video went, for the log and `--stats-json`.
#[derive(Debug)]
pub struct VideoReport {
    pub path: PathBuf,
    pub summary: Summary,
    pub error: Option<VideoError>,
}

impl VideoCapture {
    pub fn new(output: &VideoOutput) -> VideoCapture {
        let mut output = output.clone();
        // `check` made the file: it is ours to overwrite now.
        output.settings.force = true;
        VideoCapture(Rc::new(RefCell::new(Capture {
            output,
            encoder: None,
            pending: Vec::new(),
            stream: None,
            last_size: None,
            error: None,
            ended_run: false,
        })))
    }

    /// The observer to register with the runner.
    pub fn observer(&self) -> Box<dyn FrameObserver<Core>> {
        Box::new(Observer(self.0.clone()))
    }

    /// Waits for the encoder to finish the file and says how it went (`end`: why the
    /// session ended, for a video cut short by Ctrl-C).
    pub fn finish(self, end: Option<EndReason>) -> VideoReport {
        let mut c = self.0.borrow_mut();
        let path = c.output.settings.path.clone();
        // A session shorter than the look-ahead: its frames are all still held.
        if c.encoder.is_none() && !c.pending.is_empty() && c.error.is_none() && !c.ended_run {
            if let Err(e) = start(&mut c) {
                c.error = Some(e);
            }
        }
        let (summary, error) = match c.encoder.take().map(Encoder::finish) {
            Some(Ok(summary)) => (summary, c.error.take()),
            // The thread's own error says more than "stopped".
            Some(Err(e)) => (Summary::default(), Some(e)),
            None => {
                // Nothing recorded: leave no empty file behind.
                if std::fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
                    let _ = std::fs::remove_file(&path);
                }
                (Summary::default(), c.error.take())
            }
        };
        let report = VideoReport {
            path,
            summary,
            error,
        };
        if !c.ended_run {
            report.log(end);
        }
        report
    }
}

impl VideoReport {
    fn log(&self, end: Option<EndReason>) {
        let path = self.path.display();
        let s = &self.summary;
        match &self.error {
            Some(e) => tracing::warn!("video: {e}"),
            None if s.frames == 0 => tracing::warn!("video: no frames to record; no file written"),
            None => {
                let repeated = if s.repeated > 0 {
                    format!(
                        " ({} shown twice: the encoder fell behind)",
                        crate::wording::n_frames(s.repeated)
                    )
                } else {
                    String::new()
                };
                if end == Some(EndReason::Quit) {
                    tracing::info!(
                        "stopped: {path} holds the first {} ({}x{}){repeated} and plays",
                        crate::wording::n_frames(s.frames),
                        s.width,
                        s.height
                    );
                } else {
                    tracing::info!(
                        "video: {path}, {} ({}x{}){repeated}",
                        crate::wording::n_frames(s.frames),
                        s.width,
                        s.height
                    );
                }
            }
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "path": self.path.display().to_string(),
            "frames": self.summary.frames,
            "repeated": self.summary.repeated,
            "width": self.summary.width,
            "height": self.summary.height,
            "error": self.error.as_ref().map(|e| e.to_string()),
        })
    }
}

struct Observer(Rc<RefCell<Capture>>);

impl FrameObserver<Core> for Observer {
    fn after_frame(
        &mut self,
        frame: u64,
        _: &Inputs,
        core: &mut Core,
    ) -> Result<(), ObserverError> {
        let mut c = self.0.borrow_mut();
        let c = &mut *c;
        if frame < c.output.from_frame || c.error.is_some() {
            return Ok(());
        }
        let result = capture(c, core);
        match result {
            Ok(()) => Ok(()),
            // Exporting, the video is the point: stop. Playing, the game goes on (and its
            // input log is finished as usual); the error is reported at the end.
            Err(e) if c.output.settings.realtime => {
                tracing::warn!("video: {e}; the game goes on without it");
                c.error = Some(e);
                Ok(())
            }
            Err(e) => {
                // The encoder's thread knows why it stopped.
                let e = match c.encoder.take().map(Encoder::finish) {
                    Some(Err(why)) => why,
                    _ => e,
                };
                c.ended_run = true;
                Err(Box::new(e))
            }
        }
    }
}

/// Queues the core's frame and its sound; the first second of frames waits in memory, so
/// that the video's size is the one the game settled on, not a boot screen's.
fn capture(c: &mut Capture, core: &Core) -> Result<(), VideoError> {
    let av = core.av_info();
    let video = core.video();
    let mut pixels = c.encoder.as_ref().map(Encoder::buffer).unwrap_or_default();
    pixels.clear();
    pixels.extend_from_slice(video.pixels);
    let mut audio = Vec::new();
    core.copy_frame_audio(&mut audio);
    if c.last_size != Some((video.width, video.height)) {
        tracing::debug!(
            "video: frames are {}x{} at aspect {:.3}",
            video.width,
            video.height,
            av.aspect_ratio
        );
        c.last_size = Some((video.width, video.height));
    }
    let frame = Frame {
        width: video.width,
        height: video.height,
        pixels,
        aspect: av.aspect_ratio,
        audio,
    };
    if let Some(encoder) = c.encoder.as_mut() {
        return encoder.push(frame);
    }
    c.pending.push(frame);
    c.stream = Some(Stream {
        base: (av.base_width, av.base_height),
        aspect: av.aspect_ratio,
        rotation: core.rotation(),
        fps: av.fps,
        sample_rate: av.sample_rate,
    });
    if c.pending.len() as f64 >= av.fps.clamp(1.0, 240.0) * LOOKAHEAD_S {
        start(c)?;
    }
    Ok(())
}

/// Seconds of frames held before the video's size is chosen.
const LOOKAHEAD_S: f64 = 1.0;

/// Starts the encoder sized for the newest frame held, and hands it the frames held.
fn start(c: &mut Capture) -> Result<(), VideoError> {
    let Some(mut stream) = c.stream else {
        return Ok(());
    };
    if let Some(last) = c.pending.last().filter(|f| f.width > 0 && f.height > 0) {
        stream.base = (last.width, last.height);
        stream.aspect = last.aspect;
    }
    stream.base = (stream.base.0.max(1), stream.base.1.max(1));
    let mut encoder = Encoder::start(&c.output.settings, &stream)?;
    let held = std::mem::take(&mut c.pending);
    let pushed = held.into_iter().try_for_each(|f| encoder.push(f));
    c.encoder = Some(encoder);
    pushed
}
