//! The frames of a session, as netplay's part of `app::core_session`: the runner's
//! settings and what the recording's header holds ([`started`]), the core side that serves
//! the feed ([`observer`]), then the goodbye and the session's numbers ([`finish`],
//! [`outcome`]). It starts once `start` has a loaded core and a feed, and must not import
//! the lobby or the handshake.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::core_side::CoreSide;
use super::speculation::Decision;
use super::{NetFeed, NetOptions, NetplayError, SessionEnd};
use crate::app::core_session::Started;
use crate::app::{EndReason, Feed, FrameObserver, PlayOptions, PlaySummary, Recording};
use crate::host::Core;

/// How long the host keeps serving peers after its own last frame, so they can finish.
const LINGER: Duration = Duration::from_secs(3);
/// A spectator's frame clock forgets a lag past this (about three frames at 60 fps).
const SPECTATOR_MAX_LAG: Duration = Duration::from_millis(50);

/// What the frames of `feed` start with: netplay's test hooks on the feed, its rules on the
/// runner's settings, the recording's header fields.
pub(super) fn started(
    play: &PlayOptions,
    net: &NetOptions,
    mut feed: NetFeed,
    rollback: Decision,
) -> Started<NetFeed> {
    if let Some((frame, mask)) = net.inject_desync {
        feed = feed.with_injected_desync(frame, mask);
    }
    if let Some((frame, hold)) = net.pause_at {
        feed = feed.with_pause_at(frame, hold);
    }
    let mut runner = play.runner.clone();
    // A player never drops a backlog: its frames are due on the session's clock, so it
    // catches up (capped) instead. A spectator's pace is the frames' arrival (its feed's
    // backlog runs what it holds beyond a keyframe interval's worth, see
    // `Feed::paced_by_arrival`), and a clock left behind by a pause is forgotten, as in `play`.
    runner.max_lag = if feed.is_spectator() {
        SPECTATOR_MAX_LAG
    } else {
        Duration::MAX
    };
    // Spectators never speculate: they have no input to show.
    let rollback = if feed.is_spectator() {
        Decision::default()
    } else {
        rollback
    };
    feed = feed.with_speculation(net.delay, &rollback);
    let first = feed.first_frame();
    // --frames N ends the session at its frame N, wherever this peer's machine started (a
    // spectator's jumps to fresh states skip frames: its feed ends there too).
    if let Some(n) = runner.max_frames.as_mut() {
        feed.end_at(*n);
        *n = n.saturating_sub(u64::from(first)).max(1);
    }
    Started {
        players: feed.names(),
        mode: feed.mode().as_str(),
        feed,
        runner,
        speculate: rollback.depth,
        speculation_costs: rollback.costs,
        first_frame: first,
        checksum_interval: net.checksum_interval,
    }
}

/// The core side of `feed`'s session, writing its events into `recording`.
pub(super) fn observer(
    feed: &NetFeed,
    recording: Option<Recording>,
) -> Box<dyn FrameObserver<Core>> {
    Box::new(CoreSide::new(
        feed.shared(),
        recording,
        u64::from(feed.first_frame()),
    ))
}

/// The goodbye after the last frame (`quit`: the player quit): why the session ended if it
/// ended before, and the session's netplay numbers.
pub(super) fn finish(feed: &mut NetFeed, quit: bool) -> (Option<SessionEnd>, Map<String, Value>) {
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
    } else {
        feed.close_port_map();
    }
    let mut extra = feed.stats();
    extra.remove("kind");
    extra.insert("netplay".into(), json!(true));
    (ended, extra)
}

/// The command's result: a session left before its first frame or ended by another peer
/// (`ended`) is an error.
pub(super) fn outcome(
    summary: PlaySummary,
    ended: Option<SessionEnd>,
    interrupted: bool,
) -> Result<PlaySummary, NetplayError> {
    if summary.end == EndReason::Quit && summary.frames == 0 {
        // Admitted, and waiting for the others when the player gave up: as in the lobby.
        return Err(if interrupted {
            NetplayError::Interrupted
        } else {
            NetplayError::Left
        });
    }
    // A joiner that reached its own frame limit finished, whenever the host left.
    if let (Some(end), false) = (ended, summary.end == EndReason::FrameLimit) {
        return Err(NetplayError::Ended {
            end,
            frames: summary.frames,
        });
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionError;

    /// The typed end is worded as the player has always read it, with the way back only
    /// where reconnecting gave up.
    #[test]
    fn an_ended_session_is_worded_from_its_typed_cause() {
        let rejoin = Some("framelock join 127.0.0.1:7845".to_string());
        let gave_up = NetplayError::Ended {
            end: SessionEnd {
                cause: SessionError::ReconnectGaveUp { secs: 3 },
                rejoin: rejoin.clone(),
            },
            frames: 120,
        };
        assert_eq!(
            gave_up.to_string(),
            "the session ended: lost the connection and could not reconnect within 3 s; to come \
             back, run `framelock join 127.0.0.1:7845` (after 120 frames)"
        );
        let left = NetplayError::Ended {
            end: SessionEnd {
                cause: SessionError::HostLeft("host quit".into()),
                rejoin,
            },
            frames: 7,
        };
        assert_eq!(
            left.to_string(),
            "the session ended: the host left: host quit (after 7 frames)"
        );
        assert!(matches!(
            left,
            NetplayError::Ended {
                end: SessionEnd {
                    cause: SessionError::HostLeft(_),
                    ..
                },
                ..
            }
        ));
    }
}
