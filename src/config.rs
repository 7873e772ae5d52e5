//! The config file: TOML at `~/.config/framelock/config.toml` (XDG), layered under CLI flags. It
//! imports only `frontend`, `input` and `wording` (the types its sections name), never what runs a
//! session.
//!
//! Every section is `#[serde(default)]`, so a file written for an older version (or an
//! empty one) still loads; unknown keys are logged and ignored; a malformed file is an
//! error naming the file and the line. Paths may start with `~/` (the home directory);
//! relative paths are relative to the config file's directory, wherever framelock runs from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::frontend::keyboard::is_key_name;
use crate::input::{Button, KeyMap, KEYBOARD_PLAYERS};

/// A commented config file with every default spelled out (`framelock` never writes it;
/// it is documentation and a test fixture).
pub const EXAMPLE: &str = r#"# framelock config: ~/.config/framelock/config.toml. Every key is optional.

[paths]
# Defaults live under ~/.local/share/framelock/. A leading ~/ is your home directory;
# relative paths are relative to the directory of this file.
# system_dir = "/home/me/.local/share/framelock/system"         # BIOS files, fbneo/ romsets
# save_dir = "/home/me/.local/share/framelock/saves"            # <game>.srm save RAM
# screenshots_dir = "/home/me/.local/share/framelock/screenshots"
# recordings_dir = "/home/me/.local/share/framelock/recordings"   # netplay input logs (.flr)
# cores_dir = "/home/me/cores"   # searched first for --core NAME (NAME_libretro.so)
# cache_dir = "/home/me/.cache/framelock"   # the rollback check's verdicts

[video]
scale = 3            # initial window size in multiples of the game's resolution
fullscreen = false   # start fullscreen (F11 / Alt+Enter toggles)
vsync = true

[audio]
enabled = true
latency_ms = 64      # target output latency

[net]
port_map = "auto"    # host: ask the router to forward the port (auto, off, pcp, natpmp, upnp)

[input]
keyboard_players = 2 # P1..Pn read the keyboard; gamepads take the next free ports
chat = "t"           # netplay: opens the chat line (Enter sends, Esc cancels)

# Button = key. Buttons: up down left right a b x y l r l2 r2 l3 r3 start select.
# Keys: a-z 0-9 up down left right enter space tab backspace lshift rshift lctrl rctrl
# lalt ralt insert delete home end pageup pagedown minus equals comma period slash
# semicolon quote backquote backslash leftbracket rightbracket kp0-kp9 kpenter kpplus
# kpminus kpmultiply kpdivide kpperiod f1-f10. "" unbinds. Unlisted buttons keep defaults.
[input.p1]
up = "up"
down = "down"
left = "left"
right = "right"
b = "z"
a = "x"
y = "a"
x = "s"
l = "q"
r = "w"
start = "enter"
select = "rshift"

[input.p2]
up = "i"
down = "k"
left = "j"
right = "l"
b = "v"
a = "b"
y = "f"
x = "g"
l = "r"
r = "t"
start = "6"
select = "5"

[core_options]
# Passed to the core as-is; --option key=value overrides.
# "fbneo-hiscores" = "disabled"
"#;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {}: {}", .path.display(), crate::wording::io_reason(.io))]
    Read { path: PathBuf, io: std::io::Error },
    #[error("config file {}, line {line}: {message}", .path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("config file {}, line {line}: [input.p{player}] {button} = {key:?}: unknown key name", .path.display())]
    UnknownKeyName {
        path: PathBuf,
        line: usize,
        player: usize,
        button: String,
        key: String,
    },
    #[error("config file {}, line {line}: [input] chat = {key:?}: unknown key name", .path.display())]
    UnknownChatKey {
        path: PathBuf,
        line: usize,
        key: String,
    },
    #[error("config file {}: input.keyboard_players must be 0, 1 or 2 (got {value})", .path.display())]
    KeyboardPlayers { path: PathBuf, value: u32 },
    #[error("config file {}: paths.{key} = {value:?}: {problem}", .path.display())]
    BadPath {
        path: PathBuf,
        key: &'static str,
        value: String,
        problem: &'static str,
    },
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Config {
    pub paths: PathsConfig,
    pub video: VideoConfig,
    pub audio: AudioConfig,
    pub input: InputConfig,
    pub net: NetConfig,
    /// Core option overrides, applied before content loads.
    pub core_options: BTreeMap<String, String>,
}

