//! `framelock serve` and `framelock rooms`: [`serve::Rooms`](crate::serve::Rooms) carried over
//! one UDP socket, and the room directory asked for over another.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::lockstep::{self, own_name, Slot};
use crate::net::{drive, random_bytes, Link, NetSim, UdpSocket};
use crate::serve::{OpenJob, Opened, Rooms, ServeConfig, ServeEvent};
use crate::session::msg::{Msg, RoomInfo, RoomMsg};
use crate::session::EndpointEvent;
use crate::wire::HEADER_LEN;

use super::address::resolve;
use super::archive::{Archive, ArchiveConfig};
use super::directory::{Directory, DirectoryConfig};
use super::metrics::Metrics;
use super::nats_login::{NatsAuth, NatsLogin};
use super::web::{Snapshot, Web, WebConfig};
use super::{NetplayError, GOODBYE_DRAIN};

/// Longest the server sleeps without a datagram or a timer, so that Ctrl-C is seen.
const IDLE_WAKE: Duration = Duration::from_millis(100);
/// How often the loop looks for the directory's answer while an Open waits for it.
const CLAIM_POLL: Duration = Duration::from_millis(1);
/// How often the loop looks for a room the opening worker finished.
const JOB_POLL: Duration = Duration::from_millis(2);
/// How often the server logs how many rooms and players it serves.
const SUMMARY_EVERY: Duration = Duration::from_secs(60);

#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub port: u16,
    /// Listen on this address only (default: every address, IPv6 and IPv4).
    pub bind: Option<IpAddr>,
    pub max_rooms: usize,
    pub opens_per_minute: u32,
    /// Rooms one IPv4 address or IPv6 /64 holds at once.
    pub rooms_per_address: usize,
    /// Largest unpacked start state of a room, MiB.
    pub max_state_mib: usize,
    /// Start-state MiB all rooms hold together.
    pub max_memory_mib: usize,
    /// Bytes per second to each player, UDP/IP headers included (0: unlimited).
    pub send_budget: u32,
    /// Spectators each room takes at once.
    pub max_spectators: u8,
    /// Mode of rooms whose creator does not ask for one.
    pub mode: lockstep::Mode,
    pub netsim: Option<NetSim>,
    /// Stop after this long (tests, benchmarks); `None`: until Ctrl-C.
    pub duration: Option<Duration>,
    pub stats_json: Option<std::path::PathBuf>,
    /// NATS URLs of the fleet's directory (empty: a lone server).
    pub directory: Vec<String>,
    /// The address players reach this server at, "ADDR:PORT" (needed with `directory`).
    pub public_address: Option<String>,
    /// How it signs in to the directory's NATS.
    pub directory_auth: NatsAuth,
    /// The file holding the fleet's key, which signs directory entries (`--directory-key`).
    pub directory_key: Option<std::path::PathBuf>,
    /// This server's region in the fleet.
    pub region: String,
    /// Serve Prometheus metrics over HTTP here.
    pub metrics: Option<SocketAddr>,
    /// Serve the server's web page here (`--http`).
    pub http: Option<SocketAddr>,
    /// Keep finished rooms' replays in this directory (`--archive`).
    pub archive: Option<std::path::PathBuf>,
    /// MiB of replays kept at most (`--archive-mib`).
    pub archive_mib: u64,
}

