//! The CTRL and UPDATE codecs round-trip, stay within their sizes, and reject what is
//! malformed.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::input::{Inputs, Pad, MAX_PLAYERS};
use crate::wire::{Header, Kind, WireError, LOCKSTEP_HEADER_LEN};

use super::super::codec;
use super::super::frame::{Frame, PeerId};
use super::ctrl::*;
use super::head::*;
use super::items::*;
use super::update::*;

const H: usize = LOCKSTEP_HEADER_LEN;

/// What a server holding samples up to 69_999 answers for a base.
fn held_sample(i: u32) -> Option<Pad> {
    (i == 69_999).then_some(Pad(0x40))
}

fn ctrl() -> Ctrl {
    Ctrl {
        head: LinkHeader {
            seq: 0xfffe,
            ack: Some(7),
            ts: Some(1234),
            echo: Some(Echo {
                ts: 1200,
                hold_ms: 9,
            }),
        },
        input_rtt_ms: Some(140),
        samples: Some(SampleRun {
            first: 70_000,
            base: Some(Pad(0x40)),
            pads: [0u16, 0, 5, 5, 5, 0x8000, 0]
                .iter()
                .map(|&v| Pad(v))
                .collect(),
            age_ms: Some(3),
        }),
        checksums: vec![(Frame(600), 0x0bad_f00d), (Frame(660), 1)],
        pause: None,
        stopped: false,
    }
}

/// The frame before `update()`'s run, which its first frame is delta-coded against.
fn base() -> Inputs {
    let mut b = [Pad::NEUTRAL; MAX_PLAYERS];
    b[0] = Pad(1);
    b[7] = Pad(0x0300);
    b
}

/// What a client holding frames up to 131_069 answers for the base.
fn held(f: Frame) -> Option<Inputs> {
    (f.0 == 131_069).then(base)
}

fn update() -> Update {
    let mut frames = vec![[Pad::NEUTRAL; MAX_PLAYERS]; 9];
    frames[3][0] = Pad(1);
    frames[4][7] = Pad(0xffff);
    Update {
        head: LinkHeader {
            seq: 3,
            ack: None,
            ts: Some(65_000),
            echo: None,
        },
        up_lossy: true,
        advance: Some(-17),
        frames: Some(FrameRun {
            from: Frame(131_070),
            base: Some(base()),
            frames,
            lead: Some(12),
        }),
        notices: vec![
            Notice::Left {
                peer: PeerId(5),
                from: Frame(99),
            },
            Notice::Desync {
                peer: PeerId(1),
                frame: Frame(600),
            },
            Notice::Joined {
                peer: PeerId(2),
                from: Frame(1234),
                name: NoticeName::new("ana"),
            },
            Notice::Paused {
                peer: PeerId(1),
                at: Frame(700),
            },
            Notice::Resumed {
                peer: PeerId(0),
                at: Frame(700),
            },
            Notice::PauseRefused {
                peer: PeerId(3),
                why: PauseRefusal::TooMany { wait_secs: 41 },
            },
            Notice::PauseRefused {
                peer: PeerId(1),
                why: PauseRefusal::NotYours { wait_secs: 12 },
            },
            Notice::PauseRefused {
                peer: PeerId(2),
                why: PauseRefusal::NotPlaying,
            },
            Notice::PauseRefused {
                peer: PeerId(0),
                why: PauseRefusal::TooSoon { wait_secs: 59 },
            },
        ],
    }
}

#[test]
fn a_pause_request_rides_in_the_extras_byte() {
    let mut c = ctrl();
    let without = encode_ctrl(42, &c, 70_000..=70_010, None);
    c.pause = Some(PauseRequest {
        id: 100,
        pause: true,
    });
    let with = encode_ctrl(42, &c, 70_000..=70_010, None);
    assert_eq!(with.len(), without.len() + 1);
    let back = decode_ctrl(&with[H..], false, 70_000, 0, held_sample);
    assert_eq!(back, Ok(c.clone()));
    // Alone, without checksums: the extras byte says 0 checksums and a request.
    c.checksums.clear();
    c.pause = Some(PauseRequest {
        id: 5,
        pause: false,
    });
    c.stopped = true;
    let alone = encode_ctrl(42, &c, 70_000..=70_010, None);
    let back = decode_ctrl(&alone[H..], false, 70_000, 0, held_sample);
    assert_eq!(back, Ok(c));
}

