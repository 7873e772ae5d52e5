//! Screenshots: a core frame, rotated as displayed, written as an RGB PNG, on the player's
//! key or at a set frame (`ShotAt`).

use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use super::image::{copy_rotated, Image};
use crate::host::Core;

#[derive(Debug, thiserror::Error)]
pub enum ScreenshotError {
    #[error("no valid video frame to save")]
    NoFrame,
    #[error("creating {}: {}", .path.display(), crate::wording::io_reason(.io))]
    Io { path: PathBuf, io: std::io::Error },
    #[error("encoding {path}: {source}")]
    Png {
        path: PathBuf,
        source: png::EncodingError,
    },
}

/// A fresh file name in `dir` for a screenshot of `stem` (the content's name), stamped with
/// local time to the millisecond so quick successive shots do not overwrite each other.
pub fn screenshot_path(dir: &Path, stem: &str) -> PathBuf {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S-%3f");
    let base = format!("{stem}-{stamp}");
    let mut path = dir.join(format!("{base}.png"));
    let mut n = 1;
    while path.exists() {
        path = dir.join(format!("{base}-{n}.png"));
        n += 1;
    }
    path
}

/// Writes `frame` turned by `rotation` quarter turns CCW to `path` (parent dirs created).
pub fn save_png(path: &Path, frame: &Image, rotation: u32) -> Result<(), ScreenshotError> {
    let (w, h) = frame.rotated_size(rotation);
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    if !copy_rotated(frame, rotation, &mut rgb, 3) {
        return Err(ScreenshotError::NoFrame);
    }
    let io = |io| ScreenshotError::Io {
        path: path.to_path_buf(),
        io,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(io)?;
    }
    let file = File::create(path).map_err(io)?;
    let enc_err = |source| ScreenshotError::Png {
        path: path.to_path_buf(),
        source,
    };
    let mut encoder = png::Encoder::new(BufWriter::new(file), w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(enc_err)?;
    writer.write_image_data(&rgb).map_err(enc_err)?;
    writer.finish().map_err(enc_err)
}

/// The core's last frame as plain pixels.
pub fn core_image(core: &Core) -> Image<'_> {
    let v = core.video();
    Image::packed(v.width, v.height, v.pixels)
}

/// The hidden `--screenshot-at FRAME PATH` test hook: saves the frame shown once `FRAME`
/// frames have run, as displayed (rotated).
#[derive(Clone, Debug)]
pub struct ShotAt {
    pub frame: u64,
    pub path: PathBuf,
    done: bool,
}

impl ShotAt {
    pub fn new(frame: u64, path: PathBuf) -> ShotAt {
        ShotAt {
            frame,
            path,
            done: false,
        }
    }

    /// Takes the shot if `frames_run` reached the target; at most once.
    pub fn check(&mut self, frames_run: u64, core: &Core) -> Result<(), ScreenshotError> {
        if self.done || frames_run < self.frame {
            return Ok(());
        }
        self.done = true;
        save_png(&self.path, &core_image(core), core.rotation())?;
        tracing::info!("screenshot at frame {frames_run}: {}", self.path.display());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_readable_rotated_png() {
        let dir = tempfile::tempdir().unwrap();
        let px: Vec<u32> = (0..6).map(|i| 0x0010_2030 * (i + 1)).collect();
        let path = screenshot_path(&dir.path().join("shots"), "game");
        save_png(&path, &Image::packed(3, 2, &px), 1).unwrap();
        let decoder = png::Decoder::new(File::open(&path).unwrap());
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (2, 3));
        // Top-left after a CCW quarter turn is the source's top-right pixel.
        let p = px[2];
        assert_eq!(&buf[..3], &[(p >> 16) as u8, (p >> 8) as u8, p as u8]);
        assert_ne!(screenshot_path(&dir.path().join("shots"), "game"), path);
        assert!(matches!(
            save_png(&path, &Image::packed(3, 2, &px[..2]), 0),
            Err(ScreenshotError::NoFrame)
        ));
    }

    #[test]
    fn a_path_that_cannot_be_written_is_said_in_plain_words() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shot.png");
        std::fs::create_dir(&path).unwrap();
        let px = [0u32; 6];
        let e = save_png(&path, &Image::packed(3, 2, &px), 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("creating {}: is a directory (os error 21)", path.display())
        );
        assert!(std::error::Error::source(&e).is_none());
    }
}