/// The fleet member's settings checked (its credentials and key read), and its directory
/// client started; also the NATS login, for the archive.
fn join_fleet(opts: &ServeOptions) -> Result<Option<(Directory, String, NatsLogin)>, NetplayError> {
    if opts.directory.is_empty() {
        return Ok(None);
    }
    let me = opts.public_address.clone().ok_or_else(|| {
        NetplayError::Directory(
            "--directory needs --public-address ADDR:PORT: the address players reach this              server at"
                .into(),
        )
    })?;
    crate::serve::fleet::check_server(&me)
        .map_err(|e| NetplayError::Directory(format!("--public-address: {e}")))?;
    crate::serve::fleet::check_region(&opts.region)
        .map_err(|e| NetplayError::Directory(format!("--region: {e}")))?;
    let login = opts.directory_auth.load()?;
    let key = match &opts.directory_key {
        Some(path) => {
            super::nats_login::warn_if_shared("--directory-key", path);
            let bytes = std::fs::read(path).map_err(|e| {
                NetplayError::Directory(format!(
                    "--directory-key {}: cannot read it: {e}",
                    path.display()
                ))
            })?;
            let key = crate::serve::fleet::FleetKey::from_secret(&bytes).map_err(|e| {
                NetplayError::Directory(format!("--directory-key {}: {e}", path.display()))
            })?;
            Some(key)
        }
        None => {
            tracing::warn!(
                "serve: no --directory-key: directory entries are not signed, and anyone who \
                 can write the NATS bucket can add rooms that send joiners to any address; \
                 give every server of the fleet the same key file"
            );
            None
        }
    };
    let signed = key.is_some();
    let dir = Directory::start(DirectoryConfig {
        urls: opts.directory.clone(),
        me: me.clone(),
        region: opts.region.clone(),
        login: login.clone(),
        key,
    })?;
    tracing::info!(
        "serve: fleet member {me}{} with directory {} ({}{})",
        if opts.region.is_empty() {
            String::new()
        } else {
            format!(" in region {}", opts.region)
        },
        opts.directory.join(", "),
        login.describe(),
        if signed { ", entries signed" } else { "" }
    );
    Ok(Some((dir, me, login)))
}

/// The thread that checks uploaded start states and builds rooms (`serve::opening`), so the
/// loop answers every other room's datagrams meanwhile. One at a time: the unpacked states
/// in memory at once stay one.
struct Opener {
    jobs: std::sync::mpsc::Sender<OpenJob>,
    done: std::sync::mpsc::Receiver<Opened>,
    /// Jobs handed over and not back yet.
    pending: usize,
}

impl Opener {
    fn start() -> Opener {
        let (jobs, todo) = std::sync::mpsc::channel::<OpenJob>();
        let (finished, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for job in todo {
                if finished.send(job.run()).is_err() {
                    break;
                }
            }
        });
        Opener {
            jobs,
            done,
            pending: 0,
        }
    }

    /// Hands the rooms' new jobs to the worker and its finished rooms to the rooms.
    fn exchange(&mut self, now: Instant, rooms: &mut Rooms) {
        while let Some(job) = rooms.poll_job() {
            match self.jobs.send(job) {
                Ok(()) => self.pending += 1,
                // The worker died (a panic): open it here rather than never.
                Err(std::sync::mpsc::SendError(job)) => rooms.handle_opened(now, job.run()),
            }
        }
        while let Ok(opened) = self.done.try_recv() {
            self.pending -= 1;
            rooms.handle_opened(now, opened);
        }
    }
}

/// How long the server takes to answer: from taking a batch of datagrams off the socket to
/// handing the last datagram they caused to it, in 10 µs buckets up to 100 ms.
struct AnswerTimes {
    buckets: Vec<u64>,
    count: u64,
    max: Duration,
}

impl AnswerTimes {
    const BUCKET_US: u64 = 10;

    fn new() -> AnswerTimes {
        AnswerTimes {
            buckets: vec![0; 10_000],
            count: 0,
            max: Duration::ZERO,
        }
    }

    fn record(&mut self, d: Duration) {
        let i = (d.as_micros() as u64 / Self::BUCKET_US).min(self.buckets.len() as u64 - 1);
        self.buckets[i as usize] += 1;
        self.count += 1;
        self.max = self.max.max(d);
    }

    /// The `q` quantile in microseconds (the bucket's upper end).
    fn quantile_us(&self, q: f64) -> u64 {
        let want = (self.count as f64 * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= want {
                return (i as u64 + 1) * Self::BUCKET_US;
            }
        }
        self.max.as_micros() as u64
    }
}

