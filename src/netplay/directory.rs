//! The fleet directory's client (`serve --directory`): a thread with a small tokio runtime
//! that talks to NATS JetStream key-value for the serve loop, over channels, so that the
//! UDP loop never waits on it.
//!
//! # The bucket
//! One KV bucket, [`BUCKET`], history 1, replicated on up to 3 nodes (one per `--directory`
//! URL given). Values are JSON ([`RoomEntry`], [`ServerEntry`]):
//! - `room.NAME`: a room, written by the server that holds it. The name is taken with
//!   create-if-absent, so two servers never hold one; rewritten when its players,
//!   spectators or state change; deleted when it closes.
//! - `server.ID` (ID: the public address with `:`, `.`, `[`, `]` as `_`): the server's
//!   heartbeat (region, rooms, max rooms, players), rewritten every [`HEARTBEAT`].
//!
//! Every server watches the whole bucket: it answers listings and redirects from that copy.
//! NATS 2.9 has no per-key TTL, so liveness is the watchers' business: a server whose
//! heartbeat has not changed for [`SILENT`] (or that holds rooms and never beat) is gone,
//! and each watcher deletes its heartbeat and rooms, each delete conditional on the
//! revision it saw, so that a name taken again meanwhile is never touched. A server that
//! finds its own live room deleted (it was cut off from NATS that long) writes it again.
//!
//! When NATS cannot be reached, the server keeps its rooms running and listed by itself;
//! names are then only checked against its own rooms and its last copy of the others'. It
//! logs the outage once, and when NATS answers again it writes its heartbeat and rooms
//! back. Entries that do not parse are skipped and logged, never trusted.
//!
//! # Trust
//! NATS may ask who connects ([`NatsAuth`](super::NatsAuth): user and password, token, nkey seed, or a
//! `.creds` file; TLS with a CA to trust and a client certificate). Secrets come from
//! files or the environment, never from the command line, and are never logged. NATS
//! refusing them is logged as such, not as an outage, and retried like one. With a
//! [`FleetKey`] (`--directory-key`), entries are signed and entries that do not verify are
//! skipped, logged once per key and counted in [`Directory::errors`]; see
//! [`crate::serve::fleet`] for the tag.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::kv::{self, CreateErrorKind, Operation};
use async_nats::jetstream::stream;
use async_nats::{ConnectErrorKind, ServerAddr};
use futures_util::StreamExt;
use tokio::sync::mpsc as amsc;

use crate::serve::fleet::{
    room_key, server_key, FleetKey, Refused, RoomEntry, ServerEntry, ROOM_PREFIX, SERVER_PREFIX,
};
use crate::serve::{DirNews, DirOp, HEARTBEAT, SILENT};
use crate::session::msg::{RoomInfo, ServerInfo};

use super::nats_login::NatsLogin;
use super::NetplayError;

/// The directory's bucket.
pub const BUCKET: &str = "framelock-rooms";
/// How often the client checks heartbeats and retries what failed.
const TICK: Duration = Duration::from_secs(1);
/// Longest one request to NATS may take before the directory counts as unreachable.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// A watch that has not brought back this server's own heartbeat for this long is made
/// again (two heartbeats and a bit).
const WATCH_STALLED: Duration = Duration::from_secs(12);
/// Longest the client spends deleting this server's entries when it stops.
const GOODBYE: Duration = Duration::from_secs(3);

/// Where the directory is and who this server is in it.
#[derive(Clone, Debug)]
pub struct DirectoryConfig {
    /// NATS URLs (one cluster).
    pub urls: Vec<String>,
    /// This server's public address, "ADDR:PORT".
    pub me: String,
    pub region: String,
    /// How it signs in to NATS ([`NatsAuth::load`](super::NatsAuth::load)).
    pub login: NatsLogin,
    /// The fleet's key: entries are signed, and only verified ones believed.
    pub key: Option<FleetKey>,
}

