//! Command-line interface (clap derive) and its layering over the config file.
// The field docs are `--help` texts: `[IPV6]:PORT` or `[paths]` there are what the user
// types, not links to items.
#![allow(rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::app::replay::ReplayOptions;
use crate::app::video_capture::VideoOutput;
use crate::app::{PlayOptions, RecordMode, RunnerConfig};
use crate::config::Config;
use crate::frontend::audio::AudioSettings;
use crate::frontend::chat_board::ChatShow;
use crate::host::{catalog, CoreConfig, CoreSource};
use crate::input::{BotSpec, Button};
use crate::lockstep::{Mode, DEFAULT_SEND_BUDGET};
use crate::net::NetSim;
use crate::netplay::{HostOptions, JoinOptions, NetOptions, ServeOptions, DEFAULT_PORT};
use crate::video::VideoSettings;

const AFTER_HELP: &str = "\
Examples:
  framelock play                                   play the built-in game (lightcycles)
  framelock play game.md --core genesis_plus_gx     a core by name (`framelock cores`)
  framelock play game.md                           the one core found that takes .md
  framelock play sf2.zip --core ./fbneo_libretro.so --option fbneo-hiscores=disabled
  framelock play --headless --fast --frames 6000 --bot 1 --stats-json stats.json
  framelock play game.md --core genesis_plus_gx --record match.flr
  framelock play game.md --video match.mp4         record a video while playing
  framelock play game.md --run-ahead 2             hide 2 frames of the game's input lag
  framelock play game.md --headless --fast --frames 3600 --bot 1 --sync-test 8

Keys: arrows/Z/X/A/S/Q/W/Enter/RShift = player 1, I/J/K/L/V/B/F/G/R/T/6/5 = player 2,
P pause, F11 or Alt+Enter fullscreen, F12 screenshot, Esc quit.
Config: ~/.config/framelock/config.toml (see README). Logging: RUST_LOG=debug.";

#[derive(Debug, Parser)]
#[command(name = "framelock", version, about = "Libretro frontend for playing arcade games with friends over keyframe lockstep netplay", after_help = AFTER_HELP)]
pub struct Cli {
    /// Config file to use instead of ~/.config/framelock/config.toml.
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Play a game locally (the built-in game without CONTENT and --core).
    #[command(after_help = AFTER_HELP)]
    Play(LocalArgs),
    /// Host a netplay session: you are player 1, friends join with `framelock join`.
    #[command(after_help = HOST_HELP)]
    Host(HostArgs),
    /// Join a netplay session hosted with `framelock host`, directly or in a server's room
    /// (a running game too, if a seat is free; run it again to come back after a drop).
    #[command(after_help = JOIN_HELP)]
    Join(JoinArgs),
    /// Watch a netplay session, directly or in a server's room: no input, no seat.
    #[command(after_help = SPECTATE_HELP)]
    Spectate(JoinArgs),
    /// Run a dedicated server: rooms that players behind home routers can reach.
    #[command(after_help = SERVE_HELP)]
    Serve(ServeArgs),
    /// List the open rooms on a server started with `framelock serve` (its whole fleet's).
    #[command(after_help = ROOMS_HELP)]
    Rooms(RoomsArgs),
    /// List the servers of a fleet, with their region, load and the round trip from here.
    #[command(after_help = SERVERS_HELP)]
    Servers(RoomsArgs),
    /// Replay an input log (.flr) recorded by `play --record` or by netplay, and verify it.
    #[command(after_help = REPLAY_HELP)]
    Replay(ReplayArgs),
    /// List the libretro cores found by name: what `--core NAME` takes.
    #[command(after_help = CORES_HELP)]
    Cores(CoresArgs),
}

const CORES_HELP: &str = "\
Examples:
  framelock cores                                  name, version, extensions, where
  framelock cores --json

Cores are found as NAME_libretro.so in, in order: [paths] cores_dir in the config,
~/.config/retroarch/cores, /usr/lib/x86_64-linux-gnu/libretro (Debian's libretro-*
packages) and /usr/lib/libretro; the first one of a name wins. `--core NAME` runs it; with
CONTENT and no --core, the one core that takes its extension runs it.";

#[derive(Debug, Clone, Args)]
pub struct CoresArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The table `framelock cores` prints, or what it says when none is found.
pub fn cores_table(cores: &[catalog::FoundCore], dirs: &[PathBuf]) -> String {
    if cores.is_empty() {
        let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        return format!(
            "no libretro cores found; looked in {} (set [paths] cores_dir in the config)\n",
            looked.join(", ")
        );
    }
    let mut out = format!(
        "{:<20} {:<24} {:<16} {:<28} {}\n",
        "NAME", "CORE", "VERSION", "EXTENSIONS", "PATH"
    );
    for c in cores {
        out.push_str(&format!(
            "{:<20} {:<24} {:<16} {:<28} {}\n",
            c.name,
            c.library_name,
            c.version,
            c.extensions.join(","),
            c.path.display()
        ));
    }
    out
}

