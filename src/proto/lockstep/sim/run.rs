//! [`Sim`]: one run of a lockstep server and its players on the simulated network, and how
//! each step delivers what is due and moves the clock on.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::input::{Inputs, Pad};
use crate::lockstep::paced::{DisplaySlot, Paced};
use crate::lockstep::{
    Client, Config, Frame, PeerId, Server, ServerEvent, Slot, SpectatorId, Traffic,
};
use crate::net::sim::{SimNet, Simulation};
use crate::wire::keys::{Keys, Side};
use crate::wire::Transmit;

use super::{player_addr, Bot, PathSpec, Player, PlayerSpec, SimConfig, SERVER};

mod handover;

/// A server and its players on a simulated network.
pub struct Sim {
    rng: SmallRng,
    net: SimNet,
    /// The simulated clock (the server's), and when the run started.
    clock: Instant,
    base: Instant,
    frame: f64,
    warmup: Duration,
    stall_push_chance: f64,
    pub server: Server,
    pub players: Vec<Player>,
    pub server_events: Vec<(Duration, ServerEvent)>,
    /// (time, lead) whenever the server's lead changed.
    pub lead_log: Vec<(Duration, u32)>,
    /// The server's traffic per peer when the warm-up ended.
    pub server_traffic_at_warmup: Option<Vec<(PeerId, Traffic)>>,
    /// Largest CTRL and UPDATE sent.
    pub max_ctrl: usize,
    pub max_update: usize,
    apply_pace: bool,
    checksum_every: Option<u32>,
    corrupt_checksum: Option<(PeerId, u32)>,
    /// Late players' and spectators' seeds come from their own generator, so that watching
    /// changes nothing of the players' simulated network.
    spectator_rng: SmallRng,
    chaotic_bots: bool,
    sealed: bool,
    speculate: u32,
    /// The player whose process the server runs in, in memory (player 0, the host's,
    /// unless `dedicated`; another after a hand-over).
    local: Option<usize>,
    /// Where the server is now (another address after a hand-over).
    server_addr: SocketAddr,
    /// Each player's paths, for its links to a new server.
    specs: Vec<PlayerSpec>,
    /// The server's process was killed (until a hand-over).
    server_down: bool,
    /// Each player's link keys (host side, joiner side), made when first needed.
    keys: Vec<Option<(Keys, Keys)>>,
    /// Datagrams dropped for a wrong tag (with `sealed`).
    pub dropped_auth: u64,
}

impl Sim {
    pub fn new(cfg: SimConfig) -> Sim {
        let base = Instant::now();
        let mut rng = SmallRng::seed_from_u64(cfg.seed);
        let mut server = Server::new(base, cfg.lockstep.clone()).expect("valid config");
        let mut net = SimNet::new("");
        let mut players = Vec::new();
        for (i, spec) in cfg.players.iter().enumerate() {
            let id = PeerId(i as u8);
            server.add_peer(base, id).expect("add peer");
            let local = i == 0 && !cfg.dedicated;
            let (up, down, rate) = if local {
                (PathSpec::default(), PathSpec::default(), 1.0)
            } else {
                let a = player_addr(i);
                net.link(a, SERVER, spec.up.link(base, rng.gen()));
                net.link(SERVER, a, spec.down.link(base, rng.gen()));
                (spec.up.clone(), spec.down.clone(), spec.clock_rate)
            };
            let mut lockstep = cfg.lockstep.clone();
            if local {
                // In memory, as in `netplay`: no wire, no send budget.
                server.set_send_budget(id, 0).expect("present");
                server.set_udp_ip_header(id, 0).expect("present");
                lockstep.send_budget = 0;
                lockstep.udp_ip_header = 0;
            }
            if cfg.handshake_rtt && !local {
                let rtt = up.delay + down.delay;
                server.seed_rtt(base, id, rtt).expect("seed rtt");
            }
            players.push(Player {
                client: Client::new(base, lockstep, id).expect("valid config"),
                id,
                rate,
                base,
                bot: Bot {
                    real: crate::input::Bot::for_port(rng.gen(), i),
                    rng: SmallRng::seed_from_u64(rng.gen()),
                    pad: Pad::NEUTRAL,
                    frame: 0,
                    chaotic: cfg.chaotic_bots,
                },
                checksum: 0,
                first: 0,
                spectator: None,
                ran_at: Vec::new(),
                deepest: 0,
                ahead: Vec::new(),
                own_guess: Vec::new(),
                killed: false,
                applied: Vec::new(),
                pushed: Vec::new(),
                paced: Paced::default(),
                slot: 0,
                slots: 0,
                stalled_slots: 0,
                events: Vec::new(),
                traffic_at_warmup: None,
            });
        }
        Sim {
            rng,
            net,
            clock: base,
            base,
            frame: 1.0 / cfg.lockstep.fps,
            warmup: cfg.warmup,
            stall_push_chance: cfg.stall_push_chance,
            server,
            players,
            server_events: Vec::new(),
            lead_log: Vec::new(),
            server_traffic_at_warmup: None,
            max_ctrl: 0,
            max_update: 0,
            apply_pace: cfg.apply_pace,
            checksum_every: cfg.checksum_every,
            corrupt_checksum: cfg.corrupt_checksum,
            spectator_rng: SmallRng::seed_from_u64(cfg.seed ^ 0x5bec),
            chaotic_bots: cfg.chaotic_bots,
            sealed: cfg.sealed,
            speculate: cfg.speculate,
            local: (!cfg.dedicated).then_some(0),
            server_addr: SERVER,
            specs: cfg.players.clone(),
            server_down: false,
            keys: Vec::new(),
            dropped_auth: 0,
        }
    }

