//! The run loop shared by the window and headless modes: wait, tick, present, repeat.

use std::time::{Duration, Instant};

use super::interrupt::JobControl;
use super::runner::{Clock, EndReason, Feed, Machine, RunError, Runner, Status, Tick};
use crate::input::Inputs;

pub use crate::frontend::Requests;

/// The outputs and local inputs of one mode (window, headless).
pub trait Frontend<M> {
    /// Waits up to `timeout` (the runner's) while handling events; returns requests. With a
    /// zero timeout it only handles the events that are waiting.
    fn wait(&mut self, timeout: Duration) -> Result<Requests, RunError>;
    /// The local players' pads now.
    fn local_inputs(&mut self) -> Inputs;
    /// After each tick: show the frames that ran, queue their audio. `frame` is the number
    /// of frames emulated so far.
    fn present(&mut self, machine: &mut M, tick: &Tick, frame: u64) -> Result<(), RunError>;
    /// The game was paused or resumed.
    fn paused(&mut self, _paused: bool) {}
    /// A status line to show with the game (netplay numbers); refreshed about once a second.
    fn status(&mut self, _line: &str) {}
}

/// Ticks `runner` until the run ends; returns why it ended.
pub fn run_loop<M, F, C, FE>(
    runner: &mut Runner<M, F, C>,
    machine: &mut M,
    frontend: &mut FE,
) -> Result<EndReason, RunError>
where
    M: Machine,
    F: Feed,
    C: Clock,
    FE: Frontend<M>,
{
    let mut timeout = Duration::ZERO;
    // Frame the status line was last shown at: from the first tick on, then every 60 frames.
    let mut shown_at: Option<u64> = None;
    // The feed's pause as last shown (title, audio, status line).
    let mut feed_paused = false;
    // Ctrl-Z: the process stops once the pause is in force (or at this deadline); and
    // whether `fg` should resume it.
    let mut stop_at: Option<Instant> = None;
    let mut resume_on_continue = false;
    let _job_control = super::interrupt::JobControlGuard::install();
    loop {
        // A feed with I/O of its own (netplay) waits on it; the frontend then only takes the
        // events that came meanwhile (the feed's `max_wait` bounds that delay).
        let requests = if !timeout.is_zero() && runner.feed_mut().wait_io(timeout) {
            frontend.wait(Duration::ZERO)?
        } else {
            frontend.wait(timeout)?
        };
        if requests.quit || super::interrupt::requested() {
            runner.stop(EndReason::Quit);
        }
        if requests.toggle_pause {
            pause(runner, frontend, None);
        }
        match super::interrupt::take_job_control() {
            Some(JobControl::Suspend) => {
                tracing::info!("suspended (SIGTSTP): pausing, then stopping");
                pause(runner, frontend, Some(true));
                stop_at = Some(Instant::now() + SUSPEND_WAIT);
            }
            Some(JobControl::Continue) if resume_on_continue => {
                tracing::info!("continued (SIGCONT): resuming");
                resume_on_continue = false;
                pause(runner, frontend, Some(false));
            }
            _ => {}
        }
        if let Some(at) = stop_at {
            if runner.feed().paused() || runner.is_paused() || Instant::now() >= at {
                stop_at = None;
                resume_on_continue = true;
                super::interrupt::stop_self();
            }
        }
        let local = frontend.local_inputs();
        let tick = runner.tick(machine, &local)?;
        let now_paused = runner.feed().paused();
        let pause_changed = now_paused != feed_paused;
        if pause_changed {
            feed_paused = now_paused;
            frontend.paused(now_paused);
        }
        if pause_changed || shown_at.is_none_or(|at| runner.frame() / 60 != at / 60) {
            shown_at = Some(runner.frame());
            if let Some(line) = runner.feed().status_line() {
                frontend.status(&line);
            }
        }
        frontend.present(machine, &tick, runner.frame())?;
        if let Status::Ended(reason) = tick.status {
            return Ok(reason);
        }
        timeout = match runner.feed().max_wait() {
            Some(cap) => tick.timeout.min(cap),
            None => tick.timeout,
        };
    }
}

/// Longest a suspend (Ctrl-Z) waits for the pause to be in force before the process stops.
const SUSPEND_WAIT: Duration = Duration::from_secs(1);

