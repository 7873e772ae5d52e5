//! Hosted rooms' recordings: taken from the room's players only, whole and within bounds,
//! and never when a player asked for no replay.

use super::*;

/// A recording of `frames` frames as a player of a room opened with `open` makes it.
fn recording(open: &OpenRoom, frames: u32) -> Vec<u8> {
    use crate::replay::{Header, Recorder, RecorderOptions};
    let header = Header {
        core_name: open.core_name.clone(),
        core_version: open.core_version.clone(),
        content_name: open.content_name.clone(),
        content_hash: open.content_hash,
        ..Header::default()
    };
    let mut buf = Vec::new();
    let mut rec =
        Recorder::with_sink(&mut buf, "t.flr", &header, &RecorderOptions::default()).unwrap();
    for f in 0..frames {
        let mut inputs = [crate::input::Pad::NEUTRAL; crate::input::MAX_PLAYERS];
        inputs[0] = crate::input::Pad((f % 7) as u16);
        rec.record_frame(Frame(f), &inputs).unwrap();
    }
    rec.finish().unwrap();
    buf
}

/// Uploads `bytes` as the recording of session `session` from `from`, piece by piece as
/// the server acknowledges them; returns the server's last answer.
fn upload(rooms: &mut Rooms, now: Instant, from: SocketAddr, session: u32, bytes: &[u8]) -> String {
    use crate::session::msg::REPLAY_PIECE;
    let hash = xxhash_rust::xxh3::xxh3_64(bytes);
    let mut offset = 0;
    loop {
        let end = (offset + REPLAY_PIECE).min(bytes.len());
        let msg = RoomMsg::Share {
            total: bytes.len() as u32,
            hash,
            offset: offset as u32,
            bytes: &bytes[offset..end],
        };
        rooms.handle_datagram(now, from, &Msg::Room(msg).encode(session));
        let sent = sent_to(rooms, now, from);
        match decoded(&sent).last() {
            Some(Msg::Room(RoomMsg::ShareAck { received, done })) => {
                if *done {
                    return "done".into();
                }
                offset = *received as usize;
            }
            Some(Msg::Refuse(why)) => return why.clone(),
            other => return format!("{other:?}"),
        }
    }
}

