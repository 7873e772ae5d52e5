//! Rooms on a dedicated server, on simulated time (`world`): rooms that open, fill, play,
//! outlive their creator and close; passwords checked end to end; a wrong room; rooms side
//! by side that cannot reach each other; a desync judged by majority; the room's mode. Each
//! runs real participants, the real `serve::Rooms` and the real frame runner.

use std::time::Duration;

use super::scenario::{cfg, finish_some_in_sync, SEC};
use super::{RoomSpec, World};
use crate::lockstep::{self, Client, Mode, PeerId, Slot};
use crate::serve::{valid_room_name, ServeConfig, ServeEvent};
use crate::session::{EndpointEvent, ParticipantEvent, SessionError, Transmit};

const LOSSY: &str = "delay=25ms,jitter=5ms,loss=5%,dup=1%,reorder=1%";

fn spec(room: &str, seats: u8) -> RoomSpec {
    RoomSpec {
        room: room.into(),
        seats,
        ..RoomSpec::default()
    }
}

/// Node `i`'s seat, once welcomed.
fn slot(w: &World, i: usize) -> Option<PeerId> {
    w.nodes[i].events().find_map(|e| match e {
        ParticipantEvent::Welcomed { slot, .. } => *slot,
        _ => None,
    })
}

/// Node `i` has its start state (it plays, or is about to).
fn ready(w: &World, i: usize) -> bool {
    w.nodes[i]
        .events()
        .any(|e| matches!(e, ParticipantEvent::Ready(_)))
}

fn closed(w: &World) -> bool {
    w.server_events
        .iter()
        .any(|e| matches!(e, ServeEvent::Closed { .. }))
}

