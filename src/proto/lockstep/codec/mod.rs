//! Byte and bit level encoding shared by the CTRL and UPDATE bodies. It imports only `input` and
//! the lockstep `frame`: never the bodies (`msg`) or the machines, which stand on it.
//!
//! Inputs are delta-coded as in section 4 of the keyframe-lockstep doc: the first (oldest
//! unacknowledged) pad against the one before it, which the receiver holds (in full, 16 bits,
//! when there is none), then per following frame one bit `0` = same as the
//! previous frame, or `1` and the change. A change is written whichever way is shorter:
//! `0` and the flipped buttons (per button its 4-bit index, then `1` if another follows), or
//! `1` and the new 16-bit value. A press or release flips one button: 7 bits instead of 17,
//! which matters because the UDP budget (2.5 KB/s) is mostly spent on busy pads. Several
//! players' streams are interleaved frame by frame, so a run can be cut after any frame to
//! fit a datagram.

pub mod bits;

use crate::input::{Inputs, Pad, MAX_PLAYERS};

use bits::{BitReader, BitWriter};

use super::frame::unwrap_low;

/// Bounds-checked little-endian reader over a datagram body; every getter returns `None` past
/// the end instead of panicking.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    pub fn u8(&mut self) -> Option<u8> {
        Some(self.bytes(1)?[0])
    }

    pub fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.bytes(2)?.try_into().ok()?))
    }

    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }

    /// LEB128, at most 5 bytes, no overlong or overflowing encodings.
    pub fn varint(&mut self) -> Option<u32> {
        let mut v: u64 = 0;
        for i in 0..5 {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if i > 0 && b == 0 {
                    return None;
                }
                return u32::try_from(v).ok();
            }
        }
        None
    }

    /// A counter written by [`put_rel`], expanded to the value nearest to `reference`.
    pub fn rel(&mut self, reference: u32) -> Option<u32> {
        let b = self.u8()?;
        if b & 0x80 == 0 {
            return unwrap_low(u32::from(b), 7, reference);
        }
        let low = u32::from(b & 0x7f) << 8 | u32::from(self.u8()?);
        unwrap_low(low, 15, reference)
    }

    /// A 16-bit wrapping sequence number written by [`put_seq`], expanded to the one nearest
    /// to `reference`.
    pub fn seq(&mut self, reference: u16) -> Option<u16> {
        // Lifted by 2^16 so the expansion never goes below 0; the low 16 bits are the number.
        self.rel(u32::from(reference) + 0x1_0000).map(|v| v as u16)
    }

    /// Skips `n` bytes that a sub-reader consumed.
    pub fn advance(&mut self, n: usize) -> Option<()> {
        self.bytes(n).map(|_| ())
    }

    pub fn remaining(&self) -> &'a [u8] {
        &self.buf[self.pos.min(self.buf.len())..]
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
}

pub fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// Writes counter `value` for a receiver that expands it around a reference of its own
/// (`Reader::rel`), known to lie in `refs`: its low 7 bits in one byte (`0xxxxxxx`) when
/// it is within -64..=63 of every such reference, else its low 15 bits in two
/// (`1xxxxxxx xxxxxxxx`, within -16384..=16383). Sequence-like fields cost one byte instead
/// of two while little is in flight.
pub fn put_rel(out: &mut Vec<u8>, value: u32, refs: std::ops::RangeInclusive<u32>) {
    let (lo, hi) = (i64::from(*refs.start()), i64::from(*refs.end()));
    let v = i64::from(value);
    if v - lo <= 63 && hi - v <= 64 {
        out.push((value & 0x7f) as u8);
    } else {
        put_rel_long(out, value);
    }
}

/// The two-byte form of [`put_rel`]: the low 15 bits of `value`.
fn put_rel_long(out: &mut Vec<u8>, value: u32) {
    out.push(0x80 | ((value >> 8) & 0x7f) as u8);
    out.push(value as u8);
}

/// Writes 16-bit wrapping sequence number `value` (an ack: never older than an ack sent
/// before it) as [`put_rel`] does, for a receiver that expands it around the newest such
/// value it got from us, which is known to be `held` or newer: one byte while `value` is
/// within 63 of `held`, else two (also when `held` is not known).
pub fn put_seq(out: &mut Vec<u8>, value: u16, held: Option<u16>) {
    match held {
        Some(h) if value.wrapping_sub(h) <= 63 => out.push((value & 0x7f) as u8),
        _ => put_rel_long(out, u32::from(value)),
    }
}