/// Directories; `None` means the XDG default (see [`Config::resolved_paths`]). Once parsed,
/// `~` is expanded and relative paths are anchored at the config file's directory.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct PathsConfig {
    pub system_dir: Option<PathBuf>,
    pub save_dir: Option<PathBuf>,
    pub screenshots_dir: Option<PathBuf>,
    pub recordings_dir: Option<PathBuf>,
    /// Searched first for `--core NAME` (see `host::catalog`).
    pub cores_dir: Option<PathBuf>,
    /// What framelock keeps to save work next time (the rollback check's verdicts).
    pub cache_dir: Option<PathBuf>,
}

impl PathsConfig {
    /// Every path setting, by key.
    fn entries(&mut self) -> [(&'static str, &mut Option<PathBuf>); 6] {
        [
            ("cores_dir", &mut self.cores_dir),
            ("cache_dir", &mut self.cache_dir),
            ("system_dir", &mut self.system_dir),
            ("save_dir", &mut self.save_dir),
            ("screenshots_dir", &mut self.screenshots_dir),
            ("recordings_dir", &mut self.recordings_dir),
        ]
    }

    /// Expands `~` and anchors relative paths at `base` (the config file's directory).
    fn resolve(&mut self, base: &Path, file: &Path) -> Result<(), ConfigError> {
        for (key, slot) in self.entries() {
            if let Some(p) = slot.as_mut() {
                *p = resolve_path(p, base, home_dir).map_err(|problem| ConfigError::BadPath {
                    path: file.to_path_buf(),
                    key,
                    value: p.display().to_string(),
                    problem,
                })?;
            }
        }
        Ok(())
    }
}

fn home_dir() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf())
}

/// `~` and `~/...` are under `home()`; other relative paths under `base`. (The config is TOML,
/// so every path is UTF-8.)
fn resolve_path(
    p: &Path,
    base: &Path,
    home: impl FnOnce() -> Option<PathBuf>,
) -> Result<PathBuf, &'static str> {
    let s = p.to_str().unwrap_or_default();
    if s.is_empty() {
        return Err("empty path (leave the key out for the default)");
    }
    let rest = match s.strip_prefix('~') {
        None if p.is_absolute() => return Ok(p.to_path_buf()),
        None => return Ok(base.join(p)),
        Some("") => "",
        // `~\` too on Windows, where both separators are.
        Some(rest) => match rest
            .strip_prefix('/')
            .or_else(|| rest.strip_prefix('\\').filter(|_| cfg!(windows)))
        {
            Some(rest) => rest,
            None => return Err("~user is not expanded; write the full path or ~/..."),
        },
    };
    let home = home().ok_or("cannot expand ~: no home directory (HOME is not set)")?;
    Ok(if rest.is_empty() {
        home
    } else {
        home.join(rest)
    })
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default)]
pub struct VideoConfig {
    pub scale: u32,
    pub fullscreen: bool,
    pub vsync: bool,
}

impl Default for VideoConfig {
    fn default() -> Self {
        VideoConfig {
            scale: 3,
            fullscreen: false,
            vsync: true,
        }
    }
}

/// Netplay settings.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct NetConfig {
    /// `--port-map`'s default: one of [`PORT_MAP_VALUES`]; `None`: auto.
    pub port_map: Option<Spanned<String>>,
}

/// What `[net] port_map` (and `--port-map`) takes.
pub const PORT_MAP_VALUES: [&str; 6] = ["auto", "off", "pcp", "natpmp", "nat-pmp", "upnp"];

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default)]
pub struct AudioConfig {
    pub enabled: bool,
    pub latency_ms: u32,
}

