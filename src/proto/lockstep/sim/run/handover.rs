//! A hand-over in the simulation (`lockstep::handover`): a process is killed, and the
//! server goes on in another player's process, from the frames the players agreed on.

use super::*;
use crate::lockstep::{merge_agreed, HandoverConflict};

/// Where the server is after a hand-over: the new authority's process.
const MOVED: SocketAddr = SocketAddr::new(
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2)),
    5000,
);

impl Sim {
    /// Player `i`'s process is killed (`kill -9`): it runs, sends and hears nothing more,
    /// and the server with it if it ran there.
    pub fn kill(&mut self, i: usize) {
        self.players[i].killed = true;
        if self.local == Some(i) {
            self.server_down = true;
        }
    }

    /// The server goes on in player `to`'s process (the old one is no more): the players
    /// still in the game offer their agreed frames, are moved to the new server, and their
    /// links to it are the paths they had. Returns the frame it starts at.
    pub fn hand_over(&mut self, to: usize) -> Result<Frame, HandoverConflict> {
        let (t, now, base) = (self.t(), self.server_now(), self.base);
        let alive: Vec<usize> = (0..self.players.len())
            .filter(|&i| !self.players[i].gone())
            .collect();
        let offers: Vec<_> = (alive.iter().map(|&i| &self.players[i]))
            .filter(|p| p.spectator.is_none())
            .map(|p| {
                let (first, frames) = p.client.agreed();
                (p.id, first, frames)
            })
            .collect();
        let (first, agreed) = merge_agreed(&offers)?;
        let end = first.plus(agreed.len() as u32);
        let (mut players, mut spectators) = (Vec::new(), Vec::new());
        for &i in &alive {
            let p = &mut self.players[i];
            let have = p.client.received_end().0;
            let missing = &agreed[(have - first.0) as usize..];
            let sample = p.client.rehome(p.local(t), missing);
            match p.spectator {
                None => players.push((p.id, sample)),
                Some(s) => {
                    spectators.push((SpectatorId(s), crate::lockstep::budget::UDP_IP_HEADER))
                }
            }
        }
        // A pause at the newest agreed frame holds on.
        let paused = (alive.iter())
            .find_map(|&i| self.players[i].client.paused())
            .filter(|(_, at)| *at == end)
            .map(|(by, _)| by);
        let cfg = self.remote_config();
        let mut server = Server::resume(now, cfg, first, agreed, &players, &spectators, paused)
            .expect("a server can take over");
        for &i in &alive {
            let id = self.players[i].id;
            if i == to {
                server.set_send_budget(id, 0).expect("present");
                server.set_udp_ip_header(id, 0).expect("present");
                continue;
            }
            let spec = self.specs[i].clone();
            if self.players[i].spectator.is_none() {
                server
                    .seed_rtt(now, id, spec.up.delay + spec.down.delay)
                    .expect("present");
            }
            let a = player_addr(i);
            self.net.link(a, MOVED, spec.up.link(base, self.rng.gen()));
            self.net
                .link(MOVED, a, spec.down.link(base, self.rng.gen()));
        }
        self.server = server;
        self.local = Some(to);
        self.server_addr = MOVED;
        self.server_down = false;
        Ok(end)
    }
}
