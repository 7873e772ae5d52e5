//! Which GL cores and drivers run: Vulkan and a missing EGL driver are refused in one line
//! each, cores are listed with their renderer, the wheel's parallel_n64 and melonDS go as
//! far as no game lets them, and RetroArch draws quadpong's frames as framelock does.

use super::*;

#[test]
fn a_core_asking_for_vulkan_is_refused_by_name() {
    let home = tempfile::tempdir().unwrap();
    let (out, _) = play(
        home.path(),
        "vk",
        &[
            "--core",
            &q(),
            "--frames",
            "10",
            "--option",
            "quadpong_context=vulkan",
        ],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error: quadpong asks for Vulkan rendering; framelock runs OpenGL and OpenGL ES cores only"),
        "{err}"
    );
}

#[test]
fn without_an_egl_driver_a_gl_core_says_so_in_one_line() {
    let home = tempfile::tempdir().unwrap();
    let out = framelock(home.path())
        .args(["play", "--headless", "--frames", "10", "--core", &q()])
        // libglvnd's list of EGL drivers, pointed at none: EGL with no driver behind it.
        .env(
            "__EGL_VENDOR_LIBRARY_FILENAMES",
            home.path().join("no-driver.json"),
        )
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    // framelock's own lines (the core logs its failure too, as `core:`).
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("context") && !l.contains(" core: "))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("error: quadpong asks for an OpenGL 3.3 core profile context, and none can be made: EGL found no display"),
        "{err}"
    );
    assert!(lines[0].contains("libegl-mesa0"), "{err}");
}