#[test]
fn a_room_opens_fills_plays_in_sync_outlives_its_creator_and_closes_when_all_left() {
    let mut w = World::new(LOSSY, 1200);
    let server = w.serve();
    let options = vec![("lightcycles_speed".to_string(), "fast".to_string())];
    let room = RoomSpec {
        options: options.clone(),
        ..spec("", 3)
    };
    w.open_room_as("ana", room, cfg());
    assert!(w.run_until(30 * SEC, |w| w.node("ana").is_some()));
    let ana = w.node("ana").unwrap();
    // The server made up a name that reads aloud.
    let room = w.nodes[ana].room.clone().unwrap();
    assert!(
        valid_room_name(&room) && room.matches('-').count() == 2,
        "{room}"
    );
    let bob = w.join("bob", server, Some(&room), cfg());
    let cy = w.join("cy", server, Some(&room), cfg());
    assert!(w.run_until(30 * SEC, |w| [ana, bob, cy]
        .iter()
        .all(|&i| w.frame(i) >= 300)));
    assert_eq!(
        slot(&w, ana),
        Some(PeerId(0)),
        "the creator plays in slot 0"
    );
    let listed = w.server.as_ref().unwrap().1.list(w.now());
    assert_eq!(
        (
            listed.len(),
            listed[0].players,
            listed[0].seats,
            listed[0].playing
        ),
        (1, 3, 3, true)
    );
    // The joiners were given the creator's options with its state.
    let given = w.nodes[bob].events().find_map(|e| match e {
        ParticipantEvent::Ready(s) => Some(s.payload.options.clone()),
        _ => None,
    });
    assert_eq!(given, Some(options));

    // The creator leaves: the room goes on with the others, still listed, and they play to
    // the end in sync.
    w.leave(ana, "finished");
    w.run_for(10 * SEC);
    assert!(!closed(&w), "{:?}", w.server_events);
    assert_eq!(w.server.as_ref().unwrap().1.list(w.now()).len(), 1);
    finish_some_in_sync(&mut w, &[bob, cy], 60 * SEC);
    assert!(w.failure(bob).is_none() && w.failure(cy).is_none());
    w.assert_logs_verify();
    // Once the last player said goodbye, it closes at once.
    w.leave(bob, "finished");
    w.leave(cy, "finished");
    assert!(w.run_until(5 * SEC, closed), "{:?}", w.server_events);
    assert!(w.server.as_ref().unwrap().1.is_empty());
    assert!(w
        .server_events
        .iter()
        .any(|e| matches!(e, ServeEvent::Closed { why, .. } if why == "everyone left")));
    // The creator who left did not come back.
    let kinds: Vec<&str> = w
        .server_events
        .iter()
        .filter_map(|e| match e {
            ServeEvent::Opened { .. } => Some("opened"),
            ServeEvent::Room { event, .. } => match event {
                EndpointEvent::Admitted { .. } => Some("joined"),
                EndpointEvent::Started { .. } => Some("started"),
                _ => None,
            },
            ServeEvent::Out { .. } => Some("out"),
            ServeEvent::Closed { .. } => Some("closed"),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        ["opened", "joined", "joined", "joined", "started", "out", "out", "out", "closed"]
    );
}

#[test]
fn a_room_password_is_checked_by_its_creator_and_never_crosses_the_server() {
    let mut w = World::new(LOSSY, 200);
    w.keep_to_server = true;
    let server = w.serve();
    let room = RoomSpec {
        password: Some("open sesame".into()),
        ..spec("den", 3)
    };
    w.open_room_as("ana", room, cfg());
    assert!(w.run_until(30 * SEC, |w| w.node("ana").is_some()));
    let ana = w.node("ana").unwrap();
    let good = w.join_as("bob", server, Some("den"), Some("open sesame"), cfg());
    let bad = w.join_as("eve", server, Some("den"), Some("open sesame!"), cfg());
    let none = w.join_as("mal", server, Some("den"), None, cfg());
    assert!(w.run_until(60 * SEC, |w| {
        w.failure(bad).is_some() && w.failure(none).is_some() && ready(w, good)
    }));
    assert!(
        matches!(w.failure(bad), Some(SessionError::Refused(r)) if r == "wrong password"),
        "{:?}",
        w.failure(bad)
    );
    assert!(
        matches!(w.failure(none), Some(SessionError::Refused(r)) if r.contains("gave none")),
        "{:?}",
        w.failure(none)
    );
    let checked: Vec<bool> = w.nodes[ana]
        .events()
        .filter_map(|e| match e {
            ParticipantEvent::PasswordChecked { admitted } => Some(*admitted),
            _ => None,
        })
        .collect();
    assert!(
        checked.contains(&true) && checked.contains(&false),
        "{checked:?}"
    );
    assert!(!w.to_server.is_empty());
    for d in &w.to_server {
        assert!(
            !d.windows(6).any(|x| x == b"sesame"),
            "the password reached the server"
        );
    }
}

#[test]
fn a_wrong_room_is_refused_naming_the_open_ones() {
    let mut w = World::new("delay=10ms", 10);
    let server = w.serve();
    w.open_room("ana", "red-owl", 2, cfg());
    assert!(w.run_until(30 * SEC, |w| w.node("ana").is_some()));
    let lost = w.join("bob", server, Some("blue-owl"), cfg());
    assert!(w.run_until(30 * SEC, |w| w.failure(lost).is_some()));
    let e = w.failure(lost).unwrap().clone();
    assert!(
        matches!(&e, SessionError::NoRoom { room, rooms, .. }
        if room == "blue-owl" && rooms == &vec!["red-owl".to_string()]),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("no room blue-owl on {server}")),
        "{text}"
    );
    assert!(text.contains("open rooms: red-owl"), "{text}");
}

#[test]
fn a_player_of_one_room_cannot_reach_another() {
    let mut w = World::new("delay=10ms,loss=2%", 300);
    let server = w.serve();
    w.open_room("ana", "one", 2, cfg());
    w.open_room("cy", "two", 2, cfg());
    assert!(w.run_until(30 * SEC, |w| w.node("ana").is_some()
        && w.node("cy").is_some()));
    let (ana, cy) = (w.node("ana").unwrap(), w.node("cy").unwrap());
    let bob = w.join("bob", server, Some("one"), cfg());
    let dan = w.join("dan", server, Some("two"), cfg());
    assert!(w.run_until(30 * SEC, |w| ready(w, bob) && ready(w, dan)));
    // Bob forges CTRLs for room two's session, pressing every button, each frame.
    let two = w.nodes[dan]
        .feed()
        .participant
        .seat()
        .expect("dan plays")
        .session_id();
    let mut forger = Client::new(
        w.now(),
        lockstep::Config {
            session: two,
            ..lockstep::Config::default()
        },
        PeerId(1),
    )
    .unwrap();
    let from = w.addr_of(bob);
    let dropped = w.server.as_ref().unwrap().1.stats().dropped_auth;
    let mut forged = 0;
    for f in 0..120u64 {
        let t = w.now() + Duration::from_millis(16 * f);
        forger.push_local_input(t, crate::input::Pad(0x0fff));
        while let Some(Transmit { bytes, .. }) = forger.poll_transmit(t) {
            w.inject_to_server(from, &bytes);
            forged += 1;
        }
    }
    // Room one drops them unread: they do not carry bob's tag.
    assert_eq!(
        w.server.as_ref().unwrap().1.stats().dropped_auth - dropped,
        forged
    );
    finish_some_in_sync(&mut w, &[ana, bob], 60 * SEC);
    finish_some_in_sync(&mut w, &[cy, dan], 60 * SEC);
    w.assert_logs_verify();
    // Room two never saw the forged presses: its player 2 (dan) pressed what its bot did.
    assert!(!w.nodes[cy].toy.ran_input(1, 0x0fff));
}

