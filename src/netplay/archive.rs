//! The replays a server keeps (`serve --archive DIR --archive-mib N`): a thread of its own
//! that checks uploads (`serve::archive::verify`), writes recordings to DIR, drops the
//! oldest past the size cap, answers `framelock replays` and `framelock replay
//! framelock://HOST/replay/ID` for the serve loop, and hands the web page its list and
//! files. With a fleet (`--directory`) every replay also goes to NATS JetStream's object
//! store ([`OBJECT_BUCKET`]), so that any member lists and serves any member's.
//!
//! # On disk
//! `DIR/ID.flr` (the recording) and `DIR/ID.json` (its listing entry, [`Entry`]), each
//! written to a `.tmp` file, synced, then renamed, so a crash or a full disk leaves either
//! the whole replay or none of it, and never touches the ones already kept. A replay is
//! written before the oldest ones are dropped to make room under the cap: a write that
//! fails (a full disk) drops nothing. The serve loop never waits on this thread; a full
//! disk costs the replay being written, counted, and nothing else.
//!
//! # In the fleet's object store
//! Object `ID` holds the recording; its description holds the [`Entry`] as JSON (with the
//! member that kept it). Each member drops the oldest objects while the bucket holds more
//! than its `--archive-mib`.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::object_store::ObjectStore;
use async_nats::jetstream::stream;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc as amsc, oneshot};

use crate::netplay::links::valid_replay_id;
use crate::serve::archive::{verify, ArchiveAsk, Kept};
use crate::session::msg::{Msg, ReplayInfo, RoomMsg, MAX_REPLAYS_LISTED, REPLAY_PIECE};

use super::NetplayError;

/// The fleet's object store bucket of replays.
pub const OBJECT_BUCKET: &str = "framelock-replays";
/// How often the fleet's list of replays is read again.
const FLEET_REFRESH: Duration = Duration::from_secs(3);
/// Longest one request to NATS may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);
/// Replays fetched from the fleet kept in memory (a fetch asks piece by piece).
const CACHED: usize = 8;

/// Where the archive keeps replays.
#[derive(Clone, Debug)]
pub struct ArchiveConfig {
    pub dir: PathBuf,
    /// Bytes of replays kept at most (the oldest go first).
    pub max_bytes: u64,
    /// NATS URLs of the fleet (empty: this server alone).
    pub nats: Vec<String>,
    /// This server's public address (the fleet's replays say who kept them).
    pub me: String,
    /// How it signs in to NATS (as the directory does).
    pub login: super::nats_login::NatsLogin,
}

/// A replay's listing entry as stored beside it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Entry {
    pub id: String,
    pub room: String,
    pub game: String,
    pub core: String,
    pub players: String,
    pub created_unix: i64,
    pub frames: u32,
    pub fps_milli: u32,
    pub bytes: u32,
    /// The server that kept it ("" for a lone server).
    #[serde(default)]
    pub server: String,
    /// When it was kept, unix seconds: the oldest go first.
    pub kept_unix: i64,
}

impl Entry {
    fn from_info(i: &ReplayInfo, kept_unix: i64) -> Entry {
        Entry {
            id: i.id.clone(),
            room: i.room.clone(),
            game: i.game.clone(),
            core: i.core.clone(),
            players: i.players.clone(),
            created_unix: i.created_unix,
            frames: i.frames,
            fps_milli: i.fps_milli,
            bytes: i.bytes,
            server: i.server.clone(),
            kept_unix,
        }
    }

    pub fn info(&self) -> ReplayInfo {
        ReplayInfo {
            id: self.id.clone(),
            room: self.room.clone(),
            game: self.game.clone(),
            core: self.core.clone(),
            players: self.players.clone(),
            created_unix: self.created_unix,
            frames: self.frames,
            fps_milli: self.fps_milli,
            bytes: self.bytes,
            server: self.server.clone(),
        }
    }
}

/// What the archive did, for the page, the metrics and `--stats-json`.
#[derive(Debug, Default)]
pub struct ArchiveCounts {
    pub kept: AtomicU64,
    /// Uploads that did not check out (damaged, truncated, another room's game).
    pub refused_bad: AtomicU64,
    /// Replays larger than the whole archive.
    pub refused_large: AtomicU64,
    /// Replays dropped to make room for newer ones.
    pub dropped_oldest: AtomicU64,
    /// Replays that could not be written (a full disk) or stored in the fleet.
    pub write_errors: AtomicU64,
    pub bytes_kept: AtomicU64,
}

