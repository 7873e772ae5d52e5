//! A fleet member on simulated time: it claims room names from the directory before it
//! opens them and sends players of rooms held elsewhere to the holding server.

use super::*;

#[test]
fn a_fleet_member_claims_names_first_and_sends_players_to_the_holding_server() {
    use crate::session::msg::{RoomInfo, ServerInfo};
    let now = Instant::now();
    let cfg = ServeConfig {
        max_rooms: 2,
        ..serve_config()
    };
    let me = "203.0.113.7:7845".to_string();
    let other = "203.0.113.9:7845".to_string();
    let mut rooms = Rooms::new(cfg).with_fleet(now, me.clone(), "eu".into());
    let held = RoomInfo {
        name: "held".into(),
        content: String::new(),
        core: "lightcycles".into(),
        players: 1,
        seats: 2,
        password: false,
        playing: false,
        age_secs: 3,
        spectators: 0,
        mode: Mode::Strict,
        region: "eu".into(),
        server: other.clone(),
    };
    rooms.handle_directory(now, DirNews::Room(held.clone()));
    rooms.handle_directory(
        now,
        DirNews::Server(ServerInfo {
            server: other.clone(),
            region: "eu".into(),
            rooms: 1,
            max_rooms: 10,
            players: 1,
        }),
    );
    let (a, b, c, d) = (
        client_addr(1),
        client_addr(2),
        client_addr(3),
        client_addr(4),
    );
    for x in [a, b, c, d] {
        prove(&mut rooms, now, x);
    }
    let ask = |room: &str| Msg::Room(RoomMsg::Locate { room: room.into() }).encode(0);
    // Where is it: on the other server.
    rooms.handle_datagram(now, a, &ask("held"));
    let moved = RoomMsg::Moved {
        room: "held".into(),
        server: other.clone(),
    };
    assert_eq!(
        decoded(&sent_to(&mut rooms, now, a)),
        vec![Msg::Room(moved)]
    );
    // Its name is taken in the whole fleet.
    rooms.handle_datagram(
        now,
        a,
        &Msg::Room(RoomMsg::Open(open(2, "held", false))).encode(0),
    );
    let refused = format!("room held exists already (on {other})");
    assert_eq!(
        decoded(&sent_to(&mut rooms, now, a)),
        vec![Msg::Refuse(refused)]
    );
    // A free name is claimed before the room opens.
    rooms.handle_datagram(
        now,
        b,
        &Msg::Room(RoomMsg::Open(open(2, "mine", false))).encode(0),
    );
    assert!(sent_to(&mut rooms, now, b).is_empty());
    let claim = rooms.poll_directory();
    assert!(
        matches!(&claim, Some(DirOp::Claim(i)) if i.name == "mine" && i.server == me),
        "{claim:?}"
    );
    rooms.handle_directory(now, DirNews::Claimed("mine".into()));
    let sent = sent_to(&mut rooms, now, b);
    let opened = decoded(&sent);
    assert!(
        matches!(&opened[..], [Msg::Room(RoomMsg::Opened { room, .. })] if room == "mine"),
        "{opened:?}"
    );
    // A claim another server won meanwhile is refused.
    rooms.handle_datagram(
        now,
        c,
        &Msg::Room(RoomMsg::Open(open(2, "race", false))).encode(0),
    );
    assert!(matches!(rooms.poll_directory(), Some(DirOp::Claim(_))));
    rooms.handle_directory(
        now,
        DirNews::Taken {
            room: "race".into(),
            server: other.clone(),
        },
    );
    let refused = format!("room race exists already (on {other})");
    assert_eq!(
        decoded(&sent_to(&mut rooms, now, c)),
        vec![Msg::Refuse(refused)]
    );
    // Full (one upload and one claim): a new room goes to a member of the region.
    rooms.handle_datagram(
        now,
        c,
        &Msg::Room(RoomMsg::Open(open(2, "late", false))).encode(0),
    );
    rooms.handle_datagram(
        now,
        d,
        &Msg::Room(RoomMsg::Open(open(2, "full", false))).encode(0),
    );
    let moved = RoomMsg::Moved {
        room: "full".into(),
        server: other.clone(),
    };
    assert_eq!(
        decoded(&sent_to(&mut rooms, now, d)),
        vec![Msg::Room(moved)]
    );
    // A listing names the holding server of each room.
    rooms.handle_datagram(now, d, &Msg::Room(RoomMsg::List { first: 0 }).encode(0));
    let sent = sent_to(&mut rooms, now, d);
    let listed = decoded(&sent);
    assert!(
        matches!(&listed[..], [Msg::Room(RoomMsg::Rooms { total: 1, rooms: r, .. })] if r == &vec![held.clone()]),
        "{listed:?}"
    );
    // A server gone silent takes its rooms with it.
    rooms.handle_directory(now, DirNews::ServerGone(other));
    rooms.handle_datagram(now, a, &ask("held"));
    let sent = sent_to(&mut rooms, now, a);
    let gone = decoded(&sent);
    assert!(
        matches!(&gone[..], [Msg::Room(RoomMsg::NoRoom { .. })]),
        "{gone:?}"
    );
}