#[test]
fn two_hundred_rooms_play_side_by_side() {
    let mut w = World::new("delay=15ms,jitter=3ms,loss=2%", 240);
    let server = w.serve();
    for i in 0..200 {
        w.open_room(&format!("c{i}"), &format!("room-{i}"), 2, cfg());
    }
    assert!(w.run_until(30 * SEC, |w| w.nodes.len() == 200));
    let creators: Vec<usize> = (0..200)
        .map(|i| w.node(&format!("c{i}")).unwrap())
        .collect();
    let joiners: Vec<usize> = (0..200)
        .map(|i| w.join(&format!("j{i}"), server, Some(&format!("room-{i}")), cfg()))
        .collect();
    let all: Vec<usize> = creators.iter().chain(&joiners).copied().collect();
    assert!(w.run_until(120 * SEC, |w| all.iter().all(|&i| w.nodes[i].finished)));
    for i in 0..200 {
        let (c, j) = (creators[i], joiners[i]);
        let last = w.frames - 1;
        assert_eq!(
            w.nodes[c].toy.hash_after(last),
            w.nodes[j].toy.hash_after(last),
            "room-{i}"
        );
    }
    assert_eq!(w.server.as_ref().unwrap().1.len(), 200);
}

#[test]
fn relayed_password_checks_survive_heavy_loss() {
    // A lost answer, challenge or verdict anywhere on the joiner -> server -> creator path
    // is asked for again by the joiner's resent Hello.
    let mut w = World::new("delay=20ms,jitter=5ms,loss=30%", 60);
    let server = w.serve();
    let room = RoomSpec {
        password: Some("pw".into()),
        ..spec("den", 5)
    };
    w.open_room_as("ana", room, cfg());
    assert!(w.run_until(60 * SEC, |w| w.node("ana").is_some()));
    let joiners: Vec<usize> = (0..4)
        .map(|i| w.join_as(&format!("j{i}"), server, Some("den"), Some("pw"), cfg()))
        .collect();
    assert!(w.run_until(120 * SEC, |w| joiners.iter().all(|&k| ready(w, k))));
    for &k in &joiners {
        assert!(w.failure(k).is_none(), "{:?}", w.failure(k));
    }
}

#[test]
fn a_desync_in_a_room_is_judged_by_majority_and_healed_with_a_majority_players_state() {
    let mut w = World::new(LOSSY, 900);
    let server = w.serve();
    w.open_room("ana", "trio", 3, cfg());
    assert!(w.run_until(30 * SEC, |w| w.node("ana").is_some()));
    let ana = w.node("ana").unwrap();
    let bob = w.join("bob", server, Some("trio"), cfg());
    let cy = w.join("cy", server, Some("trio"), cfg());
    // Cy's machine goes its own way after frame 119 (its checksums say so).
    w.diverge(cy, 119);
    finish_some_in_sync(&mut w, &[ana, bob, cy], 120 * SEC);
    let gone = slot(&w, cy).unwrap();
    let desyncs: Vec<(PeerId, Option<PeerId>)> = w
        .server_events
        .iter()
        .filter_map(|e| match e {
            ServeEvent::Room {
                event: EndpointEvent::Desync { slot, source, .. },
                ..
            } => Some((*slot, *source)),
            _ => None,
        })
        .collect();
    // Only cy was judged out of sync (two against one), and the state came from a player
    // of the majority: the lowest slot that agrees, the creator's.
    assert!(!desyncs.is_empty(), "{:?}", w.server_events);
    assert!(desyncs.iter().all(|(slot, _)| *slot == gone), "{desyncs:?}");
    assert_eq!(desyncs[0].1, Some(PeerId(0)), "{desyncs:?}");
    assert!(w
        .server_events
        .iter()
        .any(|e| matches!(e, ServeEvent::Room {
            event: EndpointEvent::Resynced { slot, .. },
            ..
        } if *slot == Slot::Player(gone))));
    // Only cy loaded a state besides its start state and its own states reloaded before
    // each checksum (the same frames on every peer).
    let loads = |n: usize| w.nodes[n].toy.loads;
    assert_eq!(loads(ana), loads(bob));
    assert!(loads(cy) > loads(ana), "{} {}", loads(cy), loads(ana));
    w.assert_logs_verify();
}

