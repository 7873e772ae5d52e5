//! How messages phrase what every part of the program reports: OS errors in lowercase (our
//! messages run on after a colon), counts of frames in English.

use std::io;

/// An I/O error in the lowercase style of our messages ("no space left on device (os error 28)").
/// Errors that use it keep the `io::Error` in a field not named `source`, so that it is not also
/// reported as their cause in its capitalised form.
pub(crate) fn io_reason(e: &io::Error) -> String {
    let s = e.to_string();
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_lowercase().chain(c).collect(),
        None => s,
    }
}

/// "1 frame", "2 frames".
pub(crate) fn n_frames(n: impl Into<u64>) -> String {
    match n.into() {
        1 => "1 frame".to_string(),
        n => format!("{n} frames"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_reasons_are_lowercase() {
        let e = io::Error::from_raw_os_error(28);
        assert!(
            io_reason(&e).starts_with("no space left on device"),
            "{}",
            io_reason(&e)
        );
    }

    #[test]
    fn counts_of_frames_read_as_english() {
        assert_eq!(n_frames(1u32), "1 frame");
        assert_eq!(n_frames(0u32), "0 frames");
        assert_eq!(n_frames(2u64), "2 frames");
    }
}