/// Serves rooms until Ctrl-C (or `duration`), then tells every room's players.
pub fn serve(opts: &ServeOptions) -> Result<(), NetplayError> {
    let socket = match opts.bind {
        Some(ip) => UdpSocket::bind(SocketAddr::new(ip, opts.port))?,
        None => UdpSocket::bind_host(opts.port)?,
    };
    let mut link = Link::new(socket, opts.netsim.clone());
    let cfg = ServeConfig {
        max_rooms: opts.max_rooms,
        opens_per_minute: opts.opens_per_minute,
        max_state: opts.max_state_mib << 20,
        rooms_per_address: opts.rooms_per_address,
        max_memory: opts.max_memory_mib << 20,
        lockstep: lockstep::Config {
            send_budget: opts.send_budget,
            mode: opts.mode,
            ..lockstep::Config::default()
        },
        entropy: random_bytes(),
        max_spectators: opts.max_spectators,
        archive: opts.archive.is_some(),
        max_replay: crate::serve::archive::DEFAULT_MAX_REPLAY,
    };
    let fleet = join_fleet(opts)?;
    let (mut metrics, registry) = match (opts.metrics, opts.http) {
        (Some(addr), _) => (Some(Metrics::listen(addr)?), None),
        // The page serves them at /metrics.
        (None, Some(_)) => {
            let (m, registry) = Metrics::new();
            (Some(m), Some(registry))
        }
        (None, None) => (None, None),
    };
    let mut archive = match &opts.archive {
        Some(dir) => Some(Archive::start(ArchiveConfig {
            dir: dir.clone(),
            max_bytes: opts.archive_mib << 20,
            nats: opts.directory.clone(),
            me: opts.public_address.clone().unwrap_or_default(),
            login: fleet
                .as_ref()
                .map(|(_, _, login)| login.clone())
                .unwrap_or_default(),
        })?),
        None => None,
    };
    let web = match opts.http {
        Some(addr) => Some(Web::start(WebConfig {
            addr,
            metrics: registry,
            shelf: archive.as_ref().map(|a| a.shelf.clone()),
        })?),
        None => None,
    };
    let mut rooms = Rooms::new(cfg);
    rooms.set_unix_time(chrono::Utc::now().timestamp());
    let directory = match fleet {
        Some((dir, me, _)) => {
            rooms = rooms.with_fleet(Instant::now(), me, opts.region.clone());
            Some(dir)
        }
        None => None,
    };
    let local = link.local_addr();
    tracing::info!(
        "serve: listening on udp {local}; rooms open with `framelock host --server THIS-HOST:{}` \
         (at most {} rooms, {} a minute from one address)",
        local.port(),
        opts.max_rooms,
        opts.opens_per_minute
    );
    let started = Instant::now();
    let mut summary_at = started + SUMMARY_EVERY;
    let mut answers = AnswerTimes::new();
    let mut metrics_at = started;
    let mut opener = Opener::start();
    loop {
        let now = Instant::now();
        if let Some(dir) = &directory {
            while let Some(news) = dir.try_recv() {
                rooms.handle_directory(now, news);
            }
        }
        // The halves of a `drive::step`, with the rooms' own work between: their timers run
        // only when due (thousands of rooms), and the start-state checker and the archive
        // hand them rooms and answers to send in the same turn.
        let came = drive::receive(&mut link, &mut rooms, now)? > 0;
        let timer = rooms.poll_timeout();
        if timer.is_some_and(|t| t <= now) {
            rooms.handle_timeout(now);
        }
        opener.exchange(now, &mut rooms);
        if let Some(a) = &mut archive {
            exchange_archive(a, &mut rooms);
        }
        drive::send_queued(&mut link, &mut rooms, now);
        if came {
            let took = now.elapsed();
            answers.record(took);
            if let Some(m) = &metrics {
                m.observe_answer(took);
            }
        }
        if let Some(dir) = &directory {
            while let Some(op) = rooms.poll_directory() {
                dir.send(op);
            }
        }
        if now >= metrics_at {
            rooms.set_unix_time(chrono::Utc::now().timestamp());
            if let Some(w) = &web {
                w.publish(snapshot(&rooms, now, opts, local.port(), archive.as_ref()));
            }
        }
        if let Some(m) = &mut metrics {
            if now >= metrics_at {
                let list = rooms.list(now);
                let players = list.iter().map(|r| usize::from(r.players)).sum();
                let watching = list.iter().map(|r| usize::from(r.spectators)).sum();
                let errors = directory.as_ref().map_or(0, Directory::errors);
                m.update(&rooms.stats(), (list.len(), players, watching), errors);
            }
        }
        if now >= metrics_at {
            metrics_at = now + Duration::from_secs(1);
        }
        while let Some(ev) = rooms.poll_event() {
            log_event(&ev);
        }
        if now >= summary_at {
            summary_at = now + SUMMARY_EVERY;
            let s = rooms.stats();
            let list = rooms.list(now);
            let players: usize = list.iter().map(|r| usize::from(r.players)).sum();
            let (direct, relayed) = rooms.hosted_paths();
            tracing::info!(
                "serve: {} room(s), {players} player(s) ({direct} direct, {relayed} relayed in \
                 rooms hosted by a player); {} datagrams in, {} out, {} KiB relayed; dropped: {} \
                 garbage, {} for no room of theirs, {} held from unproven addresses",
                list.len(),
                s.datagrams_in,
                s.datagrams_out,
                s.bytes_relayed / 1024,
                s.garbage,
                s.wrong_room,
                s.held_unvalidated
            );
        }
        let over = opts.duration.is_some_and(|d| now >= started + d);
        if crate::app::interrupt::requested() || over {
            let n = rooms.len();
            let open_rooms: Vec<serde_json::Value> = rooms
                .room_stats()
                .into_iter()
                .map(|(room, mode, stats)| {
                    json!({
                        "room": room,
                        "mode": mode.as_str(),
                        "placement": super::report::placement_json(stats.as_ref()),
                    })
                })
                .collect();
            rooms.shutdown(now);
            if let Some(a) = &mut archive {
                exchange_archive(a, &mut rooms);
            }
            drive::send_queued(&mut link, &mut rooms, now);
            if let Some(dir) = directory {
                while let Some(op) = rooms.poll_directory() {
                    dir.send(op);
                }
                dir.stop();
            }
            while let Some(ev) = rooms.poll_event() {
                log_event(&ev);
            }
            link.drain(GOODBYE_DRAIN);
            let kept = archive.as_ref().map(|a| archive_json(&a.shelf.counts));
            if let Some(a) = archive.take() {
                a.stop(Duration::from_secs(10));
            }
            tracing::info!("serve: stopped; told the players of {n} room(s)");
            if let Some(path) = &opts.stats_json {
                let s = rooms.stats();
                let stats = json!({
                    "wall_s": started.elapsed().as_secs_f64(),
                    "datagrams_in": s.datagrams_in,
                    "datagrams_out": s.datagrams_out,
                    "bytes_in": s.bytes_in,
                    "bytes_out": s.bytes_out,
                    "bytes_relayed": s.bytes_relayed,
                    "dropped_garbage": s.garbage,
                    "dropped_wrong_room": s.wrong_room,
                    "packets_dropped_auth": s.dropped_auth,
                    "dropped_relay_limited": s.relay_limited,
                    "chat_flood_dropped": s.chat_flood_dropped,
                    "refused_rate_limited": s.rate_limited,
                    "refused_full": s.full,
                    "held_unvalidated": s.held_unvalidated,
                    "rooms_opened": s.rooms_opened,
                    "rooms_closed": s.rooms_closed,
                    "replays_recorded": s.replays_recorded,
                    "uploads": {
                        "received": s.uploads_received,
                        "refused_unknown_room": s.uploads_unknown_room,
                        "refused_stranger": s.uploads_stranger,
                        "refused_too_large": s.uploads_too_large,
                        "refused_forged": s.uploads_forged,
                        "refused_not_shared": s.uploads_not_shared,
                    },
                    "archive": kept,
                    "http": web.as_ref().map(|w| web_json(&w.counts)),
                    "rooms": open_rooms,
                    "answer_us": {
                        "p50": answers.quantile_us(0.5),
                        "p99": answers.quantile_us(0.99),
                        "max": answers.max.as_micros() as u64,
                    },
                });
                let map = stats.as_object().cloned().unwrap_or_default();
                crate::app::stats::write(path, &map)
                    .map_err(|e| NetplayError::from(crate::app::PlayError::from(e)))?;
            }
            return Ok(());
        }
        let wake = [rooms.poll_timeout(), Some(summary_at)]
            .into_iter()
            .flatten()
            .min()
            .map_or(now + IDLE_WAKE, |t| t.min(now + IDLE_WAKE));
        let wake = if rooms.awaits_directory() {
            wake.min(now + CLAIM_POLL)
        } else {
            wake
        };
        let wake = if opener.pending > 0 {
            wake.min(now + JOB_POLL)
        } else {
            wake
        };
        // The archive's answers go out as soon as they come.
        let wake = if archive.as_ref().is_some_and(|a| a.pending > 0) {
            wake.min(now + CLAIM_POLL)
        } else {
            wake
        };
        link.wait_until(now, Some(wake))?;
    }
}

