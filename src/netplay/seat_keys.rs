//! The seat keys `join` was given, kept on disk so that a player whose process died (a
//! crash, a closed terminal, a killed window) runs `join` again and shows the key in its
//! Hello: the host then gives the seat back at once, where a name alone waits out
//! `SEAT_KEPT`. Must not import `app`, `cli` or the window.
//!
//! One JSON file (`seats.json` in the state directory), mode 0600, one entry per place
//! joined and player name. A join is saved under two places, the host as typed and the
//! address it resolved to (each with the room), so that `join localhost` finds the key of
//! `join 127.0.0.1`, and a name whose address changed still finds its own. It is replaced whole through
//! a temporary file and a rename, under a lock file, so two `join`s at once lose nothing
//! and a crash mid-write leaves the old file. A missing, unreadable or corrupt file is no
//! key (the join goes on without one) and is replaced at the next save.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::session::msg::SEAT_KEY_LEN;

/// A saved key older than this is dropped: it belonged to a game long over (a key is good
/// only while its seat is held or for `SEAT_KEPT` after).
pub const KEPT_FOR: Duration = Duration::from_secs(2 * 24 * 3600);

/// At most this many entries stay (the newest), however many places a player joins.
pub const MAX_ENTRIES: usize = 64;

/// The file's name in the state directory.
pub const FILE_NAME: &str = "seats.json";

/// Where one player joins one place: its saved key.
#[derive(Clone, Debug)]
pub struct SeatKeys {
    path: PathBuf,
    places: Vec<String>,
    name: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Store {
    seats: Vec<Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    place: String,
    name: String,
    /// Hex.
    key: String,
    /// Seconds since the Unix epoch.
    saved: u64,
}

impl SeatKeys {
    /// The key of `name` at any of `places` (the same host named two ways) in the file
    /// `path`.
    pub fn new(path: PathBuf, mut places: Vec<String>, name: &str) -> SeatKeys {
        places.dedup();
        SeatKeys {
            path,
            places,
            name: name.trim().to_string(),
        }
    }

    fn is_mine(&self, e: &Entry) -> bool {
        e.name == self.name && self.places.contains(&e.place)
    }

    /// `place` for a join of `host` (as typed), in `room` if any.
    pub fn place(host: &str, room: Option<&str>) -> String {
        match room {
            Some(room) => format!("{host} room {room}"),
            None => host.to_string(),
        }
    }

    /// The key saved for this player here, if one is and it is younger than `KEPT_FOR`.
    pub fn load(&self, now: SystemTime) -> Option<[u8; SEAT_KEY_LEN]> {
        let store = read(&self.path);
        let e = store
            .seats
            .iter()
            .filter(|e| self.is_mine(e))
            .max_by_key(|e| e.saved)?;
        if !fresh(e, secs(now)) {
            return None;
        }
        from_hex(&e.key).filter(|k| *k != [0; SEAT_KEY_LEN])
    }

    /// Saves `key` for this player here, and drops stale entries (older than `KEPT_FOR`,
    /// beyond the newest `MAX_ENTRIES`).
    pub fn save(&self, key: &[u8; SEAT_KEY_LEN], now: SystemTime) -> io::Result<()> {
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir)?;
        }
        // The lock file outlives the rename; the data file is replaced whole.
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.path.with_extension("lock"))?;
        lock_exclusive(&lock)?;
        let now = secs(now);
        let mut store = read(&self.path);
        store.seats.retain(|e| fresh(e, now) && !self.is_mine(e));
        for place in &self.places {
            store.seats.push(Entry {
                place: place.clone(),
                name: self.name.clone(),
                key: to_hex(key),
                saved: now,
            });
        }
        store.seats.sort_by_key(|e| std::cmp::Reverse(e.saved));
        store.seats.truncate(MAX_ENTRIES);
        let text = serde_json::to_vec_pretty(&store).map_err(io::Error::other)?;
        write_atomically(&self.path, &text)
    }
}

fn secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Saved within `KEPT_FOR` of `now` (an entry from the future, a clock set back, counts
/// as fresh rather than losing a key).
fn fresh(e: &Entry, now: u64) -> bool {
    now.saturating_sub(e.saved) < KEPT_FOR.as_secs()
}

/// The file's entries; none if it is missing or not what this writes.
fn read(path: &Path) -> Store {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::debug!(
                "netplay: {} is unreadable ({e}); no seat keys",
                path.display()
            );
            Store::default()
        }),
        Err(_) => Store::default(),
    }
}

