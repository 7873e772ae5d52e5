//! The status line a netplay window shows (`Feed::status_line`) from the first frame on,
//! refreshed every second: the session's mode, this player's keyframe interval, lead, stalls and traffic, then
//! per peer its round trip (a host: every joiner's, with the traffic to and from it; a
//! joiner: the host's). Segments are " | "-separated so the window can wrap them
//! (`frontend::status_bar`).

use std::fmt;
use std::time::Duration;

use crate::lockstep::{Mode, Traffic};
use crate::session::direct::PathKind;

/// What the line shows, gathered from the feed's state.
#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    pub mode: Mode,
    pub keyframe_interval: u32,
    pub lead: Option<u32>,
    pub stalls: u64,
    /// Bytes this peer sent and received in play, headers included, over `secs`.
    pub wire_out: u64,
    pub wire_in: u64,
    pub secs: f64,
    pub peers: Vec<PeerStatus>,
    /// The room, when the session runs on a dedicated server: the round trip shown is to
    /// the server then.
    pub room: Option<String>,
    /// The host: spectators watching.
    pub spectators: Option<usize>,
    /// A spectator: how far behind the players it shows the game.
    pub watching: Option<Duration>,
    /// Speculation: `--delay` in frames now, frames the picture runs ahead of the last
    /// frame that counts, rollbacks a second lately; or why it is off for this session.
    pub delay: Option<u32>,
    pub ahead: Option<u32>,
    pub rollbacks_per_s: Option<f64>,
    pub rollback_off: Option<String>,
    /// The link to the host is lost: it tries to reconnect for this much longer.
    pub reconnecting: Option<Duration>,
    /// The game is paused, by this player.
    pub paused: Option<String>,
}

/// One other peer as this one sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerStatus {
    /// 1-based player number; `None` for a joiner's host.
    pub player: Option<u8>,
    pub rtt: Option<Duration>,
    /// Lockstep traffic to and from it (a host knows it per peer; a joiner's is its total).
    pub traffic: Option<Traffic>,
    /// In a room hosted by a player: whether its datagrams go direct or through the server.
    pub path: Option<PathKind>,
}

