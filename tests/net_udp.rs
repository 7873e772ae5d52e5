//! Proves the UDP carriage on loopback: sends and receives with byte accounting, waits wake on
//! a datagram or a deadline, ports are exclusive, dual-stack hosts see IPv4 peers as IPv4,
//! and the endpoint's conditioner really delays and drops outgoing datagrams.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use framelock::net::udp::{header_overhead, UdpSocket};
use framelock::net::{Link, NetError};

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Receives until `n` datagrams arrived or 2 s passed.
fn recv_n(sock: &mut UdpSocket, n: usize) -> Vec<(SocketAddr, Vec<u8>)> {
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut out = Vec::new();
    while out.len() < n && Instant::now() < deadline {
        sock.wait(Duration::from_millis(20)).unwrap();
        sock.recv_all(&mut out).unwrap();
    }
    out
}

#[test]
fn datagrams_round_trip_and_are_counted() {
    let mut a = UdpSocket::bind(loopback(0)).unwrap();
    let mut b = UdpSocket::bind(loopback(0)).unwrap();
    for i in 0..100u32 {
        assert!(a.send_to(b.local_addr(), &i.to_le_bytes().repeat(10)));
    }
    let got = recv_n(&mut b, 100);
    assert_eq!(got.len(), 100);
    assert!(got
        .iter()
        .all(|(from, bytes)| *from == a.local_addr() && bytes.len() == 40));
    assert_eq!(a.stats().packets_sent, 100);
    assert_eq!(a.stats().bytes_sent, 4000);
    assert_eq!(b.stats().packets_received, 100);
    assert_eq!(b.stats().bytes_received, 4000);
    // Nothing more: recv_all does not block.
    let t = Instant::now();
    let mut none = Vec::new();
    assert_eq!(b.recv_all(&mut none).unwrap(), 0);
    assert!(t.elapsed() < Duration::from_millis(50));
}

#[test]
fn wait_returns_at_the_deadline_or_when_a_datagram_arrives() {
    let sock = UdpSocket::bind(loopback(0)).unwrap();
    let t = Instant::now();
    assert!(!sock.wait(Duration::from_millis(60)).unwrap());
    let waited = t.elapsed();
    assert!(waited >= Duration::from_millis(59), "{waited:?}");
    assert!(waited < Duration::from_millis(500), "{waited:?}");

    let to = sock.local_addr();
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        let mut s = UdpSocket::bind(loopback(0)).unwrap();
        s.send_to(to, b"wake");
    });
    let t = Instant::now();
    assert!(sock.wait(Duration::from_secs(5)).unwrap());
    assert!(t.elapsed() < Duration::from_secs(2), "woke on the datagram");
    sender.join().unwrap();

    // Waits shorter than a millisecond watch the socket too (netplay waits until a
    // conditioned datagram falls due, often less than a millisecond away), and last as long
    // as asked, not a whole millisecond or nothing.
    assert!(
        sock.wait(Duration::from_micros(300)).unwrap(),
        "the datagram still waits"
    );
    let mut got = Vec::new();
    let mut sock = sock;
    sock.recv_all(&mut got).unwrap();
    assert_eq!(got.len(), 1);
    let t = Instant::now();
    assert!(!sock.wait(Duration::from_micros(300)).unwrap());
    let waited = t.elapsed();
    assert!(waited >= Duration::from_micros(300), "{waited:?}");
}

#[test]
fn a_port_cannot_be_bound_twice() {
    let a = UdpSocket::bind(loopback(0)).unwrap();
    match UdpSocket::bind(a.local_addr()) {
        Err(e @ NetError::Bind { .. }) => {
            // The OS's words in lowercase, once: not again as a capitalised cause.
            assert_eq!(
                e.to_string(),
                format!(
                    "cannot bind udp {}: address already in use (os error 98)",
                    a.local_addr()
                )
            );
            assert!(std::error::Error::source(&e).is_none());
        }
        other => panic!("second bind: {other:?}"),
    }
}

