//! How messages phrase what every part of the program reports: OS errors in lowercase (our
//! messages run on after a colon), counts of frames in English. It imports nothing of `framelock-proto`,
//! so that every module of both crates may use it.

use std::io;

/// An I/O error in the lowercase style of our messages ("no space left on device (os error 28)").
/// Errors that use it keep the `io::Error` in a field not named `source`, so that it is not also
/// reported as their cause in its capitalised form.
pub fn io_reason(e: &io::Error) -> String {
    // Windows' texts are sentences: "The system cannot find the file specified. (os error 2)".
    let s = e.to_string().replace(". (os error", " (os error");
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_lowercase().chain(c).collect(),
        None => s,
    }
}

/// "1 frame", "2 frames".
pub fn n_frames(n: impl Into<u64>) -> String {
    match n.into() {
        1 => "1 frame".to_string(),
        n => format!("{n} frames"),
    }
}

/// Text from elsewhere (a chat message, a recording) made safe to print on one line:
/// control characters, terminal escape sequences (CSI, OSC and two-byte ESC sequences) and
/// format characters (Unicode Cf: bidirectional overrides, zero widths) removed, tabs, line
/// breaks and line separators made spaces, outer blanks trimmed,
/// cut to `max_chars` characters.
pub fn one_line(text: &str, max_chars: usize) -> String {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte 0x40..=0x7e.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC, DCS, PM, APC: up to BEL or ST (ESC \).
                Some(']' | 'P' | '^' | '_') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            chars.next_if_eq(&'\\');
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\u{9b}' => {
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            '\n' | '\r' | '\t' | '\u{2028}' | '\u{2029}' => out.push(' '),
            c if c.is_control() => {}
            // Format characters (Unicode Cf): bidi overrides, zero widths, the soft hyphen.
            c if c.general_category() == GeneralCategory::Format => {}
            c => out.push(c),
        }
    }
    out.trim().chars().take(max_chars).collect()
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
    fn one_line_drops_format_characters_and_breaks_line_separators() {
        // A reversed name, an invisible one, a line that forges another.
        let evil = "bo\u{202e}b\u{200b}\u{2060}\u{feff}\u{ad} hi\u{2028}FAKE\u{2029}x";
        assert_eq!(one_line(evil, 100), "bob hi FAKE x");
    }

    #[test]
    fn counts_of_frames_read_as_english() {
        assert_eq!(n_frames(1u32), "1 frame");
        assert_eq!(n_frames(0u32), "0 frames");
        assert_eq!(n_frames(2u64), "2 frames");
    }
}