/// The serve loop's handle on the directory thread.
pub struct Directory {
    ops: Option<amsc::UnboundedSender<DirOp>>,
    news: mpsc::Receiver<DirNews>,
    errors: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Directory {
    /// Starts the client; the URLs are checked here (a bad one is an error), NATS is
    /// reached in the background.
    pub fn start(cfg: DirectoryConfig) -> Result<Directory, NetplayError> {
        let mut addrs = Vec::new();
        for url in &cfg.urls {
            let addr: ServerAddr = url
                .parse()
                .map_err(|e| NetplayError::Directory(format!("--directory {url:?}: {e}")))?;
            addrs.push(addr);
        }
        if addrs.is_empty() {
            return Err(NetplayError::Directory(
                "--directory needs a NATS URL".into(),
            ));
        }
        let (ops_tx, ops_rx) = amsc::unbounded_channel();
        let (news_tx, news_rx) = mpsc::channel();
        let errors = Arc::new(AtomicU64::new(0));
        let errs = errors.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| NetplayError::Directory(format!("cannot start its runtime: {e}")))?;
        let thread = std::thread::Builder::new()
            .name("directory".into())
            .spawn(move || {
                let mut client = Client::new(cfg, addrs, news_tx, errs);
                runtime.block_on(client.run(ops_rx));
            })
            .map_err(|e| NetplayError::Directory(format!("cannot start its thread: {e}")))?;
        Ok(Directory {
            ops: Some(ops_tx),
            news: news_rx,
            errors,
            thread: Some(thread),
        })
    }

    pub fn send(&self, op: DirOp) {
        if let Some(ops) = &self.ops {
            let _ = ops.send(op);
        }
    }

    /// The next news, without waiting.
    pub fn try_recv(&self) -> Option<DirNews> {
        self.news.try_recv().ok()
    }

    /// Requests to NATS that failed, and entries skipped as malformed or unverified, so far.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// Writes what is queued, deletes this server's heartbeat (its rooms were removed
    /// before), and stops the thread.
    pub fn stop(mut self) {
        self.ops = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Directory {
    fn drop(&mut self) {
        self.ops = None;
    }
}

/// What the thread knows.
struct Client {
    cfg: DirectoryConfig,
    addrs: Vec<ServerAddr>,
    news: mpsc::Sender<DirNews>,
    errors: Arc<AtomicU64>,
    nats: Option<async_nats::Client>,
    store: Option<kv::Store>,
    watch: Option<kv::Watch>,
    /// When the watch last brought this server's own heartbeat back (or was made): one
    /// that stops doing so while the writes succeed is stuck (its consumer was on a node
    /// that died) and is made again.
    own_seen: Instant,
    online: bool,
    /// This server's rooms as last asked, by name, and the ones to (re)write.
    mine: BTreeMap<String, RoomInfo>,
    dirty: BTreeSet<String>,
    /// Names another server holds too (it had them first): never written by this one.
    conflicts: BTreeSet<String>,
    load: Option<ServerInfo>,
    beat_due: Option<Instant>,
    /// Other servers: when their heartbeat last changed (or they were first named).
    heard: HashMap<String, Instant>,
    /// Other servers' rooms: server and revision, by name.
    others: HashMap<String, (String, u64)>,
    /// Heartbeat revisions, by server.
    beats: HashMap<String, u64>,
    /// After a failure, no new try before this.
    retry_at: Option<Instant>,
    /// Entries naming this server for rooms it does not hold (left by an earlier life of
    /// it at the same address), with their revisions: deleted on the next tick.
    stale: Vec<(String, u64)>,
    /// Keys of entries skipped as unverified, logged once each.
    unverified: HashSet<String>,
    /// Whether NATS refusing the credentials was logged since the last connection.
    refusal_logged: bool,
}

impl Client {
    fn new(
        cfg: DirectoryConfig,
        addrs: Vec<ServerAddr>,
        news: mpsc::Sender<DirNews>,
        errors: Arc<AtomicU64>,
    ) -> Client {
        Client {
            cfg,
            addrs,
            news,
            errors,
            nats: None,
            store: None,
            watch: None,
            own_seen: Instant::now(),
            online: true,
            mine: BTreeMap::new(),
            dirty: BTreeSet::new(),
            conflicts: BTreeSet::new(),
            load: None,
            beat_due: None,
            heard: HashMap::new(),
            others: HashMap::new(),
            beats: HashMap::new(),
            retry_at: None,
            stale: Vec::new(),
            unverified: HashSet::new(),
            refusal_logged: false,
        }
    }

    async fn run(&mut self, mut ops: amsc::UnboundedReceiver<DirOp>) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let ev = tokio::select! {
                op = ops.recv() => Event::Op(op),
                entry = next_entry(&mut self.watch) => Event::Entry(entry),
                _ = tick.tick() => Event::Tick,
            };
            match ev {
                Event::Op(Some(op)) => self.handle_op(op).await,
                Event::Op(None) => break,
                Event::Entry(Some(Ok(e))) => self.handle_entry(e),
                Event::Entry(Some(Err(e))) => self.failed(&format!("its watch failed: {e}")),
                Event::Entry(None) => self.failed("its watch ended"),
                Event::Tick => self.handle_tick().await,
            }
        }
        // Stopping: what is queued was handled above; the heartbeat goes last.
        if let Some(store) = &self.store {
            let key = server_key(&self.cfg.me);
            let _ = tokio::time::timeout(GOODBYE, store.delete(key)).await;
        }
    }

