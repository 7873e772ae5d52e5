//! What the web side and `framelock open` refuse: slow and greedy HTTP clients are held
//! off and only GET and HEAD answered; `framelock open` refuses what is no framelock link
//! and registers the `framelock://` scheme.

use super::*;

#[test]
fn the_page_holds_off_slow_and_greedy_clients_and_answers_only_get_and_head() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut server, _addr, http) = web_server(d, &[]);
    wait_page(&http, "/", |p| p.contains("Open rooms"));

    // Slow loris: 40 connections from one address sending a header byte every 300 ms.
    let mut slow: Vec<TcpStream> = Vec::new();
    for _ in 0..40 {
        if let Ok(s) = TcpStream::connect(&http) {
            let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
            slow.push(s);
        }
    }
    let started = Instant::now();
    let drip = std::thread::spawn(move || {
        let mut open = slow.len();
        let mut closed_after = None;
        for i in 0..40 {
            open = 0;
            for s in &mut slow {
                let byte = if i == 0 { &b"G"[..] } else { &b"x"[..] };
                if s.write_all(byte).is_ok() {
                    open += 1;
                }
            }
            if open == 0 {
                closed_after = Some(started.elapsed());
                break;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        (open, closed_after)
    });
    std::thread::sleep(Duration::from_millis(500));
    // Meanwhile another visitor gets the page at once.
    let t = Instant::now();
    let (status, _, body) = request_from(
        "127.0.0.2",
        &http,
        &format!("GET / HTTP/1.1\r\nHost: {http}\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("Open rooms"));
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "the page took {:?}",
        t.elapsed()
    );
    let (open, closed_after) = drip.join().unwrap();
    assert_eq!(open, 0, "slow connections are closed");
    let closed_after = closed_after.unwrap();
    assert!(
        closed_after < Duration::from_secs(12),
        "slow connections lived {closed_after:?}"
    );

    // Only GET and HEAD; no body; a head of bounded size.
    let (status, head, _) = request_from(
        "127.0.0.3",
        &http,
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
    );
    assert_eq!(status, 405, "{head}");
    assert!(
        head.to_ascii_lowercase().contains("allow: get, head"),
        "{head}"
    );
    for method in ["PUT", "DELETE", "OPTIONS", "TRACE", "CONNECT"] {
        let (status, _, _) = request_from(
            "127.0.0.3",
            &http,
            &format!("{method} / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        );
        assert!(status == 405 || status == 400, "{method}: {status}");
    }
    let (status, head, body) = request_from(
        "127.0.0.3",
        &http,
        "HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!((status, body.len()), (200, 0), "{head}");
    let (status, _, _) = request_from(
        "127.0.0.3",
        &http,
        "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
    );
    assert_eq!(status, 413);
    let huge = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(40_000)
    );
    let (status, _, _) = request_from("127.0.0.3", &http, &huge);
    assert!(status == 431 || status == 0, "an oversized head: {status}");
    let (status, _, _) = get(&http, &format!("/{}", "a".repeat(300)));
    assert_eq!(status, 414);
    let (status, _, _) = get(&http, "/replay/00ff.flr");
    assert_eq!(status, 404, "no archive: no replays");

    // A greedy address is slowed down (429) and the others are not.
    let mut s = TcpStream::connect(&http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let burst: String = (0..2000)
        .map(|_| format!("HEAD / HTTP/1.1\r\nHost: {http}\r\n\r\n"))
        .collect();
    s.write_all(burst.as_bytes()).unwrap();
    s.write_all(format!("GET / HTTP/1.1\r\nHost: {http}\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    let mut all = String::new();
    let _ = s.read_to_string(&mut all);
    let limited = all.matches("HTTP/1.1 429").count();
    assert!(limited > 1000, "{limited} requests limited");
    let (status, _, _) = request_from(
        "127.0.0.4",
        &http,
        &format!("GET / HTTP/1.1\r\nHost: {http}\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(status, 200);

    server.interrupt();
    server.wait_ok(Duration::from_secs(10));
    let stats = server.read_stats();
    let w = &stats["http"];
    // An address holds 8 connections: the others were closed at once.
    assert!(w["timed_out"].as_u64().unwrap() >= 8, "{w}");
    assert!(w["refused_busy"].as_u64().unwrap() >= 30, "{w}");
    assert!(w["refused_rate"].as_u64().unwrap() > 1000, "{w}");
    assert!(w["refused_bad"].as_u64().unwrap() >= 4, "{w}");
}

#[test]
fn open_refuses_what_is_no_framelock_link_and_registers_the_scheme() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (link, why) in [
        ("https://example.org/friday", "only framelock:// links"),
        ("file:///etc/passwd", "only framelock:// links"),
        ("framelock://127.0.0.1/friday?exec=touch%20x", "%-escapes"),
        (
            "framelock://127.0.0.1/friday?core=/tmp/evil.so",
            "only joins",
        ),
        (
            "framelock://user:secret@127.0.0.1/friday",
            "no user or password",
        ),
        ("framelock://127.0.0.1/$(touch x)", "holds ' '"),
    ] {
        let out = netplay_common::framelock(d)
            .args(["open", link, "--headless"])
            .output()
            .unwrap();
        let text = netplay_common::text(&out);
        assert!(!out.status.success(), "{link}: {text}");
        assert!(text.contains(why), "{link}: {text}");
    }
    assert!(!d.join("x").exists(), "a link ran nothing");

    // The desktop entry, with a home of the test's own.
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = netplay_common::framelock(d)
        .args(["open", "--register"])
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", netplay_common::text(&out));
    let entry =
        std::fs::read_to_string(home.join(".local/share/applications/framelock-open.desktop"))
            .unwrap();
    assert!(
        entry.contains("MimeType=x-scheme-handler/framelock;"),
        "{entry}"
    );
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_framelock")).unwrap();
    assert!(
        entry.contains(&format!("Exec={} open %u", exe.display())),
        "{entry}"
    );
}