impl Default for AudioConfig {
    fn default() -> Self {
        AudioConfig {
            enabled: true,
            latency_ms: 64,
        }
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default)]
pub struct InputConfig {
    pub keyboard_players: u32,
    /// Netplay: the key that opens the chat line.
    pub chat: Spanned<String>,
    /// Overrides of P1's default bindings: button name -> key name.
    pub p1: BTreeMap<String, Spanned<String>>,
    pub p2: BTreeMap<String, Spanned<String>>,
}

impl Default for InputConfig {
    fn default() -> Self {
        InputConfig {
            keyboard_players: KEYBOARD_PLAYERS as u32,
            chat: Spanned::new(0..0, "t".into()),
            p1: BTreeMap::new(),
            p2: BTreeMap::new(),
        }
    }
}

/// Directories with defaults filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paths {
    pub system_dir: PathBuf,
    pub save_dir: PathBuf,
    pub screenshots_dir: PathBuf,
    pub recordings_dir: PathBuf,
    pub cache_dir: PathBuf,
    /// What this machine keeps between runs that is neither a cache nor the player's own
    /// files: the seat keys `join` was given (`netplay::seat_keys`).
    pub state_dir: PathBuf,
}

/// Keys each section accepts; `None`: any key (a free-form table).
const KNOWN_KEYS: &[(&str, Option<&[&str]>)] = &[
    (
        "paths",
        Some(&[
            "system_dir",
            "save_dir",
            "screenshots_dir",
            "recordings_dir",
            "cores_dir",
            "cache_dir",
        ]),
    ),
    ("video", Some(&["scale", "fullscreen", "vsync"])),
    ("audio", Some(&["enabled", "latency_ms"])),
    ("net", Some(&["port_map"])),
    ("input", Some(&["keyboard_players", "chat", "p1", "p2"])),
    ("core_options", None),
];

/// `~/.config/framelock/config.toml` (honours `XDG_CONFIG_HOME`); on Windows
/// `%APPDATA%\framelock\config\config.toml`.
pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "framelock").map(|d| d.config_dir().join("config.toml"))
}

/// `~/.cache/framelock` (`$XDG_CACHE_HOME/framelock`); without a home directory, the
/// system's temporary one (a cache may go, and must not land in whatever folder this runs in).
fn cache_dir() -> PathBuf {
    directories::ProjectDirs::from("", "", "framelock")
        .map(|d| d.cache_dir().to_path_buf())
        .unwrap_or_else(|| std::env::temp_dir().join("framelock-cache"))
}

/// `~/.local/state/framelock` (honours `XDG_STATE_HOME`); where the platform has no state
/// directory (Windows, macOS), the data directory.
fn state_dir() -> PathBuf {
    directories::ProjectDirs::from("", "", "framelock")
        .and_then(|d| d.state_dir().map(Path::to_path_buf))
        .unwrap_or_else(data_dir)
}

/// `~/.local/share/framelock` (honours `XDG_DATA_HOME`); on Windows
/// `%LOCALAPPDATA%\framelock\data`: recordings and saves stay on this machine.
fn data_dir() -> PathBuf {
    directories::ProjectDirs::from("", "", "framelock")
        .map(|d| d.data_local_dir().to_path_buf())
        .unwrap_or_else(|| PathBuf::from("framelock-data"))
}

impl Config {
    /// Loads `explicit` (which must exist), or else the default file if there is one, or
    /// else the defaults. Returns the config and the file it came from.
    pub fn load(explicit: Option<&Path>) -> Result<(Config, Option<PathBuf>), ConfigError> {
        let path = match explicit {
            Some(p) => p.to_path_buf(),
            None => match default_path().filter(|p| p.exists()) {
                Some(p) => p,
                None => {
                    tracing::debug!("no config file; using defaults");
                    return Ok((Config::default(), None));
                }
            },
        };
        let text = std::fs::read_to_string(&path).map_err(|io| ConfigError::Read {
            path: path.clone(),
            io,
        })?;
        let config = Config::parse(&text, &path)?;
        tracing::debug!("loaded config {}", path.display());
        Ok((config, Some(path)))
    }