    fn tell(&self, news: DirNews) {
        let _ = self.news.send(news);
    }

    /// A request failed: the directory counts as unreachable until it answers again.
    fn failed(&mut self, why: &str) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.store = None;
        self.watch = None;
        self.retry_at = Some(Instant::now() + TICK);
        if self.online {
            self.online = false;
            tracing::warn!(
                "directory: unreachable ({why}); rooms keep running and are listed here, \
                 retrying every {} s",
                TICK.as_secs()
            );
            self.tell(DirNews::Online(false));
        }
        // Everything this server holds is written again once it answers.
        self.dirty.extend(self.mine.keys().cloned());
    }

    /// Connects, opens the bucket and the watch, and writes back what is pending.
    async fn ensure(&mut self) -> bool {
        if self.store.is_some() && self.watch.is_some() {
            return true;
        }
        if self.retry_at.is_some_and(|t| Instant::now() < t) {
            return false;
        }
        if self.nats.is_none() {
            let opts = self
                .cfg
                .login
                .options()
                .name(format!("framelock serve {}", self.cfg.me))
                .connection_timeout(REQUEST_TIMEOUT)
                .request_timeout(Some(REQUEST_TIMEOUT))
                .max_reconnects(None)
                .reconnect_delay_callback(|n| Duration::from_millis(250 * n.min(8) as u64))
                .event_callback(refusal_watch(
                    self.cfg.urls.join(", "),
                    self.cfg.login.describe(),
                ));
            match opts.connect(self.addrs.clone()).await {
                Ok(c) => {
                    self.nats = Some(c);
                    self.refusal_logged = false;
                }
                Err(e) => {
                    let refused = matches!(
                        e.kind(),
                        ConnectErrorKind::AuthorizationViolation | ConnectErrorKind::Authentication
                    );
                    if refused && !self.refusal_logged {
                        self.refusal_logged = true;
                        tracing::warn!(
                            "directory: NATS refused our credentials ({}, {}): {e}; rooms keep \
                             running and are listed here, retrying every {} s",
                            self.cfg.urls.join(", "),
                            self.cfg.login.describe(),
                            TICK.as_secs()
                        );
                        // Not an outage: the warning above says what it is.
                        self.online = false;
                        self.tell(DirNews::Online(false));
                    }
                    self.failed(&format!("{}: {e}", self.cfg.urls.join(", ")));
                    return false;
                }
            }
        }
        let Some(nats) = self.nats.clone() else {
            return false;
        };
        let mut js = async_nats::jetstream::new(nats);
        js.set_timeout(REQUEST_TIMEOUT);
        let store = match js.get_key_value(BUCKET).await {
            Ok(s) => s,
            Err(_) => {
                // The stream a KV bucket is, made directly: the client's bucket creation
                // asks for account details in a form NATS 2.9 does not answer in.
                let config = stream::Config {
                    name: format!("KV_{BUCKET}"),
                    description: Some("framelock serve: the fleet's rooms and servers".into()),
                    subjects: vec![format!("$KV.{BUCKET}.>")],
                    max_messages_per_subject: 1,
                    storage: stream::StorageType::File,
                    allow_rollup: true,
                    deny_delete: true,
                    allow_direct: true,
                    discard: stream::DiscardPolicy::New,
                    num_replicas: self.cfg.urls.len().clamp(1, 3),
                    ..stream::Config::default()
                };
                let made = js.get_or_create_stream(config).await;
                match js.get_key_value(BUCKET).await {
                    Ok(s) => s,
                    Err(e) => {
                        let why = match made {
                            Err(made) => made.to_string(),
                            Ok(_) => e.to_string(),
                        };
                        self.failed(&format!("cannot open bucket {BUCKET}: {why}"));
                        return false;
                    }
                }
            }
        };
        // Every key's latest value first, then every change.
        let watch = match store.watch_with_history(">").await {
            Ok(w) => w,
            Err(e) => {
                self.failed(&format!("cannot watch bucket {BUCKET}: {e}"));
                return false;
            }
        };
        // The watch replays every entry: the copy starts over.
        for (room, _) in self.others.drain() {
            let _ = self.news.send(DirNews::RoomGone(room));
        }
        self.heard.clear();
        self.beats.clear();
        self.store = Some(store);
        self.watch = Some(watch);
        self.own_seen = Instant::now();
        if !self.online {
            self.online = true;
            tracing::info!("directory: reachable again; writing this server's rooms back");
            self.tell(DirNews::Online(true));
        }
        self.dirty.extend(self.mine.keys().cloned());
        self.beat_due = Some(Instant::now());
        true
    }

    async fn handle_op(&mut self, op: DirOp) {
        match op {
            DirOp::Claim(info) => {
                let name = info.name.clone();
                if !self.ensure().await {
                    self.mine.insert(name.clone(), info);
                    self.dirty.insert(name.clone());
                    return self.tell(DirNews::Unreachable(name));
                }
                self.mine.insert(name.clone(), info);
                match self.create(&name).await {
                    Ok(None) => self.tell(DirNews::Claimed(name)),
                    Ok(Some(server)) => {
                        self.mine.remove(&name);
                        self.tell(DirNews::Taken { room: name, server });
                    }
                    Err(e) => {
                        self.failed(&e);
                        self.tell(DirNews::Unreachable(name));
                    }
                }
            }
            DirOp::Update(info) => {
                let name = info.name.clone();
                self.mine.insert(name.clone(), info);
                if !self.conflicts.contains(&name) {
                    self.dirty.insert(name.clone());
                    self.flush_one(&name).await;
                }
            }
            DirOp::Remove(name) => {
                self.mine.remove(&name);
                self.dirty.remove(&name);
                if self.conflicts.remove(&name) {
                    return;
                }
                if let Some(store) = self.store.clone() {
                    if let Err(e) = store.delete(room_key(&name)).await {
                        self.failed(&format!("cannot delete room {name}: {e}"));
                    }
                }
            }
            DirOp::Load(load) => self.load = Some(load),
        }
    }

    /// Create-if-absent: `Ok(None)` if the name is this server's now, `Ok(Some(server))` if
    /// another server holds it.
    async fn create(&mut self, name: &str) -> Result<Option<String>, String> {
        let (Some(store), Some(info)) = (self.store.clone(), self.mine.get(name)) else {
            return Err("not connected".into());
        };
        let value = entry_bytes(info, self.cfg.key.as_ref());
        let key = room_key(name);
        match store.create(&key, value.clone().into()).await {
            Ok(_) => Ok(None),
            Err(e) if e.kind() == CreateErrorKind::AlreadyExists => {
                let held = store
                    .entry(key.clone())
                    .await
                    .map_err(|e| format!("cannot read {key}: {e}"))?;
                // An entry that does not verify holds nothing.
                let holder = held
                    .and_then(|e| {
                        RoomEntry::parse(&key, &e.value, unix_now(), self.cfg.key.as_ref()).ok()
                    })
                    .map(|i| i.server);
                match holder {
                    // Left from an earlier life of this server, or written back twice.
                    Some(s) if s == self.cfg.me => {
                        store
                            .put(&key, value.into())
                            .await
                            .map_err(|e| format!("cannot write {key}: {e}"))?;
                        Ok(None)
                    }
                    Some(s) => Ok(Some(s)),
                    // Malformed or gone meanwhile: it is nobody's.
                    None => {
                        store
                            .put(&key, value.into())
                            .await
                            .map_err(|e| format!("cannot write {key}: {e}"))?;
                        Ok(None)
                    }
                }
            }
            Err(e) => Err(format!("cannot create {key}: {e}")),
        }
    }

    /// Writes one of this server's rooms if it is to be written.
    async fn flush_one(&mut self, name: &str) {
        if !self.dirty.contains(name) || !self.ensure().await {
            return;
        }
        match self.create(name).await {
            Ok(None) => {
                self.dirty.remove(name);
            }
            Ok(Some(server)) => {
                self.dirty.remove(name);
                self.conflicts.insert(name.to_string());
                tracing::warn!(
                    "directory: room {name} was opened here while the directory was \
                     unreachable, and {server} holds that name there: joiners who ask \
                     another server are sent to {server}"
                );
            }
            Err(e) => self.failed(&e),
        }
    }

    async fn handle_tick(&mut self) {
        if !self.ensure().await {
            return;
        }
        let dirty: Vec<String> = self.dirty.iter().cloned().collect();
        for name in dirty {
            self.flush_one(&name).await;
        }
        let now = Instant::now();
        if self.beat_due.is_none_or(|t| now >= t) {
            self.beat_due = Some(now + HEARTBEAT);
            let load = self.load.clone().unwrap_or(ServerInfo {
                server: self.cfg.me.clone(),
                region: self.cfg.region.clone(),
                rooms: 0,
                max_rooms: 0,
                players: 0,
            });
            let value = ServerEntry::to_value(&load, self.cfg.key.as_ref());
            if let Some(store) = self.store.clone() {
                if let Err(e) = store.put(server_key(&self.cfg.me), value.into()).await {
                    return self.failed(&format!("cannot write the heartbeat: {e}"));
                }
            }
            if now >= self.own_seen + WATCH_STALLED {
                return self.failed("its watch stalled: this server's heartbeat did not come back");
            }
        }
        for (name, rev) in std::mem::take(&mut self.stale) {
            if let (Some(store), false) = (&self.store, self.mine.contains_key(&name)) {
                tracing::info!("directory: deleting room {name}, left by an earlier run here");
                let _ = store
                    .delete_expect_revision(room_key(&name), Some(rev))
                    .await;
            }
        }
        // Servers gone silent: their heartbeat and rooms leave the directory.
        let silent: Vec<String> = self
            .heard
            .iter()
            .filter(|(_, t)| now >= **t + SILENT)
            .map(|(s, _)| s.clone())
            .collect();
        for server in silent {
            self.heard.remove(&server);
            tracing::info!(
                "directory: {server} silent for {} s: dropping it and its rooms",
                SILENT.as_secs()
            );
            self.tell(DirNews::ServerGone(server.clone()));
            let rooms: Vec<(String, u64)> = self
                .others
                .iter()
                .filter(|(_, (s, _))| *s == server)
                .map(|(n, (_, rev))| (n.clone(), *rev))
                .collect();
            let Some(store) = self.store.clone() else {
                return;
            };
            for (name, rev) in rooms {
                self.others.remove(&name);
                // Only the entry seen: a name taken again meanwhile is the new holder's.
                let _ = store
                    .delete_expect_revision(room_key(&name), Some(rev))
                    .await;
            }
            if let Some(rev) = self.beats.remove(&server) {
                let _ = store
                    .delete_expect_revision(server_key(&server), Some(rev))
                    .await;
            }
        }
    }

    fn handle_entry(&mut self, e: kv::Entry) {
        let now = Instant::now();
        let put = e.operation == Operation::Put;
        if let Some(name) = e.key.strip_prefix(ROOM_PREFIX) {
            if !put {
                if self.mine.contains_key(name) && !self.conflicts.contains(name) {
                    // This server still holds it: it was dropped while cut off.
                    self.dirty.insert(name.to_string());
                }
                if self.others.remove(name).is_some() {
                    self.tell(DirNews::RoomGone(name.to_string()));
                }
                return;
            }
            match RoomEntry::parse(&e.key, &e.value, unix_now(), self.cfg.key.as_ref()) {
                Ok(info) if info.server == self.cfg.me => {
                    if self.others.remove(name).is_some() {
                        self.tell(DirNews::RoomGone(name.to_string()));
                    }
                    if !self.mine.contains_key(name) {
                        self.stale.push((name.to_string(), e.revision));
                    }
                }
                Ok(info) => {
                    self.heard.entry(info.server.clone()).or_insert(now);
                    self.others
                        .insert(name.to_string(), (info.server.clone(), e.revision));
                    self.tell(DirNews::Room(info));
                }
                Err(why) => self.skipped(&e.key, &why),
            }
        } else if e.key.starts_with(SERVER_PREFIX) {
            if !put {
                if let Some(server) = self
                    .beats
                    .iter()
                    .find(|(s, _)| server_key(s) == e.key)
                    .map(|(s, _)| s.clone())
                {
                    self.beats.remove(&server);
                }
                return;
            }
            match ServerEntry::parse(&e.key, &e.value, self.cfg.key.as_ref()) {
                Ok(info) => {
                    if info.server != self.cfg.me {
                        self.heard.insert(info.server.clone(), now);
                        self.beats.insert(info.server.clone(), e.revision);
                    } else {
                        self.own_seen = now;
                    }
                    self.tell(DirNews::Server(info));
                }
                Err(why) => self.skipped(&e.key, &why),
            }
        } else {
            self.skipped(
                &e.key,
                &Refused::Malformed("not room.NAME nor server.ID".into()),
            );
        }
    }

    /// An entry not believed: counted; logged, once per key if it did not verify (anyone
    /// who can write the bucket could otherwise fill the log).
    fn skipped(&mut self, key: &str, why: &Refused) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        match why {
            Refused::Malformed(why) => {
                tracing::warn!("directory: skipped malformed entry {key:?}: {why}")
            }
            Refused::Unverified(why) => {
                if self.unverified.insert(key.to_string()) {
                    tracing::warn!(
                        "directory: skipped entry {key:?}: {why} (--directory-key); \
                         not written by a server of this fleet, never listed nor redirected to \
                         (logged once per key)"
                    );
                }
            }
        }
    }
}