/// `framelock cores --json`.
pub fn cores_json(cores: &[catalog::FoundCore]) -> serde_json::Value {
    serde_json::json!(cores
        .iter()
        .map(|c| serde_json::json!({
            "name": c.name,
            "core": c.library_name,
            "version": c.version,
            "extensions": c.extensions,
            "path": c.path.display().to_string(),
        }))
        .collect::<Vec<_>>())
}

const REPLAY_HELP: &str = "\
Examples:
  framelock replay match.flr                       watch it (core and content from where
                                                   they were recorded)
  framelock replay match.flr game.md --core genesis_plus_gx_libretro.so
  framelock replay match.flr --speed 2             double speed (0.5 to 2)
  framelock replay match.flr --headless --fast --verify   check every recorded checksum
  framelock replay match.flr --export match.mp4    a video with sound (needs ffmpeg)
  framelock replay match.flr --export clip.gif --from-frame 600 --to-frame 900 --scale 2
  framelock replay match.flr --export exact.mkv --lossless   every pixel and sample exact

The core (name and version) and the content (xxh3 hash) must be the ones the log was
recorded with. --verify exits non-zero naming the first frame whose checksum differs, if
the log is truncated, or if the replay stops (Ctrl-C) before the end. Netplay sessions are
recorded to ~/.local/share/framelock/recordings unless --no-record.";

const HOST_HELP: &str = "\
Examples:
  framelock host                                   host the built-in game for 2 players
  framelock host --players 4 --password secret     4 players, password protected
  framelock host game.md --core genesis_plus_gx_libretro.so --port 7900
  framelock host --netsim delay=50ms,jitter=10ms,loss=5%   rehearse a bad link
  framelock host --send-budget 0                   no bandwidth cap: less delay on lossy links

  framelock host --server play.example.org         open a room on a server instead: no
                                                   port to forward; it prints the join command
  framelock host --server play.example.org --room friday --password secret
  framelock host --players 4 --start-with 2        start with 2; 2 more can join later
  framelock host --players 3 --mode optimistic     nobody waits for a slow player, whose
                                                   own input shows late instead

Everyone needs the same core and content; the host's core options and machine state are
sent to every joiner. The game starts when --players players are in (--start-with: that
many); free seats can be taken while it runs, and a player who dropped takes its seat back
by running the same `join` again. Up to --max-spectators people can watch with
`framelock spectate`. Without --server, UDP
port 7845 must be reachable (forward it on your router). Every peer records the session to
~/.local/share/framelock/recordings (--no-record: don't, --record FILE: there instead).";

const JOIN_HELP: &str = "\
Examples:
  framelock join 192.0.2.10                        join the built-in game on port 7845
  framelock join example.org:7900 game.md --core genesis_plus_gx_libretro.so
  framelock join [2001:db8::1]:7845 --password secret --name ana
  framelock join play.example.org --room amber-otter-42   a room on a server

Joining a running game takes a free seat (or, after a drop, your old one: by --name, or
without one by your address): you get the machine's state, catch up, and your input counts
from a frame the host announces.";

const SPECTATE_HELP: &str = "\
Examples:
  framelock spectate 192.0.2.10                    watch the built-in game on port 7845
  framelock spectate play.example.org --room amber-otter-42 game.md --core genesis_plus_gx_libretro.so
  framelock spectate 192.0.2.10 --headless --record match.flr --frames 3600

A spectator gets the machine's state at a recent frame, then every frame the players
confirm, and shows them at the game's pace (catching up after a stall). It sends no input;
the players never wait for it. The status bar shows how far behind the players it is.
Needs the same core and content as the players (and the password, if the session has one).";

const SERVE_HELP: &str = "\
Examples:
  framelock serve                                  every address, udp port 7845
  framelock serve --port 7900 --max-rooms 200
  framelock serve --bind 203.0.113.7
  framelock serve --mode optimistic                rooms publish frames on the server's
                                                   clock unless their host picks strict
  framelock serve --directory nats://10.0.0.5:4222 --public-address 203.0.113.7:7845 \
    --region eu-west                               a member of a fleet of servers

No core, content or display is needed. Hosts open rooms with `framelock host --server
THIS-HOST`, players join them with `framelock join THIS-HOST --room NAME`; everyone only
sends to the server, which every home router lets through. One log line per room event;
Ctrl-C closes every room, telling its players.";

const ROOMS_HELP: &str = "\
Examples:
  framelock rooms play.example.org                 a table of the open rooms
  framelock rooms play.example.org:7900 --json";

const SERVERS_HELP: &str = "\
Examples:
  framelock servers play.example.org               the fleet's servers and the round trip
                                                   to each: pick the one between friends
  framelock servers play.example.org --json";

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
    /// Test hook: FRAME[:MASK] flips input bits (default: Select) of this peer's own player
    /// at FRAME, on this peer only, to exercise desync detection and recovery.
    /// Show your own input on the next frame: run the game ahead of the frames everyone
    /// agreed on, to where your newest input lands, guessing the others hold theirs, and
    /// run it again when they did not (rollback). `auto` runs as far as the lead, at most
    /// 8 frames; N at most N. The agreed frames, checksums and recording stay as without;
    /// a core that fails the rollback check (`play --sync-test`) plays without.
    #[arg(long, value_name = "off|auto|N", default_value = "off", value_parser = parse_speculate)]
    pub speculate: Speculate,
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
    /// Say TEXT to everyone in the chat as play begins (repeatable; for scripts). A
    /// headless player also says each line typed on its terminal.
    #[arg(long, value_name = "TEXT")]
    pub say: Vec<String>,
    /// Whose chat messages to show and log: everyone's, the players' only (spectators'
    /// hidden), or none.
    #[arg(long, value_name = "players|all|off", default_value = "all", value_parser = parse_chat)]
    pub chat: ChatShow,
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
    /// This server's region in the fleet: a full server sends new rooms to one of its
    /// region (with --directory).
    #[arg(long, value_name = "NAME", default_value = "")]
    pub region: String,
    /// Serve Prometheus metrics over HTTP on this address (e.g. 127.0.0.1:9845).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<std::net::SocketAddr>,
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
            region: self.region.clone(),
            metrics: self.metrics,
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
fn nick(given: Option<&str>, var: impl Fn(&str) -> Option<String>) -> Option<String> {
    given
        .map(str::to_owned)
        .into_iter()
        .chain(["USER", "LOGNAME", "USERNAME"].into_iter().filter_map(var))
        .find(|n| !n.trim().is_empty())
}

impl NetArgs {
    /// With no nick to be found, `unnamed`: the host is always player 1; a joiner sends an
    /// empty name, which the host replaces with "player N" for the slot it gives it.
    fn to_options(&self, play: PlayOptions, unnamed: &str) -> NetOptions {
        let name =
            nick(self.name.as_deref(), |k| std::env::var(k).ok()).unwrap_or_else(|| unnamed.into());
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
            speculate: self.speculate.depth(),
            reconnect: Duration::from_secs(self.reconnect),
            say: self.say.clone(),
            chat: self.chat,
            chat_every: self.chat_every_ms.map(Duration::from_millis),
            path: self.path,
        }
    }
}

