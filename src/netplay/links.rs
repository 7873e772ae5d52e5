//! Invite and replay links: `framelock://` URLs a player pastes in a chat app or clicks on a
//! server's page, and what `framelock open` makes of them. Words only: it must not import
//! the link, the session or the window.
//!
//! # Grammar
//! ```text
//! framelock://HOST[:PORT]/ROOM[?watch]     a room on a server (`framelock serve`)
//! framelock://HOST[:PORT][/][?watch]       a host listening itself (`framelock host`)
//! framelock://HOST[:PORT]/replay/ID        a replay the server keeps (`serve --archive`)
//! ```
//! HOST is a DNS name, an IPv4 address or a bracketed IPv6 address; PORT the server's (or
//! host's) UDP port, 7845 when left out; ROOM a room name as `valid_room_name` takes it;
//! ID a replay's id (lower-case hex). A link never carries a password: the joiner is asked
//! for it. Nothing else is accepted: no user, no percent-escapes, no parameter but `watch`,
//! no fragment, at most [`MAX_LINK`] bytes, so that a link can do nothing but name where to
//! join, watch or fetch.

use std::fmt;

use super::DEFAULT_PORT;
use crate::serve::valid_room_name;

/// The scheme, as links are written (parsed case-insensitively).
pub const SCHEME: &str = "framelock";
/// Longest link taken.
pub const MAX_LINK: usize = 512;

/// Where a link leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A room on a server: `server` is `HOST[:PORT]` as `join` takes it.
    Room {
        server: String,
        room: String,
        watch: bool,
    },
    /// A host listening itself: `HOST[:PORT]`.
    Direct { host: String, watch: bool },
    /// A replay a server keeps.
    Replay { server: String, id: String },
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Room {
                server,
                room,
                watch,
            } => write!(
                f,
                "{SCHEME}://{server}/{room}{}",
                if *watch { "?watch" } else { "" }
            ),
            Target::Direct { host, watch } => {
                write!(
                    f,
                    "{SCHEME}://{host}{}",
                    if *watch { "/?watch" } else { "" }
                )
            }
            Target::Replay { server, id } => write!(f, "{SCHEME}://{server}/replay/{id}"),
        }
    }
}

/// The invite link of a room on `server` (`HOST[:PORT]` as typed).
pub fn room_link(server: &str, room: &str) -> String {
    Target::Room {
        server: server.to_string(),
        room: room.to_string(),
        watch: false,
    }
    .to_string()
}

/// The invite link of a host listening at `host` (`HOST:PORT`).
pub fn direct_link(host: &str) -> String {
    Target::Direct {
        host: host.to_string(),
        watch: false,
    }
    .to_string()
}

/// The link of replay `id` kept by `server`.
pub fn replay_link(server: &str, id: &str) -> String {
    Target::Replay {
        server: server.to_string(),
        id: id.to_string(),
    }
    .to_string()
}

