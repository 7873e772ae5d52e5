//! What the datagram tags cost in CPU (numbers, not pass/fail): `cargo bench --bench tags`.
//!
//! Tags (`wire::keys`) and checks datagrams of the sizes netplay sends: a 20-byte CTRL, an
//! 80-byte UPDATE, a 1,168-byte state chunk, a million times each (`FRAMELOCK_BENCH_ROUNDS`
//! changes the count; 20,000 in the short form, `FRAMELOCK_BENCH_SMOKE=1`), and one key
//! agreement (X25519 and the key derivation, once per joiner). Compare with the 16.7 ms of
//! a frame at 60 fps: a peer handles at most a few hundred datagrams a second.
//!
//! # Results
//!
//! Before and after the tags, the netplay benchmark's goal row, three runs each
//! (`FRAMELOCK_BENCH_ONLY=100/20/5,100/20/5,100/20/5 cargo bench --bench netplay`, built-in
//! game, 60 s each; "before" is the build without tags, protocol 10, on the same machine):
//!
//! | build | stalled % host / join | latency median ms h / j | p95 ms h / j | host B/s up / down | join B/s up / down |
//! |---|---:|---:|---:|---:|---:|
//! | without tags (protocol 10) | 0.00 / 0.17-0.42 | 150 / 150 | 167-183 | 2273-2275 / 2313 | 2450-2451 / 2164-2168 |
//! | 4-byte tags, no session id in CTRL/UPDATE (protocol 11) | 0.00 / 0.14-0.22 | 150 / 150 | 167 | 2271-2275 / 2313 | 2451 / 2162-2166 |
//!
//! The joiner runs at the 2,450 B/s budget either way; the tag takes the place of the session
//! id, so as many datagrams fit it as before.
//!
//! `cargo bench --bench tags` (CPU per datagram, on the 2-core machine shared with other
//! builds, load average 3.3-3.6; an idle core of the development machine measured about half):
//!
//! | datagram | bytes | tag (seal) | check (open) |
//! |---|---|---:|---:|
//! | CTRL | 20 + 4 | 218 ns | 208 ns |
//! | UPDATE | 80 + 4 | 462 ns | 335 ns |
//! | state chunk | 1168 + 4 | 3644 ns | 2859 ns |
//!
//! A key agreement (X25519 and the derivation) takes 100 µs per joiner. A peer handles well
//! under a hundred CTRLs and UPDATEs a second: about 20 µs of a second, against the 16.7 ms
//! of a single frame.

use std::hint::black_box;

mod smoke;
use std::time::Instant;

use framelock::wire::keys::{KeyPair, Keys, Side, TAG_LEN};

fn main() {
    // The short form: 20,000 rounds.
    let rounds: u32 = smoke::var("FRAMELOCK_BENCH_ROUNDS", 1_000_000, 20_000);
    if rounds == 0 {
        smoke::fail("FRAMELOCK_BENCH_ROUNDS=0: nothing to time");
    }
    let host = Keys::for_test(1, Side::Host);
    let joiner = Keys::for_test(1, Side::Joiner);
    println!("| datagram | bytes | tag (seal) | check (open) | per frame at 60 fps, 4 each way |");
    println!("|---|---|---|---|---|");
    for (what, len) in [("CTRL", 20), ("UPDATE", 80), ("state chunk", 1168)] {
        let plain: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let mut sealed = plain.clone();
        host.seal(&mut sealed);
        assert_eq!(sealed.len(), len + TAG_LEN);
        let t = Instant::now();
        for _ in 0..rounds {
            let mut d = black_box(plain.clone());
            host.seal(&mut d);
            black_box(&d);
        }
        let seal_ns = t.elapsed().as_nanos() as f64 / f64::from(rounds);
        let t = Instant::now();
        for _ in 0..rounds {
            assert!(joiner.open(black_box(&sealed)).is_some());
        }
        let open_ns = t.elapsed().as_nanos() as f64 / f64::from(rounds);
        let frame_share = 4.0 * (seal_ns + open_ns) / 16_666_667.0 * 100.0;
        println!(
            "| {what} | {len} + {TAG_LEN} | {seal_ns:.0} ns | {open_ns:.0} ns | {frame_share:.4}% |"
        );
    }
    let n = 1000u32;
    let t = Instant::now();
    for i in 0..n {
        let a = KeyPair::from_entropy([i as u8; 32]);
        let b = KeyPair::from_entropy([!(i as u8); 32]);
        black_box(a.agree(Side::Host, &b.public(), i));
    }
    // Two key pairs and one agreement per round: what a host spends per joiner, and more.
    let us = t.elapsed().as_secs_f64() * 1e6 / f64::from(n);
    println!("\nkey agreement per joiner (two key pairs + X25519 + derivation): {us:.0} µs");
}
