//! Slow lobbies and peers slow to start after the start state (`--start-delay-ms`): the
//! waiting are kept, the dead dropped, and a joiner killed while it loads is dropped.

use super::*;

/// A 4-player lobby fills slowly: the first joiner waits past the 5 s a silent host gets
/// (the lobby tells it every half second that it is there), a joiner that dies while it
/// waits is dropped within the lockstep timeout and its slot goes to the next one, and the
/// game then runs in sync with the four live players.
#[test]
fn a_slow_lobby_keeps_its_waiting_joiners_and_drops_dead_ones() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let frames = ["--frames", "300"];
    let mut host_args = args(&["--players", "4", "--bot", "1"]);
    host_args.extend(args(&frames));
    let mut host = start_host(d, port, &host_args);
    let mut first = start_join(d, port, "first", &args(&["--frames", "300", "--bot", "2"]));
    assert!(first
        .wait_for_log(
            "waiting for the game to start: 2 of 4",
            Duration::from_secs(10)
        )
        .is_some());
    let mut dead = start_join(d, port, "dead", &args(&["--frames", "300", "--bot", "3"]));
    assert!(host
        .wait_for_log("player 3 has the start state", Duration::from_secs(10))
        .is_some());
    dead.kill();
    let killed = Instant::now();
    let dropped = host
        .wait_for_log(
            "player 3 was dropped (dropped from the lobby: nothing heard for 10 s)",
            Duration::from_secs(14),
        )
        .unwrap_or_else(|| panic!("the dead joiner stayed in\n{}", host.log_text()));
    // The lobby hears from its waiting joiners once a second, and gives one 10 s.
    let after = dropped.duration_since(killed);
    assert!(after < Duration::from_secs(11), "{after:?}");
    // Past the 5 s a joiner gives a silent host.
    std::thread::sleep(Duration::from_secs(4));
    assert!(first.try_status().is_none(), "{}", first.log_text());
    let mut late = [
        start_join(d, port, "third", &args(&["--frames", "300", "--bot", "4"])),
        start_join(d, port, "fourth", &args(&["--frames", "300", "--bot", "5"])),
    ];
    for p in late.iter_mut().chain([&mut first]) {
        p.wait_ok(Duration::from_secs(30));
    }
    host.wait_ok(Duration::from_secs(30));
    let want = checksum(&host.read_stats());
    let mut slots = Vec::new();
    for p in late.iter().chain([&first]) {
        let s = p.read_stats();
        assert_eq!(checksum(&s), want, "{}", p.log_text());
        slots.push(s["slot"].as_u64().unwrap());
    }
    slots.sort();
    assert_eq!(
        slots,
        [1, 2, 3],
        "the dead joiner's slot was not given again"
    );
}

/// How long a peer of these tests takes from the start state to its first frame
/// (`--start-delay-ms`): four times the 2 s a silent player gets.
const SLOW_START_MS: &str = "8000";

/// A host of `frames` frames (bot 1) on a free port, and a joiner "join" (bot 2) with
/// `joiner` more: a slow start's `--start-delay-ms`, its own `--frames`.
fn host_and_slow_joiner(
    dir: &std::path::Path,
    frames: &str,
    joiner: &[&str],
) -> (netplay_common::Peer, netplay_common::Peer) {
    let port = free_port();
    let host = start_host(dir, port, &args(&["--frames", frames, "--bot", "1"]));
    let joiner = start_join(
        dir,
        port,
        "join",
        &args(&[&["--bot", "2"], joiner].concat()),
    );
    (host, joiner)
}

/// When the host had player 2's last ack of the start state (player 2 starts loading then).
fn start_state_sent(host: &mut netplay_common::Peer) -> Instant {
    host.wait_for_log("player 2 has the start state", Duration::from_secs(10))
        .unwrap_or_else(|| panic!("player 2 never got the start state\n{}", host.log_text()))
}

/// A joiner that takes 8 s from the start state to its first frame (a large romset, a slow
/// window: `--start-delay-ms`) is waited for: it tells the host that it is still loading,
/// the host says so, and both then play the whole session in sync.
#[test]
fn a_joiner_slow_to_start_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let (mut host, mut joiner) = host_and_slow_joiner(
        dir.path(),
        "300",
        &["--frames", "300", "--start-delay-ms", SLOW_START_MS],
    );
    let ready = start_state_sent(&mut host);
    joiner.wait(Duration::from_secs(40));
    host.wait(Duration::from_secs(40));
    let (hlog, jlog) = (host.log_text(), joiner.log_text());
    // A joiner that reaches its frame limit first leaves (`player 2 left (finished)`).
    if let Some(at) = hlog.find("(player 2) is out (timed out") {
        panic!(
            "the host dropped the slow joiner ({:.1} s after it had the start state): {}\n{hlog}\n{jlog}",
            ready.elapsed().as_secs_f64(),
            hlog[at..].lines().next().unwrap_or_default()
        );
    }
    assert!(
        hlog.contains("join (player 2) is still loading"),
        "the host did not say what it waits for\n{hlog}"
    );
    assert!(
        hlog.contains("join (player 2) is running"),
        "the host did not say when the wait ended\n{hlog}"
    );
    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_sane_stats("host", &h, 300);
    assert_sane_stats("join", &j, 300);
    assert_eq!(checksum(&h), checksum(&j), "{hlog}\n{jlog}");
    assert_eq!(h["players_left"].as_array().unwrap().len(), 0, "{h:#}");
}

