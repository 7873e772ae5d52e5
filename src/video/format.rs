//! Which video format a file name asks for, and the ffmpeg encoder arguments for it.
//!
//! | extension | video | sound | notes |
//! |---|---|---|---|
//! | `.mp4` | H.264 (libx264, yuv420p, CRF 18) | AAC 192k | fragmented: a cut-off file plays |
//! | `.webm` | VP9 (libvpx, realtime, CRF 32) | Opus 160k at 48 kHz | |
//! | `.mkv` | H.264 + AAC as `.mp4` | | |
//! | `.mkv --lossless` | H.264 in RGB (libx264rgb, QP 0) | FLAC | every pixel and sample exact |
//! | `.gif` | GIF, a palette per frame | none | |
//!
//! Matroska and fragmented MP4 are written as they go, so a file whose encoder was stopped
//! still plays up to where it got.

use std::path::Path;

use super::VideoError;

/// A container and its codecs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Mp4,
    Webm,
    Mkv,
    MkvLossless,
    Gif,
}

/// The extensions that work, as an error lists them.
pub const KNOWN: &str = ".mp4, .webm, .mkv (--lossless: every pixel exact) or .gif";

/// AAC's sample rates; any other is resampled to 48 kHz.
const AAC_RATES: [u32; 13] = [
    96_000, 88_200, 64_000, 48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025, 8_000,
    7_350,
];

impl Format {
    /// The format `path`'s extension names; `lossless` asks for exact pixels and samples.
    pub fn for_path(path: &Path, lossless: bool) -> Result<Format, VideoError> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        let format = match ext.as_str() {
            "mp4" | "m4v" => Format::Mp4,
            "webm" => Format::Webm,
            "mkv" if lossless => Format::MkvLossless,
            "mkv" => Format::Mkv,
            "gif" => Format::Gif,
            _ => {
                return Err(VideoError::UnknownFormat {
                    ext: if ext.is_empty() {
                        "(no extension)".into()
                    } else {
                        format!(".{ext}")
                    },
                })
            }
        };
        if lossless && format != Format::MkvLossless {
            return Err(VideoError::LosslessNeedsMkv);
        }
        Ok(format)
    }

    /// Whether the file has a sound track.
    pub fn has_audio(self) -> bool {
        self != Format::Gif
    }

    /// Whether the encoder needs even picture sizes (4:2:0 chroma).
    pub fn even_size(self) -> bool {
        matches!(self, Format::Mp4 | Format::Webm | Format::Mkv)
    }

    /// ffmpeg's output options (codecs, quality, container) before the file name.
    /// `realtime` favours encoding speed: the recording runs beside a game being played.
    pub fn output_args(self, sample_rate: u32, realtime: bool) -> Vec<String> {
        let x264_preset = if realtime { "ultrafast" } else { "veryfast" };
        let aac_rate = if AAC_RATES.contains(&sample_rate) {
            sample_rate
        } else {
            48_000
        };
        let args: Vec<String> = match self {
            Format::Mp4 | Format::Mkv => {
                let mut a = strings(&[
                    "-c:v",
                    "libx264",
                    "-preset",
                    x264_preset,
                    "-crf",
                    "18",
                    "-pix_fmt",
                    "yuv420p",
                    "-c:a",
                    "aac",
                    "-b:a",
                    "192k",
                ]);
                a.extend(["-ar".into(), aac_rate.to_string()]);
                if self == Format::Mp4 {
                    a.extend(strings(&[
                        "-movflags",
                        "+frag_keyframe+empty_moov+default_base_moof",
                        "-f",
                        "mp4",
                    ]));
                } else {
                    a.extend(strings(&["-f", "matroska"]));
                }
                a
            }
            Format::Webm => strings(&[
                "-c:v",
                "libvpx-vp9",
                "-deadline",
                "realtime",
                "-cpu-used",
                "8",
                "-row-mt",
                "1",
                "-crf",
                "32",
                "-b:v",
                "0",
                "-pix_fmt",
                "yuv420p",
                "-c:a",
                "libopus",
                "-b:a",
                "160k",
                "-ar",
                "48000",
                "-f",
                "webm",
            ]),
            // x264 in RGB at quantizer 0 is lossless, 4x as fast as FFV1 here and a tenth
            // of its size on a game's flat colours.
            Format::MkvLossless => {
                let preset = if realtime { "ultrafast" } else { "superfast" };
                strings(&[
                    "-c:v",
                    "libx264rgb",
                    "-preset",
                    preset,
                    "-qp",
                    "0",
                    "-pix_fmt",
                    "bgr0",
                    "-c:a",
                    "flac",
                    "-f",
                    "matroska",
                ])
            }
            Format::Gif => strings(&[
                "-vf",
                "split[a][b];[a]palettegen=stats_mode=single:reserve_transparent=0[p];\
                 [b][p]paletteuse=new=1:dither=none",
                "-f",
                "gif",
            ]),
        };
        args
    }
}

fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_picks_the_format() {
        let f = |p: &str, l| Format::for_path(Path::new(p), l);
        assert_eq!(f("match.mp4", false).unwrap(), Format::Mp4);
        assert_eq!(f("a/b.WEBM", false).unwrap(), Format::Webm);
        assert_eq!(f("x.mkv", true).unwrap(), Format::MkvLossless);
        assert_eq!(f("x.mkv", false).unwrap(), Format::Mkv);
        assert_eq!(f("x.gif", false).unwrap(), Format::Gif);
        let e = f("x.avi", false).unwrap_err().to_string();
        assert!(e.contains(".avi") && e.contains(KNOWN), "{e}");
        let e = f("x", false).unwrap_err().to_string();
        assert!(e.contains("no extension"), "{e}");
        assert!(matches!(
            f("x.mp4", true),
            Err(VideoError::LosslessNeedsMkv)
        ));
    }

    #[test]
    fn aac_keeps_its_own_rates_and_resamples_others() {
        let rate = |r| {
            let a = Format::Mp4.output_args(r, false);
            let i = a.iter().position(|s| s == "-ar").unwrap();
            a[i + 1].clone()
        };
        assert_eq!(rate(44_100), "44100");
        assert_eq!(rate(32_040), "48000");
        assert!(!Format::MkvLossless
            .output_args(32_040, false)
            .contains(&"-ar".to_string()));
    }
}