#[test]
fn a_room_takes_its_creators_mode_or_else_the_servers() {
    let mut w = World::new(LOSSY, 600);
    let mut scfg = ServeConfig {
        entropy: [9; 32],
        ..ServeConfig::default()
    };
    scfg.lockstep.mode = Mode::Optimistic;
    let server = w.serve_with(scfg);
    let strict = RoomSpec {
        mode: Some(Mode::Strict),
        ..spec("fair", 2)
    };
    w.open_room_as("ana", strict, cfg());
    w.open_room_as("cy", spec("quick", 2), cfg());
    assert!(w.run_until(30 * SEC, |w| w.node("ana").is_some()
        && w.node("cy").is_some()));
    let (ana, cy) = (w.node("ana").unwrap(), w.node("cy").unwrap());
    let bob = w.join("bob", server, Some("fair"), cfg());
    let dan = w.join("dan", server, Some("quick"), cfg());
    finish_some_in_sync(&mut w, &[ana, bob], 60 * SEC);
    finish_some_in_sync(&mut w, &[cy, dan], 60 * SEC);
    w.assert_logs_verify();
    let mut listed: Vec<(String, Mode)> = w
        .server
        .as_ref()
        .unwrap()
        .1
        .list(w.now())
        .into_iter()
        .map(|r| (r.name, r.mode))
        .collect();
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        listed,
        [
            ("fair".into(), Mode::Strict),
            ("quick".into(), Mode::Optimistic)
        ]
    );
    // Each joiner learnt its room's mode, and K 0 became that mode's default.
    for (j, mode) in [(bob, Mode::Strict), (dan, Mode::Optimistic)] {
        let got = w.nodes[j].events().find_map(|e| match e {
            ParticipantEvent::Ready(s) => Some((s.mode, u32::from(s.keyframe_interval))),
            _ => None,
        });
        assert_eq!(got, Some((mode, mode.default_keyframe_interval())));
    }
}

/// Issue 36, finding 4: a room's start state is unpacked, hashed and packed again off the
/// server's loop (`serve::opening`). While the worker spends 3 s on it (a maximal state on
/// a slow machine), a room already playing keeps its frame pace, and the new room opens
/// only when its check is done.
#[test]
fn a_start_state_being_checked_stalls_no_other_room() {
    let mut w = World::new("delay=10ms", 3000);
    let server = w.serve();
    w.open_room("ana", "play", 2, cfg());
    assert!(w.run_until(30 * SEC, |w| w.node("ana").is_some()));
    let ana = w.node("ana").unwrap();
    let bob = w.join("bob", server, Some("play"), cfg());
    assert!(w.run_until(30 * SEC, |w| w.frame(ana) >= 120 && w.frame(bob) >= 120));
    w.job_time = 3 * SEC;
    let (t0, f0) = (w.now(), [w.frame(ana), w.frame(bob)]);
    w.open_room("cy", "big", 2, cfg());
    assert!(w.run_until(10 * SEC, |w| w.node("cy").is_some()));
    let took = w.now() - t0;
    assert!(
        took >= 3 * SEC,
        "room big opened {took:?} after its Open: before its check was done"
    );
    let listed: Vec<String> = w
        .server
        .as_ref()
        .unwrap()
        .1
        .list(w.now())
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(listed, ["big", "play"]);
    // 60 frames a second throughout, less a few for the frames in flight.
    let want = (took.as_secs_f64() * 60.0) as u32 - 10;
    for (i, f) in [ana, bob].into_iter().zip(f0) {
        let played = w.frame(i) - f;
        assert!(
            played >= want,
            "{played} frames in {took:?}, {want} expected"
        );
    }
}
