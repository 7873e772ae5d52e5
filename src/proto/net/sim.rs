//! The one simulated network every simulation runs on (tests and benchmarks): each sender's datagrams
//! pass through a [`Conditioner`] of its own, the same one `--netsim` puts in front of a
//! real socket, seeded in turn so that a run repeats exactly. On top of the conditioner's
//! delay, loss, jitter and corruption, an address can go down for a while (both ways) and be
//! retired when its node moves. A sender->receiver pair can instead have a [`Link`] of its
//! own (one direction of a player's path: its conditioner, route changes over time, spans
//! in which everything sent is lost). The net counts the altered datagrams that arrived
//! (`corrupted_arrived`). It knows addresses and bytes only: who listens where is the
//! caller's business. [`Simulation`] is the loop that drives a harness's state machines over
//! it (the world in `netplay::world` has a runner of its own to drive, and its own step).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::conditioner::{Conditioner, NetSim};
use crate::wire::Transmit;

/// Bytes of IPv4 and UDP headers counted for every datagram sent.
const HEADERS: u64 = 28;

/// One direction between two addresses, for [`SimNet::link`].
#[derive(Clone, Debug, Default)]
pub struct Link {
    /// Its impairments and seed.
    pub netsim: NetSim,
    /// From each time on, a new one-way delay (sorted by time).
    pub delay_steps: Vec<(Instant, Duration)>,
    /// Everything sent within these spans (from, until) is lost.
    pub outages: Vec<(Instant, Instant)>,
}

struct LinkState {
    conditioner: Conditioner,
    delay_steps: Vec<(Instant, Duration)>,
    outages: Vec<(Instant, Instant)>,
}

pub struct SimNet {
    links: BTreeMap<SocketAddr, Conditioner>,
    /// Links of their own for (from, to) pairs; the rest share their sender's conditioner.
    pairs: BTreeMap<(SocketAddr, SocketAddr), LinkState>,
    /// Datagrams that arrived altered (`corrupt`).
    corrupted_arrived: u64,
    netsim: String,
    seed: u64,
    /// (address, from, until): nothing gets to or from it meanwhile.
    outages: Vec<(SocketAddr, Instant, Instant)>,
    /// Addresses a node had: datagrams to them go nowhere now.
    retired: Vec<SocketAddr>,
    /// Bytes each address sent, IP and UDP headers included.
    sent: BTreeMap<SocketAddr, u64>,
    /// Every datagram put on the network, as (from, to, bytes), if kept (`keeping_wire`).
    pub wire: Vec<(SocketAddr, SocketAddr, Vec<u8>)>,
    keep_wire: bool,
    /// Addresses behind a home router that lets in only what answers its own sending
    /// (`behind_router`), and the (inside, outside) pairs it has sent to.
    routed: BTreeSet<SocketAddr>,
    opened: BTreeSet<(SocketAddr, SocketAddr)>,
    /// Pairs of addresses nothing passes between (`cut`), either way.
    cuts: Vec<(SocketAddr, SocketAddr)>,
    /// (outside, inside): ports routers forward (`forward`).
    forwards: Vec<(SocketAddr, SocketAddr)>,
}

impl SimNet {
    /// `netsim` as `--netsim` takes it, without a seed; the senders' seeds count up from 2.
    pub fn new(netsim: &str) -> SimNet {
        SimNet::seeded(netsim, 1)
    }

    /// [`SimNet::new`] whose senders' seeds count up from `seed + 1`.
    pub fn seeded(netsim: &str, seed: u64) -> SimNet {
        SimNet {
            links: BTreeMap::new(),
            pairs: BTreeMap::new(),
            corrupted_arrived: 0,
            netsim: netsim.into(),
            seed,
            outages: Vec::new(),
            retired: Vec::new(),
            sent: BTreeMap::new(),
            wire: Vec::new(),
            keep_wire: false,
            routed: BTreeSet::new(),
            opened: BTreeSet::new(),
            cuts: Vec::new(),
            forwards: Vec::new(),
        }
    }

    /// Keeps every datagram sent in `wire`.
    pub fn keeping_wire(mut self) -> SimNet {
        self.keep_wire = true;
        self
    }

    /// Puts `t` from `from` on the network at `now` (lost at once if either end is down).
    pub fn send(&mut self, now: Instant, from: SocketAddr, t: Transmit) {
        // Counted as it leaves, with its IP and UDP headers.
        *self.sent.entry(from).or_default() += t.bytes.len() as u64 + HEADERS;
        if self.keep_wire {
            self.wire.push((from, t.to, t.bytes.clone()));
        }
        // Every sender's, so a router put in later knows what its node sent before.
        self.opened.insert((from, t.to));
        if self.down(from, now) || self.down(t.to, now) {
            return;
        }
        if let Some(link) = self.pairs.get_mut(&(from, t.to)) {
            if link.outages.iter().any(|(a, b)| now >= *a && now < *b) {
                return;
            }
            if let Some((_, delay)) = link.delay_steps.iter().rev().find(|(at, _)| now >= *at) {
                link.conditioner.set_delay(*delay);
            }
            link.conditioner.push(now, t.to, t.bytes);
            return;
        }
        self.seed += 1;
        let sim = format!("{},seed={}", self.netsim, self.seed);
        self.links
            .entry(from)
            .or_insert_with(|| Conditioner::new(sim.parse().expect("netsim")))
            .push(now, t.to, t.bytes);
    }

