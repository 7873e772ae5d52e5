//! Every member's web page shows the whole fleet's rooms, and any member serves a replay
//! recorded on another.

use super::*;

/// The body of `GET path` from `addr`, if it answered 200.
fn page_bytes(addr: &str, path: &str) -> Option<Vec<u8>> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    raw.starts_with(b"HTTP/1.1 200")
        .then(|| raw[split + 4..].to_vec())
}

fn page(addr: &str, path: &str) -> Option<String> {
    page_bytes(addr, path).map(|b| String::from_utf8_lossy(&b).into_owned())
}

#[test]
fn every_members_page_shows_the_fleets_rooms_and_any_member_serves_any_replay() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nats = Nats::start(d, "nats");
    let urls = [nats.url()];
    let (http_a, http_b) = (
        format!("127.0.0.1:{}", free_tcp_port()),
        format!("127.0.0.1:{}", free_tcp_port()),
    );
    let (arch_a, arch_b) = (d.join("archive-a"), d.join("archive-b"));
    let (arch_a_s, arch_b_s) = (arch_a.display().to_string(), arch_b.display().to_string());
    let (mut a, addr_a) = member(d, "a", &urls, &["--http", &http_a, "--archive", &arch_a_s]);
    let (_b, addr_b) = member(d, "b", &urls, &["--http", &http_b, "--archive", &arch_b_s]);

    // A match played to its end on member a: a keeps its replay, in the fleet's store too.
    let mut host = open_room(
        d,
        "host",
        &addr_a,
        &addr_a,
        "match",
        &["--frames", "180", "--bot", "1"],
    );
    let mut a_args = args(&["join", &addr_a, "--room", "match", "--headless"]);
    a_args.extend(args(&["--frames", "180", "--bot", "2", "--no-record"]));
    let mut joiner = Peer::spawn(d, "joiner", &a_args);
    joiner.wait_ok(Duration::from_secs(40));
    host.wait_ok(Duration::from_secs(20));
    a.expect_log("archive: kept room match's replay", Duration::from_secs(15));
    let id = std::fs::read_dir(&arch_a)
        .unwrap()
        .filter_map(|e| e.ok())
        .find_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".flr").map(String::from)
        })
        .expect("a keeps the replay");

    // A room open on each member: both pages show both, and the replay.
    let _on_a = open_room(d, "on-a", &addr_a, &addr_a, "on-a", ALONE);
    let _on_b = open_room(d, "on-b", &addr_b, &addr_b, "on-b", ALONE);
    for http in [&http_a, &http_b] {
        let shown = within(Duration::from_secs(20), || {
            page(http, "/").is_some_and(|p| {
                p.contains("id=\"room-on-a\"")
                    && p.contains("id=\"room-on-b\"")
                    && p.contains(&format!("id=\"replay-{id}\""))
                    && p.contains(&addr_a)
                    && p.contains(&addr_b)
            })
        });
        assert!(
            shown.is_some(),
            "{http} does not show the fleet\n{}",
            page(http, "/").unwrap_or_default()
        );
    }
    // The other member's room is joined where it is held: its invite link names that member.
    let p = page(&http_b, "/").unwrap();
    assert!(
        p.contains(&format!("href=\"framelock://{addr_a}/on-a\"")),
        "{p}"
    );

    // Member b serves a's replay, from the fleet's store: it verifies.
    let out = netplay_common::framelock(d)
        .args(["replay", &format!("framelock://{addr_b}/replay/{id}")])
        .args(["--headless", "--fast", "--verify"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", netplay_common::text(&out));
    let kept_b = std::fs::read_dir(&arch_b).unwrap().count();
    assert_eq!(
        kept_b, 0,
        "b kept nothing itself: the replay came from the fleet's store"
    );
    let download = page_bytes(&http_b, &format!("/replay/{id}.flr")).unwrap_or_default();
    assert_eq!(
        download,
        std::fs::read(arch_a.join(format!("{id}.flr"))).unwrap(),
        "b's page serves it too"
    );
}