/// Whether `id` is a replay id: 1 to 32 lower-case hex digits.
pub fn valid_replay_id(id: &str) -> bool {
    (1..=32).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A link read, or why not (the message names the problem).
pub fn parse(link: &str) -> Result<Target, String> {
    let link = link.trim();
    if link.len() > MAX_LINK {
        return Err(format!(
            "a link is at most {MAX_LINK} bytes; this one has {}",
            link.len()
        ));
    }
    if let Some(c) = link.chars().find(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!("the link holds {c:?}, which no framelock link has"));
    }
    let Some((scheme, rest)) = link.split_once("://") else {
        return Err(format!("{link:?} is not a framelock:// link"));
    };
    if !scheme.eq_ignore_ascii_case(SCHEME) {
        return Err(format!(
            "{scheme}:// links are not framelock's: only framelock:// links are opened"
        ));
    }
    if rest.contains('#') {
        return Err("a framelock link has no #fragment".into());
    }
    if rest.contains('%') {
        return Err("a framelock link has no %-escapes".into());
    }
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let watch = match query {
        None => false,
        Some("watch") | Some("watch=1") | Some("watch=true") => true,
        Some(q) => {
            return Err(format!(
                "the link asks for {q:?}; a framelock link only joins, or watches with ?watch"
            ))
        }
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    let server = authority_of(authority)?;
    let path = path.strip_suffix('/').unwrap_or(path);
    let parts: Vec<&str> = if path.is_empty() {
        Vec::new()
    } else {
        path.split('/').collect()
    };
    match parts.as_slice() {
        [] => Ok(Target::Direct {
            host: server,
            watch,
        }),
        ["replay", id] if query.is_none() => {
            if valid_replay_id(id) {
                Ok(Target::Replay {
                    server,
                    id: id.to_string(),
                })
            } else {
                Err(format!("{id:?} is no replay id (hex digits)"))
            }
        }
        [room] if valid_room_name(room) => Ok(Target::Room {
            server,
            room: room.to_string(),
            watch,
        }),
        [room] => Err(format!(
            "{room:?} is no room name (1 to 32 letters, digits, '-' and '_')"
        )),
        _ => Err(format!(
            "the link's path /{path} is neither a room nor /replay/ID"
        )),
    }
}

/// `HOST[:PORT]` checked: a DNS name, IPv4 or bracketed IPv6 address, a port 1 to 65535.
fn authority_of(a: &str) -> Result<String, String> {
    if a.is_empty() {
        return Err("the link names no server".into());
    }
    if a.contains('@') {
        return Err("a framelock link carries no user or password".into());
    }
    let (host, port) = if let Some(v6) = a.strip_prefix('[') {
        let Some((ip, after)) = v6.split_once(']') else {
            return Err("an IPv6 address opened with [ needs its ]".into());
        };
        if ip.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("{ip:?} is no IPv6 address"));
        }
        match after {
            "" => (a, None),
            p if p.starts_with(':') => (&a[..a.len() - p.len()], Some(&p[1..])),
            _ => return Err(format!("{a:?} is no HOST[:PORT]")),
        }
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    if !host.starts_with('[') {
        let name_ok = |label: &str| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
        };
        if host.len() > 253 || !host.split('.').all(name_ok) {
            return Err(format!("{host:?} is no host name or address"));
        }
    }
    match port {
        None => Ok(host.to_string()),
        Some(p) => match p.parse::<u16>() {
            Ok(0) | Err(_) => Err(format!("{p:?} is no port (1 to 65535)")),
            Ok(n) if n == DEFAULT_PORT => Ok(host.to_string()),
            Ok(n) => Ok(format!("{host}:{n}")),
        },
    }
}

/// The desktop entry that registers `framelock open` as the handler of `framelock://`
/// links (the `x-scheme-handler/framelock` MIME type), with `exec` the framelock binary's
/// path. A package installs it in `/usr/share/applications/framelock-open.desktop`;
/// `framelock open --register` writes it to `~/.local/share/applications` and, if
/// `xdg-mime` is there, makes it the default handler. The file, for `/usr/bin/framelock`:
/// ```text
/// [Desktop Entry]
/// Type=Application
/// Name=framelock
/// Comment=Join a framelock netplay game from an invite link
/// Exec=/usr/bin/framelock open %u
/// Terminal=false
/// NoDisplay=true
/// MimeType=x-scheme-handler/framelock;
/// Categories=Game;
/// ```
pub fn desktop_entry(exec: &str) -> String {
    // The Exec key's quoting rules: a path with a space or a quote is quoted, with its
    // quotes and backslashes escaped.
    let exec = if exec.chars().any(|c| " \t\"'\\$`".contains(c)) {
        let escaped: String = exec
            .chars()
            .flat_map(|c| match c {
                '"' | '`' | '$' | '\\' => vec!['\\', c],
                c => vec![c],
            })
            .collect();
        format!("\"{escaped}\"")
    } else {
        exec.to_string()
    };
    format!(
        "[Desktop Entry]\nType=Application\nName=framelock\nComment=Join a framelock netplay \
         game from an invite link\nExec={exec} open %u\nTerminal=false\nNoDisplay=true\n\
         MimeType=x-scheme-handler/{SCHEME};\nCategories=Game;\n"
    )
}