/// Writes `bytes` to a temporary file beside `path` (readable by this user only), syncs
/// it and renames it over `path`: a reader sees the old file or the new one, never half.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let result = (|| {
        let mut f = private_file(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Holds `f` locked until it is closed (another `join` saving at once waits for it).
#[cfg(unix)]
fn lock_exclusive(f: &File) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a descriptor `f` owns for the whole call.
    match unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Elsewhere two saves at once may lose one (the rename still keeps the file whole).
#[cfg(not(unix))]
fn lock_exclusive(_: &File) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn private_file(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn private_file(path: &Path) -> io::Result<File> {
    File::create(path)
}

fn to_hex(key: &[u8]) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(s: &str) -> Option<[u8; SEAT_KEY_LEN]> {
    if s.len() != 2 * SEAT_KEY_LEN || !s.is_ascii() {
        return None;
    }
    let mut key = [0; SEAT_KEY_LEN];
    for (i, b) in key.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_800_000_000;

    fn at(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(s)
    }

    fn keys(dir: &Path, place: &str, name: &str) -> SeatKeys {
        SeatKeys::new(dir.join("state").join(FILE_NAME), vec![place.into()], name)
    }

    #[test]
    fn a_saved_key_comes_back_for_its_place_and_name_only() {
        let dir = tempfile::tempdir().unwrap();
        let bob = keys(dir.path(), "10.0.0.1:7845", "bob");
        assert_eq!(bob.load(at(T0)), None, "nothing saved yet");
        bob.save(&[7; SEAT_KEY_LEN], at(T0)).unwrap();
        assert_eq!(bob.load(at(T0 + 5)), Some([7; SEAT_KEY_LEN]));
        // " bob " is bob (names are trimmed as the host trims them).
        let spaced = keys(dir.path(), "10.0.0.1:7845", " bob ");
        assert_eq!(spaced.load(at(T0 + 5)), Some([7; SEAT_KEY_LEN]));
        assert_eq!(keys(dir.path(), "10.0.0.1:7845", "ann").load(at(T0)), None);
        assert_eq!(keys(dir.path(), "10.0.0.2:7845", "bob").load(at(T0)), None);
        let room = SeatKeys::place("srv:7846", Some("fun"));
        assert_eq!(keys(dir.path(), &room, "bob").load(at(T0)), None);
        // A new Welcome's key replaces the old one; other entries stay.
        keys(dir.path(), &room, "bob")
            .save(&[9; SEAT_KEY_LEN], at(T0 + 10))
            .unwrap();
        bob.save(&[8; SEAT_KEY_LEN], at(T0 + 20)).unwrap();
        assert_eq!(bob.load(at(T0 + 21)), Some([8; SEAT_KEY_LEN]));
        assert_eq!(
            keys(dir.path(), &room, "bob").load(at(T0 + 21)),
            Some([9; SEAT_KEY_LEN])
        );
        assert_eq!(
            read(&bob.path).seats.len(),
            2,
            "one entry per place and name"
        );
    }

    #[test]
    fn a_key_saved_under_a_name_is_found_under_the_address_it_resolved_to() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state").join(FILE_NAME);
        let places = |host: &str, addr: &str| {
            vec![
                SeatKeys::place(host, Some("fun")),
                SeatKeys::place(addr, Some("fun")),
            ]
        };
        let typed = SeatKeys::new(
            file.clone(),
            places("localhost:7846", "127.0.0.1:7846"),
            "bob",
        );
        typed.save(&[5; SEAT_KEY_LEN], at(T0)).unwrap();
        let by_addr = SeatKeys::new(
            file.clone(),
            places("127.0.0.1:7846", "127.0.0.1:7846"),
            "bob",
        );
        assert_eq!(by_addr.load(at(T0 + 1)), Some([5; SEAT_KEY_LEN]));
        // The name now resolves elsewhere: its own entry still holds the key.
        let moved = SeatKeys::new(
            file.clone(),
            places("localhost:7846", "127.0.0.9:7846"),
            "bob",
        );
        assert_eq!(moved.load(at(T0 + 2)), Some([5; SEAT_KEY_LEN]));
        // A newer key saved under one of the names wins over the older one under the other.
        by_addr.save(&[6; SEAT_KEY_LEN], at(T0 + 3)).unwrap();
        assert_eq!(typed.load(at(T0 + 4)), Some([6; SEAT_KEY_LEN]));
        let other = SeatKeys::new(file, places("10.0.0.1:7846", "10.0.0.1:7846"), "bob");
        assert_eq!(other.load(at(T0 + 4)), None);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_private_and_no_temporary_file_stays() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bob = keys(dir.path(), "h", "bob");
        bob.save(&[1; SEAT_KEY_LEN], at(T0)).unwrap();
        bob.save(&[2; SEAT_KEY_LEN], at(T0 + 1)).unwrap();
        let mode = fs::metadata(&bob.path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        let mut names: Vec<_> = fs::read_dir(bob.path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["seats.json", "seats.lock"]);
    }

    #[test]
    fn a_corrupt_file_is_no_key_and_is_replaced_at_the_next_save() {
        let dir = tempfile::tempdir().unwrap();
        let bob = keys(dir.path(), "h", "bob");
        fs::create_dir_all(bob.path.parent().unwrap()).unwrap();
        for junk in [
            &b"{\"seats\": [{\"place\": \"h\", \"na"[..],
            b"\xff\xfe not json",
            b"{\"seats\": [{\"place\": \"h\", \"name\": \"bob\", \"key\": \"zz\", \"saved\": 1}]}",
            b"{\"seats\": 5}",
            b"",
        ] {
            fs::write(&bob.path, junk).unwrap();
            assert_eq!(bob.load(at(T0)), None, "{}", String::from_utf8_lossy(junk));
        }
        // A key of the wrong length, or all zeros (no key), is none either.
        let short = format!(
            "{{\"seats\": [{{\"place\": \"h\", \"name\": \"bob\", \"key\": \"{}\", \"saved\": {T0}}}]}}",
            "ab".repeat(SEAT_KEY_LEN - 1)
        );
        fs::write(&bob.path, short).unwrap();
        assert_eq!(bob.load(at(T0)), None);
        let zeros = format!(
            "{{\"seats\": [{{\"place\": \"h\", \"name\": \"bob\", \"key\": \"{}\", \"saved\": {T0}}}]}}",
            "00".repeat(SEAT_KEY_LEN)
        );
        fs::write(&bob.path, zeros).unwrap();
        assert_eq!(bob.load(at(T0)), None);
        bob.save(&[3; SEAT_KEY_LEN], at(T0)).unwrap();
        assert_eq!(bob.load(at(T0)), Some([3; SEAT_KEY_LEN]));
    }

    #[test]
    fn old_entries_expire_and_at_most_the_newest_max_entries_stay() {
        let dir = tempfile::tempdir().unwrap();
        let old = keys(dir.path(), "old-host", "bob");
        old.save(&[1; SEAT_KEY_LEN], at(T0)).unwrap();
        let late = T0 + KEPT_FOR.as_secs();
        assert_eq!(old.load(at(late - 1)), Some([1; SEAT_KEY_LEN]));
        assert_eq!(old.load(at(late)), None, "expired");
        // Any save prunes what expired.
        let new = keys(dir.path(), "new-host", "bob");
        new.save(&[2; SEAT_KEY_LEN], at(late)).unwrap();
        let left: Vec<_> = read(&new.path).seats.into_iter().map(|e| e.place).collect();
        assert_eq!(left, ["new-host"]);
        // A player who joins many places keeps the newest MAX_ENTRIES.
        for i in 0..MAX_ENTRIES as u64 + 10 {
            keys(dir.path(), &format!("host-{i}"), "bob")
                .save(&[5; SEAT_KEY_LEN], at(late + i))
                .unwrap();
        }
        let store = read(&new.path);
        assert_eq!(store.seats.len(), MAX_ENTRIES);
        assert_eq!(new.load(at(late + 100)), None, "the oldest went first");
        let newest = format!("host-{}", MAX_ENTRIES + 9);
        assert_eq!(
            keys(dir.path(), &newest, "bob").load(at(late + 100)),
            Some([5; SEAT_KEY_LEN])
        );
    }
}