/// What the web page and the serve loop read of the archive.
pub struct Shelf {
    list: Mutex<Arc<Vec<Entry>>>,
    pub counts: ArchiveCounts,
    jobs: amsc::UnboundedSender<Job>,
}

impl Shelf {
    /// The replays kept (the fleet's too), newest first.
    pub fn list(&self) -> Arc<Vec<Entry>> {
        self.list.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A replay's bytes, from here or the fleet.
    pub async fn get(&self, id: &str) -> Option<Arc<Vec<u8>>> {
        let (tx, rx) = oneshot::channel();
        self.jobs.send(Job::Get(id.to_string(), tx)).ok()?;
        rx.await.ok().flatten()
    }
}

enum Job {
    Keep(Box<Kept>),
    Ask(ArchiveAsk),
    Get(String, oneshot::Sender<Option<Arc<Vec<u8>>>>),
    Stop,
}

/// The serve loop's handle on the archive thread.
pub struct Archive {
    pub shelf: Arc<Shelf>,
    answers: mpsc::Receiver<(SocketAddr, Vec<u8>)>,
    /// Requests handed over and not answered yet.
    pub pending: usize,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Archive {
    /// Opens (or makes) `cfg.dir`, reads what it holds, and starts the thread.
    pub fn start(cfg: ArchiveConfig) -> Result<Archive, NetplayError> {
        let err = |what: &str, e: std::io::Error| {
            NetplayError::Archive(format!(
                "{} {}: {}",
                what,
                cfg.dir.display(),
                crate::wording::io_reason(&e)
            ))
        };
        std::fs::create_dir_all(&cfg.dir).map_err(|e| err("cannot make", e))?;
        let mut entries = read_dir(&cfg.dir).map_err(|e| err("cannot read", e))?;
        entries.sort_by_key(|e| std::cmp::Reverse(e.kept_unix));
        let (jobs, todo) = amsc::unbounded_channel();
        let shelf = Arc::new(Shelf {
            list: Mutex::new(Arc::new(entries.clone())),
            counts: ArchiveCounts::default(),
            jobs,
        });
        let bytes: u64 = entries.iter().map(|e| u64::from(e.bytes)).sum();
        shelf.counts.bytes_kept.store(bytes, Ordering::Relaxed);
        let (answered, answers) = mpsc::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| NetplayError::Archive(format!("cannot start its runtime: {e}")))?;
        tracing::info!(
            "serve: keeping replays in {} ({} kept, {} of {} MiB)",
            cfg.dir.display(),
            entries.len(),
            bytes >> 20,
            cfg.max_bytes >> 20
        );
        let s = shelf.clone();
        let thread = std::thread::Builder::new()
            .name("archive".into())
            .spawn(move || {
                let mut worker = Worker {
                    cfg,
                    local: entries,
                    fleet: Vec::new(),
                    shelf: s,
                    answered,
                    store: None,
                    nats_retry: None,
                    fleet_read: None,
                    cache: VecDeque::new(),
                };
                runtime.block_on(worker.run(todo));
            })
            .map_err(|e| NetplayError::Archive(format!("cannot start its thread: {e}")))?;
        Ok(Archive {
            shelf,
            answers,
            pending: 0,
            thread: Some(thread),
        })
    }

    /// A finished room's recording, to check and keep.
    pub fn keep(&self, kept: Kept) {
        let _ = self.shelf.jobs.send(Job::Keep(Box::new(kept)));
    }

    /// A request to answer; its answer comes from [`answered`](Self::answered).
    pub fn ask(&mut self, ask: ArchiveAsk) {
        if self.shelf.jobs.send(Job::Ask(ask)).is_ok() {
            self.pending += 1;
        }
    }

    /// An answer to send, without waiting.
    pub fn answered(&mut self) -> Option<(SocketAddr, Vec<u8>)> {
        let a = self.answers.try_recv().ok()?;
        self.pending = self.pending.saturating_sub(1);
        Some(a)
    }