/// Hands the rooms' finished recordings and archive requests to the archive, and its
/// answers back to the rooms to send.
fn exchange_archive(archive: &mut Archive, rooms: &mut Rooms) {
    while let Some(kept) = rooms.poll_kept() {
        archive.keep(kept);
    }
    while let Some(ask) = rooms.poll_ask() {
        archive.ask(ask);
    }
    while let Some((to, bytes)) = archive.answered() {
        rooms.answer(to, bytes);
    }
}

/// What the web page shows now.
fn snapshot(
    rooms: &Rooms,
    now: Instant,
    opts: &ServeOptions,
    udp_port: u16,
    archive: Option<&Archive>,
) -> Snapshot {
    let page_rooms = rooms.page_rooms(now);
    let spectators = page_rooms
        .iter()
        .map(|r| usize::from(r.info.spectators))
        .sum();
    let fleet = !opts.directory.is_empty();
    Snapshot {
        taken_unix: chrono::Utc::now().timestamp(),
        public: opts.public_address.clone(),
        udp_port,
        load: Some(rooms.load()),
        spectators,
        rooms: page_rooms,
        fleet_rooms: rooms.fleet_rooms(),
        servers: if fleet {
            rooms.fleet_servers()
        } else {
            Vec::new()
        },
        archive: archive.is_some(),
        archive_bytes: archive.map_or((0, 0), |a| {
            (
                a.shelf
                    .counts
                    .bytes_kept
                    .load(std::sync::atomic::Ordering::Relaxed),
                opts.archive_mib << 20,
            )
        }),
    }
}