impl HostArgs {
    pub fn to_options(&self, config: &Config) -> Result<HostOptions, CliError> {
        Ok(HostOptions {
            net: self
                .net
                .to_options(self.play.to_netplay_options(config)?, "player 1"),
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
                .to_options(self.play.to_netplay_options(config)?, ""),
            host: self.host.clone(),
            room: self.room.clone(),
            watch: false,
        })
    }

    /// As `framelock spectate`.
    pub fn to_spectate_options(&self, config: &Config) -> Result<JoinOptions, CliError> {
        let mut opts = self.to_options(config)?;
        opts.watch = true;
        Ok(opts)
    }
}

/// `framelock play`: everything `host` and `join` take, plus what only local play does.
#[derive(Debug, Clone, Args)]
pub struct LocalArgs {
    #[command(flatten)]
    pub play: PlayArgs,
    /// Hide N frames of the game's own input lag (0-8): every frame, run N frames ahead
    /// with the pads held as they are, show the last, and go back. Costs about N+1 times
    /// the CPU; the recording and checksums are those of the real frames.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=8))]
    pub run_ahead: Option<u32>,
    /// Check that the core's savestates round-trip (the test a core passes before rollback
    /// can trust it): after every frame, load the state of N frames back, run those N
    /// again and compare each frame's checksum; the first difference ends the run with
    /// the frame and both checksums.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub sync_test: Option<u32>,
    /// Test hook: press BUTTON on port 1 for the one frame FRAME.
    #[arg(long, hide = true, value_name = "FRAME:BUTTON", value_parser = parse_tap)]
    pub tap: Vec<(u64, Button)>,
    /// Test hook: a hash of every image shown from frame FROM on, for COUNT frames, in
    /// --stats-json's `shown`.
    #[arg(long, hide = true, value_name = "FROM:COUNT", value_parser = parse_span)]
    pub hash_shown: Option<(u64, u64)>,
}

impl LocalArgs {
    pub fn to_options(&self, config: &Config) -> Result<PlayOptions, CliError> {
        let mut o = self.play.to_options(config)?;
        o.runner.run_ahead = self.run_ahead.unwrap_or(0);
        o.sync_test = self.sync_test;
        o.taps = self.tap.clone();
        o.hash_shown = self.hash_shown;
        Ok(o)
    }
}

/// `--speculate`: how far ahead of the agreed frames a player's picture runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speculate {
    Off,
    Auto,
    Frames(u32),
}

/// What `auto` runs ahead at most (the lead sets how far within it).
pub const SPECULATE_AUTO_MAX: u32 = 8;

