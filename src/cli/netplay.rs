//! The flags of the netplay commands (`host`, `join`, `spectate`, `serve`, `rooms`,
//! `servers`) and how they become `netplay`'s options. Imports no other command's flags
//! but `play`'s, which `host` and `join` take too.
// The field docs are `--help` texts: `[IPV6]:PORT` or `[paths]` there are what the user
// types, not links to items.
#![allow(rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::error::CliError;
use super::play::PlayArgs;
use crate::app::PlayOptions;
use crate::config::Config;
use crate::frontend::chat_board::ChatShow;
use crate::lockstep::{Mode, DEFAULT_SEND_BUDGET};
use crate::net::portmap::PortMapMode;
use crate::net::NetSim;
use crate::netplay::links::Target;
use crate::netplay::{
    Delay, HostOptions, JoinOptions, NatsAuth, NetOptions, Secret, ServeOptions, Speculate,
    DEFAULT_PORT, PASSWORD_ENV, TOKEN_ENV,
};

/// Options of both netplay ends.
#[derive(Debug, Clone, Args)]
pub struct NetArgs {
    /// Session password: checked by a password-authenticated key exchange (SPAKE2), so
    /// neither the password nor anything to test guesses against crosses the network.
    #[arg(long, value_name = "P")]
    pub password: Option<String>,
    /// Your name as the other players see it (default: $USER, else $LOGNAME or $USERNAME;
    /// without any, "player N" by your place in the session).
    #[arg(long, value_name = "NICK")]
    pub name: Option<String>,
    /// Impair this peer's outgoing packets, e.g. delay=50ms,jitter=10ms,loss=5%,dup=1%,reorder=2%,seed=7
    /// (also corrupt=3%: datagrams altered on the way; rate=1mbit: a bottleneck)
    #[arg(long, value_name = "SPEC")]
    pub netsim: Option<NetSim>,
    /// Frames between desync checks (each peer's machine checksum is compared).
    #[arg(long, value_name = "N", default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub checksum_interval: u32,
    /// Most bytes per second this peer sends to each other peer, UDP/IP headers included
    /// (0: no limit). On a lossy link more bytes buy up to a frame less input delay.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_SEND_BUDGET)]
    pub send_budget: u32,
    /// Rollback: show your own input at once. Your picture runs ahead of the frames everyone
    /// agreed on, to where your newest input lands, guessing the others hold their buttons;
    /// a frame whose guess held is kept, and only a wrong guess runs the frames since again
    /// (a flicker of a frame or two). `auto` runs as far as the link needs, within what
    /// the core can redo in a frame's time (at most 60); N at most N; off: plain lockstep.
    /// The agreed frames, checksums and recording are the same either way. A core must
    /// pass the rollback check first (run once per core version and game, while the lobby
    /// waits, kept in the cache directory); one that fails plays plain lockstep.
    #[arg(long, value_name = "off|auto|N", default_value = "auto")]
    pub speculate: Speculate,
    /// With rollback: show your own presses N frames late (0 to 8), for fewer and shorter
    /// rollbacks, as Fightcade's and GGPO's delay setting; auto picks it from the link's
    /// jitter.
    #[arg(long, value_name = "N|auto", default_value = "0")]
    pub delay: Delay,
    /// When the link to the host drops (Wi-Fi gone, laptop asleep, a new network), keep
    /// trying to come back for SECS seconds: the game goes on for the others meanwhile, and
    /// this player takes its seat back with a fresh state (0: give up at once).
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(0..=3600))]
    pub reconnect: u64,
    /// In a room on a server: auto tries a direct path to the room's host (the server
    /// introduces you) and keeps the server's relay where none works; relayed never tries;
    /// direct is auto that warns when it must relay. `host --server --path relayed` puts the
    /// whole room on the server instead, where it outlives you.
    #[arg(long, value_name = "auto|direct|relayed", default_value = "auto")]
    pub path: crate::session::direct::PathMode,
    /// Ask the home router to forward this player's UDP port (PCP, then NAT-PMP, then UPnP
    /// IGD), so that friends join a `host` from the internet with no port forwarded by hand;
    /// in a room a player hosts, the forwarded port helps the direct path. The mapping is
    /// renewed while the session runs and removed when it ends. pcp, natpmp or upnp ask that
    /// protocol only. Default: `[net] port_map` in the config file, else auto.
    #[arg(long, value_name = "auto|off|pcp|natpmp|upnp")]
    pub port_map: Option<PortMapMode>,
    /// Say TEXT to everyone in the chat as play begins (repeatable; for scripts). A
    /// headless player also says each line typed on its terminal.
    #[arg(long, value_name = "TEXT")]
    pub say: Vec<String>,
    /// Whose chat messages to show and log: everyone's, the players' only (spectators'
    /// hidden), or none.
    #[arg(long, value_name = "players|all|off", default_value = "all", value_parser = parse_chat)]
    pub chat: ChatShow,
    /// Test hook: FRAME[:MASK] flips input bits (default: Select) of this peer's own player
    /// at FRAME, on this peer only, to exercise desync detection and recovery.
    #[arg(long, hide = true, value_name = "FRAME[:MASK]", value_parser = parse_inject)]
    pub inject_desync: Option<(u32, u16)>,
    /// Pause the game for everyone once this peer reached session frame FRAME, as P does
    /// (scripted and headless players; a spectator cannot pause).
    #[arg(long, value_name = "FRAME")]
    pub pause_at: Option<u32>,
    /// With --pause-at: resume after SECS seconds.
    #[arg(long, value_name = "SECS", default_value_t = 5.0, requires = "pause_at", value_parser = parse_pause_for)]
    pub pause_for: f64,
    /// Test hook: say "ping N" every MS milliseconds from the first frame (chat benchmark).
    #[arg(long, hide = true, value_name = "MS", value_parser = clap::value_parser!(u64).range(100..=60_000))]
    pub chat_every_ms: Option<u64>,
    /// Test hook: stay busy MS milliseconds between the start state (a joiner's, or the
    /// host's lobby) and the first frame, as loading a large romset or opening a slow window
    /// keeps a peer from starting.
    #[arg(long, hide = true, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub start_delay_ms: Option<u64>,
    /// Ask the server to keep no replay of a room you play in (`serve --archive`); a host
    /// of a room on a server also does not upload its recording.
    #[arg(long)]
    pub no_share: bool,
}