fn archive_json(c: &super::archive::ArchiveCounts) -> serde_json::Value {
    let n = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    json!({
        "kept": n(&c.kept),
        "refused_bad": n(&c.refused_bad),
        "refused_too_large": n(&c.refused_large),
        "dropped_oldest": n(&c.dropped_oldest),
        "write_errors": n(&c.write_errors),
        "bytes_kept": n(&c.bytes_kept),
    })
}

fn web_json(c: &super::web::WebCounts) -> serde_json::Value {
    let n = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    json!({
        "requests": n(&c.requests),
        "refused_busy": n(&c.refused_busy),
        "refused_rate": n(&c.refused_rate),
        "refused_bad": n(&c.refused_bad),
        "timed_out": n(&c.timed_out),
    })
}

fn log_event(ev: &ServeEvent) {
    match ev {
        ServeEvent::Opened {
            room,
            creator,
            seats,
            core,
            content,
            password,
        } => tracing::info!(
            "room {room}: opened by {creator}: {core}, {}, {seats} seats{}",
            if content.is_empty() {
                "no content"
            } else {
                content
            },
            if *password { ", password" } else { "" }
        ),
        ServeEvent::Refused { addr, reason } => tracing::info!("refused {addr}: {reason}"),
        ServeEvent::Room { room, event } => log_room_event(room, event),
        ServeEvent::Out {
            room,
            slot,
            from_frame,
            said: Some(said),
            ..
        } => tracing::info!(
            "room {room}: {slot} {said}; neutral input from frame {}",
            from_frame.0
        ),
        ServeEvent::Out {
            room,
            slot,
            from_frame,
            reason,
            said: None,
        } => tracing::info!(
            "room {room}: {slot} is out ({reason}); neutral input from frame {}",
            from_frame.0
        ),
        ServeEvent::Closed { room, why } => tracing::info!("room {room}: closed ({why})"),
        ServeEvent::Watching {
            room,
            name,
            frame,
            watching,
        } => tracing::info!(
            "room {room}: {name} watches from frame {} ({watching} watching)",
            frame.0
        ),
        ServeEvent::SpectatorLeft { room, reason } => {
            tracing::info!("room {room}: spectator {reason}")
        }
        ServeEvent::Moved { addr, room, server } => {
            tracing::info!("sent {addr} to {server} for room {room:?}")
        }
        ServeEvent::ClaimUnanswered { room, why } => {
            tracing::warn!("room {room}: opens here alone: {why}")
        }
    }
}

