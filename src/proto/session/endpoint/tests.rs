//! Session endpoints, their joiners and lockstep clients over a simulated lossy network on
//! simulated time: the lobby, the start, the game, a silent player, a desync's recovery,
//! and many rooms at once, without sockets, in milliseconds of real time.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::*;
use crate::input::Pad;
use crate::lockstep::{self, Client, PeerId};
use crate::net::sim::{SimNet, Simulation};
use crate::session::msg::Msg;
use crate::session::testkit::{info, Game};
use crate::session::{JoinConfig, JoinEvent, JoinSession, ResyncRecv, SessionLeftReason};
use crate::wire::{Transmit, HEADER_LEN};
use rand::{rngs::SmallRng, Rng, RngCore, SeedableRng};

/// A remote player: the joiner's handshake, then its lockstep client.
struct Joiner {
    addr: SocketAddr,
    room: usize,
    join: JoinSession,
    game: Option<Game>,
    resync: ResyncRecv,
    /// Resync states received, as (frame, state).
    states: Vec<(u32, Vec<u8>)>,
    events: Vec<JoinEvent>,
    /// Sends nothing from this time on (a crashed process).
    dead_at: Option<Instant>,
    seed: u64,
}

struct Room {
    addr: SocketAddr,
    endpoint: Endpoint,
    local: Option<Game>,
    events: Vec<EndpointEvent>,
}

struct Net {
    now: Instant,
    start: Instant,
    rooms: Vec<Room>,
    joiners: Vec<Joiner>,
    net: SimNet,
    /// Frames every game runs before it stops asking for more.
    limit: usize,
    /// Every datagram delivered, as (from, to, bytes), while `Some`.
    tap: Option<Vec<(SocketAddr, SocketAddr, Vec<u8>)>>,
}

fn room_addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 7845))
}

fn joiner_addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 1, (i >> 8) as u8, i as u8], 40000))
}

fn endpoint_config(players: u8, local: bool, seed: u64) -> EndpointConfig {
    let mut host = HostConfig::new(seed as u32 | 1, [seed as u8; 32], 60.0);
    host.max_players = players;
    host.host_is_player = local;
    EndpointConfig {
        host,
        lockstep: lockstep::Config::default(),
        lobby_timeout: None,
    }
}

impl Net {
    fn new(netsim: &str, limit: usize) -> Net {
        let now = Instant::now();
        Net {
            now,
            start: now,
            rooms: Vec::new(),
            joiners: Vec::new(),
            net: SimNet::new(netsim),
            limit,
            tap: None,
        }
    }

    /// A room with `players` slots; with `local`, slot 0 is the endpoint's own player.
    fn room(&mut self, players: u8, local: bool) -> usize {
        let i = self.rooms.len();
        let cfg = endpoint_config(players, local, 1000 + i as u64);
        let state = vec![i as u8; 3000];
        let endpoint = Endpoint::new(self.now, cfg, info("host"), state, vec![]).unwrap();
        self.rooms.push(Room {
            addr: room_addr(i),
            endpoint,
            local: None,
            events: Vec::new(),
        });
        i
    }

    fn join(&mut self, room: usize, name: &str) -> usize {
        self.join_with_key(room, name, [0; crate::session::msg::SEAT_KEY_LEN])
    }

    /// A joiner that shows `seat_key` (a reconnect: the key its Welcome gave it).
    fn join_with_key(
        &mut self,
        room: usize,
        name: &str,
        seat_key: [u8; crate::session::msg::SEAT_KEY_LEN],
    ) -> usize {
        let i = self.joiners.len();
        let mut cfg = JoinConfig::new(room_addr(room), info(name));
        cfg.seat_key = seat_key;
        self.joiners.push(Joiner {
            addr: joiner_addr(i),
            room,
            join: JoinSession::new(self.now, cfg),
            game: None,
            resync: ResyncRecv::default(),
            states: Vec::new(),
            events: Vec::new(),
            dead_at: None,
            seed: 7 + i as u64,
        });
        i
    }

