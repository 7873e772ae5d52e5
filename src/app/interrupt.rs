//! Ctrl-C (SIGINT) and SIGTERM end a run the way closing the window does: a netplay peer
//! says goodbye instead of going silent into the others' timeout, the recording and
//! `--stats-json` are finished. A second one exits at once, in case something hangs.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Exit status after a second Ctrl-C or SIGTERM, as a shell reports a SIGINT death (128 + 2).
const FORCED_EXIT: i32 = 130;

/// Routes Ctrl-C and SIGTERM to [`requested`]. Call once, from `main`; without it the
/// signals keep their default (the process dies on the spot).
pub fn install() {
    let result = ctrlc::set_handler(|| {
        if REQUESTED.swap(true, Ordering::SeqCst) {
            eprintln!("\ninterrupted again: exiting now");
            std::process::exit(FORCED_EXIT);
        }
        // The handler cannot tell which signal came, so the hint names both.
        eprintln!("\nstopping (a second Ctrl-C or SIGTERM exits at once)");
    });
    if let Err(e) = result {
        tracing::warn!("Ctrl-C will kill framelock without a clean exit: {e}");
    }
}

/// True once the user asked to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}
