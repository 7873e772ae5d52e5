//! `framelock replays HOST` and `framelock replay framelock://HOST/replay/ID`: the replays a
//! server keeps (`serve --archive`), listed and fetched over the server's UDP port like
//! `framelock rooms`, and a hosted room's recording uploaded to its server after the game
//! (`Room/Share`). Every request a stranger sends is padded to a full datagram, so the
//! server never answers with more than it was sent.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::net::Link;
use crate::session::msg::{Msg, ReplayInfo, RoomMsg, REPLAY_PIECE};

use super::address::resolve;
use super::NetplayError;

/// Silence after which a listing, a fetch or an upload gives up.
const SILENCE: Duration = Duration::from_secs(5);
/// An upload whose server never answered gives up sooner: the player is leaving.
const FIRST_ANSWER: Duration = Duration::from_millis(1500);
/// A request not answered within this is sent again.
const RESEND: Duration = Duration::from_millis(300);
/// Pieces asked for (or sent) at once.
const WINDOW: u32 = 16;

fn silent(addr: SocketAddr, heard: bool) -> NetplayError {
    NetplayError::Join(if heard {
        crate::session::SessionError::HostSilent { secs: 5 }
    } else {
        crate::session::SessionError::NoAnswer { addr, secs: 5 }
    })
}

/// The replays `server` keeps, newest first.
pub fn list_replays(server: &str) -> Result<Vec<ReplayInfo>, NetplayError> {
    let addr = resolve(server)?;
    let mut link = Link::client(addr, None)?;
    let mut out: Vec<ReplayInfo> = Vec::new();
    let mut total: Option<u16> = None;
    let mut heard_at = Instant::now();
    let mut heard = false;
    let mut asked: Option<Instant> = None;
    while total.is_none_or(|t| out.len() < usize::from(t)) {
        let now = Instant::now();
        if now >= heard_at + SILENCE {
            return Err(silent(addr, heard));
        }
        if asked.is_none_or(|t| now >= t + RESEND) {
            asked = Some(now);
            let first = out.len().min(usize::from(u16::MAX)) as u16;
            link.send(
                now,
                addr,
                Msg::Room(RoomMsg::ListReplays { first }).encode(0),
            );
        }
        for (from, bytes) in link.recv(now)? {
            if from != addr {
                continue;
            }
            match Msg::decode(&bytes) {
                Ok((
                    _,
                    Msg::Room(RoomMsg::Replays {
                        total: t,
                        first,
                        replays,
                    }),
                )) if usize::from(first) == out.len() => {
                    heard = true;
                    heard_at = now;
                    total = Some(if replays.is_empty() {
                        out.len() as u16
                    } else {
                        t
                    });
                    out.extend(replays);
                    asked = None;
                }
                Ok((_, Msg::Refuse(reason))) => {
                    return Err(NetplayError::Join(crate::session::SessionError::Refused(
                        reason,
                    )))
                }
                _ => {}
            }
        }
        link.wait_until(now, Some(now + Duration::from_millis(20)))?;
    }
    Ok(out)
}

/// The table `framelock replays` prints.
pub fn replays_table(server: &str, replays: &[ReplayInfo]) -> String {
    if replays.is_empty() {
        return "no replays kept\n".into();
    }
    let mut out = format!(
        "{:<16} {:<20} {:<24} {:<28} {:<16} {:>6}  LINK\n",
        "ID", "ROOM", "GAME", "PLAYERS", "DATE (UTC)", "LENGTH"
    );
    for r in replays {
        let game = if r.game.is_empty() { "-" } else { &r.game };
        let date = chrono::DateTime::from_timestamp(r.created_unix, 0)
            .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_default();
        let s = r.seconds().round() as u64;
        let host = if r.server.is_empty() {
            server
        } else {
            &r.server
        };
        out.push_str(&format!(
            "{:<16} {:<20} {:<24} {:<28} {:<16} {:>3}:{:02}  {}\n",
            r.id,
            r.room,
            game,
            r.players,
            date,
            s / 60,
            s % 60,
            super::links::replay_link(host, &r.id)
        ));
    }
    out
}

pub fn replays_json(replays: &[ReplayInfo]) -> serde_json::Value {
    json!(replays
        .iter()
        .map(|r| json!({
            "id": r.id,
            "room": r.room,
            "game": r.game,
            "core": r.core,
            "players": r.players,
            "created_unix": r.created_unix,
            "frames": r.frames,
            "seconds": r.seconds(),
            "bytes": r.bytes,
            "server": r.server,
        }))
        .collect::<Vec<_>>())
}