#[test]
fn ctrl_and_update_round_trip() {
    let c = ctrl();
    let bytes = encode_ctrl(42, &c, 70_000..=70_010, None);
    let short = encode_ctrl(42, &c, 70_000..=70_010, Some(0xfff0));
    assert_eq!(short.len() + 1, bytes.len(), "the ack in one byte");
    for ack_ref in [0xfff0, 0xfff1, 7] {
        let back = decode_ctrl(&short[H..], false, 70_000, ack_ref, held_sample);
        assert_eq!(back, Ok(c.clone()), "ack expanded around {ack_ref}");
    }
    let (h, body) = Header::parse(&bytes).unwrap();
    // Lockstep datagrams carry no session id: their tag stands for it.
    assert_eq!((h.kind, h.session), (Kind::Ctrl, 0));
    // The server expects a sample in 70_000..=70_010: the 7-bit index expands to 70_000.
    for reference in [70_000, 70_010] {
        assert_eq!(
            decode_ctrl(body, false, reference, 0, held_sample),
            Ok(c.clone())
        );
    }
    // Without the base sample the server cannot read the run; it says which it lacks.
    assert_eq!(
        decode_ctrl(body, false, 70_000, 0, |_| None),
        Err(WireError::MissingBase(Kind::Ctrl, 69_999))
    );
    let u = update();
    let bytes = encode_update(42, 8, &u, 131_070..=131_070, None);
    let (h, body) = Header::parse(&bytes).unwrap();
    assert_eq!(h.kind, Kind::Update);
    assert_eq!(
        decode_update(body, false, 131_070, 0, 8, held),
        Ok(u.clone())
    );
    // Without the base frame the client cannot read the run; it says which it lacks.
    assert_eq!(
        decode_update(body, false, 131_070, 0, 8, |_| None),
        Err(WireError::MissingBase(Kind::Update, 131_069))
    );
    // A bare keepalive: flags and seq.
    let bare = Ctrl {
        head: LinkHeader {
            seq: 1,
            ack: None,
            ts: None,
            echo: None,
        },
        input_rtt_ms: None,
        samples: None,
        checksums: Vec::new(),
        pause: None,
        stopped: false,
    };
    assert_eq!(encode_ctrl(1, &bare, 0..=0, None).len(), H + 3);
    // Far from what the client may hold, the start takes two bytes and still expands.
    let mut u = u;
    u.advance = None;
    u.head.ts = None;
    let full = u.clone();
    let bytes = encode_update(42, 8, &u, 131_000..=131_070, None);
    assert_eq!(
        decode_update(&bytes[H..], false, 131_000, 0, 8, held),
        Ok(u.clone())
    );
    let near = encode_update(42, 8, &u, 131_070..=131_070, None);
    assert_eq!(bytes.len(), near.len() + 1);
    // The first frame in full (no base): needs nothing held, costs the 2 x 16 bits.
    let mut full = full;
    full.frames.as_mut().unwrap().base = None;
    let full_bytes = encode_update(42, 8, &full, 131_000..=131_070, None);
    assert_eq!(
        decode_update(&full_bytes[H..], false, 131_000, 0, 8, |_| None),
        Ok(full)
    );
    assert!(full_bytes.len() > bytes.len());
}

#[test]
fn a_ctrl_spends_a_byte_on_its_newest_samples_age_only_when_it_is_not_zero() {
    let mut c = ctrl();
    let sized = |c: &Ctrl, age: Option<u8>| {
        let mut c = c.clone();
        c.samples.as_mut().unwrap().age_ms = age;
        let bytes = encode_ctrl(1, &c, 70_000..=70_000, None);
        let back = decode_ctrl(&bytes[H..], false, 70_000, 0, held_sample).unwrap();
        (bytes.len(), back.samples.unwrap().age_ms)
    };
    let (zero, back) = sized(&c, Some(0));
    assert_eq!(back, Some(0));
    assert_eq!(sized(&c, Some(3)), (zero + 1, Some(3)));
    assert_eq!(sized(&c, Some(254)), (zero + 1, Some(254)));
    // Not known (the newest sample is not in this datagram), or too old to be of use.
    assert_eq!(sized(&c, None), (zero + 1, None));
    assert_eq!(sized(&c, Some(255)), (zero + 1, None));
    // Only with a run: an age flag on a CTRL without samples is malformed.
    c.samples = None;
    let mut bytes = encode_ctrl(1, &c, 70_000..=70_000, None);
    bytes[H] |= F_AGE;
    assert_eq!(
        decode_ctrl(&bytes[H..], false, 70_000, 0, held_sample),
        Err(WireError::Malformed(Kind::Ctrl))
    );
}

