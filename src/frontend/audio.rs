//! Audio output: core samples -> resampler (rubato) -> SPSC ring (ringbuf) -> cpal callback.
//!
//! Emulation and the sound card run on different clocks, so the resampling ratio is nudged
//! (dynamic rate control) to keep the ring about half full: a fuller ring makes the
//! resampler produce slightly fewer samples, an emptier one slightly more, never more than
//! `MAX_RATE_DEVIATION` off. Without a usable device the output is a silent sink that just
//! drops samples: no sound card must never fail a run.

#[cfg(feature = "gui")]
use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(feature = "gui")]
use std::sync::Arc;

#[cfg(feature = "gui")]
use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
#[cfg(feature = "gui")]
use cpal::{FromSample, SampleFormat, SizedSample};
#[cfg(feature = "gui")]
use ringbuf::traits::{Consumer, Observer, Producer, Split};
#[cfg(feature = "gui")]
use ringbuf::{HeapCons, HeapProd, HeapRb};
use rubato::{FastFixedIn, PolynomialDegree, Resampler};

/// Largest relative change of the resampling ratio (0.5%): small enough to be inaudible.
pub const MAX_RATE_DEVIATION: f64 = 0.005;

/// Input frames per resampler call: about 5 ms at 48 kHz.
const CHUNK_FRAMES: usize = 256;

/// What the user asked for (the `[audio]` config section).
#[derive(Clone, Debug)]
pub struct AudioSettings {
    pub enabled: bool,
    /// Target latency: the ring holds twice this and is kept half full.
    pub latency_ms: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    #[error("no default audio output device")]
    NoDevice,
    #[cfg(feature = "gui")]
    #[error("audio device: {0}")]
    Device(#[from] cpal::Error),
    #[cfg(feature = "gui")]
    #[error("unsupported audio sample format {0}")]
    Format(SampleFormat),
    #[error("resampler: {0}")]
    Resampler(String),
}

/// Stereo i16 at the core's rate in, stereo f32 at the device's rate out, with the
/// resampling ratio steered by how full the output buffer is.
pub struct RateConverter {
    resampler: FastFixedIn<f32>,
    in_rate: f64,
    out_rate: f64,
    pending: [Vec<f32>; 2],
    out: Vec<Vec<f32>>,
    interleaved: Vec<f32>,
}

impl RateConverter {
    pub fn new(in_rate: f64, out_rate: f64) -> Result<RateConverter, AudioError> {
        let resampler = FastFixedIn::new(
            out_rate / in_rate,
            1.0 + 2.0 * MAX_RATE_DEVIATION,
            PolynomialDegree::Cubic,
            CHUNK_FRAMES,
            2,
        )
        .map_err(|e| AudioError::Resampler(e.to_string()))?;
        let out = resampler.output_buffer_allocate(true);
        Ok(RateConverter {
            resampler,
            in_rate,
            out_rate,
            pending: [Vec::new(), Vec::new()],
            out,
            interleaved: Vec::new(),
        })
    }

    /// The core changed its sample rate (SET_SYSTEM_AV_INFO): start over at the new ratio.
    pub fn set_input_rate(&mut self, in_rate: f64) -> Result<(), AudioError> {
        if (in_rate - self.in_rate).abs() > f64::EPSILON {
            *self = RateConverter::new(in_rate, self.out_rate)?;
        }
        Ok(())
    }

    /// The ratio adjustment for a buffer that is `fill` (0..=1) full.
    pub fn rate_adjustment(fill: f64) -> f64 {
        1.0 + MAX_RATE_DEVIATION * (1.0 - 2.0 * fill.clamp(0.0, 1.0))
    }

