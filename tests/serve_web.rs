//! A server's web page, invite links and shared replays with real processes on 127.0.0.1:
//! headless Chromium (Debian's, driven over the DevTools protocol) opens the page of a
//! `serve --http --archive` with two rooms and a finished match, shows the rooms and the
//! replay, and a click on an invite link yields the `framelock://` link that `framelock open`
//! then joins with, in sync; the downloaded replay verifies; names holding markup stay
//! text; the page's HTTP side holds off slow and greedy clients; `framelock open` refuses
//! what is no framelock link; a full disk costs the replay being written and nothing else.

mod netplay_common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use netplay_common::{args, assert_log_verifies, checksum, free_port, open_room, Peer};
use serde_json::{json, Value};

/// Where the page's screenshots are kept to be looked at.
fn shots() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-web");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn free_tcp_port() -> u16 {
    loop {
        let port = free_port();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// `framelock serve` with its web page and archive; returns it, its UDP and HTTP addresses.
fn web_server(dir: &Path, extra: &[&str]) -> (Peer, String, String) {
    let (port, http) = (free_port(), free_tcp_port());
    let http = format!("127.0.0.1:{http}");
    let mut a = args(&["serve", "--port", &port.to_string(), "--bind", "127.0.0.1"]);
    a.extend(args(&["--http", &http]));
    a.extend(extra.iter().map(|s| s.to_string()));
    let mut server = Peer::spawn(dir, "server", &a);
    assert!(
        server
            .wait_for_log("serve: listening on udp", Duration::from_secs(15))
            .is_some(),
        "server did not start\n{}",
        server.log_text()
    );
    (server, format!("127.0.0.1:{port}"), http)
}

/// One HTTP/1.1 request from `local` (an address of 127.0.0.0/8), the whole answer.
fn request_from(local: &str, addr: &str, head: &str) -> (u16, String, Vec<u8>) {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let bind: std::net::SocketAddr = format!("{local}:0").parse().unwrap();
    socket.bind(&bind.into()).unwrap();
    let to: std::net::SocketAddr = addr.parse().unwrap();
    if let Err(e) = socket.connect_timeout(&to.into(), Duration::from_secs(5)) {
        return (0, e.to_string(), Vec::new());
    }
    let mut s: TcpStream = socket.into();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(raw.len());
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let body = raw.get(split + 4..).unwrap_or_default().to_vec();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head, body)
}

fn get(addr: &str, path: &str) -> (u16, String, Vec<u8>) {
    request_from(
        "127.0.0.1",
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    )
}

