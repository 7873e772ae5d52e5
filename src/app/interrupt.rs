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

/// SIGTSTP (Ctrl-Z in a terminal) and SIGCONT (`fg`): see [`install_suspend`].
static SUSPEND: AtomicBool = AtomicBool::new(false);
static CONTINUE: AtomicBool = AtomicBool::new(false);

/// What a job-control signal asks of the run loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobControl {
    /// SIGTSTP: pause (for everyone in netplay), then stop this process.
    Suspend,
    /// SIGCONT: go on, and resume a pause the suspend made.
    Continue,
}

/// Routes SIGTSTP and SIGCONT to [`take_job_control`] while it lives (the run loop's
/// life): Ctrl-Z pauses the game (for every player in netplay: the others see who paused)
/// before the process stops, and `fg` resumes it. Without this a stopped netplay peer
/// would go silent and the others would wait, then drop it. Dropped, the signals get
/// their defaults back.
pub struct JobControlGuard(());

impl JobControlGuard {
    pub fn install() -> JobControlGuard {
        #[cfg(unix)]
        {
            extern "C" fn on_tstp(_: libc::c_int) {
                SUSPEND.store(true, Ordering::SeqCst);
            }
            extern "C" fn on_cont(_: libc::c_int) {
                CONTINUE.store(true, Ordering::SeqCst);
            }
            // SAFETY: the handlers only store to atomics, which is async-signal-safe.
            unsafe {
                libc::signal(libc::SIGTSTP, on_tstp as *const () as libc::sighandler_t);
                libc::signal(libc::SIGCONT, on_cont as *const () as libc::sighandler_t);
            }
        }
        JobControlGuard(())
    }
}

impl Drop for JobControlGuard {
    fn drop(&mut self) {
        #[cfg(unix)]
        // SAFETY: restoring the default disposition.
        unsafe {
            libc::signal(libc::SIGTSTP, libc::SIG_DFL);
            libc::signal(libc::SIGCONT, libc::SIG_DFL);
        }
    }
}

/// The job-control signal that came since the last call, if any (a suspend first).
pub fn take_job_control() -> Option<JobControl> {
    if SUSPEND.swap(false, Ordering::SeqCst) {
        return Some(JobControl::Suspend);
    }
    CONTINUE
        .swap(false, Ordering::SeqCst)
        .then_some(JobControl::Continue)
}

/// Stops this process as SIGTSTP's default would (the shell sees it stopped; `fg` or
/// SIGCONT goes on).
pub fn stop_self() {
    #[cfg(unix)]
    // SAFETY: raising a signal on the own process has no memory-safety concerns.
    unsafe {
        libc::raise(libc::SIGSTOP);
    }
}