    /// The frame the host's machine (player 0) runs next: where a late stream's start state
    /// is taken.
    pub fn host_frame(&self) -> u32 {
        let host = &self.players[0];
        host.first + host.applied.len() as u32
    }

    fn new_player(&mut self, id: PeerId, spec: PlayerSpec, client: Client, first: u32) -> usize {
        let base = self.base;
        let seed = self.spectator_rng.gen();
        let bot_seed = self.spectator_rng.gen();
        let a = player_addr(self.players.len());
        let up = spec.up.link(base, self.spectator_rng.gen());
        self.net.link(a, self.server_addr, up);
        let down = spec.down.link(base, self.spectator_rng.gen());
        self.net.link(self.server_addr, a, down);
        self.specs.push(spec.clone());
        self.players.push(Player {
            client,
            id,
            rate: spec.clock_rate,
            base,
            bot: Bot {
                real: crate::input::Bot::for_port(seed, id.index()),
                rng: SmallRng::seed_from_u64(bot_seed),
                pad: Pad::NEUTRAL,
                frame: 0,
                chaotic: self.chaotic_bots,
            },
            checksum: 0,
            first,
            spectator: None,
            ran_at: Vec::new(),
            deepest: 0,
            ahead: Vec::new(),
            own_guess: Vec::new(),
            killed: false,
            applied: Vec::new(),
            pushed: Vec::new(),
            // Its scheduler starts now: display slots from the current time on.
            paced: Paced::default(),
            slot: (self.t().as_secs_f64() * spec.clock_rate / self.frame).ceil() as u64,
            slots: 0,
            stalled_slots: 0,
            events: Vec::new(),
            traffic_at_warmup: None,
        });
        self.players.len() - 1
    }

    /// A player takes slot `id` of the running game (late, or back after a drop) from the
    /// host machine's current frame; returns its index in `players`.
    pub fn add_late_player(&mut self, id: PeerId, spec: PlayerSpec, name: &str) -> usize {
        let now = self.server_now();
        let first = self.host_frame();
        self.server
            .add_late_peer(now, id, Frame(first), name)
            .expect("late peer");
        let rtt = spec.up.delay + spec.down.delay;
        self.server.seed_rtt(now, id, rtt).expect("seed rtt");
        let local = self.base + self.t().mul_f64(spec.clock_rate);
        let client = Client::new_at(local, self.remote_config(), id, Frame(first)).expect("client");
        self.new_player(id, spec, client, first)
    }

    /// A spectator with id `id` from the host machine's current frame.
    pub fn add_spectator(&mut self, id: u8, spec: PlayerSpec) -> usize {
        let now = self.server_now();
        let first = self.host_frame();
        self.server
            .add_spectator(
                now,
                SpectatorId(id),
                Frame(first),
                crate::lockstep::budget::UDP_IP_HEADER,
            )
            .expect("spectator");
        let local = self.base + self.t().mul_f64(spec.clock_rate);
        let client = Client::spectator(local, self.remote_config(), Frame(first)).expect("client");
        let i = self.new_player(PeerId(0), spec, client, first);
        self.players[i].spectator = Some(id);
        i
    }