    /// Parses config text; `path` names the file in messages, and relative paths in it are
    /// relative to its directory.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let parse_err = |e: toml::de::Error| ConfigError::Parse {
            path: path.to_path_buf(),
            line: e.span().map(|s| line_of(text, s.start)).unwrap_or(1),
            message: e.message().to_string(),
        };
        let table: toml::Table = toml::from_str(text).map_err(parse_err)?;
        let mut config: Config = toml::from_str(text).map_err(parse_err)?;
        for key in unknown_keys(&table) {
            tracing::warn!(
                "config file {}: unknown key {key} (ignored)",
                path.display()
            );
        }
        if config.input.keyboard_players > KEYBOARD_PLAYERS as u32 {
            return Err(ConfigError::KeyboardPlayers {
                path: path.to_path_buf(),
                value: config.input.keyboard_players,
            });
        }
        let chat = config.input.chat.get_ref();
        if !is_key_name(chat) {
            return Err(ConfigError::UnknownChatKey {
                path: path.to_path_buf(),
                line: line_of(text, config.input.chat.span().start),
                key: chat.clone(),
            });
        }
        for (player, map) in [&config.input.p1, &config.input.p2].into_iter().enumerate() {
            for (button, key) in map {
                let k = key.get_ref().as_str();
                if Button::from_name(button).is_some() && !k.is_empty() && !is_key_name(k) {
                    return Err(ConfigError::UnknownKeyName {
                        path: path.to_path_buf(),
                        line: line_of(text, key.span().start),
                        player: player + 1,
                        button: button.clone(),
                        key: k.to_string(),
                    });
                }
            }
        }
        if let Some(v) = &config.net.port_map {
            if !PORT_MAP_VALUES.contains(&v.get_ref().to_ascii_lowercase().as_str()) {
                return Err(ConfigError::Parse {
                    path: path.to_path_buf(),
                    line: line_of(text, v.span().start),
                    message: format!(
                        "[net] port_map = {:?}: use auto, off, pcp, natpmp or upnp",
                        v.get_ref()
                    ),
                });
            }
        }
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        config.paths.resolve(&dir, path)?;
        Ok(config)
    }

    /// Key maps of the keyboard players: defaults with the file's overrides on top.
    pub fn keymaps(&self) -> Vec<KeyMap> {
        [&self.input.p1, &self.input.p2]
            .into_iter()
            .enumerate()
            .take(self.input.keyboard_players as usize)
            .map(|(player, overrides)| {
                let mut map = KeyMap::default_for(player);
                for (button, key) in overrides {
                    let key = key.get_ref().as_str();
                    // Unknown buttons were already reported as unknown keys.
                    let _ = map.bind_named(button, (!key.is_empty()).then_some(key));
                }
                map
            })
            .collect()
    }

    /// Directories with unset ones defaulted under `~/.local/share/framelock`.
    pub fn resolved_paths(&self) -> Paths {
        let data = data_dir();
        let or = |p: &Option<PathBuf>, leaf: &str| p.clone().unwrap_or_else(|| data.join(leaf));
        Paths {
            system_dir: or(&self.paths.system_dir, "system"),
            save_dir: or(&self.paths.save_dir, "saves"),
            screenshots_dir: or(&self.paths.screenshots_dir, "screenshots"),
            recordings_dir: or(&self.paths.recordings_dir, "recordings"),
            cache_dir: self.paths.cache_dir.clone().unwrap_or_else(cache_dir),
            state_dir: state_dir(),
        }
    }
}

