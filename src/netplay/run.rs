//! The frames of a session: the runner over the netplay feed with the core side and the
//! recording watching, then the goodbye and the session's numbers. It starts once `start`
//! has a loaded core and a feed, and must not import the lobby or the handshake.

use std::time::Duration;

use serde_json::{json, Map};

use super::core_side::CoreSide;
use super::{NetFeed, NetOptions, NetplayError};
use crate::app::play::{run_session, EarlyWindow};
use crate::app::record::{begin_netplay, Reserved};
use crate::app::{EndReason, Feed, PlayError, PlayOptions, PlaySummary, Runner};
use crate::host::Core;

/// How long the host keeps serving peers after its own last frame, so they can finish.
const LINGER: Duration = Duration::from_secs(3);
/// A spectator's frame clock forgets a lag past this (about three frames at 60 fps).
const SPECTATOR_MAX_LAG: Duration = Duration::from_millis(50);

/// Plays frames from `feed` until the frame limit, a quit, or the session ends.
pub(super) fn run(
    play: &PlayOptions,
    core: &mut Core,
    mut feed: NetFeed,
    net: &NetOptions,
    recording: Option<Reserved>,
    window: EarlyWindow,
) -> Result<PlaySummary, NetplayError> {
    if let Some((frame, mask)) = net.inject_desync {
        feed = feed.with_injected_desync(frame, mask);
    }
    if let Some((frame, hold)) = net.pause_at {
        feed = feed.with_pause_at(frame, hold);
    }
    let mut runner_cfg = play.runner.clone();
    // A player never drops a backlog: its frames are due on the session's clock, so it
    // catches up (capped) instead. A spectator's pace is the frames' arrival (its feed's
    // backlog runs what it holds beyond a keyframe interval's worth, see
    // `Feed::paced_by_arrival`), and a clock left behind by a pause is forgotten, as in `play`.
    runner_cfg.max_lag = if feed.is_spectator() {
        SPECTATOR_MAX_LAG
    } else {
        Duration::MAX
    };
    if net.speculate > 0 && !feed.is_spectator() {
        runner_cfg.run_ahead = speculation_depth(core, net.speculate);
    }
    let first = feed.first_frame();
    // --frames N ends the session at its frame N, wherever this peer's machine started (a
    // spectator's jumps to fresh states skip frames: its feed ends there too).
    if let Some(n) = runner_cfg.max_frames.as_mut() {
        feed.end_at(*n);
        *n = n.saturating_sub(u64::from(first)).max(1);
    }
    let recording = begin_netplay(
        recording,
        play,
        core,
        &feed.names(),
        net.checksum_interval,
        first,
        feed.mode().as_str(),
    );
    let mut runner = Runner::new(feed, runner_cfg);
    runner.observe(Box::new(CoreSide::new(
        runner.feed().shared(),
        recording.clone(),
        u64::from(first),
    )));
    if let Some(r) = &recording {
        runner.observe(r.observer());
    }
    // Stats are written below, once the netplay numbers are in.
    let quiet = PlayOptions {
        stats_json: None,
        ..play.clone()
    };
    let result = run_session(&quiet, core, &mut runner, Map::new(), recording, window);
    let quit = matches!(
        result,
        Ok(PlaySummary {
            end: EndReason::Quit,
            ..
        })
    );
    let feed = runner.feed_mut();
    let ended = feed.end();
    if ended.is_none() {
        match (feed.is_host(), quit) {
            (true, false) => {
                // Reached --frames: the joiners are about to, let them finish.
                feed.linger(LINGER);
                feed.close("host finished");
            }
            (true, true) => feed.close("host quit"),
            (false, false) => feed.close("finished"),
            (false, true) => feed.close("quit"),
        }
    }
    let mut summary = result?;
    let mut extra = runner.feed().stats();
    extra.remove("kind");
    summary.stats.extend(extra);
    summary.stats.insert("netplay".into(), json!(true));
    if let Some(path) = &play.stats_json {
        crate::app::stats::write(path, &summary.stats).map_err(PlayError::from)?;
    }
    if quit && summary.frames == 0 {
        // Admitted, and waiting for the others when the player gave up: as in the lobby.
        return Err(if crate::app::interrupt::requested() {
            NetplayError::Interrupted
        } else {
            NetplayError::Left
        });
    }
    // A joiner that reached its own frame limit finished, whenever the host left.
    if let (Some(why), false) = (ended, summary.end == EndReason::FrameLimit) {
        return Err(NetplayError::Ended(format!(
            "{why} (after {} frames)",
            summary.frames
        )));
    }
    Ok(summary)
}

/// The depth to speculate at: `want`, if the core passes the rollback check (see
/// `app::sync_test::check_rollback`), else 0 with the reason logged.
fn speculation_depth(core: &mut Core, want: u32) -> u32 {
    match crate::app::sync_test::check_rollback(core, want.max(2)) {
        Ok(()) => {
            tracing::info!("netplay: speculating up to {want} frame(s) ahead");
            want
        }
        Err(why) => {
            tracing::warn!(
                "netplay: {} failed the rollback check ({why}); playing without speculation",
                core.info().library_name
            );
            0
        }
    }
}
