//! The start payload every joiner receives from the host: core option values, the serialized
//! machine state and the SRAM, lz4-compressed as one blob and checked with xxh3.
//!
//! Options travel here rather than in the Welcome datagram because a core such as FBNeo has
//! dozens of them, more than one datagram holds.
//! ```text
//! raw payload: u16 n, n x (u16 len + key, u16 len + value),
//!              u32 len + state bytes, u32 len + sram bytes
//! on the wire: lz4_flex block format of the raw payload, split into CHUNK_SIZE chunks
//! ```

use super::SessionError;

/// Largest raw payload a joiner accepts (a hostile Welcome must not make it allocate GBs).
pub const MAX_PAYLOAD: usize = 256 << 20;

/// What the host sends to start every joiner from the host's own machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StartPayload {
    /// The host's core option values; the joiner applies them before the first frame.
    pub options: Vec<(String, String)>,
    /// `retro_serialize` output taken on the host after loading.
    pub state: Vec<u8>,
    /// The host's SRAM/NVRAM (may be empty if the state already holds it).
    pub sram: Vec<u8>,
}

/// A payload ready to send.
#[derive(Clone, Debug)]
pub struct Packed {
    pub raw_len: u32,
    pub hash: u64,
    pub bytes: Vec<u8>,
}

impl StartPayload {
    /// Serializes, compresses (lz4) and hashes (xxh3) it; fails past `MAX_PAYLOAD`.
    pub fn pack(&self) -> Result<Packed, SessionError> {
        let mut raw = Vec::with_capacity(self.state.len() + self.sram.len() + 64);
        let n = u16::try_from(self.options.len()).map_err(|_| SessionError::PayloadTooBig)?;
        raw.extend_from_slice(&n.to_le_bytes());
        for (k, v) in &self.options {
            put16(&mut raw, k.as_bytes())?;
            put16(&mut raw, v.as_bytes())?;
        }
        put32(&mut raw, &self.state)?;
        put32(&mut raw, &self.sram)?;
        if raw.len() > MAX_PAYLOAD {
            return Err(SessionError::PayloadTooBig);
        }
        Ok(Packed {
            raw_len: raw.len() as u32,
            hash: xxhash_rust::xxh3::xxh3_64(&raw),
            bytes: lz4_flex::block::compress(&raw),
        })
    }

    /// Decompresses and checks a received payload against the Welcome's length and hash.
    pub fn unpack(packed: &[u8], raw_len: u32, hash: u64) -> Result<StartPayload, SessionError> {
        if raw_len as usize > MAX_PAYLOAD {
            return Err(SessionError::PayloadTooBig);
        }
        let raw = lz4_flex::block::decompress(packed, raw_len as usize)
            .map_err(|e| SessionError::BadState(format!("does not decompress: {e}")))?;
        let got = xxhash_rust::xxh3::xxh3_64(&raw);
        if raw.len() != raw_len as usize || got != hash {
            return Err(SessionError::BadState(format!(
                "hash differs: host sent xxh3 {hash:016x}, received {got:016x}"
            )));
        }
        let bad = || SessionError::BadState("malformed contents".into());
        let mut r = &raw[..];
        let n = u16::from_le_bytes(
            take(&mut r, 2)
                .ok_or_else(bad)?
                .try_into()
                .unwrap_or_default(),
        );
        let mut options = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let k = text(take16(&mut r).ok_or_else(bad)?).ok_or_else(bad)?;
            let v = text(take16(&mut r).ok_or_else(bad)?).ok_or_else(bad)?;
            options.push((k, v));
        }
        let state = take32(&mut r).ok_or_else(bad)?.to_vec();
        let sram = take32(&mut r).ok_or_else(bad)?.to_vec();
        if !r.is_empty() {
            return Err(bad());
        }
        Ok(StartPayload {
            options,
            state,
            sram,
        })
    }
}

fn put16(out: &mut Vec<u8>, b: &[u8]) -> Result<(), SessionError> {
    let n = u16::try_from(b.len()).map_err(|_| SessionError::PayloadTooBig)?;
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(b);
    Ok(())
}

fn put32(out: &mut Vec<u8>, b: &[u8]) -> Result<(), SessionError> {
    let n = u32::try_from(b.len()).map_err(|_| SessionError::PayloadTooBig)?;
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(b);
    Ok(())
}

fn take<'a>(r: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if r.len() < n {
        return None;
    }
    let (head, tail) = r.split_at(n);
    *r = tail;
    Some(head)
}

fn take16<'a>(r: &mut &'a [u8]) -> Option<&'a [u8]> {
    let n = u16::from_le_bytes(take(r, 2)?.try_into().ok()?);
    take(r, n as usize)
}

fn take32<'a>(r: &mut &'a [u8]) -> Option<&'a [u8]> {
    let n = u32::from_le_bytes(take(r, 4)?.try_into().ok()?);
    take(r, n as usize)
}

fn text(b: &[u8]) -> Option<String> {
    String::from_utf8(b.to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_round_trips_and_detects_corruption() {
        let p = StartPayload {
            options: vec![("fbneo-hiscores".into(), "disabled".into())],
            state: (0..100_000u32).map(|i| (i / 7) as u8).collect(),
            sram: vec![0xff; 8192],
        };
        let packed = p.pack().unwrap();
        assert!(
            packed.bytes.len() < 50_000,
            "compresses: {}",
            packed.bytes.len()
        );
        let back = StartPayload::unpack(&packed.bytes, packed.raw_len, packed.hash).unwrap();
        assert_eq!(back, p);
        let mut bad = packed.bytes.clone();
        let mid = bad.len() / 2;
        bad[mid] ^= 0x40;
        assert!(StartPayload::unpack(&bad, packed.raw_len, packed.hash).is_err());
        assert!(StartPayload::unpack(&packed.bytes, packed.raw_len, packed.hash ^ 1).is_err());
        assert!(StartPayload::unpack(&packed.bytes, u32::MAX, packed.hash).is_err());
    }
}