/// The rate over at least a second: the line is shown from the first frame, when a few
/// hundred bytes over a millisecond would read as megabits.
fn kbit(bytes: u64, secs: f64) -> f64 {
    bytes as f64 * 8.0 / 1000.0 / secs.max(1.0)
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lead = self.lead.map_or("-".into(), |l| l.to_string());
        if let Some(who) = &self.paused {
            write!(f, "PAUSED: {who} paused | ")?;
        }
        if let Some(left) = self.reconnecting {
            write!(
                f,
                "connection lost, reconnecting... {} s | ",
                left.as_secs_f64().ceil() as u64
            )?;
        }
        if let Some(room) = &self.room {
            write!(f, "room {room} | ")?;
        }
        if let Some(delay) = self.watching {
            write!(
                f,
                "watching: {} ms behind the players | ",
                delay.as_millis()
            )?;
        }
        write!(
            f,
            "{} K {} lead {lead} stalls {} up {:.1} down {:.1} kbit/s",
            self.mode,
            self.keyframe_interval,
            self.stalls,
            kbit(self.wire_out, self.secs),
            kbit(self.wire_in, self.secs),
        )?;
        if let Some(delay) = self.delay {
            write!(f, " delay {delay}")?;
        }
        if let Some(ahead) = self.ahead {
            write!(f, " ahead {ahead}")?;
        }
        if let Some(r) = self.rollbacks_per_s {
            write!(f, " rollbacks {r:.1}/s")?;
        }
        if let Some(off) = &self.rollback_off {
            write!(f, " | {off}")?;
        }
        for p in &self.peers {
            let rtt = p.rtt.map_or("-".into(), |r| r.as_millis().to_string());
            match p.player {
                Some(n) => write!(f, " | P{n} {rtt} ms")?,
                None if p.path.is_some() => write!(f, " | host rtt {rtt} ms")?,
                None if self.room.is_some() => write!(f, " | server rtt {rtt} ms")?,
                None => write!(f, " | rtt {rtt} ms")?,
            }
            if let Some(path) = p.path {
                write!(f, " {}", path.as_str().to_uppercase())?;
            }
            if let Some(t) = p.traffic {
                let (to, from) = (kbit(t.wire_out, self.secs), kbit(t.wire_in, self.secs));
                write!(f, " {to:.1}/{from:.1}")?;
            }
        }
        if let Some(n) = self.spectators.filter(|n| *n > 0) {
            write!(f, " | {n} watching")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_shows_each_peers_round_trip_and_traffic_a_joiner_the_hosts_round_trip() {
        let ms = Duration::from_millis;
        // 10 s: 30 000 bytes out in 600 datagrams is (30 000 + 600 x 28) x 8 / 10 s.
        let to_p2 = Traffic {
            bytes_out: 30_000,
            wire_out: 30_000 + 600 * 28,
            packets_out: 600,
            bytes_in: 20_000,
            wire_in: 20_000 + 500 * 28,
            packets_in: 500,
            packets_dropped_invalid: 0,
        };
        let host = Status {
            mode: Mode::Strict,
            keyframe_interval: 2,
            lead: Some(9),
            stalls: 3,
            wire_out: 48_000,
            wire_in: 24_500,
            secs: 10.0,
            room: None,
            spectators: None,
            watching: None,
            delay: None,
            ahead: None,
            rollbacks_per_s: None,
            rollback_off: None,
            reconnecting: None,
            paused: None,
            peers: vec![
                PeerStatus {
                    player: Some(2),
                    rtt: Some(ms(98)),
                    path: None,
                    traffic: Some(to_p2),
                },
                PeerStatus {
                    player: Some(3),
                    rtt: None,
                    path: None,
                    traffic: Some(Traffic::default()),
                },
            ],
        };
        assert_eq!(
            host.to_string(),
            "strict K 2 lead 9 stalls 3 up 38.4 down 19.6 kbit/s | P2 98 ms 37.4/27.2 | P3 - ms 0.0/0.0"
        );
        let joiner = Status {
            lead: None,
            peers: vec![PeerStatus {
                path: None,
                player: None,
                rtt: Some(ms(101)),
                traffic: None,
            }],
            ..host.clone()
        };
        assert_eq!(
            joiner.to_string(),
            "strict K 2 lead - stalls 3 up 38.4 down 19.6 kbit/s | rtt 101 ms"
        );
        // Through a server the round trip is to the server, and the room is named.
        let in_room = Status {
            room: Some("amber-otter-42".into()),
            ..joiner.clone()
        };
        assert_eq!(
            in_room.to_string(),
            "room amber-otter-42 | strict K 2 lead - stalls 3 up 38.4 down 19.6 kbit/s | server rtt 101 ms"
        );
        // In a room hosted by a player, the round trip is to the host, with each path.
        let mut hosted = in_room.clone();
        hosted.peers[0].path = Some(PathKind::Direct);
        assert!(
            hosted.to_string().ends_with(" | host rtt 101 ms DIRECT"),
            "{hosted}"
        );
        let mut host_of_room = host.clone();
        host_of_room.peers[1].path = Some(PathKind::Relayed);
        assert!(host_of_room
            .to_string()
            .ends_with(" | P2 98 ms 37.4/27.2 | P3 - ms RELAYED 0.0/0.0"));
        // A host counts its spectators; a spectator says how far behind it is.
        let watched = Status {
            spectators: Some(3),
            ..host.clone()
        };
        assert!(watched
            .to_string()
            .ends_with(" | P3 - ms 0.0/0.0 | 3 watching"));
        let spectator = Status {
            watching: Some(ms(140)),
            ahead: None,
            ..joiner.clone()
        };
        assert!(spectator
            .to_string()
            .starts_with("watching: 140 ms behind the players | strict K 2"));
        let optimistic = Status {
            mode: Mode::Optimistic,
            keyframe_interval: 1,
            lead: Some(3),
            ..joiner.clone()
        };
        assert!(optimistic
            .to_string()
            .starts_with("optimistic K 1 lead 3 stalls 3"));
        // Rollback: the delay, how far ahead the picture runs, how often it rolls back; or
        // why this session has none.
        let rolling = Status {
            delay: Some(1),
            ahead: Some(8),
            rollbacks_per_s: Some(2.4),
            ..joiner.clone()
        };
        assert!(rolling
            .to_string()
            .ends_with("kbit/s delay 1 ahead 8 rollbacks 2.4/s | rtt 101 ms"));
        let no_rollback = Status {
            rollback_off: Some("Foo failed the rollback check".into()),
            ..joiner.clone()
        };
        assert!(no_rollback
            .to_string()
            .ends_with("kbit/s | Foo failed the rollback check | rtt 101 ms"));
        // A joiner that lost the host counts down the time it keeps trying.
        let lost = Status {
            reconnecting: Some(Duration::from_millis(11_200)),
            ..joiner.clone()
        };
        assert!(lost
            .to_string()
            .starts_with("connection lost, reconnecting... 12 s | strict K 2"));
        // Everyone sees who paused, first.
        let paused = Status {
            paused: Some("bob".into()),
            ..joiner.clone()
        };
        assert!(paused
            .to_string()
            .starts_with("PAUSED: bob paused | strict K 2"));
        // Shown from the first frame: 400 bytes after 2 ms are 3.2 kbit over a second.
        let first = Status {
            wire_out: 400,
            wire_in: 0,
            secs: 0.002,
            peers: vec![],
            ..joiner
        };
        assert_eq!(
            first.to_string(),
            "strict K 2 lead - stalls 3 up 3.2 down 0.0 kbit/s"
        );
    }
}