#[test]
fn dual_stack_host_sees_ipv4_peers_as_ipv4_and_answers_them() {
    let mut host = UdpSocket::bind_host(0).unwrap();
    let port = host.local_addr().port();
    let mut client = UdpSocket::bind_client(loopback(port)).unwrap();
    client.send_to(loopback(port), b"hello");
    let got = recv_n(&mut host, 1);
    assert_eq!(got.len(), 1);
    let (from, bytes) = &got[0];
    assert!(from.is_ipv4(), "{from}");
    assert_eq!(from.port(), client.local_addr().port());
    assert_eq!(bytes, b"hello");
    assert!(host.send_to(*from, b"welcome"));
    let back = recv_n(&mut client, 1);
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].1, b"welcome");
}

#[test]
fn ipv6_loopback_works_where_available() {
    let Ok(mut a) = UdpSocket::bind("[::1]:0".parse().unwrap()) else {
        eprintln!("no IPv6 loopback here; skipped");
        return;
    };
    let mut b = UdpSocket::bind("[::1]:0".parse().unwrap()).unwrap();
    assert!(a.send_to(b.local_addr(), b"six"));
    let got = recv_n(&mut b, 1);
    assert_eq!(got[0].0, a.local_addr());
    assert_eq!(header_overhead(a.local_addr()), 48);
    assert_eq!(header_overhead(loopback(1)), 28);
}

#[test]
fn endpoint_counts_wire_bytes_and_conditions_its_output() {
    let mut rx = Link::new(UdpSocket::bind(loopback(0)).unwrap(), None);
    let to = rx.local_addr();
    let mut tx = Link::new(
        UdpSocket::bind(loopback(0)).unwrap(),
        Some("delay=30ms,seed=3".parse().unwrap()),
    );
    let sent_at = Instant::now();
    for i in 0..20u8 {
        tx.send(sent_at, to, vec![i; 100]);
    }
    assert_eq!(tx.stats().packets_sent, 0, "held by the conditioner");
    assert_eq!(tx.queued(), 20);
    let mut got = Vec::new();
    let deadline = sent_at + Duration::from_secs(2);
    while got.len() < 20 && Instant::now() < deadline {
        let now = Instant::now();
        tx.flush_due(now);
        got.extend(
            rx.recv(now)
                .unwrap()
                .into_iter()
                .map(|d| (Instant::now(), d)),
        );
        tx.wait_until(now, Some(now + Duration::from_millis(5)))
            .unwrap();
    }
    assert_eq!(got.len(), 20);
    let first = got[0].0 - sent_at;
    assert!(
        first >= Duration::from_millis(30),
        "arrived after {first:?}"
    );
    let s = tx.stats();
    assert_eq!(
        (s.packets_sent, s.bytes_sent, s.wire_bytes_sent),
        (20, 2000, 2000 + 20 * 28)
    );
    let r = rx.stats();
    assert_eq!(
        (r.packets_received, r.wire_bytes_received),
        (20, 2000 + 20 * 28)
    );

    // Total loss: nothing leaves, and the conditioner says so.
    let mut lossy = Link::new(
        UdpSocket::bind(loopback(0)).unwrap(),
        Some("loss=100%".parse().unwrap()),
    );
    for _ in 0..10 {
        lossy.send(Instant::now(), to, vec![0; 10]);
    }
    lossy.flush_due(Instant::now() + Duration::from_secs(1));
    assert_eq!(lossy.stats().netsim.expect("a conditioner").dropped, 10);
    assert_eq!(lossy.stats().packets_sent, 0);
    assert!(!rx
        .wait_until(
            Instant::now(),
            Some(Instant::now() + Duration::from_millis(50))
        )
        .unwrap());
    rx.note_invalid();
    assert_eq!(rx.stats().packets_dropped_invalid, 1);
}