fn parse_pause_for(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=3600.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is no number of seconds in 0..=3600")),
    }
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
}

fn parse_chat(s: &str) -> Result<ChatShow, String> {
    s.parse()
}

fn parse_inject(s: &str) -> Result<(u32, u16), String> {
    let (frame, mask) = s.split_once(':').unwrap_or((s, "4"));
    let frame = frame.parse().map_err(|_| format!("bad frame {frame:?}"))?;
    let mask = mask.parse().map_err(|_| format!("bad mask {mask:?}"))?;
    Ok((frame, mask))
}

#[derive(Debug, Clone, Args)]
pub struct HostArgs {
    #[command(flatten)]
    pub play: PlayArgs,
    /// UDP port to listen on.
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Players in the session, yours included (2 to 8; to play alone, `framelock play`); the
    /// game starts when all have joined.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u8).range(2..=8))]
    pub players: u8,
    /// How frames are published. strict: each waits for every player's input, so everyone
    /// plays with the slowest link's delay (fair). optimistic: on the host's clock with the
    /// inputs it has; nobody waits for a slow player, whose own input shows late instead.
    /// With --server, the server's --mode unless given.
    #[arg(long, value_name = "MODE", value_parser = parse_mode)]
    pub mode: Option<Mode>,
    /// Keyframe interval K: frames between two input messages (CTRL) of each player
    /// (default: 2 in strict mode, 1 in optimistic mode).
    #[arg(short = 'K', long = "keyframe-interval", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=60))]
    pub keyframe_interval: Option<u32>,
    /// Start the game when this many players are in (default: all of --players); the free
    /// seats can be taken while it runs.
    #[arg(long, value_name = "M", value_parser = clap::value_parser!(u8).range(1..=8))]
    pub start_with: Option<u8>,
    /// Spectators that may watch at once (`framelock spectate`; 0: none).
    #[arg(long, value_name = "N", default_value_t = crate::session::DEFAULT_MAX_SPECTATORS, value_parser = clap::value_parser!(u8).range(0..=239))]
    pub max_spectators: u8,
    /// Give up if the players are not all in after this many seconds (default: wait).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub lobby_timeout: Option<u64>,
    /// Open a room on this server (`framelock serve`) instead of listening yourself: HOST,
    /// HOST:PORT or [IPV6]:PORT (default port 7845).
    #[arg(long, value_name = "HOST[:PORT]")]
    pub server: Option<String>,
    /// The room's name on --server (letters, digits, '-', '_'; default: the server makes one
    /// up that is easy to read aloud).
    #[arg(long, value_name = "NAME", requires = "server")]
    pub room: Option<String>,
    #[command(flatten)]
    pub net: NetArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// UDP port to listen on.
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Listen on this address only (default: every address, IPv6 and IPv4).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<std::net::IpAddr>,
    /// Rooms open at once; more are refused with a message that says so.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_rooms: u32,
    /// Rooms one IPv4 address or IPv6 /64 may open per minute.
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub opens_per_minute: u32,
    /// Rooms one IPv4 address or IPv6 /64 holds open at once.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub rooms_per_address: u32,
    /// Largest unpacked start state a room may have, MiB.
    #[arg(long, value_name = "MIB", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub max_state_mib: u32,
    /// Start-state MiB (packed and unpacked) all rooms hold together; a new room past it
    /// is refused.
    #[arg(long, value_name = "MIB", default_value_t = 2048, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_memory_mib: u32,
    /// Most bytes per second sent to each player, UDP/IP headers included (0: no limit).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_SEND_BUDGET)]
    pub send_budget: u32,
    /// Spectators each room takes at once (0: none).
    #[arg(long, value_name = "N", default_value_t = crate::session::DEFAULT_MAX_SPECTATORS, value_parser = clap::value_parser!(u8).range(0..=239))]
    pub max_spectators: u8,
    /// Mode of the rooms whose creator does not ask for one (`host --mode`): strict or
    /// optimistic.
    #[arg(long, value_name = "MODE", default_value = "strict", value_parser = parse_mode)]
    pub mode: Mode,
    /// Impair outgoing packets (testing), as `host --netsim`.
    #[arg(long, value_name = "SPEC")]
    pub netsim: Option<NetSim>,
    /// Stop after this many seconds (tests, benchmarks; default: until Ctrl-C).
    #[arg(long, hide = true, value_name = "SECS")]
    pub duration: Option<u64>,
    /// Write the server's counters (datagrams, bytes, rooms, what was dropped and why) as
    /// JSON when it stops.
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,
    /// Join a fleet: the NATS JetStream server(s) holding its room directory
    /// (nats://HOST:4222; several for a NATS cluster).
    #[arg(long, value_name = "URL", num_args = 1.., requires = "public_address")]
    pub directory: Vec<String>,
    /// The address players reach this server at, ADDR:PORT (with --directory).
    #[arg(long, value_name = "ADDR:PORT")]
    pub public_address: Option<String>,
    /// The fleet's key: a file of 32 or more random bytes, the same on every server of the
    /// fleet. Directory entries are signed with it; entries not signed with it are
    /// ignored. Without it, anyone who can write the NATS bucket can redirect joiners.
    #[arg(long, value_name = "FILE", requires = "directory")]
    pub directory_key: Option<PathBuf>,
    /// Sign in to NATS as this user; the password comes from --directory-password-file or
    /// FRAMELOCK_DIRECTORY_PASSWORD.
    #[arg(long, value_name = "NAME", requires = "directory")]
    pub directory_user: Option<String>,
    /// A file holding the NATS password of --directory-user.
    #[arg(long, value_name = "FILE", requires = "directory_user")]
    pub directory_password_file: Option<PathBuf>,
    /// A file holding a NATS token to sign in with (or FRAMELOCK_DIRECTORY_TOKEN).
    #[arg(long, value_name = "FILE", requires = "directory")]
    pub directory_token_file: Option<PathBuf>,
    /// A file holding an nkey user seed (SU...) to sign in to NATS with.
    #[arg(long, value_name = "FILE", requires = "directory")]
    pub directory_nkey: Option<PathBuf>,
    /// A NATS .creds file (user JWT and nkey seed) to sign in with.
    #[arg(long, value_name = "FILE", requires = "directory")]
    pub directory_creds: Option<PathBuf>,
    /// Trust NATS's TLS certificate if signed by these CA certificates (PEM); TLS is then
    /// required (a tls:// URL asks for TLS too, trusting the system's CAs).
    #[arg(long, value_name = "FILE", requires = "directory")]
    pub directory_tls_ca: Option<PathBuf>,
    /// This server's TLS certificate (PEM), for a NATS that verifies its clients.
    #[arg(long, value_name = "FILE", requires = "directory_tls_key")]
    pub directory_tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --directory-tls-cert.
    #[arg(long, value_name = "FILE", requires = "directory_tls_cert")]
    pub directory_tls_key: Option<PathBuf>,
    /// This server's region in the fleet: a full server sends new rooms to one of its
    /// region (with --directory).
    #[arg(long, value_name = "NAME", default_value = "")]
    pub region: String,
    /// Serve Prometheus metrics over HTTP on this address (e.g. 127.0.0.1:9845).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Serve a web page on this address (e.g. 0.0.0.0:8080): the open rooms with their
    /// invite links and commands, the load, the fleet, the replays kept; also /rooms.json,
    /// and /metrics unless --metrics is given. Off by default.
    #[arg(long, value_name = "ADDR:PORT")]
    pub http: Option<std::net::SocketAddr>,
    /// Keep the replay of every finished room in DIR (rooms on the server are recorded
    /// here; a hosted room's host uploads its recording), listed by `framelock replays` and
    /// the web page. With --directory the fleet shares them.
    #[arg(long, value_name = "DIR")]
    pub archive: Option<PathBuf>,
    /// MiB of replays --archive keeps; the oldest go first.
    #[arg(long, value_name = "MIB", default_value_t = 1024, requires = "archive", value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub archive_mib: u64,
}

