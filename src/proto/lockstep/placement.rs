//! Where the lockstep authority sits: in strict mode every player waits for its longest
//! round trip to the authority, so the best place is the one whose longest round trip to
//! any player is shortest: a player's process (its own round trip is none) or the room's
//! server. [`best_place`] picks it from measured round trips; [`AuthorityPlacement`] moves it only
//! when another place is better by a margin, at most once a minute, as a hand-over
//! (`lockstep::handover`) stalls the game for a moment. Sans-IO: the caller measures and
//! says `now`.

use std::fmt;
use std::time::{Duration, Instant};

use super::frame::PeerId;

/// A move is worth its stall only if the longest round trip falls by this much (a frame of
/// lead at 60 fps and a margin) ...
pub const MOVE_MARGIN: Duration = Duration::from_millis(20);
/// ... and by this share of what it was.
pub const MOVE_SHARE: f64 = 0.15;
/// At most one move in this long.
pub const MOVE_GAP: Duration = Duration::from_secs(60);

/// A place the authority can sit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// A player's process.
    Player(PeerId),
    /// The room's server.
    Server,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Player(p) => write!(f, "{p}"),
            Place::Server => f.write_str("the server"),
        }
    }
}

/// The longest round trip of any of `players` to `place` (`rtt(a, b)`, the measured round
/// trip between player `a` and place `b`; a player's to itself is none); `None` if one is
/// not known.
pub fn longest_rtt(
    place: Place,
    players: &[PeerId],
    rtt: &impl Fn(PeerId, Place) -> Option<Duration>,
) -> Option<Duration> {
    players
        .iter()
        .filter(|&&p| Place::Player(p) != place)
        .map(|&p| rtt(p, place))
        .try_fold(Duration::ZERO, |m, r| Some(m.max(r?)))
}

/// The place whose longest round trip to any player is shortest, and that round trip:
/// among `players` (ties go to the lowest seat) and, if `server`, the room's server (which
/// wins a tie with no player: the game's traffic stays off it). `None` with no player.
pub fn best_place(
    players: &[PeerId],
    server: bool,
    rtt: impl Fn(PeerId, Place) -> Option<Duration>,
) -> Option<(Place, Duration)> {
    let mut seats = players.to_vec();
    seats.sort_by_key(|p| p.0);
    let candidates = seats
        .iter()
        .map(|&p| Place::Player(p))
        .chain(server.then_some(Place::Server));
    let mut best: Option<(Place, Duration)> = None;
    for place in candidates {
        let Some(longest) = longest_rtt(place, players, &rtt) else {
            continue;
        };
        if best.is_none_or(|(_, b)| longest < b) {
            best = Some((place, longest));
        }
    }
    best
}

/// A move of the authority [`AuthorityPlacement`] decided on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    /// Where the authority was.
    pub from: Place,
    /// Where it goes.
    pub to: Place,
    /// The longest round trip of a player to the new place.
    pub longest: Duration,
    /// The longest to the old one (`Duration::MAX`: not known, or its player left).
    pub was: Duration,
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let to = match self.to {
            Place::Server => "the server".to_string(),
            Place::Player(p) => format!("{p}'s computer"),
        };
        write!(
            f,
            "the game moved to {to} (longest round trip {} ms, was {} ms)",
            self.longest.as_millis(),
            self.was.as_millis()
        )
    }
}

/// Where the authority is, and the rule for moving it (see the module doc).
#[derive(Clone, Copy, Debug)]
pub struct AuthorityPlacement {
    at: Place,
    moved_at: Option<Instant>,
}

impl AuthorityPlacement {
    /// The authority starts at `at` (chosen with [`best_place`] from the lobby's round trips,
    /// or pinned).
    pub fn new(at: Place) -> AuthorityPlacement {
        AuthorityPlacement { at, moved_at: None }
    }

    /// Where the authority is.
    pub fn at(&self) -> Place {
        self.at
    }

    /// The authority had to move to `to` (its host left): that counts as a move.
    pub fn moved(&mut self, now: Instant, to: Place) {
        self.at = to;
        self.moved_at = Some(now);
    }

