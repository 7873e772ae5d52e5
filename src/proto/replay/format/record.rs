//! Record framing of a `.flr` file (tag, length, payload, chained check), and the small
//! `Checksum` and `End` payloads.

use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::{put_varint, Bytes, Reason, MAX_RECORD_LEN};

/// The check stored after a record: low 32 bits of xxh3-64 over tag, length bytes and payload,
/// seeded with the previous record's check (`chain`), so records cannot be dropped, repeated
/// or reordered unnoticed. The first record's chain is the header check's low 32 bits.
pub fn record_check(chain: u32, head_and_payload: &[u8]) -> u32 {
    xxh3_64_with_seed(head_and_payload, u64::from(chain)) as u32
}

/// Appends one framed record to `out`; returns its check (the next record's chain).
pub fn put_record(out: &mut Vec<u8>, chain: u32, tag: u8, payload: &[u8]) -> Result<u32, Reason> {
    if payload.len() > MAX_RECORD_LEN {
        return Err("record too large");
    }
    let start = out.len();
    out.push(tag);
    put_varint(out, payload.len() as u32);
    out.extend_from_slice(payload);
    let check = record_check(chain, &out[start..]);
    out.extend_from_slice(&check.to_le_bytes());
    Ok(check)
}

/// Parses a record head (tag + length varint) from the start of `buf`.
/// `Ok(None)`: `buf` ends inside the head. Returns (tag, payload length, head length).
pub fn parse_record_head(buf: &[u8]) -> Result<Option<(u8, usize, usize)>, Reason> {
    let Some(&tag) = buf.first() else {
        return Ok(None);
    };
    let mut len = 0usize;
    for i in 0..4 {
        let Some(&b) = buf.get(1 + i) else {
            return Ok(None);
        };
        len |= usize::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(Some((tag, len, 2 + i)));
        }
    }
    Err("record length too large")
}

pub fn encode_checksum(frame: u32, value: u64) -> Vec<u8> {
    let mut p = Vec::with_capacity(13);
    put_varint(&mut p, frame);
    p.extend_from_slice(&value.to_le_bytes());
    p
}

pub fn decode_checksum(payload: &[u8]) -> Result<(u32, u64), Reason> {
    let mut b = Bytes::new(payload);
    let frame = b.varint()?;
    let value = b.u64()?;
    if !b.remaining().is_empty() {
        return Err("checksum record too long");
    }
    Ok((frame, value))
}

pub fn encode_end(frames: u32) -> Vec<u8> {
    let mut p = Vec::with_capacity(5);
    put_varint(&mut p, frames);
    p
}

pub fn decode_end(payload: &[u8]) -> Result<u32, Reason> {
    let mut b = Bytes::new(payload);
    let frames = b.varint()?;
    if !b.remaining().is_empty() {
        return Err("end record too long");
    }
    Ok(frames)
}
