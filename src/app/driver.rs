//! The run loop shared by the window and headless modes: wait, tick, present, repeat.

use std::time::Duration;

use super::runner::{Clock, EndReason, Feed, Machine, RunError, Runner, Status, Tick};
use crate::input::Inputs;

/// What the user asked for while the frontend waited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    pub quit: bool,
    pub toggle_pause: bool,
}

/// The outputs and local inputs of one mode (window, headless).
pub trait Frontend<M> {
    /// Waits up to `timeout` (the runner's) while handling events; returns requests.
    fn wait(&mut self, timeout: Duration) -> Result<Requests, RunError>;
    /// The local players' pads now.
    fn local_inputs(&mut self) -> Inputs;
    /// After each tick: show the frames that ran, queue their audio. `frame` is the number
    /// of frames emulated so far.
    fn present(&mut self, machine: &mut M, tick: &Tick, frame: u64) -> Result<(), RunError>;
    /// The game was paused or resumed.
    fn paused(&mut self, _paused: bool) {}
    /// A status line to show over the game (netplay numbers); refreshed about once a second.
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
    let mut shown_at = 0;
    loop {
        let requests = frontend.wait(timeout)?;
        if requests.quit || super::interrupt::requested() {
            runner.stop(EndReason::Quit);
        }
        if requests.toggle_pause {
            let paused = !runner.is_paused();
            runner.set_paused(paused);
            frontend.paused(paused);
            tracing::info!("{}", if paused { "paused" } else { "resumed" });
        }
        let local = frontend.local_inputs();
        let tick = runner.tick(machine, &local)?;
        if runner.frame() / 60 != shown_at / 60 {
            shown_at = runner.frame();
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