/// A room's endpoint's event in the server's log. What the server says otherwise
/// (`ServeEvent::Out`, `Watching`, `SpectatorLeft`) or has no line for goes to debug.
fn log_room_event(room: &str, ev: &EndpointEvent) {
    match ev {
        EndpointEvent::Admitted {
            slot: Slot::Player(slot),
            name,
            addr,
        } => match own_name(name, Slot::Player(*slot)) {
            Some(name) => tracing::info!("room {room}: {name} joined as {slot} from {addr}"),
            None => tracing::info!("room {room}: {slot} joined from {addr}"),
        },
        EndpointEvent::Refused { addr, reason } => tracing::info!("refused {addr}: {reason}"),
        EndpointEvent::Started { slots } => {
            tracing::info!("room {room}: the game starts with {} players", slots.len())
        }
        EndpointEvent::Left { slot, reason } => tracing::info!("room {room}: {slot} {reason}"),
        EndpointEvent::Desync {
            slot,
            frame,
            source: Some(source),
            ..
        } => tracing::warn!(
            "room {room}: desync at frame {}: {slot} differs from most players; resyncing it \
             with {source}'s state",
            frame.0
        ),
        EndpointEvent::Desync {
            slot,
            frame,
            source: None,
            ..
        } => tracing::warn!(
            "room {room}: desync at frame {}: {slot} differs (recovery under way)",
            frame.0
        ),
        EndpointEvent::Resynced { slot, frame } => tracing::info!(
            "room {room}: {slot} has the state for frame {} and continues from it",
            frame.0
        ),
        EndpointEvent::PathChanged { slot, from, to } => {
            tracing::info!("room {room}: {slot} moved from {from} to {to}")
        }
        EndpointEvent::PlayerJoined {
            slot,
            name,
            from_frame,
        } => {
            let who = match own_name(name, Slot::Player(*slot)) {
                Some(name) => format!("{name} ({slot})"),
                None => slot.to_string(),
            };
            tracing::info!("room {room}: {who} joined from frame {}", from_frame.0)
        }
        EndpointEvent::Admitted {
            slot: Slot::Spectator(_),
            ..
        }
        | EndpointEvent::Ready { .. }
        | EndpointEvent::LobbyExpired { .. }
        | EndpointEvent::PlayerSilent { .. }
        | EndpointEvent::PlayerOut { .. }
        | EndpointEvent::StillLoading { .. }
        | EndpointEvent::Running { .. }
        | EndpointEvent::StateWanted { .. }
        | EndpointEvent::Watching { .. }
        | EndpointEvent::SpectatorLeft { .. }
        | EndpointEvent::NoState { .. } => tracing::debug!("room {room}: {ev:?}"),
    }
}

/// `framelock rooms`: the open rooms on a server, in pages of `MAX_LISTED`. It gives up
/// when the server is silent for `HANDSHAKE_TIMEOUT`, not after it in all: a fleet lists
/// thousands of rooms, a round trip a page.
pub fn list_rooms(server: &str) -> Result<Vec<RoomInfo>, NetplayError> {
    let addr = resolve(server)?;
    let mut link = Link::client(addr, None)?;
    let mut rooms: Vec<RoomInfo> = Vec::new();
    let mut deadline = Instant::now() + crate::session::HANDSHAKE_TIMEOUT;
    let mut total = None;
    let mut asked: Option<Instant> = None;
    let mut heard = false;
    while total.is_none_or(|t| rooms.len() < t as usize) {
        let now = Instant::now();
        if now >= deadline {
            return Err(NetplayError::Join(if heard {
                crate::session::SessionError::HostSilent { secs: 5 }
            } else {
                crate::session::SessionError::NoAnswer { addr, secs: 5 }
            }));
        }
        if asked.is_none_or(|t| now >= t + crate::session::HELLO_INTERVAL) {
            asked = Some(now);
            let first = rooms.len().min(u32::MAX as usize) as u32;
            link.send(now, addr, Msg::Room(RoomMsg::List { first }).encode(0));
        }
        for (from, bytes) in link.recv(now)? {
            if from != addr {
                continue;
            }
            match Msg::decode(&bytes) {
                Ok((
                    _,
                    Msg::Room(RoomMsg::Rooms {
                        total: t,
                        first,
                        rooms: page,
                    }),
                )) if first as usize == rooms.len() => {
                    heard = true;
                    total = Some(t);
                    if page.is_empty() {
                        // The list shrank while we read it.
                        total = Some(rooms.len() as u32);
                    }
                    rooms.extend(page);
                    asked = None;
                    deadline = now + crate::session::HANDSHAKE_TIMEOUT;
                }
                Ok((_, Msg::Refuse(reason))) => {
                    return Err(NetplayError::Join(crate::session::SessionError::Refused(
                        reason,
                    )))
                }
                _ if bytes.len() >= HEADER_LEN => heard = true,
                _ => {}
            }
        }
        // A page just came: the next is asked for at once.
        if asked.is_some() {
            link.wait_until(now, Some(now + Duration::from_millis(20)))?;
        }
    }
    Ok(rooms)
}