    /// Restarts spectator `i`'s stream at the host machine's current frame, as its driver
    /// does with the fresh state it sends when the spectator fell behind.
    pub fn restart_spectator(&mut self, i: usize) {
        let now = self.server_now();
        let first = self.host_frame();
        let id = self.players[i].spectator.expect("a spectator");
        self.server
            .restart_spectator(now, SpectatorId(id), Frame(first))
            .expect("restart");
        let p = &mut self.players[i];
        assert!(p.client.skip_to(Frame(first)));
        p.first = first;
        p.applied.clear();
        p.paced.restart();
        p.ran_at.clear();
    }

    /// A remote client's config (player 0's may be the in-memory one: no budget, no header).
    fn remote_config(&self) -> Config {
        let mut cfg = self
            .players
            .iter()
            .map(|p| p.client.config().clone())
            .find(|c| c.send_budget > 0)
            .unwrap_or_else(|| self.players[0].client.config().clone());
        cfg.udp_ip_header = crate::lockstep::budget::UDP_IP_HEADER;
        cfg
    }

    pub fn now(&self) -> Duration {
        self.t()
    }

    /// Simulated time since the start.
    fn t(&self) -> Duration {
        self.clock - self.base
    }

    /// When the measured part of the run began.
    pub fn warmup(&self) -> Duration {
        self.warmup
    }

    fn server_now(&self) -> Instant {
        self.clock
    }

    /// Runs until every player still in the game emulated `frames` frames, or `limit`.
    pub fn run_frames(&mut self, frames: usize, limit: Duration) {
        let pending = |s: &Sim| (s.players.iter()).any(|p| !p.gone() && p.applied.len() < frames);
        Simulation::run_until(self, limit, |s| !pending(s));
    }

    /// Runs until the simulated time `t`.
    pub fn run_until(&mut self, t: Duration) {
        Simulation::run_until(self, t, |s| s.t() >= t);
    }

    /// The server's clock now.
    pub fn server_instant(&self) -> Instant {
        self.server_now()
    }

    /// The host takes `peer` out of the session now.
    pub fn remove_peer(&mut self, peer: PeerId) {
        let now = self.server_now();
        self.server.remove_peer(now, peer).expect("peer in session");
        self.collect_events();
    }

    /// Hands `bytes` to the server as if `from` had sent them, now.
    pub fn inject_to_server(&mut self, from: PeerId, bytes: &[u8]) {
        let now = self.server_now();
        self.server.handle_datagram(now, from, bytes);
    }

    /// Hands `bytes` to player `i` as if the server had sent them, now.
    pub fn inject_to_player(&mut self, i: usize, bytes: &[u8]) {
        let t = self.t();
        let p = &mut self.players[i];
        let now = p.local(t);
        p.client.handle_datagram(now, bytes);
    }

    /// Datagrams altered on the way (a few of them come out unchanged: the same bit flipped
    /// twice).
    pub fn corrupted(&self) -> u64 {
        self.net.links().map(|c| c.stats().corrupted).sum()
    }

    /// Altered datagrams that reached their receiver (the rest were lost or in flight); with
    /// `sealed` each was dropped for its tag (`dropped_auth`), without it the state machines
    /// took it.
    pub fn corrupted_arrived(&self) -> u64 {
        self.net.corrupted_arrived()
    }

    /// Takes the traffic counts at the end of the warm-up, once.
    fn mark_warmup(&mut self) {
        if self.t() >= self.warmup && self.server_traffic_at_warmup.is_none() {
            let peers = self.server.stats().peers;
            self.server_traffic_at_warmup =
                Some(peers.iter().map(|p| (p.peer, p.traffic)).collect());
            for p in &mut self.players {
                p.traffic_at_warmup = Some(p.client.stats().traffic);
                p.client.reset_measurements();
            }
        }
    }

    fn collect_events(&mut self) {
        let t = self.t();
        while let Some(e) = self.server.poll_event() {
            self.server_events.push((t, e));
        }
        for p in &mut self.players {
            while let Some(e) = p.client.poll_event() {
                p.events.push((t, e));
            }
        }
        let lead = self.server.lead();
        if self.lead_log.last().is_none_or(|(_, l)| *l != lead) {
            self.lead_log.push((t, lead));
        }
    }