    /// Converts interleaved stereo `samples`; `fill` says how full the output buffer is now.
    /// Complete chunks go to `sink` as interleaved stereo; the rest waits for more input.
    pub fn push(&mut self, samples: &[i16], fill: f64, mut sink: impl FnMut(&[f32])) {
        for frame in samples.chunks_exact(2) {
            self.pending[0].push(f32::from(frame[0]) / 32768.0);
            self.pending[1].push(f32::from(frame[1]) / 32768.0);
        }
        // Ramp so the change is spread over the chunk instead of stepping.
        let _ = self
            .resampler
            .set_resample_ratio_relative(Self::rate_adjustment(fill), true);
        while self.pending[0].len() >= self.resampler.input_frames_next() {
            let need = self.resampler.input_frames_next();
            let input = [&self.pending[0][..need], &self.pending[1][..need]];
            let Ok((used, written)) =
                self.resampler
                    .process_into_buffer(&input, &mut self.out, None)
            else {
                // Cannot happen with buffers sized by the resampler; drop the chunk if it does.
                self.pending
                    .iter_mut()
                    .for_each(|p| p.drain(..need).for_each(drop));
                continue;
            };
            self.pending
                .iter_mut()
                .for_each(|p| p.drain(..used).for_each(drop));
            self.interleaved.clear();
            for i in 0..written {
                self.interleaved.push(self.out[0][i]);
                self.interleaved.push(self.out[1][i]);
            }
            sink(&self.interleaved);
        }
    }
}

/// The start-up the numbers below leave out: the first second the device played (the
/// prefilled buffer and the rate control settling). Counted in what the device asked for,
/// not from the opening: PulseAudio through ALSA asks for nothing for 0.5-0.7 s after its
/// first callbacks.
#[cfg(feature = "gui")]
const SETTLE_SECS: f64 = 1.0;

/// What the device's output callback saw, shared with it.
#[cfg(feature = "gui")]
#[derive(Debug, Default)]
struct Counters {
    callbacks: AtomicU64,
    underruns: AtomicU64,
    underruns_settled: AtomicU64,
    /// Samples the callback skipped to bring an overfull buffer back to its target.
    skipped: AtomicU64,
    /// Frames the device asked for.
    consumed: AtomicU64,
}

/// What the live output did (see [`AudioOut::stats`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AudioStats {
    /// A device was open and its callback fed.
    pub live: bool,
    /// Output callbacks run, and how many found the buffer short (playing silence for the
    /// rest): in all, and after the first second.
    pub callbacks: u64,
    pub underruns: u64,
    pub underruns_after_1s: u64,
    /// How full the buffer was (0..=1, rate control aims at 0.5) at each push after the
    /// first second: lowest and highest.
    pub fill_min: Option<f64>,
    pub fill_max: Option<f64>,
    /// Samples never played: dropped on a full buffer (fast-forward, or while a device
    /// that starts late asks for nothing), or skipped by the callback to bring the latency
    /// back after the device stalled.
    pub dropped: u64,
    /// The part of `dropped` the callback skipped.
    pub skipped: u64,
}

/// A running cpal stream fed through the ring.
#[cfg(feature = "gui")]
struct Live {
    stream: cpal::Stream,
    producer: HeapProd<f32>,
    converter: RateConverter,
    counters: Arc<Counters>,
    /// Frames the device plays in `SETTLE_SECS`.
    settle_frames: u64,
}

/// Where the frontend sends the core's audio. Silent when disabled or without a device.
#[cfg(feature = "gui")]
pub struct AudioOut {
    live: Option<Live>,
    dropped: u64,
    fill_range: Option<(f64, f64)>,
}

#[cfg(feature = "gui")]
impl AudioOut {
    /// A sink that discards everything (headless runs, `enabled = false`).
    pub fn silent() -> AudioOut {
        AudioOut {
            live: None,
            dropped: 0,
            fill_range: None,
        }
    }

    /// What the output did so far.
    pub fn stats(&self) -> AudioStats {
        let Some(live) = &self.live else {
            return AudioStats {
                dropped: self.dropped,
                ..AudioStats::default()
            };
        };
        let c = &live.counters;
        AudioStats {
            live: true,
            callbacks: c.callbacks.load(Ordering::Relaxed),
            underruns: c.underruns.load(Ordering::Relaxed),
            underruns_after_1s: c.underruns_settled.load(Ordering::Relaxed),
            fill_min: self.fill_range.map(|r| r.0),
            fill_max: self.fill_range.map(|r| r.1),
            dropped: self.dropped + c.skipped.load(Ordering::Relaxed),
            skipped: c.skipped.load(Ordering::Relaxed),
        }
    }