/// A joiner killed while it loads (after the start state, before its first frame) is still
/// dropped within the 2 s a silent player gets, and the host plays on.
#[test]
fn a_joiner_killed_while_loading_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (mut host, mut joiner) =
        host_and_slow_joiner(dir.path(), "300", &["--start-delay-ms", "20000"]);
    start_state_sent(&mut host);
    // Past the 2 s a silent player gets, so that it is the keepalive that kept it in.
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !host.log_text().contains("player 2 is out"),
        "{}",
        host.log_text()
    );
    let killed = Instant::now();
    joiner.kill();
    let out = host
        .wait_for_log(
            "(player 2) is out (timed out while loading)",
            Duration::from_secs(10),
        )
        .unwrap_or_else(|| panic!("the host never dropped player 2\n{}", host.log_text()));
    let after = out.duration_since(killed);
    assert!(
        after <= Duration::from_millis(2700),
        "the host took {after:?} to drop the killed player\n{}",
        host.log_text()
    );
    eprintln!("host dropped the joiner killed while loading after {after:?}");
    host.wait_ok(Duration::from_secs(30));
    let h = host.read_stats();
    assert_eq!(h["frames"], 300, "{h:#}");
    assert_eq!(h["players_left"].as_array().unwrap().len(), 1, "{h:#}");
}

/// In a 3-player lobby the first joiner is slow to start (8 s): the lobby keeps it while it
/// loads, the third player comes 3 s later, and the game waits for the slow one to run;
/// the joiner that was quick says what it waits for. All three play in sync.
#[test]
fn a_lobby_keeps_a_joiner_that_is_slow_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let mut host = start_host(
        d,
        port,
        &args(&["--players", "3", "--frames", "300", "--bot", "1"]),
    );
    let mut slow = start_join(
        d,
        port,
        "slow",
        &args(&[
            "--frames",
            "300",
            "--bot",
            "2",
            "--start-delay-ms",
            SLOW_START_MS,
        ]),
    );
    start_state_sent(&mut host);
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !host.log_text().contains("player 2 went silent"),
        "the lobby dropped the joiner that was loading\n{}",
        host.log_text()
    );
    let mut quick = start_join(d, port, "quick", &args(&["--frames", "300", "--bot", "3"]));
    quick.wait_ok(Duration::from_secs(40));
    slow.wait_ok(Duration::from_secs(40));
    host.wait_ok(Duration::from_secs(40));
    let hlog = host.log_text();
    // Each leaves at its frame limit (`left (finished)`), none earlier.
    assert!(
        !hlog.contains("timed out") && !hlog.contains("went silent"),
        "{hlog}"
    );
    assert!(hlog.contains("slow (player 2) is still loading"), "{hlog}");
    assert!(hlog.contains("slow (player 2) is running"), "{hlog}");
    let qlog = quick.log_text();
    assert!(
        qlog.contains("waiting for every player to start"),
        "the quick joiner did not say what it waits for\n{qlog}"
    );
    let want = checksum(&host.read_stats());
    for p in [&slow, &quick] {
        let s = p.read_stats();
        assert_sane_stats(&p.label, &s, 300);
        assert_eq!(checksum(&s), want, "{}", p.log_text());
    }
}

/// A host that takes 8 s from its lobby to its first frame (a slow window) keeps its
/// joiner: its network thread answers while it opens, so the joiner hears it and waits,
/// saying what for, instead of giving the host up after 5 s.
#[test]
fn a_host_slow_to_start_keeps_its_joiner() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut host = start_host(
        dir.path(),
        port,
        &args(&[
            "--frames",
            "300",
            "--bot",
            "1",
            "--start-delay-ms",
            SLOW_START_MS,
        ]),
    );
    let mut joiner = start_join(
        dir.path(),
        port,
        "join",
        &args(&["--frames", "300", "--bot", "2"]),
    );
    joiner.wait(Duration::from_secs(40));
    host.wait(Duration::from_secs(40));
    let (hlog, jlog) = (host.log_text(), joiner.log_text());
    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_eq!(
        j["frames"], 300,
        "the joiner gave up on the host\n{jlog}\n{hlog}"
    );
    assert!(
        jlog.contains("waiting for every player to start"),
        "the joiner did not say what it waits for\n{jlog}"
    );
    assert_sane_stats("host", &h, 300);
    assert_sane_stats("join", &j, 300);
    assert_eq!(checksum(&h), checksum(&j), "{hlog}\n{jlog}");
}

/// A joiner still loading 30 s after the start state (`--start-delay-ms 40000`: a start that
/// hangs) is not waited for longer: it stops saying it loads, the host drops it about 2 s
/// later saying why and plays on, and the joiner, once it gets going, ends with the reason.
#[test]
fn a_joiner_still_loading_after_the_limit_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (mut host, mut joiner) =
        host_and_slow_joiner(dir.path(), "120", &["--start-delay-ms", "40000"]);
    let ready = start_state_sent(&mut host);
    let why = "still loading 30 s after it had the start state";
    let out = host
        .wait_for_log(
            &format!("(player 2) is out ({why})"),
            Duration::from_secs(40),
        )
        .unwrap_or_else(|| panic!("the host did not drop player 2\n{}", host.log_text()));
    let after = out.duration_since(ready);
    assert!(
        after >= Duration::from_secs(30) && after <= Duration::from_millis(32_700),
        "dropped {after:?} after the start state\n{}",
        host.log_text()
    );
    eprintln!("the host dropped the joiner {after:?} after it had the start state");
    host.wait_ok(Duration::from_secs(20));
    assert_eq!(host.read_stats()["frames"], 120);
    let status = joiner.wait(Duration::from_secs(25));
    let log = joiner.log_text();
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("still not running 30 s after the start state; going silent"),
        "{log}"
    );
    let last = log.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error:") && last.contains(&format!("the host left: {why}")),
        "{last:?}\n{log}"
    );
}
