//! Cores found by name: `--core genesis_plus_gx` means `genesis_plus_gx_libretro.so`
//! (`.dll` on Windows, `.dylib` on macOS) in the first of these directories that has it:
//! 1. `[paths] cores_dir` in the config;
//! 2. RetroArch's `~/.config/retroarch/cores`;
//! 3. Debian's `/usr/lib/x86_64-linux-gnu/libretro` (where the `libretro-*` packages install);
//! 4. `/usr/lib/libretro`.
//!
//! On Windows, after `cores_dir`: the `cores` folder beside `framelock.exe`, then
//! RetroArch's: `%APPDATA%\RetroArch\cores` and the installer's `C:\RetroArch-Win64\cores`.
//!
//! A core's name, version and extensions come from `retro_get_system_info`, which libretro
//! allows before `retro_init`: listing cores loads each library but runs none of them.

use std::path::{Path, PathBuf};

use super::instance;
use super::{CoreSource, HostError};

/// What every core library's file name ends with on this system.
pub const SUFFIX: &str = if cfg!(windows) {
    "_libretro.dll"
} else if cfg!(target_os = "macos") {
    "_libretro.dylib"
} else {
    "_libretro.so"
};

/// Shared-library extensions of every system: a name ending in one is a file, not a name.
const LIBRARY_EXTENSIONS: [&str; 3] = [".so", ".dll", ".dylib"];

/// The directories searched for cores, in order (see the module doc).
pub fn search_dirs(cores_dir: Option<&Path>, home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = cores_dir.map(Path::to_path_buf).into_iter().collect();
    if cfg!(windows) {
        let exe_dir = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_path_buf));
        let appdata = std::env::var_os("APPDATA").map(PathBuf::from);
        dirs.extend(windows_dirs(exe_dir.as_deref(), appdata.as_deref()));
        return dirs;
    }
    if let Some(home) = home {
        dirs.push(home.join(".config/retroarch/cores"));
    }
    dirs.push(PathBuf::from("/usr/lib/x86_64-linux-gnu/libretro"));
    dirs.push(PathBuf::from("/usr/lib/libretro"));
    dirs
}

/// Windows' directories after `cores_dir`: beside the executable, then RetroArch's.
fn windows_dirs(exe_dir: Option<&Path>, appdata: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = exe_dir.map(|d| d.join("cores")).into_iter().collect();
    dirs.extend(appdata.map(|d| d.join("RetroArch").join("cores")));
    dirs.push(PathBuf::from(r"C:\RetroArch-Win64\cores"));
    dirs
}

/// Whether `--core VALUE` names a core rather than a file: no directory part (`/`, or `\`
/// and a drive's `:` on any system: a Windows path in a shared command line is a path) and
/// no library extension at the end (`./x.so`, `x_libretro.so` and `C:x.dll` are files).
pub fn is_name(value: &str) -> bool {
    !value.is_empty()
        && !value.contains(['/', '\\', ':'])
        && !LIBRARY_EXTENSIONS
            .iter()
            .any(|ext| value.to_ascii_lowercase().ends_with(ext))
}

/// The first `NAME_libretro.so` in `dirs`.
pub fn find(name: &str, dirs: &[PathBuf]) -> Result<PathBuf, HostError> {
    let file = format!("{name}{SUFFIX}");
    dirs.iter()
        .map(|d| d.join(&file))
        .find(|p| p.is_file())
        .ok_or_else(|| HostError::CoreNotFound {
            name: name.to_string(),
            looked: dirs.to_vec(),
        })
}

/// The hardware rendering APIs a core library can ask for, found by the names of their
/// functions in its file (a core that links OpenGL, or loads it through the frontend's
/// `get_proc_address`, names `glBindFramebuffer`; a Vulkan one `vkGetInstanceProcAddr`).
/// Empty: it draws in software. What a core really asks for is known once it loads
/// content, and logged then.
pub fn renderers(path: &Path) -> Vec<&'static str> {
    const APIS: [(&str, &[u8]); 2] = [
        ("opengl", b"glBindFramebuffer"),
        ("vulkan", b"vkGetInstanceProcAddr"),
    ];
    let mut found = Vec::new();
    let Ok(file) = std::fs::File::open(path) else {
        return found;
    };
    // Read in chunks that overlap by the longest name, so none is split unseen.
    let overlap = APIS.iter().map(|(_, n)| n.len()).max().unwrap_or(0);
    let mut buf = vec![0u8; 1 << 20];
    let mut kept = 0;
    let mut reader = std::io::BufReader::new(file);
    loop {
        let n = match std::io::Read::read(&mut reader, &mut buf[kept..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let window = &buf[..kept + n];
        for (api, name) in APIS {
            if !found.contains(&api) && memchr::memmem::find(window, name).is_some() {
                found.push(api);
            }
        }
        if found.len() == APIS.len() {
            break;
        }
        kept = overlap.min(window.len());
        let end = window.len();
        buf.copy_within(end - kept..end, 0);
    }
    found.sort_unstable();
    found
}

/// `renderers` as `framelock cores` shows it: "software", "opengl", "opengl+vulkan".
pub fn renderer_label(renderers: &[&str]) -> String {
    if renderers.is_empty() {
        "software".into()
    } else {
        renderers.join("+")
    }
}

/// A core library found in the search directories.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundCore {
    /// What `--core` takes: the file name without `_libretro.so`.
    pub name: String,
    pub path: PathBuf,
    pub library_name: String,
    pub version: String,
    /// Content extensions it takes, lower case, without dots.
    pub extensions: Vec<String>,
    /// The hardware rendering APIs it can ask for (see [`renderers`]).
    pub renderers: Vec<&'static str>,
}

