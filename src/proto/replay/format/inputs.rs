//! The payload of an `Inputs` record: a block of frames, delta coded bit by bit against the
//! frame before it.

use crate::input::{Inputs, Pad, MAX_PLAYERS};

use super::{put_varint, Bytes, Reason, MAX_BLOCK_FRAMES};

struct BitWriter {
    out: Vec<u8>,
    nbits: usize,
}

impl BitWriter {
    fn push(&mut self, bit: bool) {
        if self.nbits.is_multiple_of(8) {
            self.out.push(0);
        }
        if bit {
            *self.out.last_mut().expect("byte pushed above") |= 1 << (self.nbits % 8);
        }
        self.nbits += 1;
    }

    fn push16(&mut self, v: u16) {
        for i in 0..16 {
            self.push(v & (1 << i) != 0);
        }
    }
}

struct BitReader<'a> {
    buf: &'a [u8],
    nbits: usize,
}

impl BitReader<'_> {
    fn bit(&mut self) -> Result<bool, Reason> {
        let byte = *self.buf.get(self.nbits / 8).ok_or("input bits run out")?;
        let bit = byte & (1 << (self.nbits % 8)) != 0;
        self.nbits += 1;
        Ok(bit)
    }

    fn u16(&mut self) -> Result<u16, Reason> {
        let mut v = 0u16;
        for i in 0..16 {
            if self.bit()? {
                v |= 1 << i;
            }
        }
        Ok(v)
    }
}

/// Encodes `frames` (starting at frame `first`) against `prev`, the inputs of the frame before
/// `first`. Ports that stay neutral for the whole block are left out of its port mask.
pub fn encode_inputs(first: u32, frames: &[Inputs], prev: &Inputs) -> Vec<u8> {
    let mut mask = 0u8;
    for f in frames {
        for (p, pad) in f.iter().enumerate() {
            if pad.0 != 0 {
                mask |= 1 << p;
            }
        }
    }
    let mut p = Vec::new();
    put_varint(&mut p, first);
    put_varint(&mut p, frames.len() as u32);
    p.push(mask);
    let mut bits = BitWriter { out: p, nbits: 0 };
    let mut last = *prev;
    for f in frames {
        for port in (0..MAX_PLAYERS).filter(|i| mask & (1 << i) != 0) {
            if f[port] == last[port] {
                bits.push(false);
            } else {
                bits.push(true);
                bits.push16(f[port].0);
            }
        }
        // Ports outside the mask are neutral in every frame of the block.
        last = *f;
    }
    bits.out
}

/// Decodes a block. `prev` holds the frame before it on entry and its last frame on return.
/// Returns the block's first frame index and its frames.
pub fn decode_inputs(payload: &[u8], prev: &mut Inputs) -> Result<(u32, Vec<Inputs>), Reason> {
    let mut b = Bytes::new(payload);
    let first = b.varint()?;
    let count = b.varint()?;
    if count == 0 || count > MAX_BLOCK_FRAMES {
        return Err("bad block frame count");
    }
    let mask = b.u8()?;
    let mut bits = BitReader {
        buf: b.remaining(),
        nbits: 0,
    };
    let mut frames = Vec::with_capacity(count as usize);
    let mut cur = *prev;
    for p in (0..MAX_PLAYERS).filter(|i| mask & (1 << i) == 0) {
        cur[p] = Pad::NEUTRAL;
    }
    for _ in 0..count {
        for p in (0..MAX_PLAYERS).filter(|i| mask & (1 << i) != 0) {
            if bits.bit()? {
                cur[p] = Pad(bits.u16()?);
            }
        }
        frames.push(cur);
    }
    // Exactly the bytes the bits need, and zero padding: anything else is not what we wrote.
    let used = bits.nbits.div_ceil(8);
    if used != bits.buf.len() {
        return Err("block has trailing bytes");
    }
    if !bits.nbits.is_multiple_of(8) && bits.buf[used - 1] >> (bits.nbits % 8) != 0 {
        return Err("block padding is not zero");
    }
    *prev = cur;
    Ok((first, frames))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_block_delta_codes_and_carries_previous_value() {
        let mut frames = vec![[Pad::NEUTRAL; MAX_PLAYERS]; 10];
        for (i, f) in frames.iter_mut().enumerate() {
            f[1] = Pad(if i < 5 { 0x10 } else { 0x110 });
        }
        let prev = {
            let mut p = [Pad::NEUTRAL; MAX_PLAYERS];
            p[1] = Pad(0x10);
            p[3] = Pad(7); // neutral throughout the block: left out of the mask
            p
        };
        let enc = encode_inputs(100, &frames, &prev);
        // first(1) count(1) mask(1), bits: 10 frames x 1 bit + one change x 16 bits = 26 bits.
        assert_eq!(enc.len(), 3 + 4);
        assert_eq!(enc[2], 0b10);
        let mut carried = prev;
        let (first, got) = decode_inputs(&enc, &mut carried).unwrap();
        assert_eq!((first, &got), (100, &frames));
        assert_eq!(carried, frames[9]);
        // Without the carried previous value the first frames decode differently: deltas chain.
        let mut wrong = [Pad::NEUTRAL; MAX_PLAYERS];
        assert_ne!(decode_inputs(&enc, &mut wrong).unwrap().1, frames);
    }

    #[test]
    fn input_block_rejects_trailing_bytes_and_dirty_padding() {
        let frames = vec![[Pad(3); MAX_PLAYERS]; 3];
        let zero = [Pad::NEUTRAL; MAX_PLAYERS];
        let enc = encode_inputs(0, &frames, &zero);
        let mut long = enc.clone();
        long.push(0);
        assert!(decode_inputs(&long, &mut zero.clone()).is_err());
        let mut dirty = enc.clone();
        *dirty.last_mut().unwrap() |= 0x80;
        assert!(decode_inputs(&dirty, &mut zero.clone()).is_err());
        assert!(decode_inputs(&enc[..enc.len() - 1], &mut zero.clone()).is_err());
    }
}