#[test]
fn a_hosted_rooms_recording_is_taken_from_its_players_only_whole_and_within_bounds() {
    let mut now = Instant::now();
    let cfg = ServeConfig {
        archive: true,
        max_replay: 8192,
        ..serve_config()
    };
    let mut rooms = Rooms::new(cfg);
    let (host, joiner, stranger) = (client_addr(1), client_addr(2), client_addr(3));
    prove(&mut rooms, now, host);
    let mut request = open(2, "friday", false);
    request.hosted = true;
    rooms.handle_datagram(
        now,
        host,
        &Msg::Room(RoomMsg::Open(request.clone())).encode(0),
    );
    let opened = sent_to(&mut rooms, now, host);
    let (session, keys) = opened
        .iter()
        .find_map(|t| match Msg::decode(&t.bytes) {
            Ok((h, Msg::Room(RoomMsg::Opened { key, .. }))) => {
                Some((h.session, Keys::for_room(&key, Side::Joiner)))
            }
            _ => None,
        })
        .expect("the room opens");
    // A joiner comes (its Hello relayed to the host), then the game ends: the host leaves.
    prove(&mut rooms, now, joiner);
    let hello = {
        let mut cfg = JoinConfig::new(SERVER, info("bo"));
        cfg.room = "friday".into();
        JoinSession::new(now, cfg).hello()
    };
    rooms.handle_datagram(now, joiner, &hello);
    let gone = RoomMsg::Present {
        players: 0,
        direct: 0,
        relayed: 0,
        playing: false,
    };
    // Issue 50: the same words forged from the host's address (untagged) change nothing.
    let forged = Msg::Room(gone.clone()).encode(session);
    rooms.handle_datagram(now, host, &forged);
    now += Duration::from_secs(2);
    rooms.handle_timeout(now);
    assert!(!rooms.is_empty(), "a forged Present closed the room");
    assert!(rooms.stats().dropped_auth > 0);
    rooms.handle_datagram(now, host, &tagged(&keys, gone));
    // Closed once its last goodbyes had time to cross.
    now += Duration::from_secs(2);
    rooms.handle_timeout(now);
    assert!(rooms.is_empty());
    now += Duration::from_secs(5);

    let good = recording(&request, 600);
    assert!(
        good.len() > 1000,
        "{} bytes: more than one piece",
        good.len()
    );
    // Nobody of the room, a room that never was, too large, bytes that do not add up to
    // their hash: refused, saying why, and counted.
    assert!(upload(&mut rooms, now, stranger, session, &good).contains("not in that room"));
    assert!(upload(&mut rooms, now, host, session ^ 1, &good).contains("no room of that session"));
    let big = recording(&request, 60_000);
    assert!(big.len() > 8192);
    assert!(upload(&mut rooms, now, host, session, &big).contains("at most 8192"));
    let mut forged = good.clone();
    let hash = xxhash_rust::xxh3::xxh3_64(&good);
    let last = forged.len() - 1;
    forged[last] ^= 1;
    // Piece by piece under the good recording's hash.
    for (i, piece) in forged.chunks(crate::session::msg::REPLAY_PIECE).enumerate() {
        let msg = RoomMsg::Share {
            total: forged.len() as u32,
            hash,
            offset: (i * crate::session::msg::REPLAY_PIECE) as u32,
            bytes: piece,
        };
        rooms.handle_datagram(now, host, &Msg::Room(msg).encode(session));
    }
    let s = rooms.stats();
    assert_eq!(
        (
            s.uploads_stranger,
            s.uploads_unknown_room,
            s.uploads_too_large,
            s.uploads_forged
        ),
        (1, 1, 1, 1),
        "{s:?}"
    );
    assert!(rooms.poll_kept().is_none(), "nothing refused is kept");

    // The joiner's upload of the real recording is taken; it is checked against the room.
    assert_eq!(upload(&mut rooms, now, joiner, session, &good), "done");
    let kept = rooms.poll_kept().expect("the recording is kept");
    assert_eq!(kept.info.room, "friday");
    assert_eq!(kept.bytes, good);
    let checked = archive::verify(&kept.bytes, kept.expect.as_ref()).unwrap();
    assert_eq!(
        (checked.frames, checked.core.as_str()),
        (600, "lightcycles")
    );
    // Another copy (the host's) is not kept twice.
    assert_eq!(upload(&mut rooms, now, host, session, &good), "done");
    assert!(rooms.poll_kept().is_none());
    assert_eq!(rooms.stats().uploads_received, 1);

    // A truncated recording, or another game's, checks out as neither.
    let cut = &good[..good.len() - 20];
    assert!(archive::verify(cut, Some(&request))
        .unwrap_err()
        .contains("truncated"));
    let mut other = request.clone();
    other.content_hash = Some(7);
    assert!(archive::verify(&good, Some(&other))
        .unwrap_err()
        .contains("the room played"));
    assert!(archive::verify(b"not a recording at all", Some(&request))
        .unwrap_err()
        .contains("not a recording"));
    // Past SHARE_WITHIN, the room is forgotten.
    now += archive::SHARE_WITHIN + Duration::from_secs(2);
    rooms.handle_timeout(now);
    assert!(upload(&mut rooms, now, host, session, &good).contains("no room of that session"));
}

#[test]
fn a_player_who_asks_for_no_replay_keeps_the_room_out_of_the_archive() {
    let now = Instant::now();
    let mut rooms = Rooms::new(ServeConfig {
        archive: true,
        ..serve_config()
    });
    let (host, joiner) = (client_addr(1), client_addr(2));
    prove(&mut rooms, now, host);
    let mut request = open(2, "quiet", false);
    request.hosted = true;
    rooms.handle_datagram(
        now,
        host,
        &Msg::Room(RoomMsg::Open(request.clone())).encode(0),
    );
    let session = sent_to(&mut rooms, now, host)
        .iter()
        .find_map(|t| Msg::decode(&t.bytes).ok().map(|(h, _)| h.session))
        .unwrap();
    prove(&mut rooms, now, joiner);
    let mut cfg = JoinConfig::new(SERVER, info("bo"));
    cfg.room = "quiet".into();
    cfg.no_share = true;
    rooms.handle_datagram(now, joiner, &JoinSession::new(now, cfg).hello());
    let why = upload(&mut rooms, now, host, session, &recording(&request, 60));
    assert!(why.contains("no replay be kept"), "{why}");
    assert_eq!(rooms.stats().uploads_not_shared, 1);
}
