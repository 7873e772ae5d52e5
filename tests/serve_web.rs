//! A server's web page, invite links and shared replays with real processes on 127.0.0.1:
//! headless Chromium (Debian's, driven over the DevTools protocol) opens the page of a
//! `serve --http --archive` with two rooms and a finished match, shows the rooms and the
//! replay, and a click on an invite link yields the `framelock://` link that `framelock open`
//! then joins with, in sync; the downloaded replay verifies; names holding markup stay
//! text; the page's HTTP side holds off slow and greedy clients; `framelock open` refuses
//! what is no framelock link; a full disk costs the replay being written and nothing else.
//! The refusals (`refusals`) and the full disk (`replay_space`) have files under serve_web/.

mod netplay_common;
#[path = "serve_web/refusals.rs"]
mod refusals;
#[path = "serve_web/replay_space.rs"]
mod replay_space;

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