    /// Every datagram that arrives at `now`, as (from, to, bytes), in sender order.
    pub fn due(&mut self, now: Instant) -> Vec<(SocketAddr, SocketAddr, Vec<u8>)> {
        let mut due = Vec::new();
        for (from, c) in &mut self.links {
            while let Some((t, altered)) = c.poll_marked(now) {
                due.push((*from, t.to, t.bytes, altered));
            }
        }
        for ((from, _), link) in &mut self.pairs {
            while let Some((t, altered)) = link.conditioner.poll_marked(now) {
                due.push((*from, t.to, t.bytes, altered));
            }
        }
        // An answer to whoever sent to a forwarded port leaves from that port.
        for d in &mut due {
            let outside = self
                .forwards
                .iter()
                .find(|(o, i)| *i == d.0 && self.opened.contains(&(d.1, *o)));
            if let Some((outside, _)) = outside {
                d.0 = *outside;
            }
        }
        due.retain(|(from, to, _, _)| {
            let filtered = self.routed.contains(to) && !self.opened.contains(&(*to, *from));
            let cut = self
                .cuts
                .iter()
                .any(|c| *c == (*from, *to) || *c == (*to, *from));
            !(self.down(*to, now)
                || self.down(*from, now)
                || self.retired.contains(to)
                || filtered
                || cut)
        });
        self.corrupted_arrived += due.iter().filter(|d| d.3).count() as u64;
        due.into_iter()
            .map(|(from, to, bytes, _)| {
                let inside = self
                    .forwards
                    .iter()
                    .find(|(o, _)| *o == to)
                    .map(|(_, i)| *i);
                (from, inside.unwrap_or(to), bytes)
            })
            .collect()
    }

    /// Datagrams from `from` to `to` go through `link` from now on, not through `from`'s
    /// shared conditioner.
    pub fn link(&mut self, from: SocketAddr, to: SocketAddr, link: Link) {
        let mut delay_steps = link.delay_steps;
        delay_steps.sort_by_key(|(at, _)| *at);
        let state = LinkState {
            conditioner: Conditioner::new(link.netsim),
            delay_steps,
            outages: link.outages,
        };
        self.pairs.insert((from, to), state);
    }

    /// Altered datagrams (`corrupt`) that arrived so far; those an outage or a cut stopped
    /// on arrival do not count.
    pub fn corrupted_arrived(&self) -> u64 {
        self.corrupted_arrived
    }

    /// The next arrival, or the next start or end of an outage.
    pub fn poll_timeout(&self, now: Instant) -> Option<Instant> {
        let edges = self
            .outages
            .iter()
            .flat_map(|(_, from, until)| [*from, *until])
            .filter(|t| *t > now);
        self.links()
            .filter_map(Conditioner::poll_timeout)
            .chain(edges)
            .min()
    }

    /// Nothing gets to or from `at` between `from` and `until`.
    pub fn outage(&mut self, at: SocketAddr, from: Instant, until: Instant) {
        self.outages.push((at, from, until));
    }

    /// True while `at` is down.
    pub fn down(&self, at: SocketAddr, now: Instant) -> bool {
        self.outages
            .iter()
            .any(|(x, from, until)| *x == at && now >= *from && now < *until)
    }

    /// The node at `old` now sends from `new`: what it had queued goes out from there, and
    /// what is sent to `old` is lost from now on.
    pub fn moved(&mut self, old: SocketAddr, new: SocketAddr) {
        self.retired.push(old);
        if let Some(c) = self.links.remove(&old) {
            self.links.insert(new, c);
        }
    }

    /// `at` sits behind a home router that maps its address the same way for every
    /// destination and lets in only datagrams from addresses it sent to (a "cone" NAT as
    /// nftables masquerade makes one; the address stands for the mapping).
    pub fn behind_router(&mut self, at: SocketAddr) {
        self.routed.insert(at);
    }

    /// `inside`'s router forwards `outside` to it (a port mapping, `portmap`): what is sent
    /// to `outside` arrives at `inside` whatever the router's rules, and `inside`'s answers
    /// to whoever sent there leave from `outside`.
    pub fn forward(&mut self, outside: SocketAddr, inside: SocketAddr) {
        self.forwards.push((outside, inside));
    }

    /// Nothing passes between `a` and `b` from now on (a router that maps per destination,
    /// or a firewall rule).
    pub fn cut(&mut self, a: SocketAddr, b: SocketAddr) {
        self.cuts.push((a, b));
    }

    /// Bytes `from` sent so far, IP and UDP headers included.
    pub fn sent(&self, from: SocketAddr) -> u64 {
        self.sent.get(&from).copied().unwrap_or(0)
    }