#[test]
fn a_checksum_travels_as_its_frame_and_low_half_in_seven_bytes() {
    let mut c = ctrl();
    c.checksums = Vec::new();
    let none = encode_ctrl(1, &c, 70_000..=70_000, None).len();
    c.checksums = vec![(Frame(600), 0xdead_beef_0bad_f00d)];
    let one = encode_ctrl(1, &c, 70_000..=70_000, None);
    // The count byte, a 2-byte varint frame and 4 bytes of checksum.
    assert_eq!(one.len(), none + 1 + 6);
    let back = decode_ctrl(&one[H..], false, 70_000, 0, held_sample).unwrap();
    assert_eq!(back.checksums, vec![(Frame(600), 0x0bad_f00d)]);
    // Frames past 2^28 still fit (5-byte varint), and the overhead allows for it.
    c.checksums = vec![(Frame(u32::MAX), u64::MAX); MAX_CHECKSUMS];
    let big = encode_ctrl(1, &c, 70_000..=70_000, None);
    let back = decode_ctrl(&big[H..], false, 70_000, 0, held_sample).unwrap();
    assert_eq!(
        back.checksums,
        vec![(Frame(u32::MAX), 0xffff_ffff); MAX_CHECKSUMS]
    );
    assert_eq!(big.len() - none, 1 + MAX_CHECKSUMS * 9);
}

#[test]
fn an_update_names_the_lead_when_asked_and_the_mask_when_that_is_smaller() {
    let mut u = update();
    u.notices.clear();
    u.advance = None;
    let with_lead = encode_update(1, 8, &u, 131_070..=131_070, None);
    u.frames.as_mut().unwrap().lead = None;
    let without = encode_update(1, 8, &u, 131_070..=131_070, None);
    // The lead's byte.
    assert_eq!(with_lead.len() - without.len(), 1);
    assert_eq!(
        decode_update(&without[H..], false, 131_070, 0, 8, held),
        Ok(u.clone())
    );
    // Players 0 and 7 of 8 press buttons: naming them (a byte) saves 6 players x 9
    // frames of "unchanged" bits, so the mask goes out, and a session that has no
    // slot 7 refuses it.
    assert_eq!(without[H] & F_EXTRAS, F_EXTRAS);
    assert!(decode_update(&without[H..], false, 131_070, 0, 2, held).is_err());
    // The same inputs on players 0 and 1 of a session of 2: every slot, so no mask and
    // no extras byte at all.
    let to_slot_1 = |mut i: Inputs| {
        i.swap(1, 7);
        i
    };
    let mut two = u.clone();
    let run = two.frames.as_mut().unwrap();
    run.base = run.base.map(to_slot_1);
    run.frames.iter_mut().for_each(|f| *f = to_slot_1(*f));
    let b = encode_update(1, 2, &two, 131_070..=131_070, None);
    assert_eq!(b[H] & F_EXTRAS, 0);
    assert_eq!(b.len(), without.len() - 2);
    let held2 = |f: Frame| held(f).map(to_slot_1);
    assert_eq!(decode_update(&b[H..], false, 131_070, 0, 2, held2), Ok(two));
}

#[test]
fn typical_ctrl_is_small() {
    // K = 2 on a 100 ms link: about 8 unacked samples, one button pressed. Most CTRLs
    // carry no timestamp, echo or input round trip: flags, seq, ack, run header (first
    // in one byte, age; no count: the run ends with the datagram), bits (the first sample against the acknowledged one before
    // it, a 7-bit change, 3 unchanged, a 7-bit change, 3 unchanged: 20 bits).
    let mut c = ctrl();
    c.checksums.clear();
    c.head.ts = None;
    c.head.echo = None;
    c.input_rtt_ms = None;
    c.samples.as_mut().unwrap().pads = [0u16, 0, 0, 0, 16, 16, 16, 16]
        .iter()
        .map(|&v| Pad(v))
        .collect();
    // The ack (7) in one byte: the server holds ack 3 or newer from an acknowledged CTRL.
    let n = encode_ctrl(1, &c, 70_000..=70_008, Some(3)).len();
    assert_eq!(n, H + 4 + 2 + 3, "{n}");
}

