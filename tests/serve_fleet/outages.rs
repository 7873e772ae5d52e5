//! A fleet losing parts of itself: a killed server's rooms leave the directory, a 3-node
//! NATS cluster loses a node, NATS goes down and comes back, a bad directory URL is refused
//! and an unreachable one leaves rooms local, and a server restarted at its address drops
//! the rooms of its earlier run.

use super::*;

#[test]
fn a_killed_server_leaves_the_directory_within_30_s() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nats = Nats::start(d, "nats");
    let (mut a, a_addr) = member(d, "server-a", &[nats.url()], &[]);
    let (b, b_addr) = member(d, "server-b", &[nats.url()], &[]);
    let _on_a = open_room(d, "host-a", &a_addr, &a_addr, "on-a", ALONE);
    let on_b = open_room(d, "host-b", &b_addr, &b_addr, "on-b", ALONE);
    let both = within(Duration::from_secs(5), || {
        let l = listed(d, &b_addr);
        has(&l, "on-a", &a_addr) && has(&l, "on-b", &b_addr)
    });
    assert!(both.is_some(), "{:?}", listed(d, &b_addr));
    a.kill();
    let gone = within(Duration::from_secs(30), || {
        !listed(d, &b_addr).iter().any(|(r, _)| r == "on-a")
    });
    assert!(gone.is_some(), "A's room still listed after 30 s");
    eprintln!("a killed server's rooms left the directory in {gone:?}");
    assert!(
        has(&listed(d, &b_addr), "on-b", &b_addr),
        "{:?}\n{}\n{}",
        rooms(d, &b_addr),
        b.log_text(),
        on_b.log_text()
    );
}

#[test]
fn the_directory_keeps_answering_when_one_node_of_a_three_node_cluster_dies() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (ports, routes): (Vec<u16>, Vec<u16>) =
        (0..3).map(|_| (free_tcp_port(), free_tcp_port())).unzip();
    let route_urls = routes
        .iter()
        .map(|p| format!("nats://127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut nodes: Vec<Nats> = (0..3)
        .map(|i| {
            let extra = args(&[
                "--server_name",
                &format!("n{i}"),
                "--cluster_name",
                "fleet",
                "--cluster",
                &format!("nats://127.0.0.1:{}", routes[i]),
                "--routes",
                &route_urls,
            ]);
            Nats::start_on(d, &format!("node{i}"), ports[i], &extra)
        })
        .collect();
    let urls: Vec<String> = nodes.iter().map(Nats::url).collect();
    let (a, a_addr) = member(d, "server-a", &urls, &[]);
    let (b, b_addr) = member(d, "server-b", &urls, &[]);
    // The cluster elects its JetStream leader first: the bucket is made once it has one.
    let _first = open_room(d, "first", &a_addr, &a_addr, "first", ALONE);
    let listed_first = within(Duration::from_secs(20), || {
        has(&listed(d, &b_addr), "first", &a_addr)
    });
    assert!(
        listed_first.is_some(),
        "{:?}\n{}\n{}",
        listed(d, &b_addr),
        a.log_text(),
        b.log_text()
    );
    nodes[0].kill();
    let _second = open_room(d, "second", &b_addr, &b_addr, "second", ALONE);
    // The cluster elects new leaders, and a watch stuck on the dead node is made again
    // (`directory::WATCH_STALLED`).
    let listed_second = within(Duration::from_secs(40), || {
        let l = listed(d, &a_addr);
        has(&l, "second", &b_addr) && has(&l, "first", &a_addr)
    });
    assert!(
        listed_second.is_some(),
        "after a node died: {:?}",
        listed(d, &a_addr)
    );
}

#[test]
fn rooms_play_on_while_nats_is_down_and_reappear_when_it_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_tcp_port();
    let mut nats = Nats::start_on(d, "nats", port, &[]);
    let (mut a, a_addr) = member(d, "server-a", &[nats.url()], &[]);
    let (_b, b_addr) = member(d, "server-b", &[nats.url()], &[]);
    let frames = ["--frames", "1800"];
    let mut host = open_room(
        d,
        "host",
        &a_addr,
        &a_addr,
        "friday",
        &[&frames[..], &["--bot", "1"]].concat(),
    );
    let mut bob = Peer::spawn(
        d,
        "bob",
        &args(
            &[
                &["join", &a_addr, "--room", "friday", "--headless"][..],
                &frames[..],
                &["--bot", "2"],
            ]
            .concat(),
        ),
    );
    assert!(within(Duration::from_secs(5), || has(
        &listed(d, &b_addr),
        "friday",
        &a_addr
    ))
    .is_some());
    nats.kill();
    assert!(
        a.wait_for_log("directory: unreachable", Duration::from_secs(15))
            .is_some(),
        "{}",
        a.log_text()
    );
    // A still lists its own room.
    assert!(has(&listed(d, &a_addr), "friday", &a_addr));
    // NATS back, empty (a new store): A writes its room back.
    std::fs::remove_dir_all(d.join("nats-store")).ok();
    let _nats = Nats::start_on(d, "nats-again", port, &[]);
    let back = within(Duration::from_secs(20), || {
        has(&listed(d, &b_addr), "friday", &a_addr)
    });
    assert!(back.is_some(), "{}", a.log_text());
    eprintln!("the room was listed again {back:?} after NATS restarted");
    bob.wait_ok(Duration::from_secs(50));
    host.wait_ok(Duration::from_secs(50));
    let (h, j) = (host.read_stats(), bob.read_stats());
    assert_eq!(h["frames"].as_u64(), Some(1800));
    assert_eq!(checksum(&h), checksum(&j));
    assert!(a.log_text().contains("directory: reachable again"));
}