/// Flipped buttons up to which a change is written as their list (5 bits each) rather than
/// in full (16 bits).
const MAX_LISTED_FLIPS: u32 = 3;

/// Bits one frame of one player costs after the first frame: 1 if unchanged, else 7, 12,
/// 17 (one to three buttons flipped) or 18.
pub fn delta_bits(prev: Pad, cur: Pad) -> usize {
    let flips = (prev.0 ^ cur.0).count_ones();
    match flips {
        0 => 1,
        n if n <= MAX_LISTED_FLIPS => 2 + 5 * n as usize,
        _ => 18,
    }
}

fn put_delta(w: &mut BitWriter, prev: Pad, cur: Pad) {
    let flips = prev.0 ^ cur.0;
    if flips == 0 {
        w.bit(false);
        return;
    }
    w.bit(true);
    if flips.count_ones() <= MAX_LISTED_FLIPS {
        w.bit(false);
        let mut left = flips;
        while left != 0 {
            let i = left.trailing_zeros();
            left &= left - 1;
            w.bits(i, 4);
            w.bit(left != 0);
        }
    } else {
        w.bit(true);
        w.bits(u32::from(cur.0), 16);
    }
}

fn read_delta(r: &mut BitReader<'_>, prev: Pad) -> Option<Pad> {
    if !r.bit()? {
        return Some(prev);
    }
    if r.bit()? {
        return Some(Pad(r.bits(16)? as u16));
    }
    let mut flips = 0u16;
    for _ in 0..MAX_LISTED_FLIPS {
        flips |= 1 << r.bits(4)?;
        if !r.bit()? {
            // A listed change flips at least one button, so it is never "unchanged".
            return Some(Pad(prev.0 ^ flips));
        }
    }
    None
}

/// Encodes the `mask`ed players of `frames`, frame-major (see the module doc). With a
/// `base` (the frame before the first, which the receiver holds) the first frame is
/// delta-coded against it too, instead of written in full.
pub fn encode_frames(frames: &[Inputs], mask: u8, base: Option<&Inputs>) -> Vec<u8> {
    let mut w = BitWriter::new();
    let mut prev: Option<&Inputs> = base;
    for f in frames {
        for p in (0..MAX_PLAYERS).filter(|p| mask & (1 << p) != 0) {
            match prev {
                None => w.bits(u32::from(f[p].0), 16),
                Some(pr) => put_delta(&mut w, pr[p], f[p]),
            }
        }
        prev = Some(f);
    }
    w.into_bytes()
}

/// Decodes `count` frames written by [`encode_frames`] (with the same `base`); players
/// outside `mask` are neutral. Returns the frames and the bytes consumed.
pub fn decode_frames(
    data: &[u8],
    count: usize,
    mask: u8,
    base: Option<&Inputs>,
) -> Option<(Vec<Inputs>, usize)> {
    let mut r = BitReader::new(data);
    // Every frame costs at least one bit per masked player: reject impossible counts early.
    let per_frame = mask.count_ones() as usize;
    if count.saturating_mul(per_frame) > data.len() * 8 + 16 * per_frame {
        return None;
    }
    let mut out: Vec<Inputs> = Vec::with_capacity(count);
    for i in 0..count {
        let mut f = [Pad::NEUTRAL; MAX_PLAYERS];
        for p in (0..MAX_PLAYERS).filter(|p| mask & (1 << p) != 0) {
            f[p] = match (i, base) {
                (0, None) => Pad(r.bits(16)? as u16),
                (0, Some(b)) => read_delta(&mut r, b[p])?,
                _ => read_delta(&mut r, out[i - 1][p])?,
            };
        }
        out.push(f);
    }
    Some((out, r.bytes_used()))
}

/// Encodes one player's run of pads (the CTRL sample run), the first delta-coded against
/// `base` (the pad before it, which the receiver holds) or, without one, in full. The run
/// takes the rest of its datagram: the last byte is padded with `1` bits, so the reader
/// needs no count (`decode_pads`).
pub fn encode_pads(pads: impl IntoIterator<Item = Pad>, base: Option<Pad>) -> Vec<u8> {
    let mut w = BitWriter::new();
    let mut prev: Option<Pad> = base;
    for p in pads {
        match prev {
            None => w.bits(u32::from(p.0), 16),
            Some(pr) => put_delta(&mut w, pr, p),
        }
        prev = Some(p);
    }
    w.into_bytes_one_padded()
}

