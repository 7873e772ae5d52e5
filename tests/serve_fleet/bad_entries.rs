//! Directory entries a member will not list: a malformed one is skipped and logged, and
//! one forged by someone who can write the bucket but has no fleet key is neither listed
//! nor followed.

use super::*;

#[test]
fn a_malformed_entry_is_skipped_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nats = Nats::start(d, "nats");
    let (mut a, a_addr) = member(d, "server-a", &[nats.url()], &[]);
    // The bucket exists once A has written its heartbeat.
    std::thread::sleep(Duration::from_secs(2));
    nats.publish("$KV.framelock-rooms.room.junk", b"not json");
    let bad_server = br#"{"server":"nowhere","region":"eu","game":"","core":"x","mode":"strict","seats":2,"players":1,"spectators":0,"password":false,"state":"lobby","opened":0}"#;
    nats.publish("$KV.framelock-rooms.room.worse", bad_server);
    for key in [
        "\"room.junk\"",
        "\"room.worse\": server \"nowhere\" is not ADDR:PORT",
    ] {
        let said = format!("directory: skipped malformed entry {key}");
        assert!(
            a.wait_for_log(&said, Duration::from_secs(10)).is_some(),
            "{said}\n{}",
            a.log_text()
        );
    }
    let _host = open_room(d, "host", &a_addr, &a_addr, "fine", &[]);
    assert_eq!(
        listed(d, &a_addr),
        vec![("fine".to_string(), a_addr.clone())]
    );
    assert!(
        a.try_status().is_none(),
        "the server stopped\n{}",
        a.log_text()
    );
}

#[test]
fn an_entry_forged_without_the_fleet_key_is_neither_listed_nor_followed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut nats = Nats::with_config(
        d,
        "nats",
        "authorization { user: fleet, password: \"fleet-password\" }",
    );
    let password = write_file(d, "password", "fleet-password");
    let fleet_key = d.join("fleet.key");
    std::fs::write(
        &fleet_key,
        (0..48u8)
            .map(|i| i.wrapping_mul(37) ^ 0x5a)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let fleet_key = fleet_key.display().to_string();
    let creds = [
        "--directory-user",
        "fleet",
        "--directory-password-file",
        &password,
        "--directory-key",
        &fleet_key,
    ];
    let (a, a_addr) = member(d, "server-a", &[nats.url()], &creds);
    let (mut b, b_addr) = member(d, "server-b", &[nats.url()], &creds);
    assert!(a.log_text().contains("entries signed"), "{}", a.log_text());
    let _real = open_room(d, "real", &a_addr, &a_addr, "real", ALONE);
    assert_listed(d, &b_addr, "real", &a_addr, &[&a, &b]);

    // Someone with the NATS password but not the fleet key writes rooms that send joiners
    // to a socket of theirs: one with a made-up tag, one with none.
    let trap = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let trap_addr = trap.local_addr().unwrap().to_string();
    trap.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let entry = |tag: Option<&str>| {
        let mut v = serde_json::json!({
            "server": trap_addr, "region": "eu", "game": "airstriker.md", "core": "lightcycles",
            "mode": "strict", "seats": 2, "players": 1, "spectators": 0, "password": false,
            "state": "lobby", "opened": 0,
        });
        if let Some(t) = tag {
            v["tag"] = t.into();
        }
        serde_json::to_vec(&v).unwrap()
    };
    nats.connect = r#"{"verbose":false,"user":"fleet","pass":"fleet-password"}"#.into();
    nats.publish(
        "$KV.framelock-rooms.room.forged",
        &entry(Some(&"ab".repeat(32))),
    );
    nats.publish("$KV.framelock-rooms.room.bait", &entry(None));
    // And a heartbeat of a server with room to spare, the trap.
    let beat = serde_json::json!({
        "server": trap_addr, "region": "eu", "rooms": 0, "max_rooms": 100, "players": 0,
    });
    let beat_key = format!(
        "$KV.framelock-rooms.server.{}",
        trap_addr.replace(['.', ':'], "_")
    );
    nats.publish(&beat_key, &serde_json::to_vec(&beat).unwrap());
    let beat_skipped = format!(
        "skipped entry {:?}: it is not signed with the fleet's key",
        beat_key.trim_start_matches("$KV.framelock-rooms.")
    );
    for said in [
        "skipped entry \"room.forged\": its tag does not verify",
        "skipped entry \"room.bait\": it is not signed",
        &beat_skipped,
    ] {
        assert!(
            b.wait_for_log(said, Duration::from_secs(10)).is_some(),
            "{said}\n{}",
            b.log_text()
        );
    }
    // Neither is listed; the real room still is.
    let l = listed(d, &b_addr);
    assert!(has(&l, "real", &a_addr), "{l:?}");
    assert!(
        !l.iter().any(|(r, _)| r == "forged" || r == "bait"),
        "{l:?}"
    );
    let out = netplay_common::framelock(d)
        .args(["servers", &b_addr, "--json"])
        .output()
        .unwrap();
    let servers = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!servers.contains(&trap_addr), "{servers}");
    // A joiner who asks B for the forged room is not sent anywhere.
    let mut eve = Peer::spawn(
        d,
        "eve",
        &args(&[
            "join",
            &b_addr,
            "--room",
            "forged",
            "--headless",
            "--frames",
            "60",
        ]),
    );
    let status = eve.wait(Duration::from_secs(30));
    assert!(!status.success(), "{}", eve.log_text());
    assert!(!eve.log_text().contains(&trap_addr), "{}", eve.log_text());
    let mut buf = [0u8; 1500];
    assert!(
        trap.recv_from(&mut buf).is_err(),
        "a datagram reached the forged address"
    );
    // Skipped, not crashed; logged once per key however often it is written.
    nats.publish(
        "$KV.framelock-rooms.room.forged",
        &entry(Some(&"cd".repeat(32))),
    );
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        b.log_text().matches("\"room.forged\"").count(),
        1,
        "{}",
        b.log_text()
    );
    assert!(b.try_status().is_none(), "{}", b.log_text());
}
