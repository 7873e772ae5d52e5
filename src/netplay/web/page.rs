//! The server's page (`serve --http`): one HTML document with its CSS inline, rendered
//! from a [`Snapshot`] the serve loop published. No script, no external asset, no form:
//! the page is served with a content security policy that forbids all three, and every
//! string that came from a player (room, game, core and player names) is escaped here
//! ([`esc`]), so that a name holding markup shows as text. Imports nothing of the server
//! but the snapshot's types.

use std::fmt::Write;

use crate::serve::RoomView;
use crate::session::msg::{RoomInfo, ServerInfo};

use super::super::archive::Entry;
use super::super::links;

/// What the page shows, as the serve loop last published it.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Wall clock when it was taken, unix seconds.
    pub taken_unix: i64,
    /// The server's public address (`--public-address`), if given.
    pub public: Option<String>,
    /// The server's UDP port.
    pub udp_port: u16,
    /// Its load.
    pub load: Option<ServerInfo>,
    /// Spectators watching in its rooms.
    pub spectators: usize,
    /// Its rooms.
    pub rooms: Vec<RoomView>,
    /// The fleet's other members' rooms.
    pub fleet_rooms: Vec<RoomInfo>,
    /// The fleet's members (this one too); empty for a lone server.
    pub servers: Vec<ServerInfo>,
    /// The archive is on (`--archive`).
    pub archive: bool,
    /// Bytes of replays kept here, and the cap.
    pub archive_bytes: (u64, u64),
}

impl Snapshot {
    /// Every room, the fleet's too, as `framelock rooms` lists them.
    pub fn all_rooms(&self) -> Vec<RoomInfo> {
        let mut all: Vec<RoomInfo> = self.rooms.iter().map(|r| r.info.clone()).collect();
        all.extend(self.fleet_rooms.iter().cloned());
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }
}

/// `s` as HTML text or a quoted attribute value: markup characters as entities, control
/// characters dropped.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `HOST:PORT` players reach `server` at: its public address, else the host the browser
/// asked for (if it is one a link may name) with the UDP port.
pub fn server_name(snap: &Snapshot, host_header: Option<&str>) -> String {
    if let Some(p) = &snap.public {
        return p.clone();
    }
    let host = host_header
        .map(|h| match h.rsplit_once(':') {
            // A port after a name or a bracketed address, not inside an IPv6 address.
            Some((name, port))
                if !name.is_empty() && !port.contains(']') && !name.ends_with(':') =>
            {
                name
            }
            _ => h,
        })
        .filter(|h| links::parse(&format!("framelock://{h}")).is_ok());
    let host = host.unwrap_or("THIS-SERVER");
    if snap.udp_port == super::super::DEFAULT_PORT {
        host.to_string()
    } else {
        format!("{host}:{}", snap.udp_port)
    }
}

fn age(secs: u32) -> String {
    match secs {
        0..=59 => format!("{secs} s"),
        60..=3599 => format!("{} min", secs / 60),
        _ => format!("{} h {:02} min", secs / 3600, secs % 3600 / 60),
    }
}

fn length(seconds: f64) -> String {
    let s = seconds.round() as u64;
    format!("{}:{:02}", s / 60, s % 60)
}

