//! Command-line interface (clap derive) and its layering over the config file.
//!
//! This file is the command line's face: [`Cli`], its [`Command`]s and their help texts.
//! The flags of each kind of command are beside it: `play` (what every command that runs a
//! game takes), `netplay` (`host`, `join`, `spectate`, `serve`, `rooms`) and `replay`;
//! `cores` finds cores, `error` says what is wrong. The top of the house: nothing below
//! `main` may import it, and no file beside this one imports it.
// The field docs are `--help` texts: `[IPV6]:PORT` or `[paths]` there are what the user
// types, not links to items.
#![allow(rustdoc::broken_intra_doc_links)]

mod cores;
mod error;
mod install;
mod netplay;
mod play;
mod replay;

pub use cores::{core_dirs, cores_json, cores_table, CoresArgs};
pub use error::CliError;
pub use install::{completions, write_man_pages, CompletionsArgs, ManPagesArgs};
pub use netplay::{HostArgs, JoinArgs, NetArgs, OpenArgs, RoomsArgs, ServeArgs};
pub use play::{LocalArgs, PlayArgs, VideoArgs, ViewArgs};
pub use replay::ReplayArgs;

use std::path::PathBuf;
use std::sync::LazyLock;

use clap::{Parser, Subcommand};

/// `--version`: the release and the netplay protocol and recording format it speaks (peers
/// must speak the same protocol).
pub static VERSION: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} (netplay protocol {}, recording format {})",
        env!("CARGO_PKG_VERSION"),
        crate::wire::PROTOCOL_VERSION,
        crate::replay::FORMAT_VERSION
    )
});

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
Config: ~/.config/framelock/config.toml, on Windows %APPDATA%\\framelock\\config\\config.toml
(see README). Logging: RUST_LOG=debug.";

#[derive(Debug, Parser)]
#[command(name = "framelock", version = VERSION.as_str(), about = "Libretro frontend for playing arcade games with friends over keyframe lockstep netplay", after_help = AFTER_HELP)]
pub struct Cli {
    /// Config file to use instead of ~/.config/framelock/config.toml (Windows:
    /// %APPDATA%\framelock\config\config.toml).
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
    /// Join, watch or replay what a framelock:// link names (what a click on an invite runs).
    #[command(after_help = OPEN_HELP)]
    Open(OpenArgs),
    /// List the replays a server keeps (`serve --archive`).
    #[command(after_help = REPLAYS_HELP)]
    Replays(RoomsArgs),
    /// Replay an input log (.flr) recorded by `play --record` or by netplay, and verify it.
    #[command(after_help = REPLAY_HELP)]
    Replay(ReplayArgs),
    /// List the libretro cores found by name: what `--core NAME` takes.
    #[command(after_help = CORES_HELP)]
    Cores(CoresArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = COMPLETIONS_HELP)]
    Completions(CompletionsArgs),
    /// Write the man pages (framelock.1, framelock-COMMAND.1) into a directory.
    #[command(hide = true)]
    ManPages(ManPagesArgs),
}

const COMPLETIONS_HELP: &str = "\
Examples:
  framelock completions bash > ~/.local/share/bash-completion/completions/framelock
  framelock completions zsh > ~/.zfunc/_framelock      (with fpath+=~/.zfunc)
  framelock completions fish > ~/.config/fish/completions/framelock.fish
  framelock completions powershell >> $PROFILE

The .deb installs the bash, zsh and fish scripts already.";

const CORES_HELP: &str = "\
Examples:
  framelock cores                                  name, version, extensions, where
  framelock cores --json

Cores are found as NAME_libretro.so in, in order: [paths] cores_dir in the config,
~/.config/retroarch/cores, /usr/lib/x86_64-linux-gnu/libretro (Debian's libretro-*
packages) and /usr/lib/libretro; the first one of a name wins. On Windows they are
NAME_libretro.dll in cores_dir, the cores folder beside framelock.exe,
%APPDATA%\\RetroArch\\cores and C:\\RetroArch-Win64\\cores. `--core NAME` runs it; with
CONTENT and no --core, the one core that takes its extension runs it.";

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
  framelock replay framelock://play.example.org/replay/3f09a1c2b4d5e6f7 --headless --verify
                                                   fetch a server's replay, then as above

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
  framelock serve --directory nats://10.0.0.5:4222 --public-address 203.0.113.7:7845 \\
    --region eu-west                               a member of a fleet of servers
  framelock serve --directory tls://nats.lan:4222 --directory-tls-ca ca.pem \\
    --directory-user fleet --directory-key fleet.key --public-address 203.0.113.7:7845
                                                   signed in to NATS over TLS (the password
                                                   in FRAMELOCK_DIRECTORY_PASSWORD), its
                                                   entries signed with the fleet's key

  framelock serve --http 0.0.0.0:8080 --archive /var/lib/framelock/replays --archive-mib 2048
                                                   a web page and the finished games' replays

No core, content or display is needed. Hosts open rooms with `framelock host --server
THIS-HOST`, players join them with `framelock join THIS-HOST --room NAME`; everyone only
sends to the server, which every home router lets through. One log line per room event;
Ctrl-C closes every room, telling its players.

A fleet's servers share one key file (`head -c 32 /dev/urandom > fleet.key`): they sign
what they write in the directory and ignore entries that are not signed with it, so that
nobody else who can write to NATS can send joiners elsewhere. NATS secrets come from files
or FRAMELOCK_DIRECTORY_PASSWORD / FRAMELOCK_DIRECTORY_TOKEN, never from the command line.";

const OPEN_HELP: &str = "\
Examples:
  framelock open framelock://play.example.org/amber-otter-42     join a room on a server
  framelock open framelock://play.example.org/amber-otter-42?watch   watch it
  framelock open framelock://192.0.2.10:7845 game.md --core genesis_plus_gx   join a host
  framelock open framelock://play.example.org/replay/3f09a1c2b4d5e6f7   watch a replay
  framelock open --register                        open links clicked in a browser

A link names where to join and nothing else: never a password (you are asked for it when
the room needs one) and no option; anything but a framelock:// link is refused. Give the
game file and --core as for `framelock join` when the room plays more than the built-in
game. Hosts and the lobby print each room's link beside its join command.";

const REPLAYS_HELP: &str = "\
Examples:
  framelock replays play.example.org               id, room, game, players, date, length
  framelock replays play.example.org --json
  framelock replay framelock://play.example.org/replay/ID   fetch one and watch it";

const ROOMS_HELP: &str = "\
Examples:
  framelock rooms play.example.org                 a table of the open rooms
  framelock rooms play.example.org:7900 --json";

const SERVERS_HELP: &str = "\
Examples:
  framelock servers play.example.org               the fleet's servers and the round trip
                                                   to each: pick the one between friends
  framelock servers play.example.org --json";

#[cfg(test)]
mod tests;