    /// Hands `bytes` to whoever listens at `to` now (as it arrived, or forged).
    fn handle(&mut self, from: SocketAddr, to: SocketAddr, bytes: &[u8]) {
        let now = self.now;
        if let Some(room) = self.rooms.iter_mut().find(|r| r.addr == to) {
            room.endpoint.handle_datagram(now, from, bytes);
        } else if let Some(j) = self.joiners.iter_mut().find(|j| j.addr == to) {
            if j.dead_at.is_some_and(|t| now >= t) || from != room_addr(j.room) {
                return;
            }
            let Some(bytes) = j.join.open(bytes) else {
                j.join.note_unauthentic();
                return;
            };
            let is_resync = bytes.len() > 3 && bytes[..2] == *b"FL" && bytes[3] == 0x08;
            if is_resync {
                let _ = j.resync.handle_datagram(now, &bytes[HEADER_LEN..]);
                if let Some(state) = j.resync.poll_state() {
                    j.states.push(state);
                }
            } else if is_session_datagram(bytes) {
                let _ = j.join.handle_opened(now, from, bytes);
            } else if let Some(game) = &mut j.game {
                game.client.handle_datagram(now, bytes);
            }
        }
    }

    fn step_room(&mut self, r: usize, out: &mut Vec<(SocketAddr, Transmit)>) {
        let now = self.now;
        let limit = self.limit;
        let room = &mut self.rooms[r];
        room.endpoint.handle_timeout(now);
        if let Some(game) = &mut room.local {
            game.timers(now);
            game.tick(now, limit);
        }
        for _ in 0..4 {
            let mut moved = false;
            if let Some(game) = &mut room.local {
                while let Some(Transmit { bytes, .. }) = game.client.poll_transmit(now) {
                    room.endpoint.handle_local(now, &bytes);
                    moved = true;
                }
                while let Some(bytes) = room.endpoint.poll_local(now) {
                    game.client.handle_datagram(now, &bytes);
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        while let Some(t) = room.endpoint.poll_transmit(now) {
            out.push((room.addr, t));
        }
        while let Some(ev) = room.endpoint.poll_event() {
            if let EndpointEvent::Started { .. } = ev {
                if room.endpoint.local().is_some() {
                    let cfg = lockstep::Config {
                        send_budget: 0,
                        udp_ip_header: 0,
                        players: room.endpoint.players().len() as u8,
                        session: room.endpoint.session_id(),
                        ..lockstep::Config::default()
                    };
                    room.local = Some(Game::new(now, cfg, PeerId(0), 99 + r as u64));
                }
            }
            room.events.push(ev);
        }
    }

    fn step_joiner(&mut self, k: usize, out: &mut Vec<(SocketAddr, Transmit)>) {
        let now = self.now;
        let limit = self.limit;
        let j = &mut self.joiners[k];
        if j.dead_at.is_some_and(|t| now >= t) {
            return;
        }
        let from = j.addr;
        j.join.handle_timeout(now);
        while let Some(ev) = j.join.poll_event() {
            if let JoinEvent::Ready(start) = &ev {
                let cfg = start.lockstep(lockstep::Config::default());
                j.game = Some(Game::new(now, cfg, start.slot.expect("a seat"), j.seed));
            }
            j.events.push(ev);
        }
        let to = room_addr(j.room);
        if let Some(game) = &mut j.game {
            game.timers(now);
            game.tick(now, limit);
            let mut first = false;
            while let Some(Transmit { mut bytes, .. }) = game.client.poll_transmit(now) {
                first = true;
                j.join.seal(&mut bytes);
                out.push((from, Transmit::new(to, bytes)));
            }
            if first {
                j.join.end_loading();
            }
        }
        while let Some(t) = j.join.poll_transmit(now) {
            out.push((from, t));
        }
        let id = j.join.session_id();
        while let Some(Transmit { mut bytes, .. }) = j.resync.poll_transmit(now, id) {
            j.join.seal(&mut bytes);
            out.push((from, Transmit::new(to, bytes)));
        }
    }

    /// Every game of `room` that is still in (not dead) ran `limit` frames.
    fn finished(&self, room: usize) -> bool {
        let local = self.rooms[room]
            .local
            .as_ref()
            .is_none_or(|g| g.frames.len() >= self.limit);
        local
            && self
                .joiners
                .iter()
                .filter(|j| j.room == room && j.dead_at.is_none())
                .all(|j| {
                    j.game
                        .as_ref()
                        .is_some_and(|g| g.frames.len() >= self.limit)
                })
    }

    /// The frames every live game of `room` ran: all the same, in order.
    fn assert_in_sync(&self, room: usize) {
        let mut games: Vec<(String, &Game)> = Vec::new();
        if let Some(g) = &self.rooms[room].local {
            games.push(("local".into(), g));
        }
        for j in self
            .joiners
            .iter()
            .filter(|j| j.room == room && j.dead_at.is_none())
        {
            games.push((j.addr.to_string(), j.game.as_ref().expect("joiner plays")));
        }
        let (first, reference) = &games[0];
        for (name, g) in &games[1..] {
            let n = g.frames.len().min(reference.frames.len());
            assert!(n > 0, "{name} ran no frame");
            for f in 0..n {
                assert_eq!(
                    g.frames[f], reference.frames[f],
                    "room {room}: frame {f} differs between {first} and {name}"
                );
            }
        }
    }
}

impl Simulation for Net {
    fn net_and_clock(&mut self) -> (&mut SimNet, &mut Instant, Instant) {
        (&mut self.net, &mut self.now, self.start)
    }

    fn deliver(&mut self, from: SocketAddr, to: SocketAddr, bytes: &[u8]) {
        self.handle(from, to, bytes);
        if let Some(tap) = &mut self.tap {
            tap.push((from, to, bytes.to_vec()));
        }
    }

    fn step(&mut self) -> Vec<(SocketAddr, Transmit)> {
        let mut out = Vec::new();
        for r in 0..self.rooms.len() {
            self.step_room(r, &mut out);
        }
        for k in 0..self.joiners.len() {
            self.step_joiner(k, &mut out);
        }
        out
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let rooms = self.rooms.iter().flat_map(|r| {
            [
                r.endpoint.poll_timeout(),
                r.local.as_ref().map(|g| g.next_tick),
                r.local.as_ref().and_then(|g| g.client.poll_timeout()),
            ]
        });
        let joiners = self.joiners.iter().flat_map(|j| {
            [
                j.join.poll_timeout(),
                j.resync.poll_timeout(),
                j.game.as_ref().map(|g| g.next_tick),
                j.game.as_ref().and_then(|g| g.client.poll_timeout()),
            ]
        });
        rooms.chain(joiners).flatten().min()
    }
}

const LOSSY: &str = "delay=30ms,jitter=8ms,loss=10%,dup=1%,reorder=1%";

#[test]
fn a_host_and_three_joiners_start_together_and_stay_in_sync_over_a_lossy_link() {
    let mut net = Net::new(LOSSY, 600);
    let room = net.room(4, true);
    for name in ["ana", "bob", "cy"] {
        net.join(room, name);
    }
    assert!(net.run_until(Duration::from_secs(60), |n| n.finished(room)));
    net.assert_in_sync(room);
    let events = &net.rooms[room].events;
    let started: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            EndpointEvent::Started { slots } => Some(slots.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        vec![vec![PeerId(0), PeerId(1), PeerId(2), PeerId(3)]],
        "{events:?}"
    );
    // Each joiner was told when it had the start state, counting up to all four.
    let ready: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            EndpointEvent::Ready { ready, want: 4, .. } => Some(*ready),
            _ => None,
        })
        .collect();
    assert_eq!(ready, vec![2, 3, 4]);
    assert!(net.rooms[room].endpoint.game_started());
    let stats = net.rooms[room].endpoint.server_stats().unwrap();
    assert_eq!(stats.peers.len(), 4);
}

#[test]
fn a_dedicated_endpoint_serves_players_in_every_slot() {
    let mut net = Net::new(LOSSY, 400);
    let room = net.room(2, false);
    let a = net.join(room, "ana");
    let b = net.join(room, "bob");
    assert!(net.run_until(Duration::from_secs(60), |n| n.finished(room)));
    net.assert_in_sync(room);
    // Slots go by arrival: either may be first.
    let slot = |k: usize| net.joiners[k].game.as_ref().unwrap().client.me().0;
    let mut slots = [slot(a), slot(b)];
    slots.sort();
    assert_eq!(slots, [0, 1]);
    assert!(net.rooms[room].local.is_none());
}

#[test]
fn a_silent_player_is_dropped_told_and_the_others_play_on() {
    let mut net = Net::new(LOSSY, 900);
    let room = net.room(3, true);
    net.join(room, "ana");
    let bob = net.join(room, "bob");
    assert!(net.run_until(Duration::from_secs(60), |n| {
        n.joiners[bob]
            .game
            .as_ref()
            .is_some_and(|g| g.frames.len() >= 200)
    }));
    let died = net.now;
    net.joiners[bob].dead_at = Some(died);
    let gone = net.joiners[bob].game.as_ref().unwrap().client.me().0;
    assert!(net.run_until(Duration::from_secs(120), |n| n.finished(room)));
    net.assert_in_sync(room);
    let events = &net.rooms[room].events;
    let silent = events.iter().position(|e| {
        matches!(e, EndpointEvent::PlayerSilent { slot, silent_for }
            if slot.0 == gone && *silent_for >= Duration::from_millis(500))
    });
    let out = events.iter().position(|e| {
        matches!(e, EndpointEvent::PlayerOut { slot, reason: PlayerOutReason::TimedOut, .. }
            if slot.0 == gone)
    });
    assert!(
        silent.is_some() && out.is_some() && silent < out,
        "{events:?}"
    );
    // The server told the survivors, who apply bob's neutral input from the same frame.
    let ana = net.joiners[0].game.as_ref().unwrap();
    let last = ana.frames.last().unwrap();
    assert_eq!(last[usize::from(gone)], Pad::NEUTRAL);
    // Its seat is free, and the session layer was told (it told bob it was dropped: bob
    // may come back).
    let kicked = events.iter().any(|e| {
        matches!(e, EndpointEvent::Left { slot, reason: SessionLeftReason::Dropped(_) } if slot.0 == gone)
    });
    assert!(kicked, "{events:?}");
    assert!(net.rooms[room]
        .endpoint
        .players()
        .iter()
        .all(|p| p.slot.number() != gone));
}

#[test]
fn a_desync_asks_for_one_state_and_the_player_gets_it() {
    let mut net = Net::new(LOSSY, 600);
    let room = net.room(2, true);
    let ana = net.join(room, "ana");
    assert!(net.run_until(Duration::from_secs(60), |n| {
        n.joiners[ana].game.is_some()
    }));
    net.joiners[ana].game.as_mut().unwrap().diverge_at = Some(119);
    let asked = |n: &Net| {
        n.rooms[room].events.iter().any(|e| {
            matches!(
                e,
                EndpointEvent::Desync {
                    slot: PeerId(1),
                    send_state: true,
                    ..
                }
            )
        })
    };
    assert!(net.run_until(Duration::from_secs(60), asked));
    // Later reports of the same player wait for that state instead of asking again.
    let more = |n: &Net| {
        n.rooms[room]
            .events
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    EndpointEvent::Desync {
                        slot: PeerId(1),
                        ..
                    }
                )
            })
            .count()
            >= 2
    };
    assert!(net.run_until(Duration::from_secs(60), more));
    let asks = net.rooms[room]
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                EndpointEvent::Desync {
                    send_state: true,
                    ..
                }
            )
        })
        .count();
    assert_eq!(asks, 1);
    let state: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let now = net.now;
    net.rooms[room].endpoint.handle_state(
        now,
        Frame(240),
        state.clone(),
        &[Slot::Player(PeerId(1))],
    );
    let resynced = |n: &Net| {
        n.rooms[room].events.iter().any(|e| {
            matches!(
                e,
                EndpointEvent::Resynced {
                    slot: Slot::Player(PeerId(1)),
                    frame: Frame(240)
                }
            )
        })
    };
    assert!(net.run_until(Duration::from_secs(60), resynced));
    assert_eq!(net.joiners[ana].states, vec![(240, state)]);
}

