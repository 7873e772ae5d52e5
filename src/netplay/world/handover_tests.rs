//! Getting into a hosted room's running game on simulated time (`world`): a late joiner is
//! welcomed however long its direct attempt and its state transfer take. Each runs real
//! participants, the real `serve::Rooms` and the real frame runner.

use super::scenario::{cfg, finish_in_sync, SEC};
use super::{RoomSpec, World};
use crate::net::conditioner::NetSim;
use crate::net::sim::Link;
use crate::session::ParticipantEvent;

const HOME: &str = "delay=20ms,jitter=3ms,loss=1%";

/// A link of `ms` one way, clean.
fn slow(ms: u64) -> Link {
    Link {
        netsim: format!("delay={ms}ms,seed=7")
            .parse::<NetSim>()
            .expect("netsim"),
        ..Link::default()
    }
}

#[test]
fn a_late_joiner_without_a_direct_path_is_welcomed_however_long_the_attempt_and_transfer_take() {
    let mut w = World::new(HOME, 2400);
    let server = w.serve();
    let spec = RoomSpec {
        room: "den".into(),
        seats: 3,
        start_with: 2,
        ..RoomSpec::default()
    };
    w.host_room_as("ana", spec, cfg());
    assert!(w.run_until(10 * SEC, |w| w.node("ana").is_some()));
    let ana = w.node("ana").unwrap();
    w.net.behind_router(w.addr_of(ana));
    let bob = w.join("bob", server, Some("den"), cfg());
    assert!(w.run_until(30 * SEC, |w| w.frame(ana) >= 600 && w.frame(bob) >= 600));
    // A friend far away joins the running game, and a spectator at the same moment; no
    // direct path can be made to either, and each round trip through the server takes
    // 1.2 s: the host holds the state through the 3-s direct attempt, then it crosses.
    let cy = w.join("cy", server, Some("den"), cfg());
    let dee = w.watch_room("dee", server, Some("den"), cfg());
    for i in [cy, dee] {
        let at = w.addr_of(i);
        w.net.cut(w.addr_of(ana), at);
        w.net.link(at, server, slow(600));
        w.net.link(server, at, slow(600));
    }
    let played = w.run_until(40 * SEC, |w| w.frame(cy) >= 1500 || w.failure(cy).is_some());
    assert_eq!(w.failure(cy), None, "cy was refused");
    assert!(played, "cy at frame {}", w.frame(cy));
    assert!(
        w.nodes[cy]
            .events()
            .any(|e| matches!(e, ParticipantEvent::Ready(_))),
        "cy never had its state"
    );
    assert_eq!(w.failure(dee), None, "the spectator was refused");
    finish_in_sync(&mut w, 120 * SEC);
}