    /// Player `link`'s keys: (the server's end, the player's end).
    fn link_keys(&mut self, link: usize) -> &(Keys, Keys) {
        if self.keys.len() <= link {
            self.keys.resize(link + 1, None);
        }
        self.keys[link].get_or_insert_with(|| {
            let seed = 0x5ea1 + link as u64;
            (
                Keys::for_test(seed, Side::Host),
                Keys::for_test(seed, Side::Joiner),
            )
        })
    }

    /// A datagram on player `i`'s link, tagged (with `sealed`) by the end that sends it.
    fn seal(&mut self, i: usize, from_player: bool, mut bytes: Vec<u8>) -> Vec<u8> {
        if self.sealed {
            let (host, joiner) = self.link_keys(i);
            if from_player { joiner } else { host }.seal(&mut bytes);
        }
        bytes
    }

    /// A datagram that arrived on player `i`'s link, its tag checked and removed (with
    /// `sealed`); `None` if the tag is wrong: dropped and counted, as the session layer does.
    fn unseal(&mut self, i: usize, to_player: bool, bytes: &[u8]) -> Option<Vec<u8>> {
        if !self.sealed {
            return Some(bytes.to_vec());
        }
        let (host, joiner) = self.link_keys(i);
        let keys = if to_player { joiner } else { host };
        let body = keys.open(bytes).map(<[u8]>::to_vec);
        self.dropped_auth += u64::from(body.is_none());
        body
    }

    /// Collects what the machines send: to and from the host's player in memory at once
    /// (until nothing more comes of it), the rest tagged for the network.
    fn flush(&mut self) -> Vec<(SocketAddr, Transmit)> {
        let mut out = Vec::new();
        loop {
            let mut in_memory = false;
            let (t, now) = (self.t(), self.server_now());
            while let Some(Transmit { to, bytes, .. }) = (!self.server_down)
                .then(|| self.server.poll_transmit(now))
                .flatten()
            {
                // The newest client in that slot (an earlier one may have dropped out).
                let i = match to {
                    Slot::Player(id) => {
                        self.max_update = self.max_update.max(bytes.len());
                        let seat = |p: &Player| p.id == id && p.spectator.is_none();
                        self.players.iter().rposition(seat)
                    }
                    Slot::Spectator(s) => {
                        self.players.iter().position(|p| p.spectator == Some(s.0))
                    }
                };
                let Some(i) = i else {
                    continue;
                };
                if Some(i) == self.local {
                    let p = &mut self.players[i];
                    p.client.handle_datagram(p.local(t), &bytes);
                    in_memory = true;
                    continue;
                }
                let bytes = self.seal(i, false, bytes);
                let to = player_addr(i);
                out.push((self.server_addr, Transmit::new(to, bytes)));
            }
            for i in 0..self.players.len() {
                if self.players[i].killed {
                    continue;
                }
                let now = self.players[i].local(t);
                while let Some(Transmit { bytes, .. }) = self.players[i].client.poll_transmit(now) {
                    if self.players[i].spectator.is_none() {
                        self.max_ctrl = self.max_ctrl.max(bytes.len());
                    }
                    if Some(i) == self.local {
                        if self.server_down {
                            continue;
                        }
                        let id = self.players[i].id;
                        self.server.handle_datagram(self.server_now(), id, &bytes);
                        in_memory = true;
                        continue;
                    }
                    let bytes = self.seal(i, true, bytes);
                    out.push((player_addr(i), Transmit::new(self.server_addr, bytes)));
                }
            }
            if !in_memory {
                return out;
            }
        }
    }
    /// One display slot of player `i`, like `app::runner` (`paced`): push a sample per
    /// frame, run the frames that are due (at most 4), count a stall if inputs were missing.
    fn tick(&mut self, i: usize) {
        let warm = self.t() >= self.warmup;
        let frame = self.frame;
        let t = self.t();
        let p = &mut self.players[i];
        let now = p.local(t);
        let local = p.slot as f64 * frame;
        p.slot += 1;
        let pace = if self.apply_pace {
            p.client.pace()
        } else {
            1.0
        };
        let (checksum_every, corrupt_checksum) = (self.checksum_every, self.corrupt_checksum);
        let (bot, pushed, applied, ran_at) =
            (&mut p.bot, &mut p.pushed, &mut p.applied, &mut p.ran_at);
        let (first, id, checksum) = (p.first, p.id, &mut p.checksum);
        // As `netplay`'s feed: the pad before every frame asked for (during a stall too, so
        // the client samples on the clock); the bot decides per frame.
        let pad = |fresh: bool| {
            if !fresh {
                return bot.pad;
            }
            let pad = bot.next();
            pushed.push(pad);
            pad
        };
        let ran_frame = |client: &mut Client, f: Frame, inputs: Inputs| {
            assert_eq!(
                f.0 as usize,
                first as usize + applied.len(),
                "frames out of order"
            );
            applied.push(inputs);
            ran_at.push(t);
            for pad in inputs {
                *checksum = checksum.wrapping_mul(0x100_0000_01b3) ^ u64::from(pad.0);
            }
            if checksum_every.is_some_and(|n| f.0.is_multiple_of(n)) {
                let wrong = corrupt_checksum == Some((id, f.0));
                client.report_checksum(f, *checksum ^ u64::from(wrong));
            }
        };
        let DisplaySlot { ran, stalled } = p.paced.slot(
            &mut p.client,
            now,
            local,
            frame,
            pace,
            u32::MAX,
            pad,
            ran_frame,
        );
        if ran > 0 && p.spectator.is_none() {
            let next = p.first + p.applied.len() as u32;
            let mut ahead = Vec::new();
            p.client.predict(self.speculate, 0, &mut ahead);
            p.deepest = p.deepest.max(ahead.len());
            p.ahead = (next..).zip(ahead.iter().copied()).collect();
            let me = usize::from(p.id.0);
            for (f, inputs) in &p.ahead {
                if let Some(i) = f.checked_sub(p.first) {
                    let i = i as usize;
                    if p.own_guess.len() <= i {
                        p.own_guess.resize(i + 1, None);
                    }
                    p.own_guess[i] = Some(inputs[me]);
                }
            }
            p.client.shown(now, Frame(next - 1 + ahead.len() as u32));
        }
        if warm {
            p.slots += 1;
            if stalled {
                p.stalled_slots += 1;
            }
        }
        if stalled && self.stall_push_chance > 0.0 && self.rng.gen_bool(self.stall_push_chance) {
            // The player presses something while the game waits.
            let pad = p.bot.next();
            p.client.push_local_input(now, pad);
            p.pushed.push(pad);
        }
    }
}