/// Decodes the pads [`encode_pads`] wrote (with the same `base`), reading `data` to its end.
/// The padding cannot be taken for a pad: it is under 8 bits, all `1`, and every code that
/// is all `1` (a change written in full to 0xffff) is 18 bits long. `None` if `data` holds
/// no pad, more than `max`, or ends inside one.
pub fn decode_pads(data: &[u8], base: Option<Pad>, max: usize) -> Option<Vec<Pad>> {
    let mut r = BitReader::new(data);
    let mut out: Vec<Pad> = Vec::new();
    while !r.only_padding_left() {
        if out.len() == max {
            return None;
        }
        let p = match (out.last(), base) {
            (None, None) => Pad(r.bits(16)? as u16),
            (None, Some(b)) => read_delta(&mut r, b)?,
            (Some(&prev), _) => read_delta(&mut r, prev)?,
        };
        out.push(p);
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_overlong() {
        for v in [0u32, 1, 127, 128, 300, 16_383, 16_384, u32::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            let mut r = Reader::new(&b);
            assert_eq!(r.varint(), Some(v));
            assert!(r.is_empty());
        }
        assert_eq!(Reader::new(&[0x80, 0x00]).varint(), None);
        assert_eq!(Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x7f]).varint(), None);
        assert_eq!(Reader::new(&[0x80]).varint(), None);
    }

    #[test]
    fn pad_runs_cost_one_bit_per_unchanged_frame() {
        let pads: Vec<Pad> = [1u16, 1, 1, 9, 9, 0, 0, 0, 0, 0]
            .iter()
            .map(|&v| Pad(v))
            .collect();
        let b = encode_pads(pads.iter().copied(), None);
        // 16 + 7 unchanged bits + a 1-button change (7) + a 2-button change (12) = 42 bits.
        assert_eq!(b.len(), 6);
        assert_eq!(decode_pads(&b, None, 64), Some(pads.clone()));
        assert_eq!(decode_pads(&b[..3], None, 64), None, "cut inside a pad");
        assert_eq!(decode_pads(&b, None, 9), None, "more pads than allowed");
        assert_eq!(decode_pads(&[], None, 64), None, "no pad");
        // Against the pad before the run (the receiver holds it) the first costs 1 bit, not
        // 16: 27 bits.
        let b = encode_pads(pads.iter().copied(), Some(Pad(1)));
        assert_eq!(b.len(), 4);
        assert_eq!(decode_pads(&b, Some(Pad(1)), 64), Some(pads.clone()));
        let wrong = decode_pads(&b, Some(Pad(2)), 64).unwrap();
        assert_ne!(wrong, pads, "the receiver must use the sender's base");
    }

    #[test]
    fn sequence_numbers_take_one_byte_near_what_the_receiver_holds_and_wrap() {
        let seq = |value: u16, held: Option<u16>, reference: u16| {
            let mut out = Vec::new();
            put_seq(&mut out, value, held);
            let mut r = Reader::new(&out);
            let back = r.seq(reference);
            assert!(r.is_empty());
            (out.len(), back)
        };
        // The receiver holds `held` or anything newer up to `value`.
        for (value, held) in [
            (100u16, 37u16),
            (5, 0xffe0),
            (0xffff, 0xffc0),
            (0x8000, 0x7fff),
        ] {
            for reference in [held, held.wrapping_add(1), value] {
                assert_eq!(seq(value, Some(held), reference), (1, Some(value)));
            }
        }
        // Too far from what it holds, or nothing known: two bytes, good for 16383 either way.
        assert_eq!(seq(101, Some(37), 37), (2, Some(101)));
        assert_eq!(seq(3, None, 0xc010), (2, Some(3)));
        assert_eq!(seq(0xc010, None, 3), (2, Some(0xc010)));
    }

    #[test]
    fn rel_counters_take_one_byte_while_every_reference_is_near() {
        let rel = |value: u32, lo: u32, hi: u32| {
            let mut b = Vec::new();
            put_rel(&mut b, value, lo..=hi);
            b
        };
        // Every reference the receiver may hold (`lo..=hi`) expands the value right.
        for (value, lo, hi, len) in [
            (1000, 1000, 1064, 1),
            (1000, 937, 1000, 1),
            (1000, 936, 1000, 2),
            (1000, 1000, 1065, 2),
            (0, 0, 0, 1),
            (70_000, 70_000, 70_000 + 16_383, 2),
            (5, 0, 300, 2),
        ] {
            let b = rel(value, lo, hi);
            assert_eq!(b.len(), len, "{value} for {lo}..={hi}");
            for reference in [lo, (lo + hi) / 2, hi] {
                let mut r = Reader::new(&b);
                assert_eq!(r.rel(reference), Some(value), "{value} around {reference}");
                assert!(r.is_empty());
            }
        }
        // Below zero is corrupt, and a cut two-byte form is rejected.
        assert_eq!(Reader::new(&[0x7f]).rel(0), None);
        assert_eq!(Reader::new(&[0x80]).rel(0), None);
    }

    #[test]
    fn changes_take_the_shorter_form_and_round_trip() {
        use rand::{rngs::SmallRng, Rng, SeedableRng};
        assert_eq!(delta_bits(Pad(0), Pad(0)), 1);
        assert_eq!(delta_bits(Pad(0), Pad(0x8000)), 7);
        assert_eq!(delta_bits(Pad(0x8001), Pad(0x0003)), 12);
        assert_eq!(delta_bits(Pad(0), Pad(0x0007)), 17);
        assert_eq!(delta_bits(Pad(0), Pad(0xffff)), 18);
        let mut rng = SmallRng::seed_from_u64(3);
        for _ in 0..2000 {
            let n = rng.gen_range(1..40);
            let mut pads = vec![Pad(rng.gen())];
            for _ in 1..n {
                let prev = *pads.last().unwrap();
                pads.push(match rng.gen_range(0..5) {
                    0 => prev,
                    1 => Pad(prev.0 ^ (1 << rng.gen_range(0..16))),
                    2 => Pad(prev.0 ^ rng.gen::<u16>() & rng.gen::<u16>()),
                    // All ones, as the padding is: it must still end the run where it ends.
                    3 => Pad(0xffff),
                    _ => Pad(rng.gen()),
                });
            }
            let bits = 16
                + pads
                    .windows(2)
                    .map(|w| delta_bits(w[0], w[1]))
                    .sum::<usize>();
            let b = encode_pads(pads.iter().copied(), None);
            assert_eq!(b.len(), bits.div_ceil(8));
            assert_eq!(decode_pads(&b, None, 64), Some(pads.clone()));
            let b = encode_pads(pads[1..].iter().copied(), Some(pads[0]));
            let rest = (n > 1).then(|| pads[1..].to_vec());
            assert_eq!(decode_pads(&b, Some(pads[0]), 64), rest);
        }
    }

    #[test]
    fn frames_round_trip_for_masked_players() {
        let mut frames = vec![[Pad::NEUTRAL; MAX_PLAYERS]; 5];
        frames[0][0] = Pad(3);
        frames[2][5] = Pad(0x8001);
        frames[4][0] = Pad(4);
        let mask = 0b10_0001;
        let b = encode_frames(&frames, mask, None);
        let (back, used) = decode_frames(&b, 5, mask, None).unwrap();
        assert_eq!(back, frames);
        assert_eq!(used, b.len());
        assert!(decode_frames(&b[..2], 5, mask, None).is_none());
    }

    #[test]
    fn a_first_frame_coded_against_the_one_before_costs_a_bit_when_unchanged() {
        let mut base = [Pad::NEUTRAL; MAX_PLAYERS];
        base[0] = Pad(0x0030);
        base[1] = Pad(0x0101);
        let mut frames = vec![base; 4];
        frames[2][1] = Pad(0x0100);
        let mask = 0b11;
        let full = encode_frames(&frames, mask, None);
        let delta = encode_frames(&frames, mask, Some(&base));
        // 2 x 16 bits in full against 2 x 1 bit.
        assert_eq!(full.len() - delta.len(), 4);
        assert_eq!(
            decode_frames(&delta, 4, mask, Some(&base)),
            Some((frames.clone(), delta.len()))
        );
        // Another base decodes to other inputs: the receiver must use the sender's.
        let mut other = base;
        other[0] = Pad(0x0031);
        let (wrong, _) = decode_frames(&delta, 4, mask, Some(&other)).unwrap();
        assert_ne!(wrong, frames);
    }
}