impl FoundCore {
    pub fn takes(&self, extension: &str) -> bool {
        self.extensions
            .iter()
            .any(|e| e.eq_ignore_ascii_case(extension))
    }
}

/// Every core in `dirs`, each name once (the first directory that has it wins), sorted by
/// name; libraries that are no libretro core are left out (and logged).
pub fn list(dirs: &[PathBuf]) -> Vec<FoundCore> {
    let mut found: Vec<FoundCore> = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for path in files {
            let Some(name) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(SUFFIX))
                .map(str::to_string)
            else {
                continue;
            };
            if found.iter().any(|f| f.name == name) || !path.is_file() {
                continue;
            }
            match probe(&path) {
                Ok(core) => found.push(FoundCore { name, ..core }),
                Err(e) => tracing::warn!("{}: not a usable core: {e}", path.display()),
            }
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// What `--core` calls the library at `path`: its file name without `_libretro.so` (or
/// `.dll`, `.dylib`).
pub fn core_name(path: &Path) -> Option<String> {
    let file = path.file_name()?.to_str()?;
    let name = LIBRARY_EXTENSIONS
        .iter()
        .find_map(|ext| file.strip_suffix(&format!("_libretro{ext}")));
    Some(name.unwrap_or(file).to_string())
}

/// A core library's name, version and extensions, without initialising it.
pub fn probe(path: &Path) -> Result<FoundCore, HostError> {
    let api = instance::load_checked(&CoreSource::Path(path.to_path_buf()))?;
    let info = instance::system_info(&api);
    Ok(FoundCore {
        name: core_name(path).unwrap_or_default(),
        path: path.to_path_buf(),
        library_name: info.library_name,
        version: info.library_version,
        extensions: info
            .valid_extensions
            .split('|')
            .map(|e| e.trim().trim_start_matches('.').to_ascii_lowercase())
            .filter(|e| !e.is_empty())
            .collect(),
        renderers: renderers(path),
    })
}

/// The one core in `cores` that takes `content`'s extension.
pub fn for_content<'a>(
    content: &Path,
    cores: &'a [FoundCore],
    dirs: &[PathBuf],
) -> Result<&'a FoundCore, HostError> {
    let ext = content
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let takers: Vec<&FoundCore> = cores.iter().filter(|c| c.takes(&ext)).collect();
    match takers.as_slice() {
        [one] => Ok(one),
        [] => Err(HostError::NoCoreFor {
            content: content.to_path_buf(),
            looked: dirs.to_vec(),
        }),
        many => Err(HostError::SeveralCoresFor {
            content: content.to_path_buf(),
            names: many.iter().map(|c| c.name.clone()).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_names_and_any_systems_library_or_path_is_a_file() {
        assert!(is_name("genesis_plus_gx"));
        for file in [
            "x.so",
            "fbneo_libretro.so",
            "fbneo_libretro.dll",
            "FBNEO_LIBRETRO.DLL",
            "x_libretro.dylib",
            "./x",
            r"cores\fbneo",
            r"C:\cores\fbneo_libretro.dll",
            "C:fbneo",
            "",
        ] {
            assert!(!is_name(file), "{file}");
        }
        assert_eq!(
            core_name(Path::new("/c/genesis_plus_gx_libretro.so")).as_deref(),
            Some("genesis_plus_gx")
        );
        assert_eq!(
            core_name(Path::new("fbneo_libretro.dll")).as_deref(),
            Some("fbneo")
        );
    }

    #[test]
    fn windows_looks_beside_the_exe_then_in_retroarchs_folders() {
        let dirs = windows_dirs(
            Some(Path::new("D:/games/framelock")),
            Some(Path::new("C:/Users/ana/AppData/Roaming")),
        );
        assert_eq!(
            dirs,
            vec![
                Path::new("D:/games/framelock").join("cores"),
                Path::new("C:/Users/ana/AppData/Roaming")
                    .join("RetroArch")
                    .join("cores"),
                PathBuf::from(r"C:\RetroArch-Win64\cores"),
            ]
        );
        let linux = search_dirs(Some(Path::new("/mine")), Some(Path::new("/home/ana")));
        if cfg!(windows) {
            assert_eq!(linux[0], Path::new("/mine"));
        } else {
            assert_eq!(linux[1], Path::new("/home/ana/.config/retroarch/cores"));
            assert!(linux.contains(&PathBuf::from("/usr/lib/x86_64-linux-gnu/libretro")));
        }
    }
}
