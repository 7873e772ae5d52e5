//! One turn of a sans-IO machine ([`Machine`]) over a socket: the one drive step that
//! the lobbies, the game's network side, `serve` and the hostile tests share. It knows the
//! machine only by that face, never a protocol.
//!
//! A turn is str0m's loop: the datagrams that came, the machine's timers, the datagrams it
//! sends, its events; then the caller waits until the returned wake-up or the next datagram.

use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::time::Instant;

use super::{Link, NetError};
use crate::wire::{Machine, Transmit};

/// Where a driven machine's datagrams come from and go: a [`Link`], or a test's socket
/// (which may forge or hold back what the machine sends).
pub trait Carrier {
    /// Every datagram waiting now, with its sender.
    fn recv(&mut self, now: Instant) -> Result<Vec<(SocketAddr, Vec<u8>)>, NetError>;
    /// Sends (or queues) one of the machine's datagrams.
    fn send(&mut self, now: Instant, t: Transmit);
    /// A datagram a machine without stats of its own did not take
    /// ([`Machine::COUNTS_DROPS`]).
    fn note_dropped(&mut self) {}
    /// After a turn's datagrams were handed over: what is due goes out.
    fn flush(&mut self, _now: Instant) {}
}

impl Carrier for Link {
    fn recv(&mut self, now: Instant) -> Result<Vec<(SocketAddr, Vec<u8>)>, NetError> {
        Link::recv(self, now)
    }
    fn send(&mut self, now: Instant, t: Transmit) {
        self.send_transmit(now, t)
    }
    fn note_dropped(&mut self) {
        self.note_invalid()
    }
    fn flush(&mut self, now: Instant) {
        self.flush_due(now)
    }
}

/// Hands `machine` every datagram waiting on `carrier`, read at `now`: how many came.
pub fn receive<M: Machine<Addr = SocketAddr>>(
    carrier: &mut impl Carrier,
    machine: &mut M,
    now: Instant,
) -> Result<usize, NetError> {
    let datagrams = carrier.recv(now)?;
    for (from, bytes) in &datagrams {
        if !machine.handle_datagram(now, *from, bytes).is_taken() && !M::COUNTS_DROPS {
            carrier.note_dropped();
        }
    }
    Ok(datagrams.len())
}

/// Sends everything `machine` has queued, then what the carrier holds that is due.
pub fn send_queued<M: Machine<Addr = SocketAddr>>(
    carrier: &mut impl Carrier,
    machine: &mut M,
    now: Instant,
) {
    while let Some(t) = machine.poll_transmit(now) {
        carrier.send(now, t);
    }
    carrier.flush(now);
}

/// A turn without the events (they stay queued for whoever drives the machine next): the
/// datagrams that came, the timers, the datagrams to send.
pub fn exchange<M: Machine<Addr = SocketAddr>>(
    carrier: &mut impl Carrier,
    machine: &mut M,
    now: Instant,
) -> Result<(), NetError> {
    receive(carrier, machine, now)?;
    machine.handle_timeout(now);
    send_queued(carrier, machine, now);
    Ok(())
}

/// One whole turn at `now`: [`exchange`], then each event to `on_event` (with the machine,
/// which it may ask or tell more). `Break` from `on_event` ends the turn at once, the
/// events after it left queued; else the turn ends with the machine's next wake-up.
pub fn step<M: Machine<Addr = SocketAddr>, B>(
    carrier: &mut impl Carrier,
    machine: &mut M,
    now: Instant,
    mut on_event: impl FnMut(&mut M, M::Event) -> ControlFlow<B>,
) -> Result<ControlFlow<B, Option<Instant>>, NetError> {
    exchange(carrier, machine, now)?;
    while let Some(ev) = machine.poll_event() {
        if let ControlFlow::Break(b) = on_event(machine, ev) {
            return Ok(ControlFlow::Break(b));
        }
    }
    Ok(ControlFlow::Continue(machine.poll_timeout()))
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::time::Duration;

    use super::*;
    use crate::wire::{Dropped, Handled, Kind};

    /// A machine that takes only b"ok", answers each with b"ack" and an event, and wakes
    /// a second after it last heard.
    #[derive(Default)]
    struct Echo {
        out: VecDeque<Transmit>,
        events: VecDeque<u8>,
        heard: Option<Instant>,
        timeouts: usize,
    }

    impl Machine for Echo {
        type Addr = SocketAddr;
        type Event = u8;
        const COUNTS_DROPS: bool = false;
        fn handle_datagram<'a>(
            &mut self,
            now: Instant,
            from: SocketAddr,
            d: &'a [u8],
        ) -> Handled<'a> {
            if d != b"ok" {
                return Handled::Dropped(Dropped::Unexpected(Kind::Bye));
            }
            self.heard = Some(now);
            self.out.push_back(Transmit::new(from, b"ack".to_vec()));
            self.events.push_back(self.events.len() as u8);
            Handled::Taken
        }
        fn handle_timeout(&mut self, _now: Instant) {
            self.timeouts += 1;
        }
        fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit> {
            self.out.pop_front()
        }
        fn poll_event(&mut self) -> Option<u8> {
            self.events.pop_front()
        }
        fn poll_timeout(&self) -> Option<Instant> {
            self.heard.map(|t| t + Duration::from_secs(1))
        }
    }

    /// Datagrams waiting, what was sent, drops noted, flushes.
    #[derive(Default)]
    struct Wire {
        waiting: Vec<(SocketAddr, Vec<u8>)>,
        sent: Vec<Transmit>,
        dropped: usize,
        flushed: usize,
    }

    impl Carrier for Wire {
        fn recv(&mut self, _now: Instant) -> Result<Vec<(SocketAddr, Vec<u8>)>, NetError> {
            Ok(std::mem::take(&mut self.waiting))
        }
        fn send(&mut self, _now: Instant, t: Transmit) {
            self.sent.push(t)
        }
        fn note_dropped(&mut self) {
            self.dropped += 1;
        }
        fn flush(&mut self, _now: Instant) {
            self.flushed += 1;
        }
    }

    #[test]
    fn a_step_takes_in_runs_timers_sends_and_stops_where_the_caller_says() {
        let peer: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let now = Instant::now();
        let mut m = Echo::default();
        let mut wire = Wire {
            waiting: vec![
                (peer, b"ok".to_vec()),
                (peer, b"junk".to_vec()),
                (peer, b"ok".to_vec()),
            ],
            ..Wire::default()
        };
        let mut seen = Vec::new();
        let turn = step(&mut wire, &mut m, now, |_, ev| {
            seen.push(ev);
            ControlFlow::Break(ev)
        })
        .unwrap();
        // The first event ends the turn; the second waits in the machine.
        assert_eq!(turn, ControlFlow::Break(0));
        assert_eq!(seen, [0]);
        assert_eq!(m.events.len(), 1);
        // Both answers went out and were flushed, once; the junk was counted for the
        // machine, which keeps no stats.
        assert_eq!(wire.sent.len(), 2);
        assert_eq!(wire.sent[0].to, peer);
        assert_eq!((wire.dropped, wire.flushed, m.timeouts), (1, 1, 1));
        // A turn with nothing new hands out the waiting event and the next wake-up.
        let turn = step(&mut wire, &mut m, now, |_, ev| {
            seen.push(ev);
            ControlFlow::<()>::Continue(())
        })
        .unwrap();
        assert_eq!(seen, [0, 1]);
        assert_eq!(
            turn,
            ControlFlow::Continue(Some(now + Duration::from_secs(1)))
        );
    }
}