#[test]
fn a_hundred_rooms_run_side_by_side_each_in_sync() {
    let mut net = Net::new("delay=20ms,jitter=4ms,loss=3%", 300);
    let rooms: Vec<usize> = (0..100).map(|i| net.room(2, i % 2 == 0)).collect();
    for &r in &rooms {
        let seats = if r % 2 == 0 { 1 } else { 2 };
        for s in 0..seats {
            net.join(r, &format!("p{r}-{s}"));
        }
    }
    assert!(net.run_until(Duration::from_secs(120), |n| {
        rooms.iter().all(|&r| n.finished(r))
    }));
    for &r in &rooms {
        net.assert_in_sync(r);
        // Nothing of one room reached another: every room's games saw only its own session.
        let id = net.rooms[r].endpoint.session_id();
        for j in net.joiners.iter().filter(|j| j.room == r) {
            assert_eq!(j.join.session_id(), id);
        }
    }
}

#[test]
fn strays_and_other_sessions_are_counted_and_change_nothing() {
    let mut net = Net::new("delay=10ms", 200);
    let room = net.room(2, true);
    let other = net.room(2, true);
    net.join(room, "ana");
    net.join(other, "bob");
    assert!(net.run_until(Duration::from_secs(30), |n| {
        n.finished(room) && n.finished(other)
    }));
    let now = net.now;
    // bob's CTRL, replayed into ana's room from bob's address and from ana's.
    let ana_addr = net.joiners[0].addr;
    let bob_addr = net.joiners[1].addr;
    let mut bob_client = Client::new(
        now,
        lockstep::Config {
            session: net.rooms[other].endpoint.session_id(),
            ..lockstep::Config::default()
        },
        PeerId(1),
    )
    .unwrap();
    bob_client.push_local_input(now, Pad(0x0f0f));
    let ctrl = bob_client.poll_transmit(now).unwrap().bytes;
    let before = net.rooms[room].endpoint.stats().dropped_invalid;
    let server_before = net.rooms[room]
        .endpoint
        .server_stats()
        .unwrap()
        .traffic
        .packets_dropped_invalid;
    let ep = &mut net.rooms[room].endpoint;
    ep.handle_datagram(now, bob_addr, &ctrl);
    ep.handle_datagram(now, ana_addr, &ctrl);
    ep.handle_datagram(now, bob_addr, b"garbage");
    ep.handle_datagram(now, bob_addr, &[]);
    let after = ep.stats().dropped_invalid;
    let server_after = ep.server_stats().unwrap().traffic.packets_dropped_invalid;
    // From an address not in the room: the router; from ana's: its tag is not ana's, so
    // nothing reads it.
    assert_eq!(after - before, 3);
    assert_eq!(server_after - server_before, 0);
    assert_eq!(ep.stats().dropped_auth, 1);
}