/// Fetches replay `id` from `server`: its bytes, checked against the id (their xxh3).
pub fn fetch_replay(server: &str, id: &str) -> Result<Vec<u8>, NetplayError> {
    let addr = resolve(server)?;
    let mut link = Link::client(addr, None)?;
    let mut total: Option<u32> = None;
    let mut have: Vec<Option<Vec<u8>>> = Vec::new();
    let mut asked: std::collections::BTreeMap<u32, Instant> = Default::default();
    let mut heard_at = Instant::now();
    let mut heard = false;
    let bar = indicatif::ProgressBar::hidden();
    let ask = |link: &mut Link, now: Instant, offset: u32| {
        let msg = RoomMsg::FetchReplay {
            id: id.to_string(),
            offset,
        };
        link.send(now, addr, Msg::Room(msg).encode(0));
    };
    loop {
        let now = Instant::now();
        if now >= heard_at + SILENCE {
            return Err(silent(addr, heard));
        }
        match total {
            None => {
                if asked.get(&0).is_none_or(|t| now >= *t + RESEND) {
                    asked.insert(0, now);
                    ask(&mut link, now, 0);
                }
            }
            Some(t) => {
                let pieces = have.len() as u32;
                let missing = (0..pieces).filter(|&i| have[i as usize].is_none());
                let mut out = 0;
                for i in missing {
                    if out >= WINDOW {
                        break;
                    }
                    out += 1;
                    if asked.get(&i).is_none_or(|s| now >= *s + RESEND) {
                        asked.insert(i, now);
                        ask(&mut link, now, (i as usize * REPLAY_PIECE) as u32);
                    }
                }
                if out == 0 {
                    bar.finish_and_clear();
                    let bytes: Vec<u8> = have.into_iter().flatten().flatten().collect();
                    if bytes.len() != t as usize || crate::serve::archive::replay_id(&bytes) != id {
                        return Err(NetplayError::Link(format!(
                            "replay {id} from {server} arrived damaged (its bytes do not hash \
                             to its id)"
                        )));
                    }
                    return Ok(bytes);
                }
            }
        }
        for (from, bytes) in link.recv(now)? {
            if from != addr {
                continue;
            }
            let Ok((
                _,
                Msg::Room(RoomMsg::ReplayPiece {
                    id: got,
                    total: t,
                    offset,
                    bytes: piece,
                }),
            )) = Msg::decode(&bytes)
            else {
                continue;
            };
            if got != id {
                continue;
            }
            heard = true;
            heard_at = now;
            if t == 0 {
                return Err(NetplayError::Link(format!(
                    "{server} keeps no replay {id} (`framelock replays {server}` lists them)"
                )));
            }
            if total.is_none() {
                total = Some(t);
                let n = (t as usize).div_ceil(REPLAY_PIECE);
                have = vec![None; n];
                if t as usize > 256 * 1024 {
                    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                    bar.set_length(u64::from(t));
                }
            }
            if Some(t) != total || !(offset as usize).is_multiple_of(REPLAY_PIECE) {
                continue;
            }
            let i = offset as usize / REPLAY_PIECE;
            let want = (t as usize - offset as usize).min(REPLAY_PIECE);
            if i < have.len() && have[i].is_none() && piece.len() == want {
                have[i] = Some(piece.to_vec());
                asked.remove(&(i as u32));
                bar.inc(piece.len() as u64);
            }
        }
        link.wait_until(now, Some(now + Duration::from_millis(5)))?;
    }
}

/// Fetches the replay a `framelock://HOST/replay/ID` link names into `dir` (kept there as
/// `ID.flr`; fetched again only if missing), and returns its path.
pub fn fetch_to(server: &str, id: &str, dir: &Path) -> Result<PathBuf, NetplayError> {
    let path = dir.join(format!("{id}.flr"));
    if let Ok(bytes) = std::fs::read(&path) {
        if crate::serve::archive::replay_id(&bytes) == id {
            tracing::info!("replay {id}: already fetched to {}", path.display());
            return Ok(path);
        }
    }
    let bytes = fetch_replay(server, id)?;
    let io = |e: std::io::Error| {
        NetplayError::Link(format!(
            "cannot save replay {id} in {}: {}",
            dir.display(),
            crate::wording::io_reason(&e)
        ))
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let tmp = dir.join(format!("{id}.flr.tmp"));
    std::fs::write(&tmp, &bytes).map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)?;
    tracing::info!(
        "replay {id}: fetched {} KiB from {server} to {}",
        bytes.len().div_ceil(1024),
        path.display()
    );
    Ok(path)
}

