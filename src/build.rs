//! Compiles the host's C log shim (libretro's log callback is variadic).

fn main() {
    println!("cargo:rerun-if-changed=src/host/log_shim.c");
    cc::Build::new()
        .file("src/host/log_shim.c")
        .warnings(true)
        .compile("framelock_log_shim");
}
