//! Flags parse to the options they say, over the config file, and bad ones are refused.

use super::netplay::nick;
use super::*;
use crate::app::RecordMode;
use crate::config::Config;
use crate::host::CoreSource;
use crate::lockstep::Mode;
use crate::netplay::DEFAULT_PORT;
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
        Cli::try_parse_from(["framelock", "join", "h", "--record", "x", "--no-record"]).is_err()
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

#[test]
fn serve_takes_nats_secrets_from_files_or_the_environment_and_never_prints_them() {
    let parse = |args: &[&str]| {
        let mut argv = vec!["framelock", "serve", "--directory", "nats://127.0.0.1:4222"];
        argv.extend_from_slice(&["--public-address", "192.0.2.1:7845"]);
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Serve(s) => s,
            other => panic!("parsed as {other:?}"),
        }
    };
    let env = |k: &str| match k {
        "FRAMELOCK_DIRECTORY_PASSWORD" => Some("hunter2-from-env".to_string()),
        "FRAMELOCK_DIRECTORY_TOKEN" => Some(String::new()),
        _ => None,
    };
    let s = parse(&["--directory-user", "fleet", "--directory-key", "fleet.key"]);
    let auth = s.directory_auth(env);
    assert_eq!(auth.user.as_deref(), Some("fleet"));
    assert_eq!(
        auth.password_env.as_ref().map(|p| p.0.as_str()),
        Some("hunter2-from-env")
    );
    assert!(auth.token_env.is_none(), "an empty variable is unset");
    assert!(!format!("{auth:?}").contains("hunter2"), "{auth:?}");
    assert_eq!(
        s.to_options().directory_key,
        Some(PathBuf::from("fleet.key"))
    );
    // A password without its user, a client certificate without its key: refused by clap.
    let no = |args: &[&str]| {
        let mut argv = vec!["framelock", "serve", "--directory", "nats://127.0.0.1:4222"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv).is_err()
    };
    assert!(no(&["--directory-password-file", "pw"]));
    assert!(no(&["--directory-tls-cert", "c.pem"]));
    assert!(
        no(&["--directory-password", "pw"]),
        "no secret on the command line"
    );
}