/// Pauses (`Some(true)`), resumes or toggles the game: for everyone if the feed handles it
/// (netplay), else this runner alone.
fn pause<M, F, C, FE>(runner: &mut Runner<M, F, C>, frontend: &mut FE, pause: Option<bool>)
where
    M: Machine,
    F: Feed,
    C: Clock,
    FE: Frontend<M>,
{
    if runner.feed_mut().request_pause(pause) {
        return;
    }
    let paused = pause.unwrap_or(!runner.is_paused());
    if paused != runner.is_paused() {
        runner.set_paused(paused);
        frontend.paused(paused);
        tracing::info!("{}", if paused { "paused" } else { "resumed" });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::app::runner::{FeedPoll, RunnerConfig};
    use crate::input::{Pad, MAX_PLAYERS};

    struct Frames(u64);

    impl Machine for Frames {
        fn run_frame(&mut self, _inputs: &Inputs) {
            self.0 += 1;
        }
        fn fps(&self) -> f64 {
            60.0
        }
        fn shutdown_requested(&self) -> bool {
            false
        }
    }

    /// Gives neutral frames; `io` says whether it has I/O of its own to wait on.
    struct Net {
        io: bool,
        waits: Vec<Duration>,
    }

    impl Feed for Net {
        fn sample(&mut self, _now: Instant, _local: &Inputs) {}
        fn next(&mut self, _now: Instant) -> FeedPoll {
            FeedPoll::Run([Pad::NEUTRAL; MAX_PLAYERS])
        }
        fn status_line(&self) -> Option<String> {
            Some("LINE".into())
        }
        fn wait_io(&mut self, timeout: Duration) -> bool {
            self.waits.push(timeout);
            if self.io {
                std::thread::sleep(timeout);
            }
            self.io
        }
    }

    #[derive(Default)]
    struct Recorder {
        waits: Vec<Duration>,
        /// Frames emulated when each status line came.
        statuses: Vec<u64>,
        frame: u64,
    }

    impl Frontend<Frames> for Recorder {
        fn wait(&mut self, timeout: Duration) -> Result<Requests, RunError> {
            self.waits.push(timeout);
            std::thread::sleep(timeout);
            Ok(Requests::default())
        }
        fn local_inputs(&mut self) -> Inputs {
            [Pad::NEUTRAL; MAX_PLAYERS]
        }
        fn present(&mut self, _: &mut Frames, _: &Tick, frame: u64) -> Result<(), RunError> {
            self.frame = frame;
            Ok(())
        }
        fn status(&mut self, line: &str) {
            assert_eq!(line, "LINE");
            self.statuses.push(self.frame);
        }
    }

    fn run(io: bool) -> (Vec<Duration>, Vec<Duration>) {
        let config = RunnerConfig {
            max_frames: Some(5),
            ..RunnerConfig::default()
        };
        let mut runner = Runner::new(Net { io, waits: vec![] }, config);
        let mut frontend = Recorder::default();
        let end = run_loop(&mut runner, &mut Frames(0), &mut frontend).unwrap();
        assert_eq!(end, EndReason::FrameLimit);
        (runner.feed().waits.clone(), frontend.waits)
    }

    #[test]
    fn the_status_line_shows_from_the_first_frame_then_every_60() {
        let config = RunnerConfig {
            max_frames: Some(130),
            // As fast as it goes, one frame per tick.
            fast: true,
            fast_budget: Duration::ZERO,
            ..RunnerConfig::default()
        };
        let mut runner = Runner::new(
            Net {
                io: false,
                waits: vec![],
            },
            config,
        );
        let mut frontend = Recorder::default();
        run_loop(&mut runner, &mut Frames(0), &mut frontend).unwrap();
        // Asked before the first present (0 frames shown yet), then as frames 60 and 120 ran
        // (shown with the present of the frame before).
        assert_eq!(frontend.statuses, [0, 59, 119]);
    }

    #[test]
    fn a_feed_with_io_of_its_own_does_the_waiting() {
        // Netplay: the loop waits on the socket, the frontend only takes pending events.
        let (feed, frontend) = run(true);
        assert!(
            feed.iter().any(|w| *w > Duration::from_millis(10)),
            "{feed:?}"
        );
        assert!(frontend.iter().all(|w| w.is_zero()), "{frontend:?}");
        // Local play: the frontend waits between frames.
        let (_, frontend) = run(false);
        assert!(
            frontend.iter().any(|w| *w > Duration::from_millis(10)),
            "{frontend:?}"
        );
    }
}