fn date(unix: i64) -> String {
    chrono::DateTime::from_timestamp(unix, 0)
        .map(|d| d.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default()
}

const STYLE: &str = "\
:root{color-scheme:light dark;--bg:#f6f7f9;--card:#fff;--fg:#1b1f24;--dim:#5b6470;--acc:#0b62d6;--line:#d9dde3}
@media (prefers-color-scheme:dark){:root{--bg:#111418;--card:#1b2027;--fg:#e8ebef;--dim:#9aa4b1;--acc:#6aa8ff;--line:#2c333c}}
*{box-sizing:border-box}body{margin:0;font:16px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;background:var(--bg);color:var(--fg)}
header,main,footer{max-width:60rem;margin:0 auto;padding:0 1rem}header{padding-top:1rem}
h1{font-size:1.4rem;margin:.2rem 0}h2{font-size:1.15rem;margin:1.4rem 0 .6rem}h3{font-size:1.05rem;margin:0 0 .4rem;overflow-wrap:anywhere}
.load{color:var(--dim);margin:.2rem 0}.grid{display:grid;gap:.75rem;grid-template-columns:repeat(auto-fill,minmax(17rem,1fr))}
.card{background:var(--card);border:1px solid var(--line);border-radius:.6rem;padding:.8rem}
dl{display:grid;grid-template-columns:auto 1fr;gap:.1rem .6rem;margin:.3rem 0}dt{color:var(--dim)}dd{margin:0;overflow-wrap:anywhere}
.badge{font-size:.75rem;border:1px solid var(--line);border-radius:1rem;padding:0 .45rem;color:var(--dim);vertical-align:middle}
.playing{color:#1a8a3a;border-color:#1a8a3a}a{color:var(--acc)}
.btn{display:inline-block;margin:.3rem .4rem .3rem 0;padding:.35rem .8rem;border-radius:.4rem;background:var(--acc);color:#fff;text-decoration:none;font-weight:600}
.btn.alt{background:transparent;color:var(--acc);border:1px solid var(--acc)}
code,pre{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}pre{margin:.25rem 0;padding:.4rem .5rem;background:var(--bg);border-radius:.35rem;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3rem .4rem;border-bottom:1px solid var(--line)}
.scroll{overflow-x:auto}.note{color:var(--dim);font-size:.9rem;margin:.2rem 0}
@media (max-width:32rem){td,th{padding:.25rem .2rem;font-size:.88rem}}
.empty{color:var(--dim)}footer{color:var(--dim);font-size:.85rem;padding:1.5rem 1rem}
";

/// The page for a browser that asked for `host_header`, with the replays `replays` (newest
/// first) and this server's HTTP port (the fleet's members are linked at the same port).
pub fn render(
    snap: &Snapshot,
    host_header: Option<&str>,
    replays: &[Entry],
    http_port: u16,
) -> String {
    let me = server_name(snap, host_header);
    let mut h = String::with_capacity(4096 + snap.rooms.len() * 1400);
    let _ = write!(
        h,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>framelock server {}</title><style>{STYLE}</style></head><body>",
        esc(&me)
    );
    let rooms_here = snap.rooms.len();
    let _ = write!(
        h,
        "<header><h1>framelock server <code>{}</code></h1>",
        esc(&me)
    );
    if let Some(load) = &snap.load {
        let _ = write!(
            h,
            "<p class=\"load\" id=\"load\">{} of {} rooms open · {} players · {} watching",
            load.rooms, load.max_rooms, load.players, snap.spectators
        );
        if !load.region.is_empty() {
            let _ = write!(h, " · region {}", esc(&load.region));
        }
        if snap.archive {
            let (bytes, cap) = snap.archive_bytes;
            let _ = write!(
                h,
                " · replays {:.1} of {} MiB",
                bytes as f64 / f64::from(1 << 20),
                cap >> 20
            );
        }
        h.push_str("</p>");
    }
    h.push_str("</header><main>");

    let _ = write!(
        h,
        "<section id=\"rooms\"><h2>Open rooms ({rooms_here})</h2>"
    );
    if snap.rooms.is_empty() {
        let _ = write!(
            h,
            "<p class=\"empty\">No room is open. Open one with <code>framelock host --server {}</code>.</p>",
            esc(&me)
        );
    } else {
        h.push_str("<div class=\"grid\">");
        for r in &snap.rooms {
            room_card(&mut h, &r.info, Some(r), &me);
        }
        h.push_str("</div>");
    }
    h.push_str("</section>");

    if !snap.servers.is_empty() {
        let _ = write!(
            h,
            "<section id=\"fleet\"><h2>The fleet ({} servers)</h2><div class=\"scroll\"><table><thead><tr><th>Server</th>\
             <th>Region</th><th>Rooms</th><th>Players</th></tr></thead><tbody>",
            snap.servers.len()
        );
        for s in &snap.servers {
            let host = s
                .server
                .rsplit_once(':')
                .map_or(s.server.as_str(), |(h, _)| h);
            let _ = write!(
                h,
                "<tr><td><a href=\"http://{}:{http_port}/\">{}</a></td><td>{}</td><td>{} of {}</td><td>{}</td></tr>",
                esc(host),
                esc(&s.server),
                esc(&s.region),
                s.rooms,
                s.max_rooms,
                s.players
            );
        }
        h.push_str("</tbody></table></div>");
        if !snap.fleet_rooms.is_empty() {
            let _ = write!(
                h,
                "<h2>Rooms on the fleet's other servers ({})</h2><div class=\"grid\">",
                snap.fleet_rooms.len()
            );
            for r in &snap.fleet_rooms {
                let server = if r.server.is_empty() { &me } else { &r.server };
                room_card(&mut h, r, None, server);
            }
            h.push_str("</div>");
        }
        h.push_str("</section>");
    }

    if snap.archive {
        let _ = write!(
            h,
            "<section id=\"replays\"><h2>Recent replays ({})</h2>",
            replays.len()
        );
        if replays.is_empty() {
            h.push_str("<p class=\"empty\">No replay kept yet: finished games show here.</p>");
        } else {
            h.push_str(
                "<div class=\"scroll\"><table><thead><tr><th>Game</th><th>Room</th><th>Players</th><th>Date</th>\
                 <th>Length</th><th>Replay</th></tr></thead><tbody>",
            );
            for e in replays.iter().take(100) {
                let link = links::replay_link(&me, &e.id);
                let game = if e.game.is_empty() {
                    "built-in game"
                } else {
                    &e.game
                };
                let _ = write!(
                    h,
                    "<tr class=\"replay\" id=\"replay-{id}\"><td>{}<br><small>{}</small></td><td>{}</td><td>{}</td>\
                     <td>{}</td><td>{}</td><td><a class=\"download\" href=\"/replay/{id}.flr\" \
                     download=\"{id}.flr\">download</a><br><a class=\"open\" href=\"{}\">open</a></td></tr>",
                    esc(game),
                    esc(&e.core),
                    esc(&e.room),
                    esc(&e.players),
                    date(e.created_unix),
                    length(e.info().seconds()),
                    esc(&link),
                    id = esc(&e.id),
                );
            }
            h.push_str("</tbody></table></div>");
            let _ = write!(
                h,
                "<p>Watch one with <code>framelock replay framelock://{}/replay/ID</code>; list \
                 them with <code>framelock replays {}</code>.</p>",
                esc(&me),
                esc(&me)
            );
        }
        h.push_str("</section>");
    }
    let _ = write!(
        h,
        "</main><footer>Links open framelock (<code>framelock open --register</code> sets it \
         up). Host a room here with <code>framelock host --server {}</code>. \
         <a href=\"/rooms.json\">rooms.json</a>{}</footer></body></html>",
        esc(&me),
        if snap.archive {
            " · <a href=\"/replays.json\">replays.json</a>"
        } else {
            ""
        }
    );
    h
}

/// One room's card: its invite link, what it plays, who is in, and the commands.
fn room_card(h: &mut String, r: &RoomInfo, here: Option<&RoomView>, server: &str) {
    let join = links::room_link(server, &r.name);
    let watch = format!("{join}?watch");
    let state = if r.playing { "playing" } else { "lobby" };
    let _ = write!(
        h,
        "<article class=\"card room\" id=\"room-{n}\"><h3><a class=\"invite\" href=\"{}\">{n}</a> \
         <span class=\"badge {state}\">{state}</span>{}</h3><dl>",
        esc(&join),
        if r.password {
            " <span class=\"badge\">password</span>"
        } else {
            ""
        },
        n = esc(&r.name),
    );
    let game = if r.content.is_empty() {
        "built-in game"
    } else {
        &r.content
    };
    let _ = write!(
        h,
        "<dt>Game</dt><dd>{}</dd><dt>Core</dt><dd>{}</dd><dt>Players</dt><dd>{} of {}",
        esc(game),
        esc(&r.core),
        r.players,
        r.seats
    );
    if let Some(v) = here {
        let names: Vec<String> = v
            .names
            .iter()
            .filter(|n| !n.is_empty())
            .map(|n| esc(n))
            .collect();
        if !names.is_empty() {
            let _ = write!(h, ": <span class=\"names\">{}</span>", names.join(", "));
        }
    }
    let _ = write!(
        h,
        "</dd><dt>Watching</dt><dd>{}</dd><dt>Open for</dt><dd>{}</dd><dt>Mode</dt><dd>{}</dd>",
        r.spectators,
        age(r.age_secs),
        r.mode.as_str()
    );
    if let Some(v) = here {
        let _ = write!(
            h,
            "<dt>Paths</dt><dd>DIRECT {} · RELAYED {}</dd>",
            v.direct, v.relayed
        );
    }
    if !r.region.is_empty() {
        let _ = write!(h, "<dt>Region</dt><dd>{}</dd>", esc(&r.region));
    }
    let content = if r.content.is_empty() {
        String::new()
    } else {
        format!(" {}", super::super::invite::shell_word(&r.content))
    };
    h.push_str("</dl>");
    if r.password {
        h.push_str("<p class=\"note\">It has a password: framelock asks for it.</p>");
    }
    let _ = write!(
        h,
        "<a class=\"btn join\" href=\"{}\">Join</a><a class=\"btn alt watch\" href=\"{}\">Watch</a>\
         <pre>framelock join {s} --room {n}{c}</pre><pre>framelock spectate {s} --room {n}{c}</pre></article>",
        esc(&join),
        esc(&watch),
        s = esc(server),
        n = esc(&r.name),
        c = esc(&content),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lockstep::Mode;

    fn room(name: &str, game: &str) -> RoomInfo {
        RoomInfo {
            name: name.into(),
            content: game.into(),
            core: "Genesis Plus GX".into(),
            players: 1,
            seats: 2,
            password: false,
            playing: false,
            age_secs: 75,
            spectators: 0,
            mode: Mode::Strict,
            region: String::new(),
            server: String::new(),
        }
    }

    #[test]
    fn names_holding_markup_quotes_and_control_characters_show_as_text() {
        let evil = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>\u{1b}[2J\u{0}";
        let snap = Snapshot {
            udp_port: 7845,
            load: Some(ServerInfo {
                server: String::new(),
                region: "<b>eu</b>".into(),
                rooms: 1,
                max_rooms: 10,
                players: 1,
            }),
            rooms: vec![RoomView {
                info: room("fri-day", evil),
                names: vec![evil.into(), "ana".into()],
                direct: 0,
                relayed: 1,
            }],
            archive: true,
            ..Snapshot::default()
        };
        let replay = Entry {
            id: "00ab".into(),
            room: "r".into(),
            game: evil.into(),
            core: evil.into(),
            players: evil.into(),
            created_unix: 0,
            frames: 60,
            fps_milli: 60_000,
            bytes: 100,
            server: String::new(),
            kept_unix: 0,
        };
        // A Host header holding markup is no host a link names.
        let page = render(&snap, Some("x\"><script>y</script>"), &[replay], 8080);
        for bad in ["<script", "<img", "\u{1b}", "\u{0}", "<b>eu"] {
            assert!(!page.contains(bad), "{bad:?} in the page");
        }
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&gt;&lt;img"));
        assert!(page.contains("href=\"framelock://THIS-SERVER/fri-day\""));
        // A quote in a name cannot end an attribute: every attribute value is escaped.
        assert_eq!(page.matches("<a ").count(), page.matches("</a>").count());
    }

    #[test]
    fn links_name_the_host_the_browser_used_and_the_udp_port() {
        let mut snap = Snapshot {
            udp_port: 7900,
            ..Snapshot::default()
        };
        assert_eq!(
            server_name(&snap, Some("play.example.org:8080")),
            "play.example.org:7900"
        );
        assert_eq!(server_name(&snap, Some("[::1]:8080")), "[::1]:7900");
        assert_eq!(server_name(&snap, Some("127.0.0.1")), "127.0.0.1:7900");
        assert_eq!(server_name(&snap, None), "THIS-SERVER:7900");
        snap.udp_port = 7845;
        assert_eq!(server_name(&snap, Some("h:1")), "h");
        snap.public = Some("203.0.113.7:7845".into());
        assert_eq!(server_name(&snap, Some("h:1")), "203.0.113.7:7845");
    }
}
