//! Chat with real processes on 127.0.0.1 through `framelock serve`: two players and a
//! spectator say a line each (`--say`); every message is logged by the others (the
//! spectator's marked, and hidden by `--chat players`), kept in the recordings at its
//! frame, and printed again by `replay`, whose logs still verify.

mod netplay_common;

use std::path::Path;
use std::time::Duration;

use netplay_common::{args, assert_log_verifies, join_room, open_room, start_server, Peer};

#[test]
fn chat_goes_through_a_room_to_everyone_and_into_the_recordings() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut server, addr) = start_server(d, &[]);
    let host_log = d.join("host.flr").display().to_string();
    let join_log = d.join("join.flr").display().to_string();
    let frames = ["--frames", "900"];
    let mut host = open_room(
        d,
        &addr,
        "chat",
        &[
            &frames[..],
            &[
                "--bot",
                "1",
                "--record",
                &host_log,
                "--say",
                "hello \u{1b}[2Jfrom host",
            ],
        ]
        .concat(),
    );
    let mut joiner = join_room(
        d,
        "join",
        &addr,
        "chat",
        &[
            &frames[..],
            &["--bot", "2", "--record", &join_log],
            &["--say", "hi from join", "--chat", "players"],
        ]
        .concat(),
    );
    assert!(
        joiner
            .wait_for_log("chat: host: hello from host", Duration::from_secs(20))
            .is_some(),
        "the joiner did not get the host's message (escape removed)\n{}",
        joiner.log_text()
    );
    let a = args(&[
        "spectate",
        &addr,
        "--room",
        "chat",
        "--headless",
        "--say",
        "nice game",
    ]);
    let mut eve = Peer::spawn(d, "eve", &a);
    assert!(
        host.wait_for_log("chat: eve (spectator): nice game", Duration::from_secs(20))
            .is_some(),
        "the host did not get the spectator's message\n{}",
        host.log_text()
    );
    assert!(host.log_text().contains("chat: join: hi from join"));
    assert!(
        eve.wait_for_log("chat: host: hello from host", Duration::from_secs(1))
            .is_none(),
        "a spectator who came later does not get earlier messages: the server keeps none"
    );
    joiner.wait_ok(Duration::from_secs(40));
    host.wait_ok(Duration::from_secs(20));
    // The spectator would wait for the room to come back: it has seen what it came for.
    eve.kill();
    assert!(
        !joiner.log_text().contains("nice game"),
        "--chat players hides spectators' messages\n{}",
        joiner.log_text()
    );
    assert!(
        !server.log_text().contains("hi from join"),
        "the server logs no chat"
    );
    for log in [&host_log, &join_log] {
        assert_log_verifies(d, Path::new(log));
    }
    let out = netplay_common::framelock(d)
        .args(["replay", "--headless", "--fast", &join_log])
        .output()
        .expect("run framelock replay");
    let said = netplay_common::text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(": host: hello from host") && said.contains(": join: hi from join"),
        "replay prints the messages\n{said}"
    );
    let at = said
        .split("chat at frame ")
        .nth(1)
        .and_then(|s| s.split(':').next())
        .and_then(|f| f.parse::<u32>().ok());
    assert!(at.is_some_and(|f| f < 900), "at their frames\n{said}");
    server.interrupt();
    server.wait(Duration::from_secs(10));
}
