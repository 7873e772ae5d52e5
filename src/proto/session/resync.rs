//! Desync recovery transfer: mid-session, the host sends its machine state as of a frame to
//! one diverged joiner, which loads it and continues from that frame. A dedicated server,
//! which has no machine, first asks a player whose checksum agrees with the majority for its
//! state (a request), receives it the same way, and passes it on. Sans-IO like the rest of
//! `session`; it reuses the start-state transfer (`transfer`: selective resends, pacing)
//! and packing (`payload`: lz4 + xxh3).
//!
//! Every `Kind::Resync` datagram body starts with the transfer's identity, so a lost first
//! datagram costs nothing and a newer transfer replaces an older one:
//! ```text
//! u32 id, u32 frame, u32 raw_len, u64 xxh3(raw), u32 packed_len, u8 type,
//!   type 0 (host -> joiner): u32 index, u32 seq, data (CHUNK_SIZE bytes but the last)
//!   type 1 (joiner -> host): u32 cum, u32 latest_seq, u8 flags (bit 0 verified), bitmap
//!   type 2 (server -> player): nothing more; send your state at your next frame as transfer
//!          `id` (the other fields are 0)
//! ```

use std::sync::Arc;
use std::time::Instant;

use super::msg::{StateAck, CHUNK_SIZE, MAX_ACK_BITMAP};
use super::payload::StartPayload;
use super::transfer::{ChunkOutcome, Receiver, Rtt, Sender};
use super::SessionError;
use crate::wire::{Dropped, Handled, Header, Kind, Transmit, WireError, MAX_DATAGRAM};

const IDENT_LEN: usize = 4 + 4 + 4 + 8 + 4;
const CHUNK: u8 = 0;
const ACK: u8 = 1;
const REQUEST: u8 = 2;

/// What a `Kind::Resync` datagram body is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResyncPart {
    /// A piece of a state (to a `ResyncRecv`).
    Chunk,
    /// An acknowledgement (to a `ResyncSend`).
    Ack,
    /// A request for this player's state as transfer `id`.
    Request {
        /// The transfer id to send it as.
        id: u32,
    },
}

/// Tells the parts of a resync apart; `None` for a malformed body.
pub fn resync_part(body: &[u8]) -> Option<ResyncPart> {
    let (ident, kind, _) = Ident::parse(body)?;
    match kind {
        CHUNK => Some(ResyncPart::Chunk),
        ACK => Some(ResyncPart::Ack),
        REQUEST => Some(ResyncPart::Request { id: ident.id }),
        _ => None,
    }
}

/// The datagram that asks a player for its state as transfer `id`.
pub fn resync_request(session: u32, id: u32) -> Vec<u8> {
    Ident {
        id,
        frame: 0,
        raw_len: 0,
        hash: 0,
        packed_len: 0,
    }
    .write(session, REQUEST)
}
/// Largest state a resync carries; the start state has the same bound in practice.
const MAX_PACKED: u32 = 64 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ident {
    id: u32,
    frame: u32,
    raw_len: u32,
    hash: u64,
    packed_len: u32,
}

impl Ident {
    fn write(&self, session: u32, kind_byte: u8) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAX_DATAGRAM);
        Header {
            kind: Kind::Resync,
            session,
        }
        .write(&mut out);
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&self.frame.to_le_bytes());
        out.extend_from_slice(&self.raw_len.to_le_bytes());
        out.extend_from_slice(&self.hash.to_le_bytes());
        out.extend_from_slice(&self.packed_len.to_le_bytes());
        out.push(kind_byte);
        out
    }

    fn parse(body: &[u8]) -> Option<(Ident, u8, &[u8])> {
        if body.len() < IDENT_LEN + 1 {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(body[i..i + 4].try_into().unwrap_or_default());
        let ident = Ident {
            id: u32_at(0),
            frame: u32_at(4),
            raw_len: u32_at(8),
            hash: u64::from_le_bytes(body[12..20].try_into().unwrap_or_default()),
            packed_len: u32_at(20),
        };
        (ident.packed_len <= MAX_PACKED).then_some((ident, body[IDENT_LEN], &body[IDENT_LEN + 1..]))
    }
}