#[test]
fn a_lobby_that_does_not_fill_expires() {
    let mut net = Net::new("delay=10ms", 10);
    let room = net.room(3, true);
    net.rooms[room].endpoint = {
        let mut cfg = endpoint_config(3, true, 5);
        cfg.lobby_timeout = Some(Duration::from_secs(3));
        Endpoint::new(net.now, cfg, info("host"), vec![1; 100], vec![]).unwrap()
    };
    net.join(room, "ana");
    let expired = |n: &Net| {
        n.rooms[room]
            .events
            .iter()
            .any(|e| matches!(e, EndpointEvent::LobbyExpired { ready: 2, want: 3 }))
    };
    assert!(net.run_until(Duration::from_secs(10), expired));
    assert!(net.now - net.start >= Duration::from_secs(3));
    assert!(!net.rooms[room].endpoint.game_started());
}

/// Runs a host with its own player and one joiner for 600 frames; with `forge`, every 50 ms
/// of the game someone on the path sends each side copies of what it just received (bit
/// flipped, tag replaced, tag cut off) and a goodbye and a CTRL of its own, from the right
/// address with the right session id. Returns both players' frames and the datagrams forged.
fn play_with_forgeries(
    forge: bool,
) -> (
    Vec<crate::input::Inputs>,
    Vec<crate::input::Inputs>,
    u64,
    Net,
) {
    use crate::wire::keys::TAG_LEN;
    let mut net = Net::new("delay=10ms,jitter=3ms,loss=2%", 600);
    let room = net.room(2, true);
    net.join(room, "ana");
    let (host, ana) = (room_addr(room), joiner_addr(0));
    let mut rng = SmallRng::seed_from_u64(77);
    let mut forged = 0u64;
    let mut t = Duration::ZERO;
    while !net.finished(room) && t < Duration::from_secs(60) {
        t += Duration::from_millis(50);
        net.run_until(t, |_| false);
        let running = net.rooms[room].endpoint.game_started() && net.joiners[0].game.is_some();
        if !running {
            continue;
        }
        net.tap = Some(net.tap.take().unwrap_or_default());
        if !forge {
            continue;
        }
        let session = net.rooms[room].endpoint.session_id();
        let seen = net.tap.replace(Vec::new()).unwrap_or_default();
        let mut fakes: Vec<(SocketAddr, SocketAddr, Vec<u8>)> = Vec::new();
        for (from, to, bytes) in seen.into_iter().rev().take(6) {
            let mut flipped = bytes.clone();
            let bit = rng.gen_range(0..flipped.len() * 8);
            flipped[bit / 8] ^= 1 << (bit % 8);
            let mut retagged = bytes.clone();
            let n = retagged.len();
            rng.fill_bytes(&mut retagged[n - TAG_LEN..]);
            let untagged = bytes[..bytes.len() - TAG_LEN].to_vec();
            fakes.extend([flipped, retagged, untagged].map(|b| (from, to, b)));
        }
        let mut bye = Msg::Bye("forged: the host quit".into()).encode(session);
        bye.extend_from_slice(&[0xa5; TAG_LEN]);
        fakes.push((host, ana, bye));
        let mut liar = Client::new(
            net.now,
            lockstep::Config {
                session,
                ..lockstep::Config::default()
            },
            PeerId(1),
        )
        .unwrap();
        liar.push_local_input(net.now, Pad(0x0ff0));
        let ctrl = liar.poll_transmit(net.now).unwrap().bytes;
        fakes.push((ana, host, ctrl));
        for (from, to, bytes) in fakes {
            net.handle(from, to, &bytes);
            forged += 1;
        }
    }
    assert!(net.finished(room), "the session did not finish");
    net.assert_in_sync(room);
    let local = net.rooms[room].local.as_ref().unwrap().frames.clone();
    let joiner = net.joiners[0].game.as_ref().unwrap().frames.clone();
    (local, joiner, forged, net)
}