/// Polls `GET path` until `ok` holds for its body.
fn wait_page(addr: &str, path: &str, ok: impl Fn(&str) -> bool) -> String {
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let (status, _, body) = get(addr, path);
        let text = String::from_utf8_lossy(&body).into_owned();
        if status == 200 && ok(&text) {
            return text;
        }
        assert!(Instant::now() < end, "{path} never showed it:\n{text}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Chromium's flags for a run as root on a machine without a network or a display.
fn chromium_flags(profile: &Path) -> Vec<String> {
    [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
        "--hide-scrollbars",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("--user-data-dir={}", profile.display())])
    .collect()
}

/// A screenshot of `url` at `width` x `height` CSS pixels.
fn screenshot(dir: &Path, url: &str, (width, height): (u32, u32), out: &Path) {
    let profile = tempfile::tempdir_in(dir).unwrap();
    let status = Command::new("chromium")
        .args(chromium_flags(profile.path()))
        .arg(format!("--screenshot={}", out.display()))
        .arg(format!("--window-size={width},{height}"))
        .arg(url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("chromium is not installed: run .ci/setup");
    assert!(status.success(), "chromium --screenshot failed");
    let png = std::fs::read(out).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{}",
        out.display()
    );
}

/// Headless Chromium on one page, driven over the DevTools protocol; killed on drop.
struct Browser {
    child: Child,
    ws: tungstenite::WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>,
    next: u64,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start(dir: &Path) -> Browser {
        let profile = tempfile::tempdir_in(dir).unwrap();
        let port = free_tcp_port();
        let child = Command::new("chromium")
            .args(chromium_flags(profile.path()))
            .arg(format!("--remote-debugging-port={port}"))
            .arg("--window-size=1100,1300")
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium is not installed: run .ci/setup");
        let end = Instant::now() + Duration::from_secs(20);
        let page = loop {
            let (status, _, body) = get(&format!("127.0.0.1:{port}"), "/json/list");
            let list: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let ws = list.as_array().and_then(|l| {
                l.iter()
                    .find(|t| t["type"] == "page")
                    .and_then(|t| t["webSocketDebuggerUrl"].as_str().map(String::from))
            });
            match ws {
                Some(ws) if status == 200 => break ws,
                _ => {
                    assert!(Instant::now() < end, "chromium's DevTools did not come up");
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        };
        let (ws, _) = tungstenite::connect(page.as_str()).expect("DevTools websocket");
        let mut b = Browser {
            child,
            ws,
            next: 1,
            _profile: profile,
        };
        b.call("Page.enable", json!({}));
        b.call("Runtime.enable", json!({}));
        b
    }

    /// Sends a command and waits for its answer (events on the way are skipped).
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let msg = json!({"id": id, "method": method, "params": params}).to_string();
        self.ws.send(tungstenite::Message::text(msg)).unwrap();
        loop {
            let m = self.ws.read().expect("DevTools answers");
            let Ok(text) = m.to_text() else { continue };
            let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            if v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
        let end = Instant::now() + Duration::from_secs(10);
        while self.eval("document.readyState") != json!("complete") {
            assert!(Instant::now() < end, "{url} did not load");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A JavaScript expression's value (DevTools evaluates it; the page runs no script).
    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        );
        r["result"]["value"].clone()
    }

    /// Clicks at the middle of the element `selector` as a mouse would.
    fn click(&mut self, selector: &str) {
        let at = self.eval(&format!(
            "(() => {{ const e = document.querySelector({selector:?}); e.scrollIntoView(); \
             const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ));
        let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_browser_shows_the_rooms_and_replays_and_an_invite_click_joins_in_sync() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let archive = d.join("archive");
    let archive_s = archive.display().to_string();
    let (mut server, addr, http) = web_server(d, &["--archive", &archive_s]);

    // A finished match: its replay is kept.
    let mut warm_a = open_room(
        d,
        &addr,
        "warmup",
        &["--frames", "240", "--bot", "1", "--name", "ana"],
    );
    let mut warm_b = netplay_common::join_room(
        d,
        "warm-join",
        &addr,
        "warmup",
        &["--frames", "240", "--bot", "2", "--name", "bo"],
    );
    warm_b.wait_ok(Duration::from_secs(40));
    warm_a.wait_ok(Duration::from_secs(20));
    server.expect_log(
        "archive: kept room warmup's replay",
        Duration::from_secs(15),
    );

    // Two open rooms: one on the server whose creator's name holds markup, one hosted by
    // its creator with a password.
    // At most 32 bytes: a player's name is cut there.
    let evil = "<script>x</script><img src=y>'\"";
    let host_log = d.join("host.flr").display().to_string();
    let mut host = open_room(
        d,
        &addr,
        "friday",
        &[
            "--frames", "600", "--bot", "1", "--name", evil, "--record", &host_log,
        ],
    );
    let said = host.log_text();
    assert!(
        said.contains(&format!("or the link framelock://{addr}/friday")),
        "the invite link is printed beside the join command\n{said}"
    );
    let mut a = args(&[
        "host",
        "--headless",
        "--server",
        &addr,
        "--room",
        "saturday",
    ]);
    a.extend(args(&[
        "--players",
        "3",
        "--password",
        "pw",
        "--frames",
        "3000",
    ]));
    let mut hosted = Peer::spawn(d, "hosted", &a);
    hosted.expect_log("or the link framelock://", Duration::from_secs(15));
    wait_page(&http, "/", |p| {
        p.contains("room-friday") && p.contains("room-saturday")
    });

    // The page as a person sees it, on a desktop and on a phone.
    let url = format!("http://{http}/");
    screenshot(d, &url, (1100, 1300), &shots().join("page.png"));
    screenshot(d, &url, (412, 1500), &shots().join("phone.png"));

    let mut browser = Browser::start(d);
    browser.navigate(&url);
    assert_eq!(
        browser.eval("document.querySelectorAll('article.room').length"),
        json!(2)
    );
    assert_eq!(
        browser.eval("document.querySelector('#room-friday .names').textContent"),
        json!(evil),
        "the name shows as text"
    );
    assert_eq!(
        browser.eval("document.scripts.length"),
        json!(0),
        "no script got in"
    );
    assert_eq!(
        browser.eval("document.images.length"),
        json!(0),
        "no image got in"
    );
    assert_eq!(
        browser.eval("document.querySelector('#room-saturday .note').textContent"),
        json!("It has a password: framelock asks for it.")
    );
    let load = browser.eval("document.querySelector('#load').textContent");
    assert!(
        load.as_str().unwrap().starts_with("2 of 1000 rooms open"),
        "{load}"
    );
    let replay = browser.eval("document.querySelector('tr.replay').textContent");
    let replay = replay.as_str().unwrap();
    assert!(
        replay.contains("warmup") && replay.contains("ana, bo"),
        "{replay}"
    );
    let download =
        browser.eval("document.querySelector('tr.replay a.download').getAttribute('href')");
    let download = download.as_str().unwrap().to_string();

    // A click on the invite link yields the framelock:// link (kept from leaving the page).
    browser.eval(
        "window.clicked = null; document.addEventListener('click', e => { \
         const a = e.target.closest('a'); if (a) { window.clicked = a.href; e.preventDefault(); } }, true)",
    );
    browser.click("#room-friday a.invite");
    let link = browser.eval("window.clicked");
    let link = link
        .as_str()
        .expect("the click reached the link")
        .to_string();
    assert_eq!(link, format!("framelock://{addr}/friday"));
    drop(browser);

    // `framelock open` with that link joins the room and plays in sync with its host.
    let join_log = d.join("join.flr").display().to_string();
    let mut joiner = Peer::spawn(
        d,
        "open",
        &args(&[
            "open",
            &link,
            "--headless",
            "--frames",
            "600",
            "--bot",
            "2",
            "--record",
            &join_log,
        ]),
    );
    joiner.wait_ok(Duration::from_secs(60));
    host.wait_ok(Duration::from_secs(30));
    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_eq!(h["frames"].as_u64(), Some(600));
    assert_eq!(
        checksum(&h),
        checksum(&j),
        "host and the link's joiner differ"
    );
    assert_eq!(j["room"].as_str(), Some("friday"));
    assert_log_verifies(d, Path::new(&join_log));

    // The downloaded replay verifies, and so does the same one fetched by its link.
    let (status, head, bytes) = get(&http, &download);
    assert_eq!(status, 200, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-disposition: attachment"),
        "{head}"
    );
    let file = d.join("downloaded.flr");
    std::fs::write(&file, &bytes).unwrap();
    assert_log_verifies(d, &file);
    let id = download
        .trim_start_matches("/replay/")
        .trim_end_matches(".flr");
    let fetched = netplay_common::framelock(d)
        .args(["replay", &format!("framelock://{addr}/replay/{id}")])
        .args(["--headless", "--fast", "--verify"])
        .output()
        .unwrap();
    assert!(
        fetched.status.success(),
        "{}",
        netplay_common::text(&fetched)
    );
    // The friday match is kept too, and `framelock replays` lists both.
    server.expect_log(
        "archive: kept room friday's replay",
        Duration::from_secs(15),
    );
    let out = netplay_common::framelock(d)
        .args(["replays", &addr, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", netplay_common::text(&out));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rooms: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["room"].as_str())
        .collect();
    assert_eq!(rooms, ["friday", "warmup"], "newest first");

    // /rooms.json is `rooms --json`; /metrics the server's metrics.
    // The page shows the rooms as of its last snapshot, at most a second old.
    let body = wait_page(&http, "/rooms.json", |p| !p.contains("friday"));
    let web: Value = serde_json::from_str(&body).unwrap();
    let out = netplay_common::framelock(d)
        .args(["rooms", &addr, "--json"])
        .output()
        .unwrap();
    let cli: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| r["room"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(names(&web), names(&cli));
    assert_eq!(names(&web), ["saturday"]);
    let (status, _, metrics) = get(&http, "/metrics");
    assert_eq!(status, 200);
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(metrics.contains("framelock_rooms"), "{metrics}");
    assert!(
        metrics.contains("framelock_replays_recorded_total 2"),
        "{metrics}"
    );
    hosted.kill();
    server.interrupt();
    server.wait_ok(Duration::from_secs(15));
}

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

/// A tmpfs mounted for the test and unmounted when it ends, passed or failed.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Plays a short match in room `room` to its end.
fn play_match(d: &Path, addr: &str, room: &str) -> (Value, Value) {
    let mut host = open_room(
        d,
        addr,
        room,
        &["--frames", "180", "--bot", "1", "--no-record"],
    );
    let mut join = netplay_common::join_room(
        d,
        &format!("{room}-join"),
        addr,
        room,
        &["--frames", "180", "--bot", "2", "--no-record"],
    );
    join.wait_ok(Duration::from_secs(40));
    host.wait_ok(Duration::from_secs(20));
    (host.read_stats(), join.read_stats())
}

#[test]
fn a_full_disk_costs_the_replay_being_written_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let disk = d.join("disk");
    let Some(_mounted) = Tmpfs::mount(&disk, "256k") else {
        // Mounting needs root, as CI runs; say so rather than pass quietly.
        panic!("cannot mount a tmpfs for the full disk (run as root, as CI does)");
    };
    let archive = disk.join("archive");
    let archive_s = archive.display().to_string();
    let (mut server, addr, http) = web_server(d, &["--archive", &archive_s]);
    play_match(d, &addr, "first");
    server.expect_log("archive: kept room first's replay", Duration::from_secs(10));
    let kept: Vec<PathBuf> = std::fs::read_dir(&archive)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let before: Vec<(PathBuf, Vec<u8>)> = kept
        .iter()
        .map(|p| (p.clone(), std::fs::read(p).unwrap()))
        .collect();
    assert_eq!(before.len(), 2, "{kept:?}");

    // The disk fills up: the next replay cannot be written.
    let filler = disk.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let block = vec![0u8; 4096];
    while f.write_all(&block).and_then(|()| f.sync_all()).is_ok() {}
    drop(f);
    let (h, j) = play_match(d, &addr, "second");
    assert_eq!(checksum(&h), checksum(&j), "the room played on");
    server.expect_log(
        "archive: cannot keep room second's replay",
        Duration::from_secs(10),
    );
    for (path, bytes) in &before {
        assert_eq!(
            &std::fs::read(path).unwrap(),
            bytes,
            "{} changed",
            path.display()
        );
    }
    let tmp: Vec<_> = std::fs::read_dir(&archive)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(tmp.is_empty(), "half-written files left: {tmp:?}");
    let page = wait_page(&http, "/", |p| p.contains("Recent replays (1)"));
    assert!(page.contains("first"));

    // Room on the disk again: the next one is kept.
    std::fs::remove_file(&filler).unwrap();
    play_match(d, &addr, "third");
    server.expect_log("archive: kept room third's replay", Duration::from_secs(10));
    server.interrupt();
    server.wait_ok(Duration::from_secs(15));
    let a = &server.read_stats()["archive"];
    assert_eq!(
        (a["kept"].as_u64(), a["write_errors"].as_u64()),
        (Some(2), Some(1)),
        "{a}"
    );
}

#[test]
fn the_oldest_replays_go_first_when_the_archive_is_full() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let archive = d.join("archive");
    let archive_s = archive.display().to_string();
    // Replays of these matches take about 2 KiB: a 1 MiB cap is far. A cap can only be
    // given in MiB, so the archive is filled with old replays of its own first.
    std::fs::create_dir_all(&archive).unwrap();
    for i in 0..3u32 {
        let id = format!("{:016x}", 0xdead_0000u64 + u64::from(i));
        let entry = json!({
            "id": id, "room": format!("old{i}"), "game": "", "core": "lightcycles",
            "players": "x", "created_unix": 1_700_000_000 + i64::from(i), "frames": 60,
            "fps_milli": 60000, "bytes": 400 * 1024, "server": "", "kept_unix": 1_700_000_000 + i64::from(i),
        });
        std::fs::write(archive.join(format!("{id}.json")), entry.to_string()).unwrap();
        std::fs::write(archive.join(format!("{id}.flr")), vec![0u8; 400 * 1024]).unwrap();
    }
    let (mut server, addr, _http) = web_server(d, &["--archive", &archive_s, "--archive-mib", "1"]);
    server.expect_log("(3 kept, 1 of 1 MiB)", Duration::from_secs(5));
    play_match(d, &addr, "fresh");
    server.expect_log("archive: kept room fresh's replay", Duration::from_secs(10));
    server.expect_log(
        "dropped the oldest replay 00000000dead0000",
        Duration::from_secs(5),
    );
    let out = netplay_common::framelock(d)
        .args(["replays", &addr, "--json"])
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rooms: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["room"].as_str())
        .collect();
    assert_eq!(rooms, ["fresh", "old2", "old1"]);
    assert!(!archive.join("00000000dead0000.flr").exists());
}
