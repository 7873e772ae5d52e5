//! Core log lines: formatted by the C shim, forwarded to `tracing`, and the most recent
//! ones kept so that load errors (missing romsets, refused content) can quote them.

use std::collections::VecDeque;
use std::ffi::{c_char, c_int};
use std::sync::Mutex;

use super::ffi;

/// How many recent core log lines are kept.
pub const KEPT_LINES: usize = 2000;

static RECENT: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());

extern "C" {
    /// Defined in `log_shim.c`: `vsnprintf`s and calls [`framelock_host_log_line`].
    fn framelock_host_log_printf(level: c_int, fmt: *const c_char, ...);
}

/// The pointer handed to cores through GET_LOG_INTERFACE.
pub fn printf_fn() -> ffi::LogPrintfFn {
    framelock_host_log_printf
}

/// Called by the C shim with one formatted message.
///
/// # Safety
/// `msg` must point to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn framelock_host_log_line(level: c_int, msg: *const c_char, len: usize) {
    if msg.is_null() {
        return;
    }
    // SAFETY: the shim passes its own buffer and the number of bytes it wrote to it.
    let bytes = unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), len) };
    let text = String::from_utf8_lossy(bytes);
    let _ = std::panic::catch_unwind(|| record(level, &text));
}

/// Logs one core message and remembers it (also used for SET_MESSAGE).
pub fn record(level: c_int, text: &str) {
    let text = text.trim_end();
    if text.is_empty() {
        return;
    }
    match level {
        ffi::LOG_DEBUG => tracing::debug!(target: "core", "{text}"),
        ffi::LOG_INFO => tracing::info!(target: "core", "{text}"),
        ffi::LOG_WARN => tracing::warn!(target: "core", "{text}"),
        _ => tracing::error!(target: "core", "{text}"),
    }
    let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    for line in text.lines() {
        if recent.len() == KEPT_LINES {
            recent.pop_front();
        }
        recent.push_back(line.to_owned());
    }
}

/// The kept lines, oldest first.
pub fn recent() -> Vec<String> {
    let recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    recent.iter().cloned().collect()
}

/// Forgets the kept lines (a new core or a new load starts a fresh history).
pub fn clear() {
    RECENT.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    #[test]
    fn shim_formats_and_keeps_lines() {
        let fmt = CString::new("[Test] value %d and %s\n").unwrap();
        let arg = CString::new("text").unwrap();
        // SAFETY: the format string matches the arguments.
        unsafe { printf_fn()(ffi::LOG_INFO, fmt.as_ptr(), 42 as c_int, arg.as_ptr()) };
        assert!(recent().iter().any(|l| l == "[Test] value 42 and text"));
    }
}
