//! Every datagram decoder survives a short seeded mutation run (100,000 inputs each) without a
//! panic, and what the session layer decodes re-encodes to the same message. The long run,
//! ten million inputs per decoder, is `cargo bench --bench fuzz`.

#[path = "fuzz_common/mod.rs"]
mod fuzz_common;

#[test]
fn every_decoder_survives_mutated_and_random_datagrams() {
    let inputs = std::env::var("FRAMELOCK_FUZZ_INPUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    for o in fuzz_common::run_all(inputs, 1) {
        eprintln!(
            "{}: {} inputs from a corpus of {} in {:.1} s",
            o.target, o.inputs, o.corpus, o.secs
        );
        assert_eq!(o.inputs, inputs);
    }
}
