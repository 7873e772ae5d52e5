//! Rooms on the world's server that their creators host (`session::direct`): the server
//! relays and introduces, the creator's participant holds the room's endpoint.

use super::*;

impl World {
    /// `name` opens room `room` with `seats` seats on the server and hosts it itself (a
    /// node named `name` appears once the server opened it).
    pub fn host_room(&mut self, name: &str, room: &str, seats: u8, cfg: ParticipantConfig) {
        let spec = RoomSpec {
            room: room.into(),
            seats,
            ..RoomSpec::default()
        };
        self.host_room_as(name, spec, cfg);
    }

    /// `name` opens and hosts the room `spec` describes.
    pub fn host_room_as(&mut self, name: &str, spec: RoomSpec, cfg: ParticipantConfig) {
        let (server, _) = self.server.as_ref().expect("a server");
        let server = *server;
        let (at, _) = self.fresh_addr();
        let open = room_request(name, &spec);
        let start_with = open.start_with;
        let opener = RoomOpener::hosted(self.now(), server, open);
        self.openers.push(Opening {
            name: name.into(),
            at,
            opener,
            password: None,
            cfg,
            hosted: Some((spec.seats, start_with)),
        });
    }

    /// The server opened a hosted room: its creator's node starts, with the room's
    /// endpoint.
    pub(super) fn start_hosted(&mut self, now: Instant, o: Opening, room: String) -> usize {
        let (seats, start_with) = o.hosted.unwrap_or((2, 2));
        let mode = lockstep::Mode::Strict;
        let mut host = HostConfig::new(o.opener.session(), [o.at.port() as u8; 32], 60.0);
        host.max_players = seats;
        host.start_with = start_with;
        host.keyframe_interval = mode.default_keyframe_interval() as u8;
        host.mode = mode;
        host.hosted_room = Some(room.clone());
        let lcfg = lockstep::Config {
            players: seats,
            keyframe_interval: mode.default_keyframe_interval(),
            min_lead: mode.default_keyframe_interval(),
            mode,
            ..lockstep::Config::default()
        };
        let ecfg = EndpointConfig {
            host,
            lockstep: lcfg.clone(),
            lobby_timeout: None,
        };
        let endpoint = Endpoint::new(now, ecfg, info(&o.name), Toy::default().state(), Vec::new())
            .expect("endpoint");
        let key = o.opener.room_key();
        let p = Participant::host_room(now, endpoint, lcfg, o.cfg, o.opener.server(), &key);
        let k = self.push_node(&o.name, o.at, p, true);
        self.nodes[k].room = Some(room);
        k
    }
}