#[test]
fn cores_are_listed_with_their_renderer() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("cores");
    std::fs::create_dir_all(&dir).unwrap();
    let link = |from: &Path, name: &str| {
        std::os::unix::fs::symlink(from, dir.join(format!("{name}_libretro.so"))).unwrap()
    };
    link(&quadpong(), "quadpong");
    for name in ["parallel_n64", "melonds", "genesis_plus_gx"] {
        link(&core(name), name);
    }
    let config = home.path().join("config/framelock");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("[paths]\ncores_dir = {:?}\n", dir.display().to_string()),
    )
    .unwrap();
    let out = framelock(home.path())
        .args(["cores", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let cores: Value = serde_json::from_slice(&out.stdout).unwrap();
    let renderer = |name: &str| {
        cores
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed: {cores:#}"))["renderer"]
            .clone()
    };
    assert_eq!(renderer("quadpong"), "opengl");
    assert_eq!(renderer("parallel_n64"), "opengl");
    assert_eq!(renderer("melonds"), "opengl");
    assert_eq!(renderer("genesis_plus_gx"), "software");
    let table = framelock(home.path()).arg("cores").output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.lines().next().unwrap().contains("RENDERER"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("parallel_n64") && l.contains(" opengl ")),
        "{table}"
    );
}

#[test]
fn parallel_n64_negotiates_opengl_and_says_what_it_lacks() {
    let home = tempfile::tempdir().unwrap();
    let n64 = core("parallel_n64").display().to_string();
    // Without a game: it needs one.
    let (out, _) = play(home.path(), "none", &["--core", &n64, "--frames", "10"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("error: loading content (no content): ParaLLEl N64 needs content to start (give a game file)"),
        "{}",
        text(&out)
    );
    // With bytes that are no N64 game: its GL context is made (its request is a
    // compatibility context with depth), then it refuses the bytes.
    let junk = home.path().join("junk.z64");
    let bytes: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&junk, bytes).unwrap();
    let (out, _) = play(
        home.path(),
        "junk",
        &["--core", &n64, "--frames", "10", junk.to_str().unwrap()],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ParaLLEl N64 draws with OpenGL 2 (compatibility profile), depth on the EGL"),
        "{err}"
    );
    assert!(err.contains("error: core refused content"), "{err}");
}

#[test]
fn melonds_draws_with_its_opengl_renderer() {
    let home = tempfile::tempdir().unwrap();
    // A cartridge header and nothing else: melonDS boots it (with its free BIOS) to blank
    // screens, enough to draw them. The interpreter: its JIT asserts on code this empty.
    let nds = home.path().join("blank.nds");
    let mut header = vec![0u8; 0x4000];
    header[..6].copy_from_slice(b"GLTEST");
    std::fs::write(&nds, header).unwrap();
    let shot = home.path().join("melonds.png");
    let s = play_ok(
        home.path(),
        "melonds",
        &[
            "--core",
            &core("melonds").display().to_string(),
            "--frames",
            "90",
            "--fast",
            "--option",
            "melonds_opengl_renderer=enabled",
            "--option",
            "melonds_jit_enable=disabled",
            "--system-dir",
            home.path().join("system").to_str().unwrap(),
            "--save-dir",
            home.path().join("saves").to_str().unwrap(),
            nds.to_str().unwrap(),
            "--screenshot-at",
            "90",
            shot.to_str().unwrap(),
        ],
    );
    // It asks from its first frame, not while loading; the context follows that frame.
    let gl = &s["gl"];
    assert_eq!(gl["asked"], "OpenGL 3.2 core profile", "{s}");
    assert!(gl["frames_captured"].as_u64().unwrap() >= 80, "{gl}");
    let p = Picture::read(&shot);
    // Both screens, one above the other, at its OpenGL renderer's scale.
    assert_eq!(p.width * 384, p.height * 256, "{}x{}", p.width, p.height);
    let lit = p.count((0, 0, p.width, p.height), |px| px.iter().any(|&c| c > 24));
    assert!(
        lit > p.width * p.height / 2,
        "{lit} lit pixels of {}",
        p.width * p.height
    );
}

#[test]
fn retroarch_draws_quadpongs_frames_as_framelock_does() {
    let x = play_common::start_xvfb();
    let home = tempfile::tempdir().unwrap();
    let ra = home.path().join("retroarch");
    for sub in [
        "saves",
        "states",
        "system",
        "screenshots",
        "xdg/retroarch/config/quadpong",
    ] {
        std::fs::create_dir_all(ra.join(sub)).unwrap();
    }
    let d = ra.display();
    let cfg = ra.join("retroarch.cfg");
    std::fs::write(
        &cfg,
        format!(
            r#"video_driver = "gl"
audio_driver = "null"
audio_enable = "false"
input_driver = "null"
input_joypad_driver = "null"
menu_driver = "null"
video_fullscreen = "false"
video_vsync = "false"
gamemode_enable = "false"
config_save_on_exit = "false"
savefile_directory = "{d}/saves"
savestate_directory = "{d}/states"
system_directory = "{d}/system"
screenshot_directory = "{d}/screenshots"
log_verbosity = "true"
video_scale = "1.0"
video_window_auto_width_max = "640"
video_window_auto_height_max = "480"
"#
        ),
    )
    .unwrap();
    // RetroArch 1.14's gl driver cannot make its frame buffer in a core profile context on
    // llvmpipe ("GL: Invalid value", before the core draws); the compatibility one it can.
    std::fs::write(
        ra.join("xdg/retroarch/config/quadpong/quadpong.opt"),
        "quadpong_context = \"gl\"\n",
    )
    .unwrap();
    let shot = ra.join("frame-200.png");
    let log = ra.join("retroarch.log");
    let mut child = Command::new("retroarch")
        .arg("-v")
        .arg("-L")
        .arg(quadpong())
        .args(["--max-frames=200", "--max-frames-ss"])
        .arg(format!("--max-frames-ss-path={}", shot.display()))
        .arg("--config")
        .arg(&cfg)
        .env("DISPLAY", &x.display)
        .env_remove("WAYLAND_DISPLAY")
        .env("HOME", &ra)
        .env("XDG_CONFIG_HOME", ra.join("xdg"))
        .env("XDG_RUNTIME_DIR", &ra)
        .env("DBUS_FATAL_WARNINGS", "0")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::options().append(true).open(&log).unwrap())
        .spawn()
        .expect("retroarch is installed (bash .ci/setup)");
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("retroarch did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "retroarch: {status}\n{text}");
    assert!(
        text.contains("[quadpong] quadpong 0.1.0 loaded: GlCompat context"),
        "{text}"
    );
    assert!(text.contains("SET_HW_RENDER, context type: gl"), "{text}");
    // RetroArch's frame 200 is framelock's frame 200, pixel for pixel (no pads in either).
    let ours = home.path().join("ours.png");
    play_ok(
        home.path(),
        "ours",
        &[
            "--core",
            &q(),
            "--frames",
            "200",
            "--fast",
            "--option",
            "quadpong_context=gl",
            "--screenshot-at",
            "200",
            ours.to_str().unwrap(),
        ],
    );
    let (theirs, ours) = (Picture::read(&shot), Picture::read(&ours));
    assert_eq!((theirs.width, theirs.height), (640, 480));
    let differ = theirs
        .rgb
        .iter()
        .zip(&ours.rgb)
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(
        differ, 0,
        "{differ} pixels differ between RetroArch's frame 200 and ours"
    );
}
