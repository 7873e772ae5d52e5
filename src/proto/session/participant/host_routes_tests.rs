//! A hosted room's host and one joiner, with the test as the server between them (it
//! relays and introduces by hand), for what the routes do with datagrams straight from
//! addresses nobody named.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::{Participant, ParticipantConfig, ParticipantEvent};
use crate::lockstep::{self, PeerId};
use crate::session::direct::{PathEvent, PathKind};
use crate::session::host::TRIALS_PER_SECOND;
use crate::session::msg::{Msg, PathMsg, RoomMsg, PATH_TOKEN_LEN};
use crate::session::testkit::info;
use crate::session::{Endpoint, EndpointConfig, HostConfig, JoinConfig};
use crate::wire::keys::{tags_checked, Keys, Side, TAG_LEN};
use crate::wire::{Header, Kind};

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

struct Room {
    now: Instant,
    server: SocketAddr,
    host_at: SocketAddr,
    /// The joiner as the server names it.
    joiner_at: SocketAddr,
    /// Where the joiner's direct datagrams come from (its router maps per destination).
    joiner_direct: SocketAddr,
    host: Participant,
    joiner: Participant,
    /// Start-state chunks the server relayed to the joiner.
    relayed_chunks: u32,
    /// The server's keys with the host (the room's secret).
    keys: Keys,
}

const ROOM_KEY: [u8; 32] = [0x2a; 32];

impl Room {
    fn new() -> Room {
        let now = Instant::now();
        let server = addr("198.51.100.1:7000");
        let mut host = HostConfig::new(0x5eed, [1; 32], 60.0);
        // A seat stays free: the lobby waits, and no game with frame loops to feed starts.
        host.max_players = 3;
        host.hosted_room = Some("den".into());
        let lcfg = lockstep::Config {
            players: 3,
            ..lockstep::Config::default()
        };
        let ecfg = EndpointConfig {
            host,
            lockstep: lcfg.clone(),
            lobby_timeout: None,
        };
        let endpoint = Endpoint::new(now, ecfg, info("ana"), vec![7; 4096], Vec::new()).unwrap();
        let pcfg = ParticipantConfig::default();
        let host = Participant::host_room(now, endpoint, lcfg, pcfg.clone(), server, &ROOM_KEY);
        let mut j = JoinConfig::new(server, info("bob"));
        j.entropy = [2; 32];
        j.room = "den".into();
        let joiner = Participant::join(now, j, lockstep::Config::default(), pcfg);
        Room {
            now,
            server,
            host_at: addr("192.0.2.1:5000"),
            joiner_at: addr("203.0.113.5:4000"),
            joiner_direct: addr("203.0.113.5:4999"),
            host,
            joiner,
            relayed_chunks: 0,
            keys: Keys::for_room(&ROOM_KEY, Side::Host),
        }
    }

    /// One millisecond: timers, then every datagram either side sends, relayed by the
    /// server or straight to the other.
    fn step(&mut self) {
        self.now += Duration::from_millis(1);
        let now = self.now;
        for p in [&mut self.host, &mut self.joiner] {
            if p.poll_timeout().is_some_and(|t| t <= now) {
                p.handle_timeout(now);
            }
        }
        while let Some(t) = self.host.poll_transmit(now) {
            if t.to == self.joiner_direct {
                self.joiner.handle_datagram(now, self.host_at, &t.bytes);
            } else if let Some(Ok((_, Msg::Room(RoomMsg::Forward { peer, datagram })))) =
                self.keys.open(&t.bytes).map(Msg::decode)
            {
                assert_eq!(peer, self.joiner_at);
                if Header::parse(datagram).is_ok_and(|(h, _)| h.kind == Kind::StateChunk) {
                    self.relayed_chunks += 1;
                }
                self.joiner.handle_datagram(now, self.server, datagram);
            }
        }
        while let Some(t) = self.joiner.poll_transmit(now) {
            if t.to == self.host_at {
                self.host.handle_datagram(now, self.joiner_direct, &t.bytes);
            } else if Header::parse(&t.bytes).is_ok_and(|(h, _)| h.kind != Kind::Room) {
                let forward = RoomMsg::Forward {
                    peer: self.joiner_at,
                    datagram: &t.bytes,
                };
                let mut bytes = Msg::Room(forward).encode(0);
                self.keys.seal(&mut bytes);
                self.host.handle_datagram(now, self.server, &bytes);
            }
        }
    }

