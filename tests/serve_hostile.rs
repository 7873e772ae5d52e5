//! Issue 36's attacks against a real `framelock serve` and a real direct `host` on
//! 127.0.0.1, as an attacker on the internet would make them: blind datagrams "from" a
//! victim's address (the socket sends them and the test only counts what arrives back
//! there, never answering), and online password guessing.

mod hostile_common;
mod netplay_common;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use hostile_common::{attacks, guess};
use netplay_common::{args, free_port, open_room, start_host, start_server};

/// Sends every attack `rounds` times from `victim` to `target` (blind: never answering),
/// then counts the bytes that came back to `victim`: (sent, received).
fn blind_flood(
    victim: &UdpSocket,
    target: SocketAddr,
    room: &str,
    rounds: usize,
) -> (usize, usize) {
    victim
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut sent = 0;
    let mut got = 0;
    let mut buf = [0u8; 2048];
    for _ in 0..rounds {
        for d in attacks(room) {
            sent += victim.send_to(&d, target).unwrap();
        }
        while let Ok((n, _)) = victim.recv_from(&mut buf) {
            got += n;
        }
    }
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        if let Ok((n, _)) = victim.recv_from(&mut buf) {
            got += n;
        }
    }
    (sent, got)
}

#[test]
fn a_forged_source_gets_no_more_than_it_sent_from_a_server_or_a_host() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut server, addr) = start_server(d, &[]);
    let mut creator = open_room(d, &addr, "den", &["--frames", "100000"]);
    let victim = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (sent, got) = blind_flood(&victim, addr.parse().unwrap(), "den", 20);
    eprintln!("serve: {sent} B sent from the victim's address, {got} B came back");
    assert!(got > 0, "it still answers");
    assert!(got <= sent, "serve amplified: {got} B for {sent} B");

    let port = free_port();
    let mut host = start_host(d, port, &args(&["--frames", "100000"]));
    let victim = UdpSocket::bind("127.0.0.1:0").unwrap();
    let target: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let (sent, got) = blind_flood(&victim, target, "", 20);
    eprintln!("host: {sent} B sent from the victim's address, {got} B came back");
    assert!(got > 0, "it still answers");
    assert!(got <= sent, "the host amplified: {got} B for {sent} B");
    for p in [&mut host, &mut creator, &mut server] {
        p.kill();
    }
}

#[test]
fn password_guesses_are_limited_per_address_and_a_real_player_still_gets_in() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let mut host = start_host(
        d,
        port,
        &args(&["--password", "hunter2", "--frames", "100000"]),
    );
    let target: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let start = Instant::now();
    let mut checked = 0;
    let mut limited = 0;
    for i in 0..40u8 {
        let r = guess(&sock, target, &format!("wrong{i}"), i);
        match r.as_str() {
            "wrong password" => checked += 1,
            r if r.starts_with("too many password attempts") => limited += 1,
            other => panic!("guess {i}: {other}"),
        }
    }
    let took = start.elapsed();
    eprintln!("{checked} guesses checked, {limited} refused unchecked in {took:?}");
    // 5 at once, then one every 12 s.
    let allowed = 5 + took.as_secs() / 12 + 1;
    assert!(
        checked as u64 <= allowed,
        "{checked} guesses checked in {took:?}"
    );
    assert!(limited > 0);
    // The guesser's address stays refused, with a clear reason...
    let r = guess(&sock, target, "hunter2", 200);
    assert!(r.starts_with("too many password attempts"), "{r}");
    // ...while a real player from another address (127.0.0.2) gets in.
    let player = UdpSocket::bind("127.0.0.2:0").unwrap();
    player
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    assert_eq!(guess(&player, target, "hunter2", 201), "welcomed");
    host.kill();
}