/// The table `framelock rooms` prints.
pub fn rooms_table(rooms: &[RoomInfo]) -> String {
    if rooms.is_empty() {
        return "no open rooms\n".into();
    }
    // A fleet's rooms say where they are.
    let fleet = rooms.iter().any(|r| !r.server.is_empty());
    let mut out = format!(
        "{:<20} {:<24} {:<18} {:<10} {:>7} {:>8} {:<8} {:<8} {:>6}",
        "ROOM", "GAME", "CORE", "MODE", "PLAYERS", "WATCHING", "PASSWORD", "STATE", "AGE"
    );
    if fleet {
        out.push_str(&format!(" {:<12} {}", "REGION", "SERVER"));
    }
    out.push('\n');
    for r in rooms {
        let game = if r.content.is_empty() {
            "-"
        } else {
            &r.content
        };
        out.push_str(&format!(
            "{:<20} {:<24} {:<18} {:<10} {:>7} {:>8} {:<8} {:<8} {:>6}",
            r.name,
            game,
            r.core,
            r.mode,
            format!("{}/{}", r.players, r.seats),
            r.spectators,
            if r.password { "yes" } else { "no" },
            if r.playing { "playing" } else { "lobby" },
            age(r.age_secs)
        ));
        if fleet {
            let region = if r.region.is_empty() { "-" } else { &r.region };
            out.push_str(&format!(" {:<12} {}", region, r.server));
        }
        out.push('\n');
    }
    out
}

pub fn rooms_json(rooms: &[RoomInfo]) -> serde_json::Value {
    json!(rooms
        .iter()
        .map(|r| json!({
            "room": r.name,
            "game": r.content,
            "core": r.core,
            "players": r.players,
            "seats": r.seats,
            "password": r.password,
            "playing": r.playing,
            "age_s": r.age_secs,
            "spectators": r.spectators,
            "mode": r.mode.as_str(),
            "region": r.region,
            "server": r.server,
        }))
        .collect::<Vec<_>>())
}

fn age(secs: u32) -> String {
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m", secs / 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lockstep::Mode;
    use crate::session::msg::MAX_LISTED;

    /// A server with `total` rooms that answers each page `delay` after it is asked, on
    /// loopback; its address.
    fn slow_lister(total: u32, delay: Duration) -> SocketAddr {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let at = sock.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            sock.set_read_timeout(Some(Duration::from_secs(20)))
                .unwrap();
            while let Ok((n, from)) = sock.recv_from(&mut buf) {
                let Ok((_, Msg::Room(RoomMsg::List { first }))) = Msg::decode(&buf[..n]) else {
                    continue;
                };
                std::thread::sleep(delay);
                let rooms = (first..total.min(first + MAX_LISTED as u32))
                    .map(|i| RoomInfo {
                        name: format!("room{i}"),
                        content: String::new(),
                        core: "lightcycles".into(),
                        players: 1,
                        seats: 2,
                        password: false,
                        playing: false,
                        age_secs: 1,
                        spectators: 0,
                        mode: Mode::Strict,
                        region: String::new(),
                        server: String::new(),
                    })
                    .collect();
                let page = Msg::Room(RoomMsg::Rooms {
                    total,
                    first,
                    rooms,
                });
                let _ = sock.send_to(&page.encode(0), from);
            }
        });
        at
    }

    #[test]
    fn rooms_lists_every_room_however_long_the_pages_take_in_all() {
        // 1,200 rooms in 200 pages of 30 ms: 6 s, past the 5-s silence limit in all.
        let at = slow_lister(1200, Duration::from_millis(30));
        let rooms = list_rooms(&at.to_string()).expect("every page came");
        assert_eq!(rooms.len(), 1200);
        assert_eq!(rooms[1199].name, "room1199");
    }
}
