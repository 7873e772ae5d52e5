//! Chat on simulated time (`world`): three players and a spectator under 10% loss, direct
//! and through a dedicated server, each saying 20 messages that everyone else receives in
//! order exactly once; forged and flooding senders; and play in sync throughout.

use std::collections::BTreeMap;
use std::time::Duration;

use super::world::World;
use crate::lockstep::{Frame, Slot};
use crate::session::chat::{ChatMsg, RELAY_BURST};
use crate::session::{ChatLine, ChatRefused, ParticipantConfig, ParticipantEvent, Speaker};

fn cfg() -> ParticipantConfig {
    ParticipantConfig {
        checksum_interval: 30,
        reconnect: Duration::from_secs(60),
        ..ParticipantConfig::default()
    }
}

const SEC: Duration = Duration::from_secs(1);

/// Chat lines node `i` received: (sender's name, spectator, text), in order.
fn heard(w: &World, i: usize) -> Vec<(String, bool, String)> {
    w.nodes[i]
        .events()
        .filter_map(|e| match e {
            ParticipantEvent::Chat(l) => Some((l.name.clone(), l.is_spectator(), l.text.clone())),
            _ => None,
        })
        .collect()
}

fn say(w: &mut World, i: usize, text: &str) -> Result<ChatLine, ChatRefused> {
    let now = w.now();
    let p = &mut w.nodes[i].runner.feed_mut().participant;
    p.say(now, text)
}

/// Every node says 20 numbered messages, 2.1 s apart (within the 5-in-10-s rate); then
/// each must have heard everyone else's, in order, exactly once, and none of its own.
fn everyone_says_20(w: &mut World, spectator: &str) {
    let nodes: Vec<usize> = (0..w.nodes.len()).collect();
    assert!(w.run_until(30 * SEC, |w| nodes.iter().all(|&i| w.frame(i) >= 60)));
    for k in 0..20 {
        for &i in &nodes {
            let text = format!("{} says {k}", w.nodes[i].name);
            let line = say(w, i, &text).unwrap_or_else(|e| panic!("{text}: {e}"));
            // Its own line as it shows and records it: a watching joiner knows no slot of
            // its own, and records the spectator's 0xff as before.
            if w.nodes[i].name == spectator {
                assert_eq!(
                    (line.from, line.from.number()),
                    (Speaker::OwnWatching, 0xff)
                );
            } else {
                assert!(
                    matches!(line.from, Speaker::In(Slot::Player(_))),
                    "{line:?}"
                );
            }
        }
        w.run_for(Duration::from_millis(2100));
    }
    let want = 20 * (nodes.len() - 1);
    let all_in = |w: &World| nodes.iter().all(|&i| heard(w, i).len() >= want);
    assert!(w.run_until(10 * SEC, all_in), "not all delivered");
    w.run_for(2 * SEC);
    for &i in &nodes {
        let me = w.nodes[i].name.clone();
        let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, watching, text) in heard(w, i) {
            assert_eq!(watching, name == spectator, "{name} marked right");
            by.entry(name).or_default().push(text);
        }
        assert!(!by.contains_key(&me), "{me} heard itself");
        assert_eq!(by.len(), nodes.len() - 1, "{me} heard {:?}", by.keys());
        for (name, texts) in by {
            let expect: Vec<String> = (0..20).map(|k| format!("{name} says {k}")).collect();
            assert_eq!(texts, expect, "{me} heard {name}'s in order, once");
        }
    }
}

fn finish_in_sync(w: &mut World) {
    assert!(w.run_until(120 * SEC, World::all_finished));
    w.assert_in_sync(w.frames - 1);
}

#[test]
fn three_players_and_a_spectator_chat_under_10_percent_loss_direct() {
    let mut w = World::new("delay=30ms,jitter=5ms,loss=10%", 60 * 70);
    let host = w.host(3, cfg());
    let to = w.addr_of(host);
    w.join("ana", to, None, cfg());
    w.join("bob", to, None, cfg());
    w.watch("eve", to, cfg());
    everyone_says_20(&mut w, "eve");
    let e = w.nodes[host].runner.feed().participant.endpoint().unwrap();
    assert_eq!(e.stats().chat_flood_dropped, 0);
    // The three others' messages went through the relay (the host's own are its own).
    assert_eq!(e.stats().chat_relayed, 80);
    finish_in_sync(&mut w);
}

#[test]
fn three_players_and_a_spectator_chat_under_10_percent_loss_through_serve() {
    let mut w = World::new("delay=30ms,jitter=5ms,loss=10%", 60 * 70);
    let server = w.serve();
    w.open_room("ana", "friday", 3, cfg());
    w.run_for(5 * SEC);
    assert!(w.node("ana").is_some());
    w.join("bob", server, Some("friday"), cfg());
    w.join("cy", server, Some("friday"), cfg());
    w.watch_room("eve", server, Some("friday"), cfg());
    everyone_says_20(&mut w, "eve");
    finish_in_sync(&mut w);
}