/// The client's event callback: NATS refusing the credentials once connected (they were
/// revoked or changed there, and each reconnection is refused) is logged as that, once until
/// it connects again; without it the log would only say that requests time out.
fn refusal_watch(
    urls: String,
    login: String,
) -> impl Fn(async_nats::Event) -> std::future::Ready<()> + Send + Sync + 'static {
    let logged = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let violation = ConnectErrorKind::AuthorizationViolation.to_string();
    move |ev| {
        let refused = match &ev {
            async_nats::Event::ServerError(async_nats::ServerError::AuthorizationViolation) => true,
            async_nats::Event::ClientError(async_nats::ClientError::Other(e)) => *e == violation,
            async_nats::Event::Connected => {
                logged.store(false, Ordering::Relaxed);
                false
            }
            _ => false,
        };
        if refused && !logged.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "directory: NATS refused our credentials ({urls}, {login}): {ev}; rooms keep \
                 running and are listed here, retrying"
            );
        }
        std::future::ready(())
    }
}

enum Event {
    Op(Option<DirOp>),
    Entry(Option<Result<kv::Entry, kv::WatcherError>>),
    Tick,
}

async fn next_entry(watch: &mut Option<kv::Watch>) -> Option<Result<kv::Entry, kv::WatcherError>> {
    match watch {
        Some(w) => w.next().await,
        None => std::future::pending().await,
    }
}

fn entry_bytes(info: &RoomInfo, key: Option<&FleetKey>) -> Vec<u8> {
    RoomEntry::to_value(info, unix_now(), key)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