    fn introduce(&mut self, to_host: bool) {
        let (p, peer) = if to_host {
            (&mut self.host, self.joiner_at)
        } else {
            (&mut self.joiner, self.host_at)
        };
        let msg = RoomMsg::Introduce {
            peer,
            locals: Vec::new(),
            wait_ms: 0,
        };
        let mut bytes = Msg::Room(msg).encode(0);
        if to_host {
            self.keys.seal(&mut bytes);
        }
        p.handle_datagram(self.now, self.server, &bytes);
    }
}

#[test]
fn a_flood_of_forged_punches_costs_one_budget_of_tag_checks_and_a_real_punch_gets_through() {
    let mut room = Room::new();
    for _ in 0..2000 {
        room.step();
    }
    let ready = std::iter::from_fn(|| room.joiner.poll_event())
        .any(|e| matches!(e, ParticipantEvent::Ready(_)));
    assert!(ready, "the joiner has the start state through the relay");
    // The server introduces the joiner to the host; the joiner's punches are late, and a
    // flood comes first: forged punches from ever new addresses, five a millisecond, while
    // nothing else arrives.
    room.introduce(true);
    let session = room.host.endpoint().unwrap().session_id();
    let mut forged = Msg::Path(PathMsg::Punch([9; PATH_TOKEN_LEN])).encode(session);
    forged.extend_from_slice(&[0; TAG_LEN]);
    let mut checked = Vec::new();
    for second in 0..2u32 {
        let before = tags_checked();
        for ms in 0..1000u32 {
            room.now += Duration::from_millis(1);
            for k in 0..5u32 {
                let n = (second * 1000 + ms) * 5 + k;
                let from = SocketAddr::from(([10, 9, (n >> 8) as u8, n as u8], 1024 + k as u16));
                room.host.handle_datagram(room.now, from, &forged);
            }
            while room.host.poll_transmit(room.now).is_some() {}
        }
        checked.push(tags_checked() - before);
    }
    eprintln!("tags checked in each second of a flood of 5000 a second: {checked:?}");
    for n in &checked {
        assert!(
            (1..=u64::from(TRIALS_PER_SECOND)).contains(n),
            "{n} tags checked in a second"
        );
    }
    // The flood stops; the joiner is introduced and punches, from a port its router mapped
    // for the host alone (an address the host was never told).
    room.introduce(false);
    let direct = (0..1000).any(|_| {
        room.step();
        room.host.paths() == vec![(Some(PeerId(1)), PathKind::Direct)]
    });
    assert!(direct, "the host's path to the joiner went direct");
    let to = std::iter::from_fn(|| room.host.poll_event()).find_map(|e| match e {
        ParticipantEvent::Path {
            event: PathEvent::Direct { addr, .. },
            ..
        } => Some(addr),
        _ => None,
    });
    assert_eq!(to, Some(room.joiner_direct));
}

#[test]
fn the_start_state_waits_for_the_first_direct_attempt_and_a_player_who_left_keeps_its_path() {
    let mut room = Room::new();
    // The joiner's Hello reaches the host through the server, which introduces the two
    // before the transfer begins.
    room.step();
    room.introduce(true);
    room.introduce(false);
    let ready = (0..3000).any(|_| {
        room.step();
        std::iter::from_fn(|| room.joiner.poll_event())
            .any(|e| matches!(e, ParticipantEvent::Ready(_)))
    });
    assert!(ready, "the joiner has the start state");
    assert_eq!(room.host.paths(), vec![(Some(PeerId(1)), PathKind::Direct)]);
    assert_eq!(
        room.relayed_chunks, 0,
        "start-state chunks crossed the server"
    );
    // The joiner leaves; its direct path goes silent, and the host still says how that
    // player was reached.
    room.joiner.close("bye");
    for _ in 0..3000 {
        room.step();
    }
    let players = room.host.endpoint().unwrap().players();
    assert!(players.iter().all(|p| p.slot.number() != 1), "{players:?}");
    assert_eq!(room.host.paths(), vec![(Some(PeerId(1)), PathKind::Direct)]);
}
