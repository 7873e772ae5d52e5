//! Members sign in to a NATS that asks who they are: a password or an nkey (and refused
//! credentials are named), or a token over TLS trusting the test's own CA made by
//! `openssl`.

use super::*;

/// A join asked of `via` for `room` on `held`, both bots playing 600 frames: the joiner is
/// sent to `held` and plays there with the room's host.
fn join_through(dir: &Path, via: &str, held: &str, room: &str) {
    let frames = ["--frames", "600"];
    let mut host = open_room(
        dir,
        &format!("host-{room}"),
        held,
        held,
        room,
        &[&frames[..], &["--bot", "1"]].concat(),
    );
    let mut bob = Peer::spawn(
        dir,
        &format!("bob-{room}"),
        &args(
            &[
                &["join", via, "--room", room, "--headless"][..],
                &frames[..],
                &["--bot", "2"],
            ]
            .concat(),
        ),
    );
    bob.wait_ok(Duration::from_secs(50));
    host.wait_ok(Duration::from_secs(20));
    assert!(
        bob.log_text()
            .contains(&format!("room {room} is on {held}")),
        "{}",
        bob.log_text()
    );
    assert_eq!(checksum(&host.read_stats()), checksum(&bob.read_stats()));
}

#[test]
fn members_sign_in_with_a_password_or_an_nkey_and_refused_credentials_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nkey = nkeys::KeyPair::new_user();
    let conf = format!(
        "authorization {{ users = [ {{ user: fleet, password: \"right-horse-battery\" }}, \
         {{ nkey: {} }} ] }}",
        nkey.public_key()
    );
    let nats = Nats::with_config(d, "nats", &conf);
    let password = write_file(d, "password", "right-horse-battery\n");
    let seed = write_file(d, "seed", &nkey.seed().unwrap());
    let (mut a, a_addr) = member(
        d,
        "server-a",
        &[nats.url()],
        &[
            "--directory-user",
            "fleet",
            "--directory-password-file",
            &password,
        ],
    );
    let (b, b_addr) = member(d, "server-b", &[nats.url()], &["--directory-nkey", &seed]);
    assert!(a.log_text().contains("as user fleet"), "{}", a.log_text());
    assert!(b.log_text().contains("with an nkey"), "{}", b.log_text());
    // A room on A is listed by B, and a joiner who asks B is sent to A.
    let _listed = open_room(d, "listed", &a_addr, &a_addr, "listed", ALONE);
    assert_listed(d, &b_addr, "listed", &a_addr, &[&a, &b]);
    join_through(d, &b_addr, &a_addr, "redirected");

    // A wrong password: NATS's refusal is named as such, and the password never logged.
    let wrong = write_file(d, "wrong", "wrong-horse-staple\n");
    let (mut c, _) = member(
        d,
        "server-c",
        &[nats.url()],
        &[
            "--directory-user",
            "fleet",
            "--directory-password-file",
            &wrong,
        ],
    );
    assert!(
        c.wait_for_log(
            "directory: NATS refused our credentials",
            Duration::from_secs(10)
        )
        .is_some(),
        "{}",
        c.log_text()
    );
    let log = c.log_text();
    assert!(
        log.contains("as user fleet") && log.contains("uthorization"),
        "{log}"
    );
    assert!(!log.contains("directory: unreachable"), "{log}");
    assert!(
        !log.contains("wrong-horse-staple"),
        "the password was logged: {log}"
    );
    assert!(!a.log_text().contains("right-horse-battery"));
    // The password changed on NATS's side (its config reloaded): A, connected all along,
    // is refused when it reconnects, and says so.
    let conf_file = d.join("nats.conf");
    let conf = std::fs::read_to_string(&conf_file).unwrap();
    std::fs::write(
        &conf_file,
        conf.replace("right-horse-battery", "next-horse"),
    )
    .unwrap();
    let pid = nats.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap()
        .success());
    assert!(
        a.wait_for_log(
            "directory: NATS refused our credentials",
            Duration::from_secs(15)
        )
        .is_some(),
        "{}",
        a.log_text()
    );

    // A credentials file that is not there: serve does not start, and names it.
    let missing = d.join("no-such-seed").display().to_string();
    let port = free_port().to_string();
    let public = format!("127.0.0.1:{port}");
    for (flag, file, said) in [
        ("--directory-nkey", missing.as_str(), "cannot read it"),
        (
            "--directory-nkey",
            password.as_str(),
            "not an nkey user seed",
        ),
        ("--directory-key", missing.as_str(), "cannot read it"),
        ("--directory-key", password.as_str(), "holds 19 bytes"),
    ] {
        let out = netplay_common::framelock(d)
            .args([
                "serve",
                "--port",
                &port,
                "--bind",
                "127.0.0.1",
                "--directory",
            ])
            .args([nats.url(), "--public-address".into(), public.clone()])
            .args([flag, file])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let text = netplay_common::text(&out);
        assert!(text.contains(&format!("{flag} {file}: {said}")), "{text}");
        assert!(!text.contains("right-horse-battery"), "{text}");
    }
}

/// A CA and a certificate for 127.0.0.1 signed by it, made with `openssl` in `dir`:
/// (ca.pem, server.pem, server.key).
fn make_certs(dir: &Path) -> (String, String, String) {
    let run = |a: &[&str]| {
        let out = Command::new("openssl")
            .args(a)
            .current_dir(dir)
            .output()
            .expect("openssl is not installed: run .ci/setup");
        assert!(
            out.status.success(),
            "openssl {a:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    run(&[
        &["req", "-x509"][..],
        &ec,
        &[
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=framelock test CA",
        ],
    ]
    .concat());
    run(&[
        &["req"][..],
        &ec,
        &[
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    ]
    .concat());
    std::fs::write(
        dir.join("san.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
    let p = |f: &str| dir.join(f).display().to_string();
    (p("ca.pem"), p("server.pem"), p("server.key"))
}

#[test]
fn members_sign_in_with_a_token_over_tls_trusting_the_fleets_ca() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (ca, cert, key) = make_certs(d);
    let conf = format!(
        "tls {{ cert_file: {cert:?}, key_file: {key:?} }}\n\
         authorization {{ token: \"t0ken-for-the-fleet\" }}"
    );
    let nats = Nats::with_config(d, "nats", &conf);
    let url = format!("tls://127.0.0.1:{}", nats.port);
    // The token from the environment on A, from a file on B.
    let token = write_file(d, "token", "t0ken-for-the-fleet\n");
    let (a, a_addr) = member_env(
        d,
        "server-a",
        std::slice::from_ref(&url),
        &["--directory-tls-ca", &ca],
        &[("FRAMELOCK_DIRECTORY_TOKEN", "t0ken-for-the-fleet")],
    );
    let (b, b_addr) = member(
        d,
        "server-b",
        std::slice::from_ref(&url),
        &["--directory-tls-ca", &ca, "--directory-token-file", &token],
    );
    assert!(
        a.log_text().contains("with a token, over TLS"),
        "{}",
        a.log_text()
    );
    let _room = open_room(d, "host", &a_addr, &a_addr, "over-tls", ALONE);
    assert_listed(d, &b_addr, "over-tls", &a_addr, &[&a, &b]);
    // Without the CA, NATS's certificate is not trusted: nothing is sent to it.
    let (mut c, _) = member(d, "server-c", &[url], &["--directory-token-file", &token]);
    assert!(
        c.wait_for_log("directory: unreachable", Duration::from_secs(10))
            .is_some(),
        "{}",
        c.log_text()
    );
    assert!(!c.log_text().contains("t0ken-for-the-fleet"));
}