#[test]
fn a_forged_chat_datagram_is_dropped() {
    let mut w = World::new("delay=20ms", 60 * 20);
    let host = w.host(2, cfg());
    let ana = w.join("ana", w.addr_of(host), None, cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(ana) >= 60));
    let forged_before = w.nodes[host]
        .runner
        .feed()
        .participant
        .endpoint()
        .unwrap()
        .stats()
        .dropped_auth;
    // Ana's address, a well-formed Say, and a tag that is not hers.
    let mut bytes = ChatMsg::Say {
        stream: 1,
        seq: 0,
        frame: Frame::ZERO,
        text: "i resign".into(),
    }
    .encode(0x5eed);
    bytes.extend_from_slice(&[0xa5; crate::wire::keys::TAG_LEN]);
    let (now, from) = (w.now(), w.addr_of(ana));
    let p = &mut w.nodes[host].runner.feed_mut().participant;
    p.handle_datagram(now, from, &bytes);
    w.run_for(2 * SEC);
    let e = w.nodes[host].runner.feed().participant.endpoint().unwrap();
    assert_eq!(e.stats().dropped_auth, forged_before + 1);
    assert_eq!(e.stats().chat_relayed, 0);
    assert!(heard(&w, host).is_empty());
    // A real one gets through.
    say(&mut w, ana, "gg").unwrap();
    w.run_for(SEC);
    assert_eq!(heard(&w, host), [("ana".into(), false, "gg".into())]);
    finish_in_sync(&mut w);
}

#[test]
fn a_long_message_with_escapes_arrives_cut_and_clean() {
    let mut w = World::new("delay=20ms", 60 * 10);
    let host = w.host(2, cfg());
    let ana = w.join("ana", w.addr_of(host), None, cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(ana) >= 60));
    let evil = format!("\u{1b}[2J\u{1b}]0;pwned\u{7}{}", "x".repeat(1000));
    say(&mut w, host, &evil).unwrap();
    w.run_for(SEC);
    assert_eq!(
        heard(&w, ana),
        [(
            "host".into(),
            false,
            "x".repeat(crate::session::chat::MAX_CHARS)
        )]
    );
}

#[test]
fn a_sender_over_the_rate_is_refused_and_a_flood_is_dropped_and_counted_in_sync() {
    let mut w = World::new("delay=20ms,jitter=5ms,loss=2%", 60 * 30);
    let host = w.host(3, cfg());
    let to = w.addr_of(host);
    let ana = w.join("ana", to, None, cfg());
    let bob = w.join("bob", to, None, cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(ana) >= 60 && w.frame(bob) >= 60));
    // An honest sender: the sixth within 10 s is refused here, with how long to wait.
    for k in 0..5 {
        say(&mut w, bob, &format!("hi {k}")).unwrap();
    }
    assert!(matches!(
        say(&mut w, bob, "one too many"),
        Err(ChatRefused::TooFast { wait }) if wait > 9 * SEC
    ));
    // A modified client sends 100 at once: the host relays its allowance, drops the rest.
    for k in 0..100 {
        w.nodes[ana]
            .runner
            .feed_mut()
            .participant
            .say_unlimited(&format!("spam {k}"));
    }
    w.run_for(5 * SEC);
    let e = w.nodes[host].runner.feed().participant.endpoint().unwrap();
    let allowed = RELAY_BURST as usize;
    assert_eq!(e.stats().chat_flood_dropped, (100 - allowed) as u64);
    let from_ana = heard(&w, bob).iter().filter(|l| l.0 == "ana").count();
    assert_eq!(from_ana, allowed);
    assert_eq!(heard(&w, ana).len(), 5, "bob's five reached ana");
    finish_in_sync(&mut w);
}

#[test]
fn a_server_drops_and_counts_a_flood_within_its_room_and_play_stays_in_sync() {
    let mut w = World::new("delay=20ms,jitter=5ms", 60 * 20);
    let server = w.serve();
    w.open_room("ana", "friday", 2, cfg());
    w.run_for(5 * SEC);
    let ana = w.node("ana").unwrap();
    let bob = w.join("bob", server, Some("friday"), cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(ana) >= 60 && w.frame(bob) >= 60));
    for k in 0..100 {
        w.nodes[bob]
            .runner
            .feed_mut()
            .participant
            .say_unlimited(&format!("spam {k}"));
    }
    w.run_for(5 * SEC);
    let (_, rooms) = w.server.as_ref().unwrap();
    let allowed = RELAY_BURST as usize;
    assert_eq!(rooms.stats().chat_flood_dropped, (100 - allowed) as u64);
    assert_eq!(heard(&w, ana).len(), allowed);
    finish_in_sync(&mut w);
}