    /// Finishes what was handed over (the last rooms' recordings), then stops.
    pub fn stop(mut self, within: Duration) {
        let _ = self.shelf.jobs.send(Job::Stop);
        if let Some(t) = self.thread.take() {
            let until = Instant::now() + within;
            while !t.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if t.is_finished() {
                let _ = t.join();
            } else {
                tracing::warn!("archive: still writing when the server stopped");
            }
        }
    }
}

/// The `.json` entries in `dir` whose `.flr` is there; leftover `.tmp` files are removed.
fn read_dir(dir: &Path) -> std::io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for f in std::fs::read_dir(dir)? {
        let path = f?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let Some(name) = name else { continue };
        if name.ends_with(".tmp") {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        let Some(id) = name.strip_suffix(".json") else {
            continue;
        };
        if !valid_replay_id(id) || !dir.join(format!("{id}.flr")).is_file() {
            continue;
        }
        match std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Entry>(&b).ok())
        {
            Some(e) if e.id == id => out.push(e),
            _ => tracing::warn!(
                "archive: {} does not read as a replay's entry",
                path.display()
            ),
        }
    }
    Ok(out)
}

/// Writes `bytes` to `path` through a synced `.tmp` file renamed into place.
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension(format!(
        "{}.tmp",
        path.extension()
            .map(|e| e.to_string_lossy())
            .unwrap_or_default()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn unix_now() -> i64 {
    chrono::Utc::now().timestamp()
}

struct Worker {
    cfg: ArchiveConfig,
    /// Kept here, newest first.
    local: Vec<Entry>,
    /// Kept by the fleet's other members, as last read.
    fleet: Vec<Entry>,
    shelf: Arc<Shelf>,
    answered: mpsc::Sender<(SocketAddr, Vec<u8>)>,
    store: Option<ObjectStore>,
    nats_retry: Option<Instant>,
    fleet_read: Option<Instant>,
    /// Replays fetched from the fleet lately.
    cache: VecDeque<(String, Arc<Vec<u8>>)>,
}

impl Worker {
    async fn run(&mut self, mut todo: amsc::UnboundedReceiver<Job>) {
        loop {
            let job = if self.cfg.nats.is_empty() {
                todo.recv().await
            } else {
                match tokio::time::timeout(FLEET_REFRESH, todo.recv()).await {
                    Ok(job) => job,
                    Err(_) => {
                        self.refresh_fleet(false).await;
                        continue;
                    }
                }
            };
            match job {
                Some(Job::Keep(kept)) => self.keep(*kept).await,
                Some(Job::Ask(ask)) => {
                    let answer = self.answer(ask).await;
                    if self.answered.send(answer).is_err() {
                        return;
                    }
                }
                Some(Job::Get(id, reply)) => {
                    let _ = reply.send(self.bytes(&id).await);
                }
                Some(Job::Stop) | None => return,
            }
        }
    }

    fn publish(&self) {
        let mut all = self.local.clone();
        for e in &self.fleet {
            if !all.iter().any(|l| l.id == e.id) {
                all.push(e.clone());
            }
        }
        all.sort_by(|a, b| b.kept_unix.cmp(&a.kept_unix).then(a.id.cmp(&b.id)));
        *self.shelf.list.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(all);
        let bytes: u64 = self.local.iter().map(|e| u64::from(e.bytes)).sum();
        self.shelf.counts.bytes_kept.store(bytes, Ordering::Relaxed);
    }

    async fn keep(&mut self, kept: Kept) {
        let counts = &self.shelf.counts;
        let Kept {
            mut info,
            bytes,
            expect,
        } = kept;
        if let Some(open) = &expect {
            match verify(&bytes, Some(open)) {
                Ok(checked) => {
                    info = ReplayInfo {
                        room: info.room,
                        ..checked
                    }
                }
                Err(why) => {
                    counts.refused_bad.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(
                        "archive: the upload for room {} is refused: {why}",
                        info.room
                    );
                    return;
                }
            }
        }
        if bytes.len() as u64 > self.cfg.max_bytes {
            counts.refused_large.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                "archive: room {}'s replay ({} KiB) is larger than the whole archive",
                info.room,
                bytes.len() >> 10
            );
            return;
        }
        if self.local.iter().any(|e| e.id == info.id) {
            return;
        }
        info.server = self.cfg.me.clone();
        let entry = Entry::from_info(&info, unix_now());
        let flr = self.cfg.dir.join(format!("{}.flr", entry.id));
        let json = self.cfg.dir.join(format!("{}.json", entry.id));
        let written = write_whole(&flr, &bytes).and_then(|()| {
            let text = serde_json::to_vec_pretty(&entry).unwrap_or_default();
            write_whole(&json, &text).inspect_err(|_| {
                let _ = std::fs::remove_file(&flr);
            })
        });
        if let Err(e) = written {
            counts.write_errors.fetch_add(1, Ordering::Relaxed);
            tracing::error!(
                "archive: cannot keep room {}'s replay in {}: {}; the replays kept stay",
                info.room,
                self.cfg.dir.display(),
                crate::wording::io_reason(&e)
            );
            return;
        }
        counts.kept.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            "archive: kept room {}'s replay {} ({} frames, {} KiB)",
            info.room,
            entry.id,
            entry.frames,
            bytes.len().div_ceil(1024)
        );
        self.local.insert(0, entry.clone());
        self.drop_oldest();
        self.publish();
        if !self.cfg.nats.is_empty() {
            self.put_fleet(&entry, &bytes).await;
        }
    }

    /// Drops the oldest replays while they hold more than the cap.
    fn drop_oldest(&mut self) {
        let mut total: u64 = self.local.iter().map(|e| u64::from(e.bytes)).sum();
        while total > self.cfg.max_bytes && self.local.len() > 1 {
            let Some(old) = self.local.pop() else { break };
            total -= u64::from(old.bytes);
            for ext in ["json", "flr"] {
                let _ = std::fs::remove_file(self.cfg.dir.join(format!("{}.{ext}", old.id)));
            }
            self.shelf
                .counts
                .dropped_oldest
                .fetch_add(1, Ordering::Relaxed);
            tracing::info!("archive: dropped the oldest replay {} to make room", old.id);
        }
    }

    async fn answer(&mut self, ask: ArchiveAsk) -> (SocketAddr, Vec<u8>) {
        match ask {
            ArchiveAsk::List { from, first } => {
                let all = self.shelf.list();
                let replays: Vec<ReplayInfo> = all
                    .iter()
                    .skip(usize::from(first))
                    .take(MAX_REPLAYS_LISTED)
                    .map(Entry::info)
                    .collect();
                let total = all.len().min(usize::from(u16::MAX)) as u16;
                let msg = RoomMsg::Replays {
                    total,
                    first,
                    replays,
                };
                (from, Msg::Room(msg).encode(0))
            }
            ArchiveAsk::Fetch { from, id, offset } => {
                let bytes = self.bytes(&id).await;
                let (total, piece) = match &bytes {
                    Some(b) => {
                        let start = (offset as usize).min(b.len());
                        let end = (start + REPLAY_PIECE).min(b.len());
                        (b.len() as u32, &b[start..end])
                    }
                    None => (0, &[][..]),
                };
                let msg = RoomMsg::ReplayPiece {
                    id,
                    total,
                    offset,
                    bytes: piece,
                };
                (from, Msg::Room(msg).encode(0))
            }
        }
    }

    /// A replay's bytes: from DIR, the cache, or the fleet's store.
    async fn bytes(&mut self, id: &str) -> Option<Arc<Vec<u8>>> {
        if !valid_replay_id(id) {
            return None;
        }
        if let Some((_, b)) = self.cache.iter().find(|(i, _)| i == id) {
            return Some(b.clone());
        }
        let got = if self.local.iter().any(|e| e.id == id) {
            std::fs::read(self.cfg.dir.join(format!("{id}.flr"))).ok()
        } else {
            self.get_fleet(id).await
        };
        let got = Arc::new(got?);
        if self.cache.len() >= CACHED {
            self.cache.pop_back();
        }
        self.cache.push_front((id.to_string(), got.clone()));
        Some(got)
    }

    /// The fleet's object store, opened (or made) on first use; `None` while NATS is away.
    async fn store(&mut self) -> Option<ObjectStore> {
        if let Some(s) = &self.store {
            return Some(s.clone());
        }
        if self.nats_retry.is_some_and(|t| Instant::now() < t) {
            return None;
        }
        self.nats_retry = Some(Instant::now() + Duration::from_secs(5));
        let addrs: Vec<async_nats::ServerAddr> = self
            .cfg
            .nats
            .iter()
            .filter_map(|u| u.parse().ok())
            .collect();
        let client = self
            .cfg
            .login
            .options()
            .name(format!("framelock serve {} archive", self.cfg.me))
            .connection_timeout(REQUEST_TIMEOUT)
            .request_timeout(Some(REQUEST_TIMEOUT))
            .connect(addrs)
            .await;
        let client = match client {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("archive: the fleet's store is not reachable: {e}");
                return None;
            }
        };
        let mut js = async_nats::jetstream::new(client);
        js.set_timeout(REQUEST_TIMEOUT);
        if js.get_object_store(OBJECT_BUCKET).await.is_err() {
            // The stream an object store is, made directly, as the directory makes its
            // bucket's (the client's own creation asks NATS 2.9 what it does not answer).
            let config = stream::Config {
                name: format!("OBJ_{OBJECT_BUCKET}"),
                description: Some("framelock serve: the fleet's replays".into()),
                subjects: vec![
                    format!("$O.{OBJECT_BUCKET}.C.>"),
                    format!("$O.{OBJECT_BUCKET}.M.>"),
                ],
                storage: stream::StorageType::File,
                num_replicas: self.cfg.nats.len().clamp(1, 3),
                discard: stream::DiscardPolicy::New,
                allow_rollup: true,
                allow_direct: true,
                ..stream::Config::default()
            };
            if let Err(e) = js.get_or_create_stream(config).await {
                tracing::warn!("archive: cannot make the fleet's store {OBJECT_BUCKET}: {e}");
            }
        }
        match js.get_object_store(OBJECT_BUCKET).await {
            Ok(s) => {
                self.store = Some(s.clone());
                Some(s)
            }
            Err(e) => {
                tracing::warn!("archive: cannot open the fleet's store {OBJECT_BUCKET}: {e}");
                None
            }
        }
    }

    async fn put_fleet(&mut self, entry: &Entry, bytes: &[u8]) {
        let Some(store) = self.store().await else {
            self.shelf
                .counts
                .write_errors
                .fetch_add(1, Ordering::Relaxed);
            return;
        };
        let meta = async_nats::jetstream::object_store::ObjectMetadata {
            name: entry.id.clone(),
            description: serde_json::to_string(entry).ok(),
            ..Default::default()
        };
        let mut data = bytes;
        match tokio::time::timeout(REQUEST_TIMEOUT * 2, store.put(meta, &mut data)).await {
            Ok(Ok(_)) => self.refresh_fleet(true).await,
            Ok(Err(e)) => {
                self.store = None;
                self.shelf
                    .counts
                    .write_errors
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    "archive: cannot store replay {} in the fleet: {e}",
                    entry.id
                );
            }
            Err(_) => {
                self.store = None;
                tracing::warn!(
                    "archive: storing replay {} in the fleet timed out",
                    entry.id
                );
            }
        }
    }

    async fn get_fleet(&mut self, id: &str) -> Option<Vec<u8>> {
        let store = self.store().await?;
        let read = async {
            let mut object = store.get(id).await.ok()?;
            let mut out = Vec::new();
            object.read_to_end(&mut out).await.ok()?;
            Some(out)
        };
        tokio::time::timeout(REQUEST_TIMEOUT * 2, read)
            .await
            .ok()
            .flatten()
    }

    /// Reads the fleet's list again (at most every `FLEET_REFRESH` unless `now`), and drops
    /// the fleet's oldest replays past this member's cap.
    async fn refresh_fleet(&mut self, now: bool) {
        if !now && self.fleet_read.is_some_and(|t| t.elapsed() < FLEET_REFRESH) {
            return;
        }
        self.fleet_read = Some(Instant::now());
        let Some(store) = self.store().await else {
            return;
        };
        let listed = async {
            let mut list = store.list().await.ok()?;
            let mut out = Vec::new();
            while let Some(item) = list.next().await {
                let info = item.ok()?;
                if info.deleted {
                    continue;
                }
                if let Some(e) = info
                    .description
                    .as_deref()
                    .and_then(|d| serde_json::from_str::<Entry>(d).ok())
                {
                    if e.id == info.name {
                        out.push(e);
                    }
                }
            }
            Some(out)
        };
        let Ok(Some(mut all)) = tokio::time::timeout(REQUEST_TIMEOUT, listed).await else {
            self.store = None;
            return;
        };
        all.sort_by_key(|e| std::cmp::Reverse(e.kept_unix));
        let mut total: u64 = all.iter().map(|e| u64::from(e.bytes)).sum();
        while total > self.cfg.max_bytes && all.len() > 1 {
            let Some(old) = all.pop() else { break };
            total -= u64::from(old.bytes);
            if store.delete(&old.id).await.is_ok() {
                tracing::info!("archive: dropped the fleet's oldest replay {}", old.id);
            }
        }
        self.fleet = all;
        self.publish();
    }
}
