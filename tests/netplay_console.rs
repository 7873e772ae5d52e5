//! What a player sees in the terminal before the first frame: the host names the join
//! command, and a joiner on a terminal watches the start state arrive on a progress bar
//! (`script` gives the joiner a pseudo-terminal; without one indicatif draws nothing).

mod netplay_common;

use std::process::{Command, Stdio};
use std::time::Duration;

use netplay_common::{args, free_port, start_host, HARD_DEADLINE};

#[test]
fn a_joiner_on_a_terminal_watches_the_start_state_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    // 300 ms each way: the transfer takes at least a 600 ms round, so the bar is drawn.
    let slow = ["--frames", "60", "--netsim", "delay=300ms"];
    let mut host = start_host(dir.path(), port, &args(&slow));
    let join = format!(
        "{} join 127.0.0.1:{port} --headless --no-record {}",
        env!("CARGO_BIN_EXE_framelock"),
        slow.join(" ")
    );
    let out = Command::new("script")
        .args(["--quiet", "--return", "--command", &join, "/dev/null"])
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("`script` (bsdutils) runs the joiner on a pseudo-terminal");
    let tty = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{:?}\n{tty}", out.status);
    // "start state [====>   ] 512 B/1.20 KiB, ..." while it arrives, then the session.
    assert!(tty.contains("start state ["), "no download bar:\n{tty}");
    assert!(tty.contains("KiB"), "the bar names no size:\n{tty}");
    assert!(tty.contains("in session"), "{tty}");
    host.wait_ok(HARD_DEADLINE - Duration::from_secs(10));
}
