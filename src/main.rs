//! The `framelock` binary: parse flags, load the config, run the command. It may import every
//! module; nothing imports it.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use framelock::cli::{Cli, Command};
use framelock::config::Config;
use framelock::netplay::links::Target;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    framelock::app::interrupt::install();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", describe(&e));
            ExitCode::FAILURE
        }
    }
}

/// Leaving a lobby with Esc is what the player asked for, not an error.
fn left_ok<T>(
    result: Result<T, framelock::netplay::NetplayError>,
) -> Result<(), framelock::netplay::NetplayError> {
    match result {
        Err(framelock::netplay::NetplayError::Left) => {
            tracing::info!("left before the game started");
            Ok(())
        }
        other => other.map(drop),
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    // These two read no config: a broken config file must not stop a package's build.
    match &cli.command {
        Command::Completions(args) => {
            use std::io::Write;
            std::io::stdout().write_all(&framelock::cli::completions(args.shell))?;
            return Ok(());
        }
        Command::ManPages(args) => {
            for page in framelock::cli::write_man_pages(&args.dir).map_err(|e| {
                anyhow::anyhow!("cannot write man pages in {}: {e}", args.dir.display())
            })? {
                println!("{}", page.display());
            }
            return Ok(());
        }
        _ => {}
    }
    let (config, _path) = Config::load(cli.config.as_deref())?;
    match cli.command {
        Command::Completions(_) | Command::ManPages(_) => unreachable!("handled above"),
        Command::Play(args) => {
            let options = args.to_options(&config)?;
            framelock::app::play(&options)?;
        }
        Command::Host(args) => left_ok(framelock::netplay::host(&args.to_options(&config)?))?,
        Command::Join(args) => left_ok(framelock::netplay::join(&args.to_options(&config)?))?,
        Command::Spectate(args) => left_ok(framelock::netplay::join(
            &args.to_spectate_options(&config)?,
        ))?,
        Command::Serve(args) => framelock::netplay::serve(&args.to_options())?,
        Command::Rooms(args) => {
            let rooms = framelock::netplay::list_rooms(&args.server)?;
            if args.json {
                println!("{}", framelock::netplay::rooms_json(&rooms));
            } else {
                print!("{}", framelock::netplay::rooms_table(&rooms));
            }
        }
        Command::Servers(args) => {
            let servers = framelock::netplay::list_servers(&args.server)?;
            if args.json {
                println!("{}", framelock::netplay::servers_json(&servers));
            } else {
                print!("{}", framelock::netplay::servers_table(&servers));
            }
        }
        Command::Replay(mut args) => {
            let link = args.log.to_str().filter(|l| {
                l.get(..12)
                    .is_some_and(|s| s.eq_ignore_ascii_case("framelock://"))
            });
            if let Some(link) = link {
                args.log = fetch_replay(link, &config)?;
            }
            framelock::app::replay::replay(&args.to_options(&config)?)?;
        }
        Command::Replays(args) => {
            let replays = framelock::netplay::list_replays(&args.server)?;
            if args.json {
                println!("{}", framelock::netplay::replays_json(&replays));
            } else {
                print!(
                    "{}",
                    framelock::netplay::replays_table(&args.server, &replays)
                );
            }
        }
        Command::Open(args) => match args.to_options(&config)? {
            None => {
                let path = framelock::netplay::register()?;
                println!(
                    "framelock opens framelock:// links now (desktop entry {})",
                    path.display()
                );
            }
            Some((Target::Replay { .. }, _)) => {
                let link = args.link.as_deref().unwrap_or_default();
                let log = fetch_replay(link, &config)?;
                let replay = framelock::cli::ReplayArgs::watch(log, &args.play);
                framelock::app::replay::replay(&replay.to_options(&config)?)?;
            }
            Some((_, opts)) => {
                let link = args.link.as_deref().unwrap_or_default();
                left_ok(framelock::netplay::open(opts, link))?
            }
        },
        Command::Cores(args) => {
            let dirs = framelock::cli::core_dirs(&config);
            let cores = framelock::host::catalog::list(&dirs);
            if args.json {
                println!("{}", framelock::cli::cores_json(&cores));
            } else {
                print!("{}", framelock::cli::cores_table(&cores, &dirs));
            }
        }
    }
    Ok(())
}

/// Fetches the replay a `framelock://HOST/replay/ID` link names into the recordings
/// directory's `fetched/`, and returns its path.
fn fetch_replay(link: &str, config: &Config) -> anyhow::Result<std::path::PathBuf> {
    match framelock::netplay::links::parse(link).map_err(anyhow::Error::msg)? {
        Target::Replay { server, id } => {
            let dir = config.resolved_paths().recordings_dir.join("fetched");
            Ok(framelock::netplay::fetch_to(&server, &id, &dir)?)
        }
        other => anyhow::bail!("{other} is no replay: `framelock open {other}` joins it"),
    }
}

/// Logs go to stderr; `RUST_LOG` overrides the default (info for framelock, warn otherwise).
fn init_logging() {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn,framelock=info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// The error and its causes, skipping causes whose text the message already contains
/// (most messages embed their source).
fn describe(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !text.contains(&c) {
            text.push_str(": ");
            text.push_str(&c);
        }
    }
    text
}