#[derive(Debug, Clone, Args)]
pub struct OpenArgs {
    /// The link: framelock://HOST[:PORT]/ROOM (a room on a server), framelock://HOST:PORT
    /// (a host), with ?watch to watch; framelock://HOST/replay/ID (a replay).
    #[arg(value_name = "LINK", required_unless_present = "register")]
    pub link: Option<String>,
    /// Watch instead of playing (as the link's ?watch).
    #[arg(long)]
    pub watch: bool,
    /// Make framelock open framelock:// links clicked in a browser or chat app: writes a
    /// desktop entry to ~/.local/share/applications and, with xdg-mime, makes it the
    /// default handler.
    #[arg(long, conflicts_with = "link")]
    pub register: bool,
    #[command(flatten)]
    pub play: PlayArgs,
    #[command(flatten)]
    pub net: NetArgs,
}

impl OpenArgs {
    /// The link read, and the join it names with these flags; `None` with --register.
    pub fn to_options(&self, config: &Config) -> Result<Option<(Target, JoinOptions)>, CliError> {
        let Some(link) = &self.link else {
            return Ok(None);
        };
        let target = crate::netplay::links::parse(link).map_err(CliError::Invalid)?;
        let base = JoinOptions {
            net: self
                .net
                .to_options(self.play.to_netplay_options(config)?, "", config),
            host: String::new(),
            room: None,
            watch: self.watch,
            ask_password: false,
        };
        if let Target::Replay { .. } = target {
            return Ok(Some((target, base)));
        }
        let opts = crate::netplay::join_options(&target, base)
            .map_err(|e| CliError::Invalid(e.to_string()))?;
        Ok(Some((target, opts)))
    }
}