    /// The round trips as measured now: a move when the best place is better than where
    /// the authority is by `MOVE_MARGIN` and `MOVE_SHARE`, and the last move was at
    /// least `MOVE_GAP` ago. Players who left are not in `players`.
    pub fn handle_rtts(
        &mut self,
        now: Instant,
        players: &[PeerId],
        server: bool,
        rtt: impl Fn(PeerId, Place) -> Option<Duration>,
    ) -> Option<Move> {
        if self.moved_at.is_some_and(|t| now < t + MOVE_GAP) {
            return None;
        }
        let (to, longest) = best_place(players, server, &rtt)?;
        let gone = matches!(self.at, Place::Player(p) if !players.contains(&p));
        let was = match longest_rtt(self.at, players, &rtt) {
            Some(was) if !gone => was,
            // Where it is cannot be measured (or is gone): the best place is better.
            _ => Duration::MAX,
        };
        let better = was.saturating_sub(longest);
        if to == self.at
            || better < MOVE_MARGIN
            || better.as_secs_f64() < MOVE_SHARE * was.as_secs_f64()
        {
            return None;
        }
        let m = Move {
            from: self.at,
            to,
            longest,
            was,
        };
        self.moved(now, to);
        Some(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANA: PeerId = PeerId(0);
    const BOB: PeerId = PeerId(1);

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Two players `apart` from each other (their direct round trip, or through the
    /// server), each `to_server` from the server.
    fn two(apart: u64, to_server: u64) -> impl Fn(PeerId, Place) -> Option<Duration> {
        move |_, place| match place {
            Place::Server => Some(ms(to_server)),
            Place::Player(_) => Some(ms(apart)),
        }
    }

    #[test]
    fn two_players_each_50_ms_from_a_server_between_them_are_served_by_it() {
        // Each uplink 50 ms: 100 ms round trips to the server, 200 ms between them.
        let best = best_place(&[ANA, BOB], true, two(200, 100));
        assert_eq!(best, Some((Place::Server, ms(100))));
        // Without a server the host keeps it.
        assert_eq!(
            best_place(&[ANA, BOB], false, two(200, 100)),
            Some((Place::Player(ANA), ms(200)))
        );
    }

    #[test]
    fn players_close_together_keep_the_authority_with_the_lowest_seat() {
        let best = best_place(&[BOB, ANA], true, two(40, 160));
        assert_eq!(best, Some((Place::Player(ANA), ms(40))));
    }

    #[test]
    fn the_player_with_the_shortest_longest_round_trip_is_named() {
        // cy sits between ana and bob.
        let cy = PeerId(2);
        let rtt = |a: PeerId, b: Place| {
            let Place::Player(b) = b else {
                return Some(ms(300));
            };
            let pair = (a.0.min(b.0), a.0.max(b.0));
            Some(ms(match pair {
                (0, 1) => 200,
                (0, 2) | (1, 2) => 90,
                _ => unreachable!(),
            }))
        };
        assert_eq!(
            best_place(&[ANA, BOB, cy], true, rtt),
            Some((Place::Player(cy), ms(90)))
        );
        // A round trip not measured yet rules a place out.
        let unknown = |a: PeerId, b: Place| {
            if b == Place::Player(cy) && a == ANA {
                None
            } else {
                rtt(a, b)
            }
        };
        assert_eq!(
            best_place(&[ANA, BOB, cy], false, unknown).map(|b| b.0),
            Some(Place::Player(ANA))
        );
    }

    #[test]
    fn the_authority_moves_by_a_margin_and_at_most_once_a_minute() {
        let t0 = Instant::now();
        let players = [ANA, BOB];
        let mut p = AuthorityPlacement::new(Place::Player(ANA));
        // 10 ms better is no reason to stall the game.
        assert_eq!(p.handle_rtts(t0, &players, true, two(110, 100)), None);
        let m = p
            .handle_rtts(t0, &players, true, two(200, 100))
            .expect("a move");
        assert_eq!(
            (m.from, m.to, m.longest, m.was),
            (Place::Player(ANA), Place::Server, ms(100), ms(200))
        );
        assert_eq!(
            m.to_string(),
            "the game moved to the server (longest round trip 100 ms, was 200 ms)"
        );
        // The round trips change back at once: it stays for a minute.
        let back = two(30, 200);
        assert_eq!(
            p.handle_rtts(t0 + Duration::from_secs(59), &players, true, &back),
            None
        );
        let m = p
            .handle_rtts(t0 + MOVE_GAP, &players, true, &back)
            .expect("a move back");
        assert_eq!(m.to, Place::Player(ANA));
        assert_eq!(p.at(), Place::Player(ANA));
    }

    #[test]
    fn a_departed_authority_is_replaced_at_once_by_the_best_place() {
        let t0 = Instant::now();
        let mut p = AuthorityPlacement::new(Place::Player(ANA));
        let m = p
            .handle_rtts(t0, &[BOB, PeerId(2)], true, two(40, 100))
            .expect("a move");
        assert_eq!(m.to, Place::Player(BOB));
    }
}