impl Speculate {
    /// The most frames to run ahead (0: off).
    pub fn depth(self) -> u32 {
        match self {
            Speculate::Off => 0,
            Speculate::Auto => SPECULATE_AUTO_MAX,
            Speculate::Frames(n) => n,
        }
    }
}

fn parse_speculate(s: &str) -> Result<Speculate, String> {
    match s {
        "off" | "0" => Ok(Speculate::Off),
        "auto" => Ok(Speculate::Auto),
        n => match n.parse::<u32>() {
            Ok(n) if (1..=16).contains(&n) => Ok(Speculate::Frames(n)),
            _ => Err(format!(
                "{n:?}: expected off, auto or a number of frames, 1 to 16"
            )),
        },
    }
}

fn parse_tap(s: &str) -> Result<(u64, Button), String> {
    let (frame, button) = s.split_once(':').ok_or("expected FRAME:BUTTON")?;
    let frame = frame
        .parse()
        .map_err(|_| format!("{frame:?} is not a frame"))?;
    let button = Button::from_name(button).ok_or(format!("{button:?} is not a button"))?;
    Ok((frame, button))
}

fn parse_span(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once(':').ok_or("expected FROM:COUNT")?;
    let n = |v: &str| {
        v.parse::<u64>()
            .map_err(|_| format!("{v:?} is not a number"))
    };
    Ok((n(a)?, n(b)?))
}

#[derive(Debug, Clone, Args)]
pub struct PlayArgs {
    /// Game file (ROM, or an FBNeo romset zip). Without --core, the one core found that
    /// takes its extension runs it.
    #[arg(value_name = "CONTENT")]
    pub content: Option<PathBuf>,
    /// libretro core: a name (genesis_plus_gx, fbneo, snes9x: NAME_libretro.so in [paths]
    /// cores_dir, ~/.config/retroarch/cores, /usr/lib/x86_64-linux-gnu/libretro or
    /// /usr/lib/libretro; `framelock cores` lists them) or a path. Default: the built-in
    /// game, or with CONTENT the core that takes it.
    #[arg(long, value_name = "NAME|PATH")]
    pub core: Option<PathBuf>,
    /// No window, no audio device, no input devices (tests, CI, servers).
    #[arg(long)]
    pub headless: bool,
    /// Exit after N frames.
    #[arg(long, value_name = "N")]
    pub frames: Option<u64>,
    /// Run as fast as possible instead of at the core's frame rate.
    #[arg(long)]
    pub fast: bool,
    /// A synthetic player pressing random but plausible buttons, the same for a SEED: player
    /// 1 in `play` and `host`, a joiner's own player in `join`. SEED:human changes the pad
    /// about 10 times a second, as a busy player does.
    #[arg(long, value_name = "SEED[:human]")]
    pub bot: Option<BotSpec>,
    /// Write run statistics (frames, checksum, fps, wall_s, core, content) as JSON at exit.
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,
    /// Core option, repeatable; overrides [core_options] in the config file.
    #[arg(long = "option", value_name = "KEY=VALUE", value_parser = parse_option)]
    pub options: Vec<(String, String)>,
    /// Directory for save RAM (.srm).
    #[arg(long, value_name = "DIR")]
    pub save_dir: Option<PathBuf>,
    #[command(flatten)]
    pub view: ViewArgs,
    /// Record the session's inputs to FILE (an input log; watch it with `framelock replay`).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Don't record (netplay records every session into [paths] recordings_dir by default).
    #[arg(long, conflicts_with = "record")]
    pub no_record: bool,
    /// Test hook: the core ignores every state loaded into it (a core whose savestates do
    /// not round-trip).
    #[arg(long, hide = true)]
    pub test_ignore_loads: bool,
    #[command(flatten)]
    pub video: VideoArgs,
}

/// Recording a video while playing.
#[derive(Debug, Clone, Args, Default)]
pub struct VideoArgs {
    /// Record the game as it is shown to a video file, in the background: .mp4 (H.264 +
    /// AAC), .webm (VP9 + Opus), .mkv, or .gif (no sound).
    #[arg(long, value_name = "FILE")]
    pub video: Option<PathBuf>,
    /// The --video file keeps every pixel and sample exact (.mkv: lossless H.264 in RGB + FLAC).
    #[arg(long, requires = "video")]
    pub lossless: bool,
    /// Overwrite the --video file if it exists.
    #[arg(long, requires = "video")]
    pub force: bool,
}

impl VideoArgs {
    /// The video to record while playing, if asked; `scale` is `--scale` as given (the
    /// video is that many times the game, as the window; without it, the most that fits
    /// 1080 lines).
    fn to_output(&self, scale: Option<u32>) -> Result<Option<VideoOutput>, CliError> {
        let Some(path) = &self.video else {
            return Ok(None);
        };
        let mut settings = VideoSettings::new(path.clone(), self.lossless, scale, self.force)?;
        settings.realtime = true;
        Ok(Some(VideoOutput {
            settings,
            from_frame: 0,
        }))
    }
}

