//! [`Encoder`]: a thread that draws frames into the [`Canvas`] and writes them to ffmpeg,
//! fed through a bounded channel by the thread that runs the core, and a second thread that
//! writes their sound (small, never held back).
//!
//! Exporting, a full channel makes the emulator wait for the encoder (it runs as fast as
//! both allow). Recording while playing (`realtime`), the game never waits: a frame the
//! channel cannot take is counted instead, and the next frame that goes in asks for the
//! picture before it to be shown again that many times; its sound goes as usual. The file
//! then has one frame per emulated frame and its sound in step whatever the encoder's speed.

use std::fs::OpenOptions;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;

use super::canvas::{pick_scale, Canvas, Geometry};
use super::ffmpeg::{rational, Ffmpeg, Input};
use super::{VideoError, VideoSettings};
use crate::frontend::image::Image;

/// Frames queued for the encoder while playing: two seconds at 60 fps.
const REALTIME_QUEUE: usize = 120;
/// Frames queued while exporting: enough to keep both threads busy.
const EXPORT_QUEUE: usize = 4;

/// The core's picture and sound as the video starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stream {
    /// Base frame size (unrotated) and display aspect.
    pub base: (u32, u32),
    pub aspect: f32,
    pub rotation: u32,
    pub fps: f64,
    pub sample_rate: f64,
}

/// One emulated frame: XRGB8888 pixels, the display aspect at the time, and its sound.
#[derive(Clone, Debug, Default)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u32>,
    pub aspect: f32,
    /// Interleaved stereo samples.
    pub audio: Vec<i16>,
}

/// What reaches the thread: a frame, after showing the last picture `repeats` more times.
struct Message {
    repeats: u32,
    frame: Option<Frame>,
}

/// How a video went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Video frames in the file.
    pub frames: u64,
    /// Of those, frames shown again because the encoder was behind (realtime only).
    pub repeated: u64,
    /// Output size.
    pub width: u32,
    pub height: u32,
}

/// A video being written.
pub struct Encoder {
    tx: Option<SyncSender<Message>>,
    /// Pixel buffers the thread is done with, to reuse.
    spare: Receiver<Vec<u32>>,
    thread: Option<JoinHandle<Result<(), VideoError>>>,
    /// Sound for the sound thread; `None` without a sound track.
    audio: Option<mpsc::Sender<Vec<i16>>>,
    audio_thread: Option<JoinHandle<()>>,
    realtime: bool,
    /// Frames not sent (realtime, channel full), for the next message.
    owed: u32,
    summary: Summary,
}

/// Refuses an existing file without `force` and makes sure the file can be written, so that
/// a bad path fails before anything runs.
pub fn prepare_output(path: &Path, force: bool) -> Result<(), VideoError> {
    if !force && path.exists() {
        return Err(VideoError::Exists(path.to_path_buf()));
    }
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map(drop)
        .map_err(|io| VideoError::Output {
            path: path.to_path_buf(),
            io,
        })
}

impl Encoder {
    /// Checks the output file, starts ffmpeg and the thread feeding it.
    pub fn start(settings: &VideoSettings, stream: &Stream) -> Result<Encoder, VideoError> {
        prepare_output(&settings.path, settings.force)?;
        let geometry = Geometry {
            base: stream.base,
            aspect: stream.aspect,
            rotation: stream.rotation,
            scale: pick_scale(
                settings.scale,
                crate::frontend::image::rotated_size(stream.base.0, stream.base.1, stream.rotation)
                    .1,
            ),
            even: settings.format.even_size(),
        };
        let canvas = Canvas::new(geometry);
        let (width, height) = canvas.size();
        let sample_rate = (stream.sample_rate.round() as u32).max(1);
        let input = Input {
            width,
            height,
            rate: rational(stream.fps),
            sample_rate: settings.format.has_audio().then_some(sample_rate),
        };
        let mut ffmpeg = Ffmpeg::spawn(&settings.path, settings.format, &input, settings.realtime)?;
        tracing::info!(
            "video: {} at {width}x{height}, {}/{} fps{}",
            settings.path.display(),
            input.rate.0,
            input.rate.1,
            input
                .sample_rate
                .map_or_else(|| ", no sound".into(), |r| format!(", {r} Hz sound"))
        );
        let bound = if settings.realtime {
            REALTIME_QUEUE
        } else {
            EXPORT_QUEUE
        };
        let (tx, rx) = mpsc::sync_channel::<Message>(bound);
        let (spare_tx, spare) = mpsc::channel();
        let (audio, audio_thread) = match ffmpeg.take_audio() {
            Some(mut pipe) => {
                let (audio_tx, audio_rx) = mpsc::channel::<Vec<i16>>();
                let thread = std::thread::Builder::new()
                    .name("video-sound".into())
                    .spawn(move || {
                        // A failed write means ffmpeg stopped: the picture side reports why.
                        while let Ok(samples) = audio_rx.recv() {
                            if pipe.write(&samples).is_err() {
                                break;
                            }
                        }
                        // All the sound is written: its end lets ffmpeg finish the file.
                        pipe.close();
                    })
                    .map_err(VideoError::Spawn)?;
                (Some(audio_tx), Some(thread))
            }
            None => (None, None),
        };
        let thread = std::thread::Builder::new()
            .name("video-encoder".into())
            .spawn(move || {
                let result = feed(&rx, &mut ffmpeg, canvas, &spare_tx);
                // Stop taking frames before waiting for ffmpeg: a producer blocked on a
                // full channel learns at once that the encoder is gone.
                drop(rx);
                match result {
                    Ok(()) => ffmpeg.finish(),
                    Err(e) => Err(e),
                }
            })
            .map_err(VideoError::Spawn)?;
        Ok(Encoder {
            tx: Some(tx),
            spare,
            thread: Some(thread),
            audio,
            audio_thread,
            realtime: settings.realtime,
            owed: 0,
            summary: Summary {
                width,
                height,
                ..Summary::default()
            },
        })
    }