    /// Opens the default output device for a core producing `in_rate` Hz stereo. Any
    /// failure logs one warning and returns a silent sink.
    pub fn open(settings: &AudioSettings, in_rate: f64) -> AudioOut {
        if !settings.enabled {
            tracing::info!("audio disabled in config");
            return AudioOut::silent();
        }
        match open_live(settings, in_rate) {
            Ok(live) => AudioOut {
                live: Some(live),
                dropped: 0,
                fill_range: None,
            },
            Err(e) => {
                tracing::warn!("no audio output ({e}); continuing without sound");
                AudioOut::silent()
            }
        }
    }

    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// The core's sample rate changed.
    pub fn set_input_rate(&mut self, in_rate: f64) {
        if let Some(live) = &mut self.live {
            if let Err(e) = live.converter.set_input_rate(in_rate) {
                tracing::warn!("audio: {e}; continuing without sound");
                self.live = None;
            }
        }
    }

    /// Queues interleaved stereo samples at the core's rate.
    pub fn push(&mut self, samples: &[i16]) {
        let Some(live) = &mut self.live else {
            return;
        };
        let fill = live.producer.occupied_len() as f64 / live.producer.capacity().get() as f64;
        if live.counters.consumed.load(Ordering::Relaxed) >= live.settle_frames {
            let (lo, hi) = self.fill_range.get_or_insert((fill, fill));
            *lo = lo.min(fill);
            *hi = hi.max(fill);
        }
        let producer = &mut live.producer;
        let dropped = &mut self.dropped;
        live.converter.push(samples, fill, |out| {
            // Whole stereo frames only, so channels never swap; when the ring is full
            // (fast-forward) the excess is dropped.
            let room = producer.vacant_len() & !1;
            let n = producer.push_slice(&out[..out.len().min(room)]);
            *dropped += (out.len() - n) as u64;
        });
    }

    /// Pauses or resumes the device stream (game paused).
    pub fn set_paused(&mut self, paused: bool) {
        if let Some(live) = &self.live {
            let r = if paused {
                live.stream.pause()
            } else {
                live.stream.play()
            };
            if let Err(e) = r {
                tracing::debug!("audio pause/resume: {e}");
            }
        }
    }
}

#[cfg(feature = "gui")]
impl Drop for AudioOut {
    fn drop(&mut self) {
        if self.dropped > 0 {
            tracing::debug!("audio: dropped {} samples on a full buffer", self.dropped);
        }
    }
}

#[cfg(feature = "gui")]
fn open_live(settings: &AudioSettings, in_rate: f64) -> Result<Live, AudioError> {
    let host = cpal::default_host();
    let device = host.default_output_device().ok_or(AudioError::NoDevice)?;
    let supported = device.default_output_config()?;
    let config = supported.config();
    let out_rate = config.sample_rate;
    let frames = (settings.latency_ms.max(10) as usize * out_rate as usize / 1000).max(256);
    // Twice the target latency, so "half full" is the target.
    let (mut producer, consumer) = HeapRb::<f32>::new(frames * 2 * 2).split();
    let prefill = vec![0.0f32; frames * 2];
    producer.push_slice(&prefill);
    let counters = Arc::new(Counters::default());
    let settle_frames = (f64::from(out_rate) * SETTLE_SECS) as u64;
    let c = (Arc::clone(&counters), settle_frames, prefill.len());
    let stream = match supported.sample_format() {
        SampleFormat::F32 => build::<f32>(&device, config, consumer, c),
        SampleFormat::I16 => build::<i16>(&device, config, consumer, c),
        SampleFormat::U16 => build::<u16>(&device, config, consumer, c),
        SampleFormat::I32 => build::<i32>(&device, config, consumer, c),
        SampleFormat::F64 => build::<f64>(&device, config, consumer, c),
        other => return Err(AudioError::Format(other)),
    }?;
    stream.play()?;
    tracing::info!(
        "audio: {device}, {out_rate} Hz, {} channels, {} ms buffer",
        config.channels,
        settings.latency_ms
    );
    Ok(Live {
        stream,
        producer,
        converter: RateConverter::new(in_rate, f64::from(out_rate))?,
        counters,
        settle_frames,
    })
}