#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// The input log (.flr) to replay.
    #[arg(value_name = "LOG")]
    pub log: PathBuf,
    /// Game file, if it is no longer where the log was recorded.
    #[arg(value_name = "CONTENT")]
    pub content: Option<PathBuf>,
    /// libretro core (a name, as `framelock cores` lists them, or a path), if it is no longer
    /// where the log was recorded; without it, a core found by name of the name and version
    /// the log names runs it.
    #[arg(long, value_name = "NAME|PATH")]
    pub core: Option<PathBuf>,
    /// No window, no audio device (tests, CI, servers).
    #[arg(long)]
    pub headless: bool,
    /// Run as fast as possible.
    #[arg(long, conflicts_with = "speed")]
    pub fast: bool,
    /// Playback speed relative to the recording, from 0.5 to 2.
    #[arg(long, value_name = "X", default_value_t = 1.0, value_parser = parse_speed)]
    pub speed: f64,
    /// Stop before frame N.
    #[arg(long, value_name = "N")]
    pub to_frame: Option<u64>,
    /// Check every recorded checksum: exit non-zero naming the first frame that differs, if
    /// the log is truncated, or if the replay stops before the end of the log (or --to-frame).
    #[arg(long)]
    pub verify: bool,
    /// Write run statistics (frames, checksum, fps, wall_s, verify results) as JSON at exit.
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,
    /// Write the replay as a video file with its sound, headless and as fast as it goes: the
    /// extension picks .mp4 (H.264 + AAC), .webm (VP9 + Opus), .mkv or .gif (no sound).
    /// --scale N scales by N (default: the largest that fits 1080 lines).
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
    /// The exported .mkv keeps every pixel and sample exact (lossless H.264 in RGB + FLAC).
    #[arg(long, requires = "export")]
    pub lossless: bool,
    /// Overwrite the --export file if it exists.
    #[arg(long, requires = "export")]
    pub force: bool,
    /// Start the exported video at frame N (the frames before run without being encoded).
    #[arg(long, value_name = "N", requires = "export")]
    pub from_frame: Option<u64>,
    #[command(flatten)]
    pub view: ViewArgs,
}

/// How a run is shown: flags shared by `play` (and so `host`/`join`) and `replay`.
#[derive(Debug, Clone, Args)]
pub struct ViewArgs {
    /// Directory for BIOS files and FBNeo support files.
    #[arg(long, value_name = "DIR")]
    pub system_dir: Option<PathBuf>,
    /// Start fullscreen.
    #[arg(long)]
    pub fullscreen: bool,
    /// Initial window size as a multiple of the game's resolution.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub scale: Option<u32>,
    /// Run without sound.
    #[arg(long)]
    pub no_audio: bool,
    /// Test hook: save the displayed frame as PNG once FRAME frames have run.
    #[arg(long, hide = true, num_args = 2, value_names = ["FRAME", "PATH"])]
    pub screenshot_at: Option<Vec<String>>,
    /// Test hook: headless, stay busy MS milliseconds after each displayed frame, as a
    /// window's drawing and vsync wait keep the frame loop busy.
    #[arg(long, hide = true, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub busy_frame_ms: Option<u64>,
}

fn parse_speed(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        // The frame runner paces feeds between half and double speed.
        Ok(x) if (0.5..=2.0).contains(&x) => Ok(x),
        _ => Err(format!("expected a speed from 0.5 to 2, got {s:?}")),
    }
}