/// Uploads a hosted room's recording to its server (`host --server`, after the game) from
/// `link`, under the room's `session` id; returns once the server has it whole, or gives
/// up after [`SILENCE`] without progress. The server checks it and keeps it (`serve
/// --archive`), or says why not.
pub fn share(
    link: &mut Link,
    server: SocketAddr,
    session: u32,
    recording: &[u8],
) -> Result<(), String> {
    let total = recording.len() as u32;
    let hash = xxhash_rust::xxh3::xxh3_64(recording);
    let pieces = recording.len().div_ceil(REPLAY_PIECE) as u32;
    let mut acked = 0u32;
    let mut sent_at: Option<Instant> = None;
    let mut heard_at = Instant::now();
    let mut heard = false;
    loop {
        let now = Instant::now();
        if now >= heard_at + if heard { SILENCE } else { FIRST_ANSWER } {
            return Err(format!(
                "the server stopped answering after {acked} of {total} bytes"
            ));
        }
        if sent_at.is_none_or(|t| now >= t + RESEND) {
            sent_at = Some(now);
            // Until the server answers, only an empty first piece: a server that keeps no
            // replays (or has no such room) refuses it, and hears a few bytes, not a window.
            if !heard {
                let probe = RoomMsg::Share {
                    total,
                    hash,
                    offset: 0,
                    bytes: &[],
                };
                link.send(now, server, Msg::Room(probe).encode(session));
            }
            // Go-back-N: the server takes pieces in order only.
            let first = acked as usize / REPLAY_PIECE;
            let window = if heard { WINDOW as usize } else { 0 };
            for i in first..(first + window).min(pieces as usize) {
                let start = i * REPLAY_PIECE;
                let end = (start + REPLAY_PIECE).min(recording.len());
                let msg = RoomMsg::Share {
                    total,
                    hash,
                    offset: start as u32,
                    bytes: &recording[start..end],
                };
                link.send(now, server, Msg::Room(msg).encode(session));
            }
        }
        for (from, bytes) in link.recv(now).map_err(|e| e.to_string())? {
            if from != server {
                continue;
            }
            match Msg::decode(&bytes) {
                Ok((h, Msg::Room(RoomMsg::ShareAck { received, done })))
                    if h.session == session =>
                {
                    if done {
                        return Ok(());
                    }
                    if !heard {
                        // The probe's answer: the window goes out at once.
                        heard = true;
                        heard_at = now;
                        sent_at = None;
                    }
                    if received > acked {
                        acked = received;
                        heard_at = now;
                        sent_at = None;
                    }
                }
                Ok((h, Msg::Refuse(reason))) if h.session == session => return Err(reason),
                _ => {}
            }
        }
        link.wait_until(now, Some(now + Duration::from_millis(5)))
            .map_err(|e| e.to_string())?;
    }
}

#[cfg(test)]
mod tests {
    use std::net::UdpSocket;

    use super::*;

    /// A server on loopback: refuses every upload (`keeps`: false) or takes it whole; the
    /// bytes the uploader sent it.
    fn server(keeps: bool) -> (SocketAddr, std::thread::JoinHandle<usize>) {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(800)))
            .unwrap();
        let addr = sock.local_addr().unwrap();
        let handle = std::thread::spawn(move || {
            let (mut heard, mut got, mut buf) = (0, Vec::new(), [0u8; 2048]);
            while let Ok((n, from)) = sock.recv_from(&mut buf) {
                heard += n;
                let Ok((
                    h,
                    Msg::Room(RoomMsg::Share {
                        total,
                        offset,
                        bytes,
                        ..
                    }),
                )) = Msg::decode(&buf[..n])
                else {
                    continue;
                };
                let answer = if !keeps {
                    Msg::Refuse("this server keeps no replays".into())
                } else {
                    if offset as usize == got.len() {
                        got.extend_from_slice(bytes);
                    }
                    let done = got.len() == total as usize;
                    Msg::Room(RoomMsg::ShareAck {
                        received: got.len() as u32,
                        done,
                    })
                };
                sock.send_to(&answer.encode(h.session), from).unwrap();
            }
            heard
        });
        (addr, handle)
    }

    #[test]
    fn a_server_that_keeps_no_replays_hears_only_the_probe_and_one_that_does_gets_it_all() {
        let recording = vec![7u8; 7 * REPLAY_PIECE + 123];
        let (addr, refusing) = server(false);
        let mut link = Link::client(addr, None).unwrap();
        let why = share(&mut link, addr, 0x1234, &recording).unwrap_err();
        assert!(why.contains("keeps no replays"), "{why}");
        let heard = refusing.join().unwrap();
        // The empty first piece only: not the window of pieces (7 KB here).
        assert!(heard < 100, "a refusing server heard {heard} bytes");

        let (addr, keeping) = server(true);
        let mut link = Link::client(addr, None).unwrap();
        share(&mut link, addr, 0x1234, &recording).unwrap();
        assert!(keeping.join().unwrap() > recording.len());
    }
}