#[cfg(feature = "gui")]
fn build<T>(
    device: &cpal::Device,
    config: cpal::StreamConfig,
    mut consumer: HeapCons<f32>,
    (counters, settle_frames, target): (Arc<Counters>, u64, usize),
) -> Result<cpal::Stream, AudioError>
where
    T: SizedSample + FromSample<f32>,
{
    let channels = usize::from(config.channels.max(1));
    let mut stereo: Vec<f32> = Vec::with_capacity(16384);
    let mut reported = false;
    let stream = device.build_output_stream(
        config,
        move |data: &mut [T], _: &cpal::OutputCallbackInfo| {
            // A device that asked for nothing for a while (at its start, or a stall) finds
            // the ring full: the rate control, at 0.5%, would take a minute to bring the
            // latency back, so the backlog beyond the target is skipped at once.
            let occupied = consumer.occupied_len();
            if occupied > target + target / 2 {
                let n = consumer.skip((occupied - target) & !1);
                counters.skipped.fetch_add(n as u64, Ordering::Relaxed);
            }
            let frames = data.len() / channels;
            let before = counters
                .consumed
                .fetch_add(frames as u64, Ordering::Relaxed);
            stereo.resize(frames * 2, 0.0);
            let got = consumer.pop_slice(&mut stereo);
            counters.callbacks.fetch_add(1, Ordering::Relaxed);
            if got < stereo.len() {
                counters.underruns.fetch_add(1, Ordering::Relaxed);
                if before >= settle_frames {
                    counters.underruns_settled.fetch_add(1, Ordering::Relaxed);
                }
            }
            // Underrun: play silence for the missing part.
            stereo[got..].fill(0.0);
            for (out, lr) in data.chunks_exact_mut(channels).zip(stereo.chunks_exact(2)) {
                if channels == 1 {
                    out[0] = T::from_sample((lr[0] + lr[1]) * 0.5);
                    continue;
                }
                out[0] = T::from_sample(lr[0]);
                out[1] = T::from_sample(lr[1]);
                for extra in &mut out[2..] {
                    *extra = T::from_sample(0.0f32);
                }
            }
        },
        move |err| {
            if !reported {
                tracing::warn!("audio stream: {err}");
                reported = true;
            }
        },
        None,
    )?;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(feature = "gui")]
    fn a_silent_sink_reports_no_device_and_counts_nothing() {
        let mut out = AudioOut::silent();
        out.push(&tone(800));
        assert_eq!(out.stats(), AudioStats::default());
        assert!(!out.stats().live);
    }

    fn tone(frames: usize) -> Vec<i16> {
        (0..frames)
            .flat_map(|i| {
                let v = ((i as f32 * 0.05).sin() * 8000.0) as i16;
                [v, v]
            })
            .collect()
    }

    fn convert(in_rate: f64, out_rate: f64, fill: f64, frames: usize) -> usize {
        let mut c = RateConverter::new(in_rate, out_rate).unwrap();
        let mut out = 0;
        let input = tone(800);
        for _ in 0..frames / 800 {
            c.push(&input, fill, |s| {
                assert_eq!(s.len() % 2, 0);
                out += s.len() / 2;
            });
        }
        out
    }

    #[test]
    fn resamples_to_the_device_rate() {
        let out = convert(48_000.0, 44_100.0, 0.5, 48_000);
        // One second in, one second out (minus what is still inside the resampler).
        assert!((43_500..=44_100).contains(&out), "{out} frames");
    }

    #[test]
    fn rate_control_is_bounded_and_steers() {
        assert_eq!(RateConverter::rate_adjustment(0.5), 1.0);
        assert!((RateConverter::rate_adjustment(1.0) - (1.0 - MAX_RATE_DEVIATION)).abs() < 1e-12);
        assert!((RateConverter::rate_adjustment(-3.0) - (1.0 + MAX_RATE_DEVIATION)).abs() < 1e-12);
        let full = convert(48_000.0, 48_000.0, 1.0, 480_000);
        let empty = convert(48_000.0, 48_000.0, 0.0, 480_000);
        // A full buffer yields ~0.5% fewer samples, an empty one ~0.5% more.
        assert!(full < 478_000 && full > 476_000, "full: {full}");
        assert!(empty > 481_000 && empty < 483_000, "empty: {empty}");
    }

    #[test]
    #[cfg(feature = "gui")]
    fn silent_sink_accepts_anything() {
        let mut out = AudioOut::silent();
        out.push(&tone(100));
        out.set_input_rate(32_000.0);
        out.set_paused(true);
        assert!(!out.is_live());
    }
}
