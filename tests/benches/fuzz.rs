//! The long fuzz run (numbers, not pass/fail): `cargo bench --bench fuzz`. Every datagram
//! decoder gets `FRAMELOCK_FUZZ_INPUTS` inputs (default 10,000,000) from the seeded
//! mutation fuzzer in `tests/fuzz_common` (seed `FRAMELOCK_FUZZ_SEED`, default 1); a panic
//! ends the run naming the target and the input. Prints one row per decoder.
//! `FRAMELOCK_BENCH_SMOKE=1` (CI's short form): 20,000 inputs each.
//!
//! # Results
//!
//! `cargo bench --bench fuzz` feeds every datagram decoder 10,000,000 inputs from a seeded
//! mutation fuzzer (`tests/fuzz_common`: mutants of valid datagrams recorded from in-memory
//! sessions, and random bytes), through the entry points a datagram from the network
//! reaches; the tests run 100,000 per decoder.
//!
//! | decoder | inputs | seconds | panics |
//! |---|---|---|---|
//! | session (handshake, lobby, state transfer, rooms) | 10,000,000 | 3 | 0 |
//! | CTRL at a lockstep server | 10,000,000 | 3 | 0 |
//! | UPDATE at a lockstep client | 10,000,000 | 2 | 0 |
//! | resync chunks | 10,000,000 | 2 | 0 |
//! | serve router (a whole server) | 10,000,000 | 3 | 0 |

#[path = "../fuzz_common/mod.rs"]
mod fuzz_common;
mod smoke;

fn main() {
    // The short form: 20,000 inputs a decoder.
    let inputs = smoke::var("FRAMELOCK_FUZZ_INPUTS", 10_000_000, 20_000);
    let seed = smoke::var("FRAMELOCK_FUZZ_SEED", 1, 1);
    if inputs == 0 {
        smoke::fail("FRAMELOCK_FUZZ_INPUTS=0: nothing to fuzz");
    }
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