impl Simulation for Sim {
    fn net_and_clock(&mut self) -> (&mut SimNet, &mut Instant, Instant) {
        (&mut self.net, &mut self.clock, self.base)
    }

    fn deliver(&mut self, from: SocketAddr, to: SocketAddr, bytes: &[u8]) {
        self.mark_warmup();
        let now = self.server_now();
        if to == self.server_addr {
            if self.server_down {
                return;
            }
            let Some(i) = (0..self.players.len()).find(|i| player_addr(*i) == from) else {
                return;
            };
            let Some(bytes) = self.unseal(i, false, bytes) else {
                return;
            };
            let _ = match self.players[i].spectator {
                Some(s) => self.server.handle_datagram(now, SpectatorId(s), &bytes),
                None => self.server.handle_datagram(now, self.players[i].id, &bytes),
            };
        } else if let Some(i) = (0..self.players.len())
            .find(|i| player_addr(*i) == to)
            .filter(|i| from == self.server_addr && !self.players[*i].killed)
        {
            let Some(bytes) = self.unseal(i, true, bytes) else {
                return;
            };
            let t = self.t();
            let p = &mut self.players[i];
            p.client.handle_datagram(p.local(t), &bytes);
        }
    }

    /// The display slots due, the machines' timers, what they send, what they report.
    fn step(&mut self) -> Vec<(SocketAddr, Transmit)> {
        self.mark_warmup();
        let t = self.t();
        for i in 0..self.players.len() {
            if !self.players[i].gone() && self.players[i].next_tick(self.frame) <= t {
                self.tick(i);
            }
        }
        let now = self.server_now();
        if !self.server_down && self.server.poll_timeout().is_some_and(|at| at <= now) {
            self.server.handle_timeout(now);
        }
        for p in &mut self.players {
            let now = p.local(t);
            if p.client.poll_timeout().is_some_and(|at| at <= now) {
                p.client.handle_timeout(now);
            }
        }
        let out = self.flush();
        self.collect_events();
        out
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let players = self.players.iter().flat_map(|p| {
            let tick = (!p.gone()).then(|| self.base + p.next_tick(self.frame));
            let timer = p.client.poll_timeout().map(|at| self.base + p.real(at));
            [tick, timer]
        });
        let server = (!self.server_down).then(|| self.server.poll_timeout());
        players.flatten().chain(server.flatten()).min()
    }
}
