//! [`CliError`]: what is wrong with the flags, or with what they name. A leaf: imports no
//! other part of `cli`.

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Core(#[from] crate::host::HostError),
    #[error("--screenshot-at FRAME PATH: {0:?} is not a frame number")]
    ScreenshotFrame(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Video(#[from] crate::video::VideoError),
}
