//! The long fuzz run (numbers, not pass/fail): `cargo bench --bench fuzz`. Every datagram
//! decoder gets `FRAMELOCK_FUZZ_INPUTS` inputs (default 10,000,000) from the seeded
//! mutation fuzzer in `tests/fuzz_common` (seed `FRAMELOCK_FUZZ_SEED`, default 1); a panic
//! ends the run naming the target and the input. Prints one row per decoder.

#[path = "../fuzz_common/mod.rs"]
mod fuzz_common;

fn main() {
    let var = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let inputs = var("FRAMELOCK_FUZZ_INPUTS", 10_000_000);
    let seed = var("FRAMELOCK_FUZZ_SEED", 1);
    println!("| decoder | inputs | corpus | seconds | inputs/s |");
    println!("|---|---|---|---|---|");
    for o in fuzz_common::run_all(inputs, seed) {
        println!(
            "| {} | {} | {} | {:.0} | {:.0} |",
            o.target,
            o.inputs,
            o.corpus,
            o.secs,
            o.inputs as f64 / o.secs
        );
    }
    println!("no panics (seed {seed})");
}
