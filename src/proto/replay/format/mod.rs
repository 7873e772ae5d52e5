//! Byte-level encoding of `.flr` files: primitives, the header, record framing, the input
//! block codec and events. Pure functions over byte slices; no I/O here. It imports only `input`;
//! the reader and writer stand on it, not the other way.

mod event;
mod header;
mod inputs;
mod record;

pub use event::{decode_event, encode_event, starts_resync_state, Event};
pub use header::{decode_header_body, encode_header, header_chain, Header, Start};
pub use inputs::{decode_inputs, encode_inputs};
pub use record::{
    decode_checksum, decode_end, encode_checksum, encode_end, parse_record_head, put_record,
    record_check,
};

/// First 8 bytes of every input log. The high-bit-free "FLR", a NUL, CR LF, ^Z and LF (as in PNG)
/// make text-mode transfers and `type`-ing the file show up as a bad magic.
pub const MAGIC: [u8; 8] = *b"FLR\0\r\n\x1a\n";
/// Highest format version this build reads (and the one it writes). Compatible additions (new
/// optional record types, event kinds, appended header fields) do not bump it.
pub const FORMAT_VERSION: u16 = 1;
/// magic + version u16 + header body length u32.
pub const PREFIX_LEN: usize = 14;
/// Longest header body accepted (the start state dominates it).
pub const MAX_HEADER_LEN: u32 = 1 << 30;
/// Largest start or resync state, uncompressed.
pub const MAX_STATE_LEN: usize = 1 << 30;
/// Record payloads are at most this long: the length varint has at most 4 bytes.
pub const MAX_RECORD_LEN: usize = (1 << 28) - 1;
/// Most frames one `Inputs` block may cover.
pub const MAX_BLOCK_FRAMES: u32 = 1 << 16;
/// tag + up to 4 length bytes.
pub const MAX_RECORD_HEAD: usize = 5;
/// Bytes of the check that ends every record.
pub const CHECK_LEN: usize = 4;

/// Never written, so that zero-filled space never parses as a record.
pub const TAG_UNUSED: u8 = 0x00;
pub const TAG_INPUTS: u8 = 0x01;
pub const TAG_CHECKSUM: u8 = 0x02;
pub const TAG_EVENT: u8 = 0x03;
pub const TAG_END: u8 = 0x0F;
/// Unknown tags below this are skipped; unknown tags from here up must be understood.
pub const TAG_CRITICAL: u8 = 0x80;

/// Why a header or record could not be decoded (becomes part of a `ReplayError`).
pub type Reason = &'static str;

// ---------------------------------------------------------------------------------------------
// Primitives

pub fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    // Callers bound lengths (records, header) well below u32::MAX.
    put_varint(out, b.len() as u32);
    out.extend_from_slice(b);
}

/// A bounds-checked reader over a byte slice.
pub struct Bytes<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    pub fn new(buf: &'a [u8]) -> Bytes<'a> {
        Bytes { buf, pos: 0 }
    }

    pub fn remaining(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Reason> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or("field runs past its end")?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    pub fn u8(&mut self) -> Result<u8, Reason> {
        Ok(self.take(1)?[0])
    }

    pub fn u64(&mut self) -> Result<u64, Reason> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    pub fn varint(&mut self) -> Result<u32, Reason> {
        let mut v: u32 = 0;
        for i in 0..5 {
            let b = self.u8()?;
            if i == 4 && b > 0x0F {
                return Err("varint too large");
            }
            v |= u32::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint too large")
    }

    fn bytes(&mut self) -> Result<&'a [u8], Reason> {
        let n = self.varint()? as usize;
        self.take(n)
    }

    fn string(&mut self) -> Result<String, Reason> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| "text is not UTF-8")
    }
}

fn compress_state(out: &mut Vec<u8>, state: &[u8]) {
    let packed = lz4_flex::block::compress(state);
    put_varint(out, state.len() as u32);
    put_bytes(out, &packed);
}

fn decompress_state(b: &mut Bytes) -> Result<Vec<u8>, Reason> {
    let raw_len = b.varint()? as usize;
    let packed = b.bytes()?;
    // LZ4 cannot expand more than ~255:1; refusing larger claims avoids huge allocations.
    if raw_len > MAX_STATE_LEN || raw_len > packed.len().saturating_mul(255).saturating_add(16) {
        return Err("state size is implausible");
    }
    let state = lz4_flex::block::decompress(packed, raw_len).map_err(|_| "bad compressed state")?;
    if state.len() != raw_len {
        return Err("state size mismatch");
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trips_and_rejects_overlong() {
        for v in [0, 1, 127, 128, 300, 16_383, 16_384, u32::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            let mut b = Bytes::new(&out);
            assert_eq!(b.varint(), Ok(v));
            assert!(b.remaining().is_empty());
        }
        assert!(Bytes::new(&[0xFF; 6]).varint().is_err());
        assert!(Bytes::new(&[0xFF, 0xFF, 0xFF, 0xFF, 0x10])
            .varint()
            .is_err());
        assert!(Bytes::new(&[0x80]).varint().is_err());
    }

    #[test]
    fn state_bomb_is_refused_before_allocating() {
        let mut p = Vec::new();
        put_varint(&mut p, 1 << 29);
        put_bytes(&mut p, &[0x1F, 0]);
        assert_eq!(
            decompress_state(&mut Bytes::new(&p)),
            Err("state size is implausible")
        );
    }

    #[test]
    fn record_head_parses_partial_and_overlong_lengths() {
        let mut out = Vec::new();
        let c = put_record(&mut out, 7, TAG_CHECKSUM, &[0u8; 200]).unwrap();
        assert_eq!(c, record_check(7, &out[..out.len() - CHECK_LEN]));
        assert_ne!(c, record_check(8, &out[..out.len() - CHECK_LEN]));
        assert_eq!(parse_record_head(&out), Ok(Some((TAG_CHECKSUM, 200, 3))));
        assert_eq!(parse_record_head(&out[..2]), Ok(None));
        assert_eq!(parse_record_head(&[]), Ok(None));
        assert!(parse_record_head(&[1, 0xFF, 0xFF, 0xFF, 0xFF]).is_err());
        assert_eq!(out.len(), 3 + 200 + CHECK_LEN);
    }
}