    /// The senders' conditioners (for their counts of lost, altered, delayed datagrams).
    pub fn links(&self) -> impl Iterator<Item = &Conditioner> {
        let pairs = self.pairs.values().map(|l| &l.conditioner);
        self.links.values().chain(pairs)
    }
}

/// The longest the clock waits when nothing is scheduled.
const IDLE: Duration = Duration::from_millis(10);

/// A simulation on a [`SimNet`]: state machines at their addresses and a clock that jumps
/// from one deadline to the next. Each test harness says how its machines take a datagram,
/// run their timers and what they wait for; [`Simulation::run_until`] is the one loop that
/// drives them all.
pub trait Simulation: Sized {
    /// The least the clock moves in a step, so that a deadline left in the past (a timer
    /// a machine only serves later, a game that ran its last frame) cannot hold it still.
    const MIN_STEP: Duration = Duration::from_micros(100);

    /// Its network, its clock (which the loop moves) and when it started.
    fn net_and_clock(&mut self) -> (&mut SimNet, &mut Instant, Instant);

    /// Hands `bytes` from `from`, arriving now, to whoever listens at `to`.
    fn deliver(&mut self, from: SocketAddr, to: SocketAddr, bytes: &[u8]);

    /// Runs every machine's timers now; returns what they send, as (from, datagram), in the
    /// order they sent it.
    fn step(&mut self) -> Vec<(SocketAddr, Transmit)>;

    /// The earliest deadline of its machines.
    fn poll_timeout(&self) -> Option<Instant>;

    /// Delivers what is due, steps, sends, and jumps to the next deadline, until `done` holds
    /// (true) or more than `limit` has passed since the start (false).
    fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&Self) -> bool) -> bool {
        loop {
            let (net, now, start) = self.net_and_clock();
            let (now, start) = (*now, start);
            for (from, to, bytes) in net.due(now) {
                self.deliver(from, to, &bytes);
            }
            for (from, t) in self.step() {
                self.net_and_clock().0.send(now, from, t);
            }
            if done(self) {
                return true;
            }
            if now - start > limit {
                return false;
            }
            let arrival = self.net_and_clock().0.poll_timeout(now);
            let next = [self.poll_timeout(), arrival]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(now + IDLE);
            *self.net_and_clock().1 = next.max(now + Self::MIN_STEP);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(n: u8) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, n], 1))
    }

    fn datagram(to: SocketAddr, n: u8) -> Transmit {
        Transmit::new(to, vec![n; 20])
    }

    /// Sends one datagram a millisecond from a to b for `ms` ms, and returns (arrival in ms,
    /// bytes) of each that arrived.
    fn run(net: &mut SimNet, t0: Instant, ms: u64) -> Vec<(u64, Vec<u8>)> {
        let mut got = Vec::new();
        for i in 0..ms + 500 {
            let now = t0 + Duration::from_millis(i);
            for (_, _, bytes) in net.due(now) {
                got.push((i, bytes));
            }
            if i < ms {
                net.send(now, addr(1), datagram(addr(2), i as u8));
            }
        }
        got
    }

    #[test]
    fn a_pair_link_steps_its_delay_and_loses_what_is_sent_in_its_outages() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut net = SimNet::new("delay=200ms");
        let netsim = "delay=10ms".parse().unwrap();
        let link = Link {
            netsim,
            delay_steps: vec![(t0 + ms(50), ms(30))],
            outages: vec![(t0 + ms(20), t0 + ms(30))],
        };
        net.link(addr(1), addr(2), link);
        let got = run(&mut net, t0, 100);
        // Not the sender's shared 200 ms: 10 ms, then 30 ms from 50 ms on; none of 20..30.
        assert_eq!(got.len(), 90);
        assert!(got.iter().all(|(at, b)| !(20..30).contains(&b[0])
            && *at == u64::from(b[0]) + if b[0] < 50 { 10 } else { 30 }));
        // The other direction still goes through the shared conditioner.
        net.send(t0 + ms(600), addr(2), datagram(addr(1), 9));
        assert!(net.due(t0 + ms(799)).is_empty());
        assert_eq!(net.due(t0 + ms(800)).len(), 1);
    }

    #[test]
    fn altered_datagrams_that_arrive_are_counted() {
        let t0 = Instant::now();
        let mut net = SimNet::new("");
        let netsim = "corrupt=10%,seed=3".parse().unwrap();
        let link = Link {
            netsim,
            ..Link::default()
        };
        net.link(addr(1), addr(2), link);
        let got = run(&mut net, t0, 2000);
        let intact = |b: &[u8]| b.len() == 20 && b.iter().all(|x| *x == b[0]);
        let altered = got.iter().filter(|(_, b)| !intact(b)).count() as u64;
        assert_eq!(got.len(), 2000);
        assert_eq!(net.corrupted_arrived(), altered);
        assert!((150..250).contains(&altered), "{altered}");
        // Stopped on arrival, an altered datagram does not count as arrived.
        net.cut(addr(1), addr(2));
        let before = net.corrupted_arrived();
        run(&mut net, t0 + Duration::from_secs(5), 2000);
        assert!(net.links().next().unwrap().stats().corrupted > 250);
        assert_eq!(net.corrupted_arrived(), before);
    }
}