/// Host side: one state on its way to one joiner.
#[derive(Debug)]
pub struct ResyncSend {
    ident: Ident,
    sender: Sender,
}

impl ResyncSend {
    /// Packs `state` (the machine as of the start of `frame`) for transfer `id`.
    pub fn new(now: Instant, id: u32, frame: u32, state: Vec<u8>) -> Result<Self, SessionError> {
        let packed = StartPayload {
            options: Vec::new(),
            state,
            sram: Vec::new(),
        }
        .pack()?;
        let ident = Ident {
            id,
            frame,
            raw_len: packed.raw_len,
            hash: packed.hash,
            packed_len: packed.bytes.len() as u32,
        };
        let data: Arc<[u8]> = Arc::from(packed.bytes);
        Ok(ResyncSend {
            ident,
            sender: Sender::new(now, data, CHUNK_SIZE, Rtt::default()),
        })
    }

    /// The frame whose start the state is at.
    pub fn frame(&self) -> u32 {
        self.ident.frame
    }

    /// The joiner has the whole state and verified it.
    pub fn is_complete(&self) -> bool {
        self.sender.is_complete()
    }

    /// When `poll_transmit` has a chunk (a new one, or one presumed lost) to send next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.sender.poll_timeout()
    }

    /// Feeds an ack body (after the wire header); another transfer's ack is passed back.
    pub fn handle_datagram<'a>(&mut self, now: Instant, body: &'a [u8]) -> Handled<'a> {
        let Some((ident, ACK, rest)) = Ident::parse(body) else {
            return Handled::Passed(body);
        };
        if ident != self.ident {
            return Handled::Passed(body);
        }
        if rest.len() < 9 || rest.len() - 9 > MAX_ACK_BITMAP {
            return Handled::Dropped(WireError::Malformed(Kind::Resync).into());
        }
        let ack = StateAck {
            cum: u32::from_le_bytes(rest[0..4].try_into().unwrap_or_default()),
            latest_seq: u32::from_le_bytes(rest[4..8].try_into().unwrap_or_default()),
            verified: rest[8] & 1 != 0,
            bitmap: rest[9..].to_vec(),
        };
        self.sender.handle_ack(now, &ack);
        Handled::Taken
    }

    /// The next chunk datagram due, if any (the driver seals it for the joiner).
    pub fn poll_transmit(&mut self, now: Instant, session: u32) -> Option<Transmit<()>> {
        self.sender.detect_losses(now);
        let (index, seq) = self.sender.poll_chunk(now)?;
        let mut out = self.ident.write(session, CHUNK);
        out.extend_from_slice(&index.to_le_bytes());
        out.extend_from_slice(&seq.to_le_bytes());
        out.extend_from_slice(self.sender.chunk(index));
        Some(Transmit::new((), out))
    }
}

/// Joiner side: assembles the newest transfer and acks it.
#[derive(Debug, Default)]
pub struct ResyncRecv {
    current: Option<(Ident, Receiver, bool)>,
    /// The completed transfer's state, until `poll_state` takes it.
    state: Option<(u32, Vec<u8>)>,
}

impl ResyncRecv {
    /// Whether a transfer has begun (its first chunk came).
    pub fn started(&self) -> bool {
        self.current.is_some()
    }