#[test]
fn a_bad_directory_url_is_refused_and_an_unreachable_one_leaves_rooms_local() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port().to_string();
    let public = format!("127.0.0.1:{port}");
    let serve = |url: &str| {
        let a = args(&["serve", "--port", &port, "--bind", "127.0.0.1"]);
        let fleet = args(&["--directory", url, "--public-address", &public]);
        [a, fleet].concat()
    };
    let out = netplay_common::framelock(d)
        .args(serve("http://127.0.0.1:4222"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = netplay_common::text(&out);
    assert!(
        text.contains("--directory \"http://127.0.0.1:4222\"") && text.contains("scheme"),
        "{text}"
    );
    // Nothing listens there: the server says so, and serves its rooms alone.
    let nowhere = format!("nats://127.0.0.1:{}", free_tcp_port());
    let mut server = Peer::spawn(d, "server", &serve(&nowhere));
    assert!(
        server
            .wait_for_log("directory: unreachable", Duration::from_secs(15))
            .is_some(),
        "{}",
        server.log_text()
    );
    let _host = open_room(d, "host", &public, &public, "alone", ALONE);
    assert_eq!(
        listed(d, &public),
        vec![("alone".to_string(), public.clone())]
    );
    assert!(server.log_text().contains("room alone: opens here alone"));
}

#[test]
fn a_server_restarted_at_its_address_drops_the_rooms_of_its_earlier_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nats = Nats::start(d, "nats");
    let (mut a, a_addr) = member(d, "server-a", &[nats.url()], &[]);
    let (_b, b_addr) = member(d, "server-b", &[nats.url()], &[]);
    let mut host = open_room(d, "host", &a_addr, &a_addr, "before", ALONE);
    assert!(within(Duration::from_secs(5), || has(
        &listed(d, &b_addr),
        "before",
        &a_addr
    ))
    .is_some());
    a.kill();
    host.kill();
    // The same address again, at once: its heartbeat never stops, its old room must go.
    let port = a_addr.rsplit(':').next().unwrap();
    let mut again = args(&[
        "serve",
        "--port",
        port,
        "--bind",
        "127.0.0.1",
        "--directory",
    ]);
    again.extend(args(&[
        &nats.url(),
        "--public-address",
        &a_addr,
        "--region",
        "eu",
    ]));
    let mut a2 = Peer::spawn(d, "server-a2", &again);
    let gone = within(Duration::from_secs(8), || {
        !listed(d, &b_addr).iter().any(|(r, _)| r == "before")
    });
    assert!(gone.is_some(), "{}", a2.log_text());
    assert!(a2
        .wait_for_log("left by an earlier run here", Duration::from_secs(1))
        .is_some());
}