/// 1-based line number of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Dotted names of keys the config does not know.
fn unknown_keys(table: &toml::Table) -> Vec<String> {
    let mut out = Vec::new();
    for (section, value) in table {
        let Some(&(_, known)) = KNOWN_KEYS.iter().find(|(s, _)| s == section) else {
            out.push(section.clone());
            continue;
        };
        let (Some(known), Some(inner)) = (known, value.as_table()) else {
            continue;
        };
        for (key, v) in inner {
            if !known.contains(&key.as_str()) {
                out.push(format!("{section}.{key}"));
            } else if section == "input" && (key == "p1" || key == "p2") {
                for button in v.as_table().into_iter().flat_map(|t| t.keys()) {
                    if Button::from_name(button).is_none() {
                        out.push(format!("input.{key}.{button}"));
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/cfg/config.toml"))
    }

    #[test]
    fn empty_and_example_files_give_the_defaults() {
        let empty = parse("").unwrap();
        assert_eq!(empty, Config::default());
        let example = parse(EXAMPLE).unwrap();
        assert_eq!(example.video, VideoConfig::default());
        assert_eq!(example.audio, AudioConfig::default());
        assert_eq!(example.keymaps(), empty.keymaps());
        assert_eq!(
            empty.keymaps(),
            vec![KeyMap::default_for(0), KeyMap::default_for(1)]
        );
    }

    #[test]
    fn crlf_files_load_as_lf_files_do_and_errors_count_lines_alike() {
        let crlf = EXAMPLE.replace('\n', "\r\n");
        assert_eq!(parse(&crlf).unwrap(), parse(EXAMPLE).unwrap());
        let text = "[video]\r\nscale = 4\r\n[core_options]\r\n\"a\" = \"b\"\r\n";
        let c = parse(text).unwrap();
        assert_eq!(c.video.scale, 4);
        assert_eq!(c.core_options.get("a").map(String::as_str), Some("b"));
        let e = parse("[video]\r\nscale = 2\r\nfullscreen = maybe\r\n").unwrap_err();
        assert!(e.to_string().contains("line 3"), "{e}");
    }

    #[test]
    fn windows_paths_keep_their_drive_letters_and_backslashes() {
        // Literal strings ('...') take backslashes as they are, basic ones ("...") doubled.
        let c = parse(
            "[paths]\r\ncores_dir = 'C:\\RetroArch-Win64\\cores'\r\nsave_dir = \"D:\\\\saves\"\r\n",
        )
        .unwrap();
        let cores = c.paths.cores_dir.unwrap();
        let saves = c.paths.save_dir.unwrap();
        if cfg!(windows) {
            assert_eq!(cores, Path::new(r"C:\RetroArch-Win64\cores"));
            assert_eq!(saves, Path::new(r"D:\saves"));
        } else {
            // Not absolute here: anchored at the config file's directory, text intact.
            assert!(cores.ends_with(r"C:\RetroArch-Win64\cores"), "{cores:?}");
            assert!(saves.ends_with(r"D:\saves"), "{saves:?}");
        }
        let home = || Some(PathBuf::from("/home/me"));
        let tilde = resolve_path(Path::new(r"~\games"), Path::new("/cfg"), home);
        if cfg!(windows) {
            assert_eq!(tilde, Ok(PathBuf::from("/home/me").join("games")));
        } else {
            assert!(tilde.is_err(), "~\\ is a Windows spelling");
        }
    }

    #[test]
    fn partial_sections_keep_other_defaults() {
        let c = parse("[video]\nscale = 5\n[input.p1]\nb = \"c\"\nstart = \"\"\n").unwrap();
        assert_eq!(c.video.scale, 5);
        assert!(c.video.vsync);
        let p1 = &c.keymaps()[0];
        assert_eq!(p1.key(Button::B), Some("c"));
        assert_eq!(p1.key(Button::Start), None);
        assert_eq!(p1.key(Button::A), Some("x"));
    }

    #[test]
    fn unknown_keys_are_listed_not_fatal() {
        let text = "[video]\nscael = 2\n[input.p1]\nturbo = \"t\"\n[netplay]\nport = 1\n[core_options]\n\"x-y\" = \"z\"\n";
        let c = parse(text).unwrap();
        assert_eq!(c.core_options.get("x-y").map(String::as_str), Some("z"));
        let table: toml::Table = toml::from_str(text).unwrap();
        let mut unknown = unknown_keys(&table);
        unknown.sort();
        assert_eq!(unknown, vec!["input.p1.turbo", "netplay", "video.scael"]);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse("[video]\nscale = 2\nfullscreen = maybe\n").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("/cfg/config.toml, line 3"), "{msg}");
        let e = parse("[audio]\nlatency_ms = \"lots\"\n").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = parse("[input.p2]\n\nstart = \"hyperkey\"\n").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("line 3") && msg.contains("hyperkey"), "{msg}");
        let e = parse("[input]\nkeyboard_players = 3\n").unwrap_err();
        assert!(e.to_string().contains("keyboard_players"), "{e}");
        let e = parse("[net]\n\nport_map = \"igd\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3") && e.contains("use auto, off"), "{e}");
        let c = parse("[net]\nport_map = \"off\"\n").unwrap();
        assert_eq!(c.net.port_map.unwrap().into_inner(), "off");
    }

    #[test]
    fn paths_expand_tilde_and_are_relative_to_the_config_file() {
        let c = parse(
            "[paths]\nrecordings_dir = \"~/recs\"\nsave_dir = \"saves\"\n\
             system_dir = \"/opt/bios\"\nscreenshots_dir = \"~\"\n",
        )
        .unwrap();
        let home = home_dir().expect("a home directory");
        let paths = c.resolved_paths();
        assert_eq!(paths.recordings_dir, home.join("recs"));
        assert_eq!(paths.screenshots_dir, home);
        assert_eq!(paths.save_dir, Path::new("/cfg/saves"));
        assert_eq!(paths.system_dir, Path::new("/opt/bios"));
        // Every path key is treated alike.
        for key in [
            "system_dir",
            "save_dir",
            "screenshots_dir",
            "recordings_dir",
            "cache_dir",
        ] {
            let c = parse(&format!("[paths]\n{key} = \"~/x\"\n")).unwrap();
            let mut p = c.paths.clone();
            let set: Vec<_> = p
                .entries()
                .into_iter()
                .filter_map(|(_, v)| v.clone())
                .collect();
            assert_eq!(set, vec![home.join("x")], "{key}");
        }
        // Loaded from a file elsewhere: its directory anchors the relative paths.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("framelock.toml");
        std::fs::write(&file, "[paths]\nrecordings_dir = \"recs\"\n").unwrap();
        let (c, _) = Config::load(Some(&file)).unwrap();
        assert_eq!(c.resolved_paths().recordings_dir, dir.path().join("recs"));
    }

    #[test]
    fn unusable_paths_are_refused_naming_the_key() {
        let e = parse("[paths]\n\nrecordings_dir = \"~bob/recs\"\n").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(
                "/cfg/config.toml: paths.recordings_dir = \"~bob/recs\": ~user is not expanded"
            ),
            "{msg}"
        );
        let e = parse("[paths]\nsave_dir = \"\"\n").unwrap_err();
        assert!(
            e.to_string().contains("paths.save_dir = \"\": empty path"),
            "{e}"
        );
        let e = resolve_path(Path::new("~/recs"), Path::new("/cfg"), || None).unwrap_err();
        assert!(e.contains("no home directory"), "{e}");
    }

    #[test]
    fn the_chat_key_defaults_to_t_and_must_be_a_key() {
        assert_eq!(Config::default().input.chat.get_ref(), "t");
        let c = parse("[input]\nchat = \"f1\"\n").unwrap();
        assert_eq!(c.input.chat.get_ref(), "f1");
        let e = parse("[input]\nchat = \"nope\"\n").unwrap_err();
        assert!(e.to_string().contains("chat = \"nope\""), "{e}");
    }

    #[test]
    fn keyboard_players_limits_maps() {
        let c = parse("[input]\nkeyboard_players = 1\n").unwrap();
        assert_eq!(c.keymaps().len(), 1);
    }

    #[test]
    fn explicit_missing_file_is_an_error() {
        let e = Config::load(Some(Path::new("/nonexistent/framelock.toml"))).unwrap_err();
        // The OS's words in lowercase, once: not again as a capitalised cause.
        assert_eq!(
            e.to_string(),
            "config file /nonexistent/framelock.toml: no such file or directory (os error 2)"
        );
        assert!(std::error::Error::source(&e).is_none());
    }
}