#[test]
fn forged_datagrams_from_the_right_address_with_the_right_session_change_nothing() {
    let (local, joiner, none, _) = play_with_forgeries(false);
    assert_eq!(none, 0);
    let (forged_local, forged_joiner, forged, net) = play_with_forgeries(true);
    assert!(forged > 500, "only {forged} forged");
    // Every player applied the same inputs on the same frames as without the forger.
    assert_eq!(forged_local, local);
    assert_eq!(forged_joiner, joiner);
    // And every forged datagram was dropped for its tag, on the side it was sent to.
    let host_side = net.rooms[0].endpoint.stats().dropped_auth;
    let joiner_side = net.joiners[0].join.stats().dropped_auth;
    assert_eq!(host_side + joiner_side, forged);
    assert!(
        host_side > 0 && joiner_side > 0,
        "{host_side} {joiner_side}"
    );
    assert!(net.joiners[0]
        .events
        .iter()
        .all(|e| !matches!(e, JoinEvent::Failed(_))));
}

/// Issue 36, finding 7: a Hello with a playing player's name from another port of its IP (a
/// shared NAT) does not take its seat while it still talks; once it is silent (it crashed),
/// its own `join` again takes the seat back.
#[test]
fn a_name_alone_never_replaces_a_player_who_still_talks() {
    let mut net = Net::new("delay=10ms", 2000);
    let room = net.room(3, true);
    net.join(room, "ana");
    let bob = net.join(room, "bob");
    assert!(net.run_until(Duration::from_secs(60), |n| {
        n.joiners[bob]
            .game
            .as_ref()
            .is_some_and(|g| g.frames.len() >= 200)
    }));
    let bob_ip = net.joiners[bob].addr.ip();
    let slot = net.joiners[bob].game.as_ref().unwrap().client.me().0;
    let impostor = net.join(room, "bob");
    net.joiners[impostor].addr = SocketAddr::new(bob_ip, 40001);
    let frames = net.joiners[bob].game.as_ref().unwrap().frames.len();
    let until = net.now + Duration::from_secs(8);
    net.run_until(Duration::from_secs(60), |n| n.now >= until);
    let replaced = net.rooms[room].events.iter().any(|e| {
        matches!(e, EndpointEvent::Left { slot: s, .. } if s.0 == slot)
            || matches!(e, EndpointEvent::PlayerOut { slot: s, .. } if s.0 == slot)
    });
    assert!(!replaced, "{:?}", net.rooms[room].events);
    assert!(
        !net.joiners[impostor]
            .events
            .iter()
            .any(|e| matches!(e, JoinEvent::Welcomed { .. })),
        "the impostor was welcomed"
    );
    let played = net.joiners[bob].game.as_ref().unwrap().frames.len() - frames;
    assert!(played >= 300, "bob played {played} frames on");

    // Bob's link dies and it comes back at once from a new port, showing its seat's key
    // (a reconnect): once its seat has been silent a second, it is its own again. A
    // "bob" showing no key meanwhile gets another seat, never bob's.
    let crashed = net.now;
    net.joiners[bob].dead_at = Some(crashed);
    let key = net.joiners[bob].join.seat_key();
    assert_ne!(key, [0; crate::session::msg::SEAT_KEY_LEN]);
    let stranger = net.join(room, "bob");
    net.joiners[stranger].addr = SocketAddr::new(bob_ip, 40003);
    let back = net.join_with_key(room, "bob", key);
    let back_addr = SocketAddr::new(bob_ip, 40002);
    net.joiners[back].addr = back_addr;
    let taken = |n: &Net| {
        n.rooms[room].events.iter().any(
            |e| matches!(e, EndpointEvent::Admitted { slot: s, addr, .. } if s.number() == slot && *addr == back_addr),
        )
    };
    assert!(net.run_until(Duration::from_secs(30), taken));
    let took = net.now - crashed;
    assert!(
        took >= super::super::host::TAKEOVER_SILENCE && took < Duration::from_secs(2),
        "taken over after {took:?}"
    );
    let stranger_at = SocketAddr::new(bob_ip, 40003);
    assert!(
        !net.rooms[room].events.iter().any(
            |e| matches!(e, EndpointEvent::Admitted { slot: s, addr, .. } if s.number() == slot && *addr == stranger_at)
        ),
        "a name alone took a kept seat"
    );
}