/// The desktop entry's file name.
pub const DESKTOP_FILE: &str = "framelock-open.desktop";

#[cfg(test)]
mod tests {
    use super::*;

    fn room(server: &str, room: &str, watch: bool) -> Target {
        Target::Room {
            server: server.into(),
            room: room.into(),
            watch,
        }
    }

    #[test]
    fn links_name_rooms_hosts_and_replays() {
        assert_eq!(
            parse("framelock://play.example.org/friday").unwrap(),
            room("play.example.org", "friday", false)
        );
        assert_eq!(
            parse("FRAMELOCK://play.example.org:7900/amber-otter-42/?watch").unwrap(),
            room("play.example.org:7900", "amber-otter-42", true)
        );
        // The default port is left out, so the join command reads as typed.
        assert_eq!(
            parse("framelock://192.0.2.7:7845").unwrap(),
            Target::Direct {
                host: "192.0.2.7".into(),
                watch: false
            }
        );
        assert_eq!(
            parse("framelock://[2001:db8::1]:9000/?watch").unwrap(),
            Target::Direct {
                host: "[2001:db8::1]:9000".into(),
                watch: true
            }
        );
        assert_eq!(
            parse("framelock://[::1]/replay/00ff3a").unwrap(),
            Target::Replay {
                server: "[::1]".into(),
                id: "00ff3a".into()
            }
        );
        for t in [
            room("h.example:9", "r_1", true),
            Target::Direct {
                host: "[::1]:9".into(),
                watch: true,
            },
            Target::Replay {
                server: "h".into(),
                id: "ab".into(),
            },
        ] {
            assert_eq!(parse(&t.to_string()).unwrap(), t);
        }
        assert_eq!(room_link("h:9", "r"), "framelock://h:9/r");
        assert_eq!(direct_link("192.0.2.1:7845"), "framelock://192.0.2.1:7845");
    }

    #[test]
    fn links_that_could_do_more_than_join_are_refused_saying_why() {
        for (bad, why) in [
            ("https://example.org/r", "only framelock:// links"),
            ("file:///etc/passwd", "only framelock:// links"),
            ("javascript://alert(1)", "only framelock:// links"),
            ("framelock:room", "not a framelock:// link"),
            ("framelock://h/r?password=x", "only joins"),
            ("framelock://h/r?exec=sh", "only joins"),
            ("framelock://user:pw@h/r", "no user or password"),
            ("framelock://h/r%20x", "%-escapes"),
            ("framelock://h/r#x", "fragment"),
            ("framelock://h/a/b", "neither a room"),
            ("framelock://h/a;rm -rf", "holds ' '"),
            ("framelock://h/$(id)", "no room name"),
            ("framelock://h:0/r", "no port"),
            ("framelock://h:70000/r", "no port"),
            ("framelock://-h/r", "no host name"),
            ("framelock://h_x/r", "no host name"),
            ("framelock://[::1/r", "needs its ]"),
            ("framelock:///r", "names no server"),
            ("framelock://h/replay/XYZ", "no replay id"),
            ("framelock://h/replay/ab?watch", "neither a room"),
            ("framelock://h/r\n--core=/tmp/x.so", "holds '\\n'"),
        ] {
            let e = parse(bad).expect_err(bad);
            assert!(e.contains(why), "{bad}: {e}");
        }
        assert!(parse(&format!("framelock://h/{}", "a".repeat(600)))
            .unwrap_err()
            .contains("at most"));
    }

    #[test]
    fn the_desktop_entry_registers_the_scheme_and_passes_the_link_as_one_argument() {
        let e = desktop_entry("/usr/bin/framelock");
        assert!(e.contains("Exec=/usr/bin/framelock open %u\n"));
        assert!(e.contains("MimeType=x-scheme-handler/framelock;\n"));
        let e = desktop_entry("/home/a b/framelock");
        assert!(e.contains("Exec=\"/home/a b/framelock\" open %u\n"), "{e}");
    }
}