    /// A pixel buffer to fill for the next frame (reused when the thread has one spare).
    pub fn buffer(&self) -> Vec<u32> {
        self.spare.try_recv().unwrap_or_default()
    }

    /// Queues a frame. Exporting, waits for room; playing, never waits (see the module).
    /// An error means the encoder stopped: `finish` says why.
    pub fn push(&mut self, frame: Frame) -> Result<(), VideoError> {
        let tx = self.tx.as_ref().ok_or(VideoError::Stopped)?;
        let mut frame = frame;
        if let Some(audio) = &self.audio {
            if !frame.audio.is_empty() && audio.send(std::mem::take(&mut frame.audio)).is_err() {
                return self.stopped();
            }
        }
        let msg = Message {
            repeats: self.owed,
            frame: Some(frame),
        };
        if self.realtime {
            match tx.try_send(msg) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    // Owed: shown as a repeat of the picture before.
                    self.owed += 1;
                    self.summary.repeated += 1;
                    self.summary.frames += 1;
                    return Ok(());
                }
                Err(TrySendError::Disconnected(_)) => return self.stopped(),
            }
        } else if tx.send(msg).is_err() {
            return self.stopped();
        }
        self.owed = 0;
        self.summary.frames += 1;
        Ok(())
    }

    /// Frames in the file so far (those owed included).
    pub fn frames(&self) -> u64 {
        self.summary.frames
    }

    fn stopped(&mut self) -> Result<(), VideoError> {
        self.tx = None;
        Err(VideoError::Stopped)
    }

    /// Sends what is owed, closes the channels and waits for ffmpeg to finish the file.
    pub fn finish(mut self) -> Result<Summary, VideoError> {
        if let Some(tx) = self.tx.take() {
            if self.owed > 0 {
                let _ = tx.send(Message {
                    repeats: self.owed,
                    frame: None,
                });
            }
        }
        // ffmpeg ends the file once both pipes are closed.
        self.audio = None;
        let result = match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Ok(()))) | None => Ok(self.summary),
            Some(Ok(Err(e))) => Err(e),
            Some(Err(_)) => Err(VideoError::Stopped),
        };
        if let Some(t) = self.audio_thread.take() {
            let _ = t.join();
        }
        result
    }
}

impl Drop for Encoder {
    fn drop(&mut self) {
        // Without `finish`: close the channels and let the threads finish the file.
        self.tx = None;
        self.audio = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(t) = self.audio_thread.take() {
            let _ = t.join();
        }
    }
}

/// The thread's loop: repeats, then the frame, until the channel closes.
fn feed(
    rx: &Receiver<Message>,
    ffmpeg: &mut Ffmpeg,
    mut canvas: Canvas,
    spare: &mpsc::Sender<Vec<u32>>,
) -> Result<(), VideoError> {
    while let Ok(msg) = rx.recv() {
        for _ in 0..msg.repeats {
            ffmpeg.write_video(canvas.bytes())?;
        }
        if let Some(frame) = msg.frame {
            canvas.draw(
                &Image::packed(frame.width, frame.height, &frame.pixels),
                frame.aspect,
            );
            ffmpeg.write_video(canvas.bytes())?;
            let _ = spare.send(frame.pixels);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video::Format;

    /// Frames in `path`, by ffprobe.
    fn frames_in(path: &Path) -> u64 {
        let out = std::process::Command::new("ffprobe")
            .args(["-v", "error", "-count_packets", "-select_streams", "v:0"])
            .args(["-show_entries", "stream=nb_read_packets", "-of", "csv=p=0"])
            .arg(path)
            .output()
            .expect("ffprobe runs (bash .ci/setup installs ffmpeg)");
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }

    #[test]
    fn an_encoder_behind_the_game_repeats_pictures_and_keeps_the_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.mkv");
        let settings = VideoSettings {
            path: path.clone(),
            format: Format::Mkv,
            // Large pictures: ffmpeg cannot take 600 of them as fast as they come.
            scale: Some(16),
            force: false,
            realtime: true,
        };
        let stream = Stream {
            base: (64, 60),
            aspect: 0.0,
            rotation: 0,
            fps: 60.0,
            sample_rate: 48_000.0,
        };
        let mut encoder = Encoder::start(&settings, &stream).unwrap();
        for i in 0..600u32 {
            encoder
                .push(Frame {
                    width: 64,
                    height: 60,
                    pixels: vec![i * 0x0101; 64 * 60],
                    aspect: 0.0,
                    audio: vec![0; 1600],
                })
                .unwrap();
        }
        let summary = encoder.finish().unwrap();
        assert_eq!((summary.width, summary.height), (1024, 960));
        assert_eq!(summary.frames, 600);
        assert!(summary.repeated > 0, "{summary:?}");
        assert_eq!(frames_in(&path), 600);
    }
}