    /// Feeds a chunk body (after the wire header). Once a transfer is complete and verified,
    /// [`poll_state`](Self::poll_state) has its `(frame, state)`.
    pub fn handle_datagram(&mut self, now: Instant, body: &[u8]) -> Handled<'static> {
        let bad = || Handled::Dropped(WireError::Malformed(Kind::Resync).into());
        let Some((ident, CHUNK, rest)) = Ident::parse(body) else {
            return bad();
        };
        if rest.len() < 8 {
            return bad();
        }
        let newer = match &self.current {
            Some((cur, ..)) => ident.id > cur.id,
            None => true,
        };
        if newer {
            let rx = Receiver::new(ident.packed_len as usize, CHUNK_SIZE);
            self.current = Some((ident, rx, false));
        }
        let Some((cur, rx, done)) = &mut self.current else {
            return Handled::Taken;
        };
        if *cur != ident {
            return Handled::Taken; // an older transfer's straggler
        }
        let index = u32::from_le_bytes(rest[0..4].try_into().unwrap_or_default());
        let seq = u32::from_le_bytes(rest[4..8].try_into().unwrap_or_default());
        match rx.handle_chunk(now, index, seq, &rest[8..]) {
            ChunkOutcome::Invalid => Handled::Dropped(Dropped::BadChunk),
            ChunkOutcome::New if rx.is_full() && !*done => {
                // A state that does not unpack to its hash: the chunk that completed it
                // is dropped, and the state never comes out.
                let Ok(payload) = StartPayload::unpack(rx.packed(), cur.raw_len, cur.hash) else {
                    return bad();
                };
                *done = true;
                rx.ack_soon(now);
                self.state = Some((cur.frame, payload.state));
                Handled::Taken
            }
            _ => Handled::Taken,
        }
    }

    /// The state of the transfer that completed, as `(frame, state)`, once.
    pub fn poll_state(&mut self) -> Option<(u32, Vec<u8>)> {
        self.state.take()
    }

    /// When `poll_transmit` has an ack to send next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.current
            .as_ref()
            .and_then(|(_, rx, _)| rx.poll_timeout())
    }

    /// The next ack datagram due, if any (the driver seals it for the sender).
    pub fn poll_transmit(&mut self, now: Instant, session: u32) -> Option<Transmit<()>> {
        let (ident, rx, done) = self.current.as_mut()?;
        let ack = rx.poll_ack(now, *done)?;
        let mut out = ident.write(session, ACK);
        out.extend_from_slice(&ack.cum.to_le_bytes());
        out.extend_from_slice(&ack.latest_seq.to_le_bytes());
        out.push(ack.verified as u8);
        out.extend_from_slice(&ack.bitmap);
        Some(Transmit::new((), out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::time::Duration;

    /// Moves datagrams both ways over a lossy in-memory link until the joiner has the state.
    #[test]
    fn a_state_crosses_a_lossy_link_and_garbage_is_rejected() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let state: Vec<u8> = (0..300_000).map(|_| rng.gen::<u8>() & 0x0f).collect();
        let t0 = Instant::now();
        let mut tx = ResyncSend::new(t0, 3, 1234, state.clone()).unwrap();
        let mut rx = ResyncRecv::default();
        let mut got = None;
        let mut now = t0;
        for _ in 0..20_000 {
            now += Duration::from_millis(1);
            while let Some(Transmit { bytes: d, .. }) = tx.poll_transmit(now, 9) {
                if rng.gen_bool(0.25) {
                    continue;
                }
                let (h, body) = Header::parse(&d).unwrap();
                assert_eq!((h.kind, h.session), (Kind::Resync, 9));
                assert!(rx.handle_datagram(now, body).is_taken());
                if let Some(done) = rx.poll_state() {
                    got = Some(done);
                }
            }
            while let Some(Transmit { bytes: d, .. }) = rx.poll_transmit(now, 9) {
                if !rng.gen_bool(0.25) {
                    assert!(tx
                        .handle_datagram(now, &d[crate::wire::HEADER_LEN..])
                        .is_taken());
                }
            }
            if tx.is_complete() {
                break;
            }
        }
        assert!(tx.is_complete(), "transfer did not complete");
        assert_eq!(got, Some((1234, state)));
        assert!(matches!(
            rx.handle_datagram(now, &[1, 2, 3]),
            Handled::Dropped(_)
        ));
        assert!(!tx.handle_datagram(now, &[0; 40]).is_taken());
        for _ in 0..2000 {
            let len = rng.gen_range(0..200);
            let junk: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            let _ = rx.handle_datagram(now, &junk);
            let _ = tx.handle_datagram(now, &junk);
        }
    }
}
