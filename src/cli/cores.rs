//! `framelock cores` and the lookup of a core by name: where cores are looked for, what
//! `--core VALUE` names, and the table or JSON of the cores found. Imports no command's
//! flags.

use std::path::PathBuf;

use clap::Args;

use super::error::CliError;
use crate::config::Config;
use crate::host::catalog;

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
        "{:<20} {:<24} {:<16} {:<28} {:<13} {}\n",
        "NAME", "CORE", "VERSION", "EXTENSIONS", "RENDERER", "PATH"
    );
    for c in cores {
        out.push_str(&format!(
            "{:<20} {:<24} {:<16} {:<28} {:<13} {}\n",
            c.name,
            c.library_name,
            c.version,
            c.extensions.join(","),
            catalog::renderer_label(&c.renderers),
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
            "renderer": catalog::renderer_label(&c.renderers),
            "path": c.path.display().to_string(),
        }))
        .collect::<Vec<_>>())
}

/// Where cores are looked for by name (see `host::catalog`).
pub fn core_dirs(config: &Config) -> Vec<PathBuf> {
    let home = directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf());
    catalog::search_dirs(config.paths.cores_dir.as_deref(), home.as_deref())
}

/// `--core VALUE`: a core's name looked up in `dirs`, or a path (a file of that name in the
/// working directory is taken as the path it is).
pub(super) fn core_path(value: &std::path::Path, dirs: &[PathBuf]) -> Result<PathBuf, CliError> {
    match value.to_str() {
        Some(name) if catalog::is_name(name) && !value.is_file() => Ok(catalog::find(name, dirs)?),
        _ => Ok(value.to_path_buf()),
    }
}