impl ReplayArgs {
    pub fn to_options(&self, config: &Config) -> Result<ReplayOptions, CliError> {
        let play = PlayArgs {
            content: None,
            core: None,
            headless: self.headless,
            frames: None,
            fast: self.fast,
            bot: None,
            stats_json: self.stats_json.clone(),
            options: Vec::new(),
            save_dir: None,
            view: self.view.clone(),
            record: None,
            no_record: true,
            test_ignore_loads: false,
            video: VideoArgs::default(),
        }
        .to_options(config)?;
        let mut play = play;
        if let Some(path) = &self.export {
            if let (Some(from), Some(to)) = (self.from_frame, self.to_frame) {
                if from >= to {
                    return Err(CliError::Invalid(format!(
                        "--from-frame {from} is not before --to-frame {to}"
                    )));
                }
            }
            // An export runs headless and as fast as the machine allows.
            play.headless = true;
            play.runner.fast = true;
            play.audio.enabled = false;
            play.video = Some(VideoOutput {
                settings: VideoSettings::new(
                    path.clone(),
                    self.lossless,
                    self.view.scale,
                    self.force,
                )?,
                // A log frame: `replay` turns it into one of the session's.
                from_frame: self.from_frame.unwrap_or(0),
            });
        }
        let core_dirs = core_dirs(config);
        Ok(ReplayOptions {
            log: self.log.clone(),
            core: self
                .core
                .as_deref()
                .map(|c| core_path(c, &core_dirs))
                .transpose()?,
            core_dirs,
            content: self.content.clone(),
            play,
            speed: self.speed,
            verify: self.verify,
            to_frame: self.to_frame,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Core(#[from] crate::host::HostError),
    #[error("--screenshot-at FRAME PATH: {0:?} is not a frame number")]
    ScreenshotFrame(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Video(#[from] crate::video::VideoError),
}

/// Where cores are looked for by name (see `host::catalog`).
pub fn core_dirs(config: &Config) -> Vec<PathBuf> {
    let home = directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf());
    catalog::search_dirs(config.paths.cores_dir.as_deref(), home.as_deref())
}

/// `--core VALUE`: a core's name looked up in `dirs`, or a path (a file of that name in the
/// working directory is taken as the path it is).
fn core_path(value: &std::path::Path, dirs: &[PathBuf]) -> Result<PathBuf, CliError> {
    match value.to_str() {
        Some(name) if catalog::is_name(name) && !value.is_file() => Ok(catalog::find(name, dirs)?),
        _ => Ok(value.to_path_buf()),
    }
}

fn parse_option(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}

impl PlayArgs {
    /// `to_options` for host and join: they record into the recordings directory unless
    /// told otherwise.
    pub fn to_netplay_options(&self, config: &Config) -> Result<PlayOptions, CliError> {
        let mut o = self.to_options(config)?;
        if self.record.is_none() && !self.no_record {
            o.record = RecordMode::Dir(config.resolved_paths().recordings_dir);
        }
        Ok(o)
    }

    /// Merges flags over the config file (flags win).
    pub fn to_options(&self, config: &Config) -> Result<PlayOptions, CliError> {
        let dirs = core_dirs(config);
        let core = match (&self.core, &self.content) {
            (Some(p), _) => CoreSource::Path(core_path(p, &dirs)?),
            (None, None) => CoreSource::Builtin,
            (None, Some(c)) => {
                let cores = catalog::list(&dirs);
                CoreSource::Path(catalog::for_content(c, &cores, &dirs)?.path.clone())
            }
        };
        let paths = config.resolved_paths();
        let mut options: Vec<(String, String)> = Vec::new();
        let all = config
            .core_options
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .chain(self.options.iter().cloned());
        for (k, v) in all {
            options.retain(|(key, _)| *key != k);
            options.push((k, v));
        }
        let screenshot_at = match self.view.screenshot_at.as_deref() {
            Some([frame, path]) => Some((
                frame
                    .parse()
                    .map_err(|_| CliError::ScreenshotFrame(frame.clone()))?,
                PathBuf::from(path),
            )),
            _ => None,
        };
        let runner = RunnerConfig {
            fast: self.fast,
            max_frames: self.frames,
            // A window shows one frame per refresh even when fast-forwarding.
            fast_budget: if self.headless {
                Duration::from_millis(2)
            } else {
                Duration::from_millis(16)
            },
            ..RunnerConfig::default()
        };
        Ok(PlayOptions {
            core,
            content: self.content.clone(),
            host: CoreConfig {
                system_dir: self.view.system_dir.clone().unwrap_or(paths.system_dir),
                save_dir: self.save_dir.clone().unwrap_or(paths.save_dir),
                options,
                netplay: false,
                ignore_loads: self.test_ignore_loads,
            },
            headless: self.headless,
            runner,
            bot: self.bot,
            stats_json: self.stats_json.clone(),
            screenshot_at,
            busy_frame: self.view.busy_frame_ms.map(Duration::from_millis),
            scale: self.view.scale.unwrap_or(config.video.scale).clamp(1, 16),
            fullscreen: self.view.fullscreen || config.video.fullscreen,
            vsync: config.video.vsync,
            screenshots_dir: paths.screenshots_dir,
            audio: AudioSettings {
                enabled: config.audio.enabled && !self.view.no_audio && !self.headless,
                latency_ms: config.audio.latency_ms,
            },
            keymaps: config.keymaps(),
            record: self
                .record
                .clone()
                .map_or(RecordMode::Off, RecordMode::File),
            sync_test: None,
            taps: Vec::new(),
            hash_shown: None,
            video: self.video.to_output(self.view.scale)?,
            chat: None,
            chat_key: config.input.chat.get_ref().clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn play(args: &[&str]) -> PlayArgs {
        let mut argv = vec!["framelock", "play"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Play(p) => p.play,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults_to_the_builtin_game() {
        let o = play(&[]).to_options(&Config::default()).unwrap();
        assert_eq!(o.core, CoreSource::Builtin);
        assert!(o.content.is_none());
        assert!(!o.headless && !o.runner.fast && o.runner.max_frames.is_none());
        assert!(o.audio.enabled);
    }

    #[test]
    fn flags_override_the_config_file() {
        let config = Config::parse(
            "[video]\nscale = 2\n[core_options]\na = \"1\"\nb = \"2\"\n[paths]\nsave_dir = \"/cfg/saves\"\n",
            std::path::Path::new("c.toml"),
        )
        .unwrap();
        let o = play(&[
            "rom.md",
            "--core",
            "x.so",
            "--option",
            "b=3",
            "--option",
            "c=4=5",
            "--scale",
            "4",
            "--headless",
            "--fast",
            "--frames",
            "60",
            "--bot",
            "9",
            "--system-dir",
            "/sys",
        ])
        .to_options(&config)
        .unwrap();
        assert_eq!(o.core, CoreSource::Path("x.so".into()));
        assert_eq!(o.scale, 4);
        assert_eq!(
            o.host.options,
            vec![
                ("a".to_string(), "1".to_string()),
                ("b".to_string(), "3".to_string()),
                ("c".to_string(), "4=5".to_string())
            ]
        );
        assert_eq!(o.host.save_dir, PathBuf::from("/cfg/saves"));
        assert_eq!(o.host.system_dir, PathBuf::from("/sys"));
        assert_eq!(o.runner.max_frames, Some(60));
        assert!(o.runner.fast && o.headless && !o.audio.enabled);
        assert_eq!(o.bot.map(|b| b.seed), Some(9));
    }

    #[test]
    fn a_nick_falls_back_on_the_login_name_then_on_none() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(name, _)| *name == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let all = env(&[("USER", "ana"), ("LOGNAME", "bo"), ("USERNAME", "cy")]);
        assert_eq!(nick(Some("dee"), all).as_deref(), Some("dee"));
        assert_eq!(nick(None, all).as_deref(), Some("ana"));
        // A blank --name or $USER counts as none.
        assert_eq!(nick(Some("  "), all).as_deref(), Some("ana"));
        let blank_user = env(&[("USER", ""), ("LOGNAME", "bo")]);
        assert_eq!(nick(None, blank_user).as_deref(), Some("bo"));
        assert_eq!(
            nick(None, env(&[("USERNAME", "cy")])).as_deref(),
            Some("cy")
        );
        // Nothing at all: the caller names the player by its slot, not "player" for everyone.
        assert_eq!(nick(None, env(&[])), None);
        assert_eq!(nick(Some(""), env(&[("USER", " ")])), None);
    }

    #[test]
    fn netplay_commands_take_play_flags_too() {
        let cli = Cli::try_parse_from([
            "framelock",
            "join",
            "127.0.0.1:9000",
            "rom.md",
            "--core",
            "x.so",
            "--headless",
            "--bot",
            "3",
            "--name",
            "ana",
            "--netsim",
            "loss=5%,delay=40ms",
        ])
        .unwrap();
        let Command::Join(j) = cli.command else {
            panic!("not join")
        };
        let o = j.to_options(&Config::default()).unwrap();
        assert_eq!(o.host, "127.0.0.1:9000");
        assert_eq!(o.net.play.content, Some(PathBuf::from("rom.md")));
        assert!(o.net.play.headless && o.net.netsim.is_some());
        assert_eq!(
            (o.net.name.as_str(), o.net.play.bot.map(|b| b.seed)),
            ("ana", Some(3))
        );
        let cli = Cli::try_parse_from(["framelock", "host", "-K", "3", "--players", "8"]).unwrap();
        let Command::Host(h) = cli.command else {
            panic!("not host")
        };
        let o = h.to_options(&Config::default()).unwrap();
        assert_eq!(
            (o.players, o.keyframe_interval, o.port, o.mode),
            (8, Some(3), DEFAULT_PORT, None)
        );
        assert_eq!(
            (o.session_mode(), o.session_keyframe_interval()),
            (Mode::Strict, 3)
        );
        let cli = Cli::try_parse_from(["framelock", "host", "--mode", "optimistic"]).unwrap();
        let Command::Host(h) = cli.command else {
            panic!("not host")
        };
        let o = h.to_options(&Config::default()).unwrap();
        assert_eq!(
            (o.session_mode(), o.session_keyframe_interval()),
            (Mode::Optimistic, 1)
        );
        let bad = Cli::try_parse_from(["framelock", "host", "--mode", "fast"]).unwrap_err();
        assert!(bad.to_string().contains("strict or optimistic"), "{bad}");
        assert!(Cli::try_parse_from(["framelock", "host", "--players", "9"]).is_err());
        // A session of one would wait for a joiner it does not want.
        let alone = Cli::try_parse_from(["framelock", "host", "--players", "1"]).unwrap_err();
        assert!(alone.to_string().contains("2..=8"), "{alone}");
        assert!(Cli::try_parse_from(["framelock", "host", "--netsim", "loss=lots"]).is_err());
    }

    #[test]
    fn recording_is_opt_in_for_play_and_opt_out_for_netplay() {
        let config = Config::parse(
            "[paths]\nrecordings_dir = \"/rec\"\n",
            std::path::Path::new("c.toml"),
        )
        .unwrap();
        let o = play(&[]).to_options(&config).unwrap();
        assert_eq!(o.record, RecordMode::Off);
        let o = play(&["--record", "a.flr"]).to_options(&config).unwrap();
        assert_eq!(o.record, RecordMode::File("a.flr".into()));
        let host = |extra: &[&str]| {
            let mut argv = vec!["framelock", "host"];
            argv.extend_from_slice(extra);
            match Cli::try_parse_from(argv).unwrap().command {
                Command::Host(h) => h.to_options(&config).unwrap().net.play.record,
                other => panic!("parsed as {other:?}"),
            }
        };
        assert_eq!(host(&[]), RecordMode::Dir("/rec".into()));
        assert_eq!(host(&["--no-record"]), RecordMode::Off);
        assert_eq!(
            host(&["--record", "m.flr"]),
            RecordMode::File("m.flr".into())
        );
        assert!(
            Cli::try_parse_from(["framelock", "join", "h", "--record", "x", "--no-record"])
                .is_err()
        );
    }

    #[test]
    fn replay_flags_parse() {
        let cli = Cli::try_parse_from([
            "framelock",
            "replay",
            "m.flr",
            "rom.md",
            "--core",
            "x.so",
            "--headless",
            "--speed",
            "0.5",
            "--to-frame",
            "99",
            "--verify",
        ])
        .unwrap();
        let Command::Replay(r) = cli.command else {
            panic!("not replay")
        };
        let o = r.to_options(&Config::default()).unwrap();
        assert_eq!(o.log, PathBuf::from("m.flr"));
        assert_eq!(o.content, Some(PathBuf::from("rom.md")));
        assert_eq!(o.core, Some(PathBuf::from("x.so")));
        assert_eq!((o.speed, o.to_frame, o.verify), (0.5, Some(99), true));
        assert!(o.play.headless && !o.play.audio.enabled && !o.play.runner.fast);
        assert_eq!(o.play.record, RecordMode::Off);
        for bad in [
            &["--speed", "3"][..],
            &["--speed", "x"],
            &["--fast", "--speed", "2"],
        ] {
            let mut argv = vec!["framelock", "replay", "m.flr"];
            argv.extend_from_slice(bad);
            assert!(Cli::try_parse_from(argv).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn export_runs_headless_and_fast_and_checks_its_flags() {
        let replay = |extra: &[&str]| {
            let mut argv = vec!["framelock", "replay", "m.flr"];
            argv.extend_from_slice(extra);
            let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
            let Command::Replay(r) = cli.command else {
                panic!("not replay")
            };
            r.to_options(&Config::default()).map_err(|e| e.to_string())
        };
        let o = replay(&[
            "--export",
            "m.mkv",
            "--lossless",
            "--from-frame",
            "5",
            "--scale",
            "2",
        ])
        .unwrap();
        assert!(o.play.headless && o.play.runner.fast && !o.play.audio.enabled);
        let v = o.play.video.unwrap();
        assert_eq!(v.from_frame, 5);
        assert_eq!(v.settings.format, crate::video::Format::MkvLossless);
        assert_eq!((v.settings.scale, v.settings.force), (Some(2), false));
        assert!(!v.settings.realtime);
        // Without --export, a window as before.
        assert!(replay(&[]).unwrap().play.video.is_none());
        for (bad, says) in [
            (&["--lossless"][..], "--export"),
            (&["--from-frame", "3"], "--export"),
            (
                &["--export", "m.mp4", "--from-frame", "9", "--to-frame", "9"],
                "not before",
            ),
            (&["--export", "m.avi"], "unknown video format .avi"),
        ] {
            let e = replay(bad).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
        // While playing: realtime, from the first frame.
        let p = play(&["--video", "v.webm", "--force"])
            .to_options(&Config::default())
            .unwrap();
        let v = p.video.unwrap();
        assert!(v.settings.realtime && v.settings.force && v.from_frame == 0);
        assert_eq!(v.settings.format, crate::video::Format::Webm);
    }

    #[test]
    fn bad_arguments_are_errors() {
        // No core found takes it: the message says where framelock looked.
        let empty = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.paths.cores_dir = Some(empty.path().to_path_buf());
        let err = play(&["rom.zzz"])
            .to_options(&config)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no core found takes rom.zzz"), "{err}");
        assert!(err.contains(&empty.path().display().to_string()), "{err}");
        let err = play(&["--core", "nosuch"])
            .to_options(&config)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("no core named nosuch: looked for nosuch_libretro.so in "),
            "{err}"
        );
        assert!(Cli::try_parse_from(["framelock", "play", "--option", "novalue"]).is_err());
        assert!(Cli::try_parse_from(["framelock", "play", "--scale", "0"]).is_err());
        let p = play(&["--screenshot-at", "x", "out.png"]);
        assert!(p.to_options(&Config::default()).is_err());
        let p = play(&["--screenshot-at", "30", "out.png"]);
        let o = p.to_options(&Config::default()).unwrap();
        assert_eq!(o.screenshot_at, Some((30, PathBuf::from("out.png"))));
    }
}