#[test]
fn the_usual_flags_are_left_out_and_the_header_says_so() {
    // An ack and a run coded against the acknowledged sample, nothing else: no flags byte.
    let mut c = ctrl();
    c.checksums.clear();
    (c.head.ts, c.head.echo, c.input_rtt_ms) = (None, None, None);
    c.samples.as_mut().unwrap().age_ms = Some(0);
    let bytes = encode_ctrl(1, &c, 70_000..=70_000, Some(3));
    assert!(crate::wire::is_short(&bytes));
    // Header, seq, a one-byte ack, the run's first index, 46 bits of pads.
    assert_eq!(bytes.len(), H + 2 + 1 + 1 + 6);
    assert_eq!(
        decode_ctrl(&bytes[H..], true, 70_000, 3, held_sample),
        Ok(c.clone())
    );
    // Any other flag brings the byte back.
    c.input_rtt_ms = Some(90);
    let long = encode_ctrl(1, &c, 70_000..=70_000, Some(3));
    assert!(!crate::wire::is_short(&long));
    assert_eq!(
        decode_ctrl(&long[H..], false, 70_000, 3, held_sample),
        Ok(c)
    );
    // UPDATEs likewise: 2 players, both active, no lead, notice or advance.
    let mut both = [Pad::NEUTRAL; MAX_PLAYERS];
    (both[0], both[1]) = (Pad(1), Pad(2));
    let u = Update {
        head: LinkHeader {
            seq: 9,
            ack: Some(5),
            ts: None,
            echo: None,
        },
        up_lossy: false,
        advance: None,
        frames: Some(FrameRun {
            from: Frame(500),
            base: Some(both),
            frames: vec![both; 4],
            lead: None,
        }),
        notices: Vec::new(),
    };
    let bytes = encode_update(1, 2, &u, 500..=500, Some(3));
    assert!(crate::wire::is_short(&bytes));
    let back = decode_update(&bytes[H..], true, 500, 3, 2, |_| Some(both));
    assert_eq!(back, Ok(u));
}

#[test]
fn a_cut_update_is_rejected_and_a_cut_ctrl_reads_only_samples_sent() {
    let bytes = encode_update(9, 8, &update(), 131_070..=131_070, None);
    for len in H..bytes.len() {
        let r = decode_update(&bytes[H..len], false, 131_070, 0, 8, held);
        assert!(r.is_err(), "UPDATE cut to {len} bytes was accepted");
    }
    let mut long = bytes[H..].to_vec();
    long.push(0);
    assert!(decode_update(&long, false, 131_070, 0, 8, held).is_err());
    // A CTRL's run takes the rest of the datagram (no count): cut at the end of a
    // sample it reads as the samples before the cut. Never one the client did not send.
    let c = ctrl();
    let pads = &c.samples.as_ref().unwrap().pads;
    let bytes = encode_ctrl(9, &c, 70_000..=70_000, None);
    let mut shorter = 0;
    for len in H..bytes.len() {
        match decode_ctrl(&bytes[H..len], false, 70_000, 0, held_sample) {
            Ok(cut) => {
                let run = cut.samples.expect("a run");
                assert!(pads.starts_with(&run.pads) && run.pads.len() < pads.len());
                shorter += 1;
            }
            Err(e) => assert_eq!(e, malformed_ctrl(), "cut to {len} bytes"),
        }
    }
    assert!(shorter < 3, "{shorter} cuts read as shorter runs");
}

#[test]
fn random_and_mutated_bytes_never_panic() {
    let mut rng = SmallRng::seed_from_u64(5);
    let valid = [
        encode_ctrl(9, &ctrl(), 70_000..=70_000, None),
        encode_update(9, 8, &update(), 131_070..=131_070, None),
    ];
    for i in 0..200_000 {
        let body: Vec<u8> = if i % 2 == 0 {
            let len = rng.gen_range(0..64);
            (0..len).map(|_| rng.gen()).collect()
        } else {
            let mut b = valid[i % 4 / 2][H..].to_vec();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..b.len());
                b[at] ^= 1 << rng.gen_range(0..8);
            }
            b
        };
        let (reference, ack_ref, short) = (rng.gen(), rng.gen(), rng.gen());
        let _ = decode_ctrl(&body, short, reference, ack_ref, |_| Some(Pad(0x0f0f)));
        let _ = decode_update(
            &body,
            short,
            reference,
            ack_ref,
            rng.gen_range(1..=8),
            |_| Some([Pad(0x0f0f); MAX_PLAYERS]),
        );
    }
}

#[test]
fn fitting_counts_exact_bits() {
    let pads = [Pad(1); 100];
    // 16 bits + 99 x 1 bit.
    assert_eq!(pads_fitting(pads.iter().copied(), 115), 100);
    assert_eq!(pads_fitting(pads.iter().copied(), 114), 99);
    let mut frames = vec![[Pad::NEUTRAL; MAX_PLAYERS]; 10];
    for (i, f) in frames.iter_mut().enumerate() {
        f[2] = Pad(i as u16);
    }
    // Player 2 counts 0..9: 16 + the changes' costs (1, 2, 1, 3, 1, 2, 1, 4, 1 buttons
    // flipped: 7 + 12 + 7 + 17 + 7 + 12 + 7 + 18 + 7) = 110 bits.
    assert_eq!(frames_fitting(&frames, 110), 10);
    assert_eq!(frames_fitting(&frames, 109), 9);
    assert_eq!(
        encode_frames_len(&frames),
        110usize.div_ceil(8),
        "fitting and encoding agree"
    );
}

fn encode_frames_len(frames: &[Inputs]) -> usize {
    codec::encode_frames(frames, active_mask(frames), None).len()
}