#[derive(Debug, Clone, Args)]
pub struct RoomsArgs {
    /// The server: HOST, HOST:PORT or [IPV6]:PORT (default port 7845).
    #[arg(value_name = "HOST[:PORT]")]
    pub server: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl ServeArgs {
    /// How serve signs in to NATS: the flags, and the secrets in the environment as `var`
    /// reads it (empty values count as unset).
    pub(super) fn directory_auth(&self, var: impl Fn(&str) -> Option<String>) -> NatsAuth {
        let secret = |k| var(k).filter(|v: &String| !v.is_empty()).map(Secret);
        NatsAuth {
            user: self.directory_user.clone(),
            password_file: self.directory_password_file.clone(),
            password_env: secret(PASSWORD_ENV),
            token_file: self.directory_token_file.clone(),
            token_env: secret(TOKEN_ENV),
            nkey_file: self.directory_nkey.clone(),
            creds_file: self.directory_creds.clone(),
            tls_ca: self.directory_tls_ca.clone(),
            tls_cert: self.directory_tls_cert.clone(),
            tls_key: self.directory_tls_key.clone(),
        }
    }

    pub fn to_options(&self) -> ServeOptions {
        ServeOptions {
            port: self.port,
            bind: self.bind,
            max_rooms: self.max_rooms as usize,
            opens_per_minute: self.opens_per_minute,
            max_state_mib: self.max_state_mib as usize,
            rooms_per_address: self.rooms_per_address as usize,
            max_memory_mib: self.max_memory_mib as usize,
            send_budget: self.send_budget,
            max_spectators: self.max_spectators,
            mode: self.mode,
            netsim: self.netsim.clone(),
            duration: self.duration.map(Duration::from_secs),
            stats_json: self.stats_json.clone(),
            directory: self.directory.clone(),
            public_address: self.public_address.clone(),
            directory_auth: self.directory_auth(|k| std::env::var(k).ok()),
            directory_key: self.directory_key.clone(),
            region: self.region.clone(),
            metrics: self.metrics,
            http: self.http,
            archive: self.archive.clone(),
            archive_mib: self.archive_mib,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct JoinArgs {
    /// The host (or, with --room, the server): HOST, HOST:PORT or [IPV6]:PORT (default port
    /// 7845).
    #[arg(value_name = "HOST[:PORT]")]
    pub host: String,
    /// The room to join on a server (`framelock rooms HOST` lists them).
    #[arg(long, value_name = "NAME")]
    pub room: Option<String>,
    #[command(flatten)]
    pub play: PlayArgs,
    #[command(flatten)]
    pub net: NetArgs,
}

/// `--name` if given (and not blank), else the login name: `$USER`, `$LOGNAME` or
/// `$USERNAME`, the first set and not blank, as `var` reads them. `None` if there is none.
pub(super) fn nick(given: Option<&str>, var: impl Fn(&str) -> Option<String>) -> Option<String> {
    given
        .map(str::to_owned)
        .into_iter()
        .chain(["USER", "LOGNAME", "USERNAME"].into_iter().filter_map(var))
        .find(|n| !n.trim().is_empty())
}

impl NetArgs {
    /// With no nick to be found, `unnamed`: the host is always player 1; a joiner sends an
    /// empty name, which the host replaces with "player N" for the slot it gives it.
    fn to_options(&self, play: PlayOptions, unnamed: &str, config: &Config) -> NetOptions {
        let from_file = config
            .net
            .port_map
            .as_ref()
            .and_then(|v| v.get_ref().parse().ok());
        let name =
            nick(self.name.as_deref(), |k| std::env::var(k).ok()).unwrap_or_else(|| unnamed.into());
        let paths = config.resolved_paths();
        NetOptions {
            play,
            name,
            password: self.password.clone(),
            netsim: self.netsim.clone(),
            checksum_interval: self.checksum_interval,
            send_budget: self.send_budget,
            inject_desync: self.inject_desync,
            pause_at: self
                .pause_at
                .map(|f| (f, Duration::from_secs_f64(self.pause_for))),
            start_delay: self.start_delay_ms.map(Duration::from_millis),
            speculate: self.speculate,
            delay: self.delay,
            cache_dir: paths.cache_dir,
            seat_keys: paths.state_dir.join(crate::netplay::SEAT_KEYS_FILE),
            reconnect: Duration::from_secs(self.reconnect),
            say: self.say.clone(),
            chat: self.chat,
            chat_every: self.chat_every_ms.map(Duration::from_millis),
            path: self.path,
            port_map: self.port_map.or(from_file).unwrap_or_default(),
            no_share: self.no_share,
        }
    }
}

impl HostArgs {
    pub fn to_options(&self, config: &Config) -> Result<HostOptions, CliError> {
        Ok(HostOptions {
            net: self
                .net
                .to_options(self.play.to_netplay_options(config)?, "player 1", config),
            port: self.port,
            players: self.players,
            start_with: match self.start_with {
                Some(m) if m > self.players => {
                    return Err(CliError::Invalid(format!(
                        "--start-with {m} is more than --players {}",
                        self.players
                    )))
                }
                Some(m) => m,
                None => self.players,
            },
            max_spectators: self.max_spectators,
            mode: self.mode,
            keyframe_interval: self.keyframe_interval,
            lobby_timeout: self.lobby_timeout.map(Duration::from_secs),
            server: self.server.clone(),
            room: self.room.clone(),
        })
    }
}

impl JoinArgs {
    pub fn to_options(&self, config: &Config) -> Result<JoinOptions, CliError> {
        Ok(JoinOptions {
            net: self
                .net
                .to_options(self.play.to_netplay_options(config)?, "", config),
            host: self.host.clone(),
            room: self.room.clone(),
            watch: false,
            ask_password: false,
        })
    }

    /// As `framelock spectate`.
    pub fn to_spectate_options(&self, config: &Config) -> Result<JoinOptions, CliError> {
        let mut opts = self.to_options(config)?;
        opts.watch = true;
        Ok(opts)
    }
}
