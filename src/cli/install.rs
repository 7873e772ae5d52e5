//! What packages install beside the binary, made from the same clap definitions as
//! `--help`: shell completions (`framelock completions SHELL`) and one man page per
//! command (`framelock man-pages DIR`, which the .deb's build runs). Imports no command's
//! flags.

use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::Cli;

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Clone, Args)]
pub struct ManPagesArgs {
    /// Directory to write framelock.1 and framelock-COMMAND.1 into (created if missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "framelock", &mut out);
    out
}

/// Writes `framelock.1` and a `framelock-COMMAND.1` for every command people run into
/// `dir`; returns the files written.
pub fn write_man_pages(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let cli = Cli::command();
    let version = cli.get_version().unwrap_or_default().to_string();
    let mut pages = vec![("framelock".to_string(), cli.clone())];
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("framelock-{}", sub.get_name());
        // The page's title and synopsis read `framelock-play`, as git's do.
        pages.push((
            name.clone(),
            sub.clone().name(name).version(version.clone()),
        ));
    }
    let mut written = Vec::new();
    for (name, cmd) in pages {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd)
            .source(format!("framelock {}", env!("CARGO_PKG_VERSION")))
            .manual("framelock manual")
            .render(&mut page)?;
        let path = dir.join(format!("{name}.1"));
        std::fs::write(&path, page)?;
        written.push(path);
    }
    Ok(written)
}
