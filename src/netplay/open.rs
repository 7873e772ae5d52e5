//! `framelock open LINK`: what a click on an invite link runs. It joins (or watches) the
//! room or host the link names and nothing else: the link is parsed strictly (`links`),
//! never passed to a shell, and can set no option. A password is never in a link: when
//! the server lists the room with one, the player is asked before the handshake, in the
//! lobby's window (a click in a browser runs it with no terminal) or on the terminal
//! without echo. A host of its own says it wants one only by refusing the join: headless,
//! the player is asked and the join tried again; with a window (winit opens one event loop
//! a process) the refusal says to give `--password`.
//! `framelock open --register` installs the desktop entry that makes browsers and chat
//! apps hand `framelock://` links to it ([`register`]).

use std::io::IsTerminal;
use std::path::PathBuf;

use super::links::{self, Target};
use super::{join, list_rooms, JoinOptions, NetplayError};
use crate::app::PlaySummary;

/// Password prompts before `open` gives up.
const TRIES: usize = 3;

/// The join a link asks for, over `base` (the player's own flags): its host or server, its
/// room, and whether to watch.
pub fn join_options(target: &Target, mut base: JoinOptions) -> Result<JoinOptions, NetplayError> {
    match target {
        Target::Room {
            server,
            room,
            watch,
        } => {
            base.host = server.clone();
            base.room = Some(room.clone());
            base.watch |= watch;
        }
        Target::Direct { host, watch } => {
            base.host = host.clone();
            base.room = None;
            base.watch |= watch;
        }
        Target::Replay { .. } => {
            return Err(NetplayError::Link(format!(
                "{target} is a replay: `framelock replay {target}` plays it"
            )))
        }
    }
    Ok(base)
}

/// Joins as `opts` says (made by [`join_options`]), asking for the password when it turns
/// out to be needed.
pub fn open(mut opts: JoinOptions, link: &str) -> Result<PlaySummary, NetplayError> {
    tracing::info!("open: {link}");
    if let Some(room) = opts.room.clone() {
        // The server says whether the room wants a password, and what it plays.
        if let Ok(rooms) = list_rooms(&opts.host) {
            match rooms.iter().find(|r| r.name == room) {
                Some(r) => {
                    let plays_content = !r.content.is_empty();
                    if plays_content && opts.net.play.content.is_none() {
                        return Err(NetplayError::Link(format!(
                            "room {room} plays {} with the core {}: give the game file (and the \
                             core if more than one takes it), e.g. `framelock open {link} {} \
                             --core CORE`",
                            r.content,
                            r.core,
                            super::invite::shell_word(&r.content)
                        )));
                    }
                    if r.password && opts.net.password.is_none() {
                        opts.ask_password = true;
                    }
                }
                None => tracing::debug!("open: room {room} is not in the server's list"),
            }
        }
    }
    let mut tries = 0;
    loop {
        match join(&opts) {
            Err(e) if wants_password(&e) && tries < TRIES && opts.net.play.headless => {
                tries += 1;
                let why = if opts.net.password.is_some() || opts.ask_password {
                    "wrong password; try again"
                } else {
                    "the session needs a password"
                };
                opts.ask_password = true;
                opts.net.password = None;
                tracing::info!("open: {why}");
            }
            Err(e) if wants_password(&e) => {
                return Err(NetplayError::Link(format!(
                    "{e}: give it with `framelock open {link} --password P`"
                )))
            }
            other => return other,
        }
    }
}

/// The host refused for a password's sake.
fn wants_password(e: &NetplayError) -> bool {
    e.to_string().contains("wrong password")
}

/// Asks for the password: in the lobby's window if it has one and no terminal ran it,
/// else on the terminal (not echoing it).
pub(super) fn ask_password(
    why: &str,
    window: &mut crate::app::play::EarlyWindow,
) -> Result<String, NetplayError> {
    let no_terminal = || {
        NetplayError::Link(format!(
            "{why}: run `framelock open LINK --password P` in a terminal"
        ))
    };
    let terminal = std::io::stdin().is_terminal();
    if window.is_open() && !terminal {
        let rows = [format!("framelock: {why}")];
        return match window.ask_secret(&rows, "Password:")? {
            Some(p) => Ok(p),
            None => Err(NetplayError::Left),
        };
    }
    if !terminal && std::fs::File::open("/dev/tty").is_err() {
        return Err(no_terminal());
    }
    match rpassword::prompt_password(format!("{why}. Password: ")) {
        Ok(p) if !p.is_empty() => Ok(p),
        Ok(_) => Err(NetplayError::Link(format!("{why}: no password given"))),
        Err(_) => Err(no_terminal()),
    }
}

/// Writes the desktop entry that makes `framelock open` the handler of `framelock://` links
/// to the user's applications directory (`$XDG_DATA_HOME/applications`), and makes it the
/// default handler with `xdg-mime` if that is installed. Returns the entry's path.
pub fn register() -> Result<PathBuf, NetplayError> {
    let exe = std::env::current_exe()
        .map_err(|e| NetplayError::Link(format!("cannot tell where framelock is: {e}")))?;
    let dirs = directories::BaseDirs::new()
        .ok_or_else(|| NetplayError::Link("no home directory (HOME is not set)".into()))?;
    let apps = dirs.data_dir().join("applications");
    let io = |e: std::io::Error| {
        NetplayError::Link(format!(
            "cannot write the desktop entry in {}: {}",
            apps.display(),
            crate::wording::io_reason(&e)
        ))
    };
    std::fs::create_dir_all(&apps).map_err(io)?;
    let path = apps.join(links::DESKTOP_FILE);
    let tmp = apps.join(format!("{}.tmp", links::DESKTOP_FILE));
    std::fs::write(&tmp, links::desktop_entry(&exe.to_string_lossy())).map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)?;
    let mime = format!("x-scheme-handler/{}", links::SCHEME);
    match std::process::Command::new("xdg-mime")
        .args(["default", links::DESKTOP_FILE, &mime])
        .status()
    {
        Ok(s) if s.success() => tracing::info!("open: framelock handles {mime} links now"),
        Ok(s) => tracing::warn!("open: xdg-mime default failed ({s})"),
        Err(_) => tracing::info!(
            "open: xdg-mime is not installed; desktops that read {} find the entry there",
            apps.display()
        ),
    }
    // Some desktops read the scheme handlers from this cache only.
    let _ = std::process::Command::new("update-desktop-database")
        .arg(&apps)
        .status();
    Ok(path)
}
