//! Byte-level encoding of `.flr` files: primitives, the header, record framing, the input
//! block codec and events. Pure functions over byte slices; no I/O here.

use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

use crate::input::{Inputs, Pad, MAX_PLAYERS};

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

const EV_JOINED: u8 = 0x01;
const EV_LEFT: u8 = 0x02;
const EV_DESYNC: u8 = 0x03;
const EV_RESYNC: u8 = 0x04;
const EV_CHAT: u8 = 0x05;
const EV_PAUSED: u8 = 0x06;
const EV_RESUMED: u8 = 0x07;

/// Optional header fields appended after the start state (tag, varint length, bytes).
const HF_CORE_PATH: u8 = 0x01;
const HF_CONTENT_PATH: u8 = 0x02;
const HF_START_SRAM: u8 = 0x03;
const HF_NETPLAY_CONTEXT: u8 = 0x04;
const HF_NETPLAY_MODE: u8 = 0x05;

/// How the recorded session started.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub enum Start {
    /// The core was reset and the first frame ran from power-on.
    #[default]
    PowerOn,
    /// This savestate (uncompressed `retro_serialize` bytes) was loaded before the first frame.
    State(Vec<u8>),
}

/// Everything needed to set up the core before replaying the inputs.
#[derive(Clone, PartialEq, Debug)]
pub struct Header {
    /// The core's `library_name`.
    pub core_name: String,
    /// The core's `library_version`; a replay needs the same.
    pub core_version: String,
    /// File name of the content (no directories), or empty for a core that needs none.
    pub content_name: String,
    /// xxh3-64 of the content bytes; `None` for built-in games.
    pub content_hash: Option<u64>,
    /// Core option values in effect, as key/value pairs.
    pub core_options: Vec<(String, String)>,
    /// Player name per RetroPad port; `None` for ports nobody uses.
    pub players: [Option<String>; MAX_PLAYERS],
    /// Power-on, or the state the first frame started from.
    pub start: Start,
    /// Index of the first recorded frame (0 unless recording began mid-session).
    pub start_frame: u32,
    /// Frames per second the session ran at.
    pub frame_rate: f64,
    /// Frames between `Checksum` records (0: none recorded).
    pub checksum_interval: u32,
    /// Unix seconds when the recording began; informational only.
    pub created_unix: i64,
    /// Where the core was loaded from (a hint for replaying on the same machine);
    /// `Some("")` for framelock's built-in core, `None` if not recorded.
    pub core_path: Option<String>,
    /// Where the content was loaded from (a hint, like `core_path`).
    pub content_path: Option<String>,
    /// Save RAM in effect at the start (uncompressed), for cores whose savestates leave it out.
    pub start_sram: Option<Vec<u8>>,
    /// The core ran with the netplay savestate context (`CoreConfig::netplay`).
    pub netplay_context: bool,
    /// A netplay session's lockstep mode ("strict" or "optimistic"); `None` for local play.
    /// The inputs recorded are the ones applied either way, so replay ignores it.
    pub netplay_mode: Option<String>,
}

impl Default for Header {
    fn default() -> Header {
        Header {
            core_name: String::new(),
            core_version: String::new(),
            content_name: String::new(),
            content_hash: None,
            core_options: Vec::new(),
            players: Default::default(),
            start: Start::PowerOn,
            start_frame: 0,
            frame_rate: 60.0,
            checksum_interval: 60,
            created_unix: 0,
            core_path: None,
            content_path: None,
            start_sram: None,
            netplay_context: false,
            netplay_mode: None,
        }
    }
}

/// Something noteworthy that happened at a frame.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Event {
    /// A player took port `slot` (0-based).
    Joined {
        /// The port, 0-based.
        slot: u8,
        /// The player's name.
        name: String,
    },
    /// The player on port `slot` left; the port is neutral from this frame on.
    Left {
        /// The port, 0-based.
        slot: u8,
    },
    /// Local and remote state checksums differed.
    Desync {
        /// This machine's checksum.
        local: u64,
        /// The other machine's.
        remote: u64,
    },
    /// Emulation was resynchronised; `state` (uncompressed) was loaded at this frame, if any.
    Resync {
        /// The state loaded, if the log keeps it.
        state: Option<Vec<u8>>,
    },
    /// A chat message, at the frame its sender was at.
    Chat {
        /// The sender's slot (16 and up: a spectator's).
        slot: u8,
        /// The sender's name.
        name: String,
        /// What it said.
        text: String,
    },
    /// The player on port `slot` paused the game before this frame (every peer stood still
    /// there until `Resumed`; a replay goes straight on).
    Paused {
        /// The port, 0-based.
        slot: u8,
    },
    /// The player on port `slot` resumed the game from this frame.
    Resumed {
        /// The port, 0-based.
        slot: u8,
    },
    /// An event kind this build does not know (from a newer framelock); `data` is its body.
    Other {
        /// The event kind.
        kind: u8,
        /// Its body, unread.
        data: Vec<u8>,
    },
}

impl Event {
    fn kind(&self) -> u8 {
        match self {
            Event::Joined { .. } => EV_JOINED,
            Event::Left { .. } => EV_LEFT,
            Event::Desync { .. } => EV_DESYNC,
            Event::Resync { .. } => EV_RESYNC,
            Event::Chat { .. } => EV_CHAT,
            Event::Paused { .. } => EV_PAUSED,
            Event::Resumed { .. } => EV_RESUMED,
            Event::Other { kind, .. } => *kind,
        }
    }
}

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

// ---------------------------------------------------------------------------------------------
// Header

/// Encodes the whole header: prefix, body and checksum. Fails on values the format cannot hold.
/// The first record's chain is the low 32 bits of the last 8 bytes (see `header_chain`).
pub fn encode_header(h: &Header) -> Result<Vec<u8>, Reason> {
    if !(h.frame_rate.is_finite() && h.frame_rate > 0.0) {
        return Err("frame rate must be finite and positive");
    }
    if let Start::State(s) = &h.start {
        if s.len() > MAX_STATE_LEN {
            return Err("start state too large");
        }
    }
    let mut body = Vec::new();
    put_bytes(&mut body, h.core_name.as_bytes());
    put_bytes(&mut body, h.core_version.as_bytes());
    put_bytes(&mut body, h.content_name.as_bytes());
    match h.content_hash {
        None => body.push(0),
        Some(x) => {
            body.push(1);
            body.extend_from_slice(&x.to_le_bytes());
        }
    }
    put_varint(&mut body, h.core_options.len() as u32);
    for (k, v) in &h.core_options {
        put_bytes(&mut body, k.as_bytes());
        put_bytes(&mut body, v.as_bytes());
    }
    let mask = h
        .players
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_some())
        .fold(0u8, |m, (i, _)| m | 1 << i);
    body.push(mask);
    for name in h.players.iter().flatten() {
        put_bytes(&mut body, name.as_bytes());
    }
    body.extend_from_slice(&h.frame_rate.to_le_bytes());
    put_varint(&mut body, h.checksum_interval);
    body.extend_from_slice(&h.created_unix.to_le_bytes());
    put_varint(&mut body, h.start_frame);
    match &h.start {
        Start::PowerOn => body.push(0),
        Start::State(s) => {
            body.push(1);
            compress_state(&mut body, s);
        }
    }
    put_optional_fields(&mut body, h)?;
    if body.len() > MAX_HEADER_LEN as usize {
        return Err("header too large");
    }
    let mut out = Vec::with_capacity(PREFIX_LEN + body.len() + 8);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    let check = xxh3_64(&out);
    out.extend_from_slice(&check.to_le_bytes());
    Ok(out)
}

/// The chain value for the first record: the header check's low 32 bits.
pub fn header_chain(header_check: u64) -> u32 {
    header_check as u32
}

/// Decodes a header body whose checksum has already been verified. Bytes after the fields this
/// version knows are ignored: newer compatible writers may append fields.
pub fn decode_header_body(body: &[u8]) -> Result<Header, Reason> {
    let mut b = Bytes::new(body);
    let core_name = b.string()?;
    let core_version = b.string()?;
    let content_name = b.string()?;
    let content_hash = match b.u8()? {
        0 => None,
        1 => Some(b.u64()?),
        _ => return Err("bad content hash flag"),
    };
    let n = b.varint()?;
    let mut core_options = Vec::new();
    for _ in 0..n {
        core_options.push((b.string()?, b.string()?));
    }
    let mask = b.u8()?;
    let mut players: [Option<String>; MAX_PLAYERS] = Default::default();
    for (i, p) in players.iter_mut().enumerate() {
        if mask & (1 << i) != 0 {
            *p = Some(b.string()?);
        }
    }
    let frame_rate = f64::from_le_bytes(b.take(8)?.try_into().expect("8 bytes"));
    if !(frame_rate.is_finite() && frame_rate > 0.0) {
        return Err("bad frame rate");
    }
    let checksum_interval = b.varint()?;
    let created_unix = i64::from_le_bytes(b.take(8)?.try_into().expect("8 bytes"));
    let start_frame = b.varint()?;
    let start = match b.u8()? {
        0 => Start::PowerOn,
        1 => Start::State(decompress_state(&mut b)?),
        _ => return Err("bad start kind"),
    };
    let mut h = Header {
        core_name,
        core_version,
        content_name,
        content_hash,
        core_options,
        players,
        start,
        start_frame,
        frame_rate,
        checksum_interval,
        created_unix,
        ..Header::default()
    };
    read_optional_fields(&mut b, &mut h)?;
    Ok(h)
}

/// Appends the optional fields that are set, each as tag, varint length, bytes.
fn put_optional_fields(body: &mut Vec<u8>, h: &Header) -> Result<(), Reason> {
    let mut field = |tag: u8, data: &[u8]| {
        body.push(tag);
        put_bytes(body, data);
    };
    if let Some(p) = &h.core_path {
        field(HF_CORE_PATH, p.as_bytes());
    }
    if let Some(p) = &h.content_path {
        field(HF_CONTENT_PATH, p.as_bytes());
    }
    if let Some(sram) = &h.start_sram {
        if sram.len() > MAX_STATE_LEN {
            return Err("start save ram too large");
        }
        let mut packed = Vec::new();
        compress_state(&mut packed, sram);
        field(HF_START_SRAM, &packed);
    }
    if h.netplay_context {
        field(HF_NETPLAY_CONTEXT, &[]);
    }
    if let Some(mode) = &h.netplay_mode {
        field(HF_NETPLAY_MODE, mode.as_bytes());
    }
    Ok(())
}

/// Reads optional fields up to the end of the body; unknown tags are skipped.
fn read_optional_fields(b: &mut Bytes, h: &mut Header) -> Result<(), Reason> {
    while !b.remaining().is_empty() {
        let tag = b.u8()?;
        let data = b.bytes()?;
        let text = || String::from_utf8(data.to_vec()).map_err(|_| "text is not UTF-8");
        match tag {
            HF_CORE_PATH => h.core_path = Some(text()?),
            HF_CONTENT_PATH => h.content_path = Some(text()?),
            HF_START_SRAM => {
                let mut f = Bytes::new(data);
                h.start_sram = Some(decompress_state(&mut f)?);
                if !f.remaining().is_empty() {
                    return Err("start save ram field too long");
                }
            }
            HF_NETPLAY_CONTEXT => h.netplay_context = true,
            HF_NETPLAY_MODE => h.netplay_mode = Some(text()?),
            _ => {}
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Records

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

pub fn encode_event(frame: u32, ev: &Event) -> Result<Vec<u8>, Reason> {
    let mut p = Vec::new();
    put_varint(&mut p, frame);
    p.push(ev.kind());
    match ev {
        Event::Joined { slot, name } => {
            check_slot(*slot)?;
            p.push(*slot);
            put_bytes(&mut p, name.as_bytes());
        }
        Event::Left { slot } | Event::Paused { slot } | Event::Resumed { slot } => {
            check_slot(*slot)?;
            p.push(*slot);
        }
        Event::Desync { local, remote } => {
            p.extend_from_slice(&local.to_le_bytes());
            p.extend_from_slice(&remote.to_le_bytes());
        }
        Event::Resync { state } => match state {
            None => p.push(0),
            Some(s) => {
                if s.len() > MAX_STATE_LEN {
                    return Err("resync state too large");
                }
                p.push(1);
                compress_state(&mut p, s);
            }
        },
        Event::Chat { slot, name, text } => {
            p.push(*slot);
            put_bytes(&mut p, name.as_bytes());
            put_bytes(&mut p, text.as_bytes());
        }
        Event::Other { kind, data } => {
            if (EV_JOINED..=EV_RESUMED).contains(kind) {
                return Err("event kind is taken by a known event");
            }
            p.extend_from_slice(data);
        }
    }
    Ok(p)
}

fn check_slot(slot: u8) -> Result<(), Reason> {
    if usize::from(slot) < MAX_PLAYERS {
        Ok(())
    } else {
        Err("player slot out of range")
    }
}

/// Whether an event payload starts as a resync carrying a state (frame, kind 0x04, flag 1):
/// the one record that may be far longer than 64 KiB. Looks at those few bytes only.
pub fn starts_resync_state(payload: &[u8]) -> bool {
    let mut b = Bytes::new(payload);
    b.varint().is_ok() && b.u8() == Ok(EV_RESYNC) && b.u8() == Ok(1)
}

pub fn decode_event(payload: &[u8]) -> Result<(u32, Event), Reason> {
    let mut b = Bytes::new(payload);
    let frame = b.varint()?;
    let kind = b.u8()?;
    let ev = match kind {
        EV_JOINED => {
            let slot = b.u8()?;
            check_slot(slot)?;
            Event::Joined {
                slot,
                name: b.string()?,
            }
        }
        EV_LEFT => {
            let slot = b.u8()?;
            check_slot(slot)?;
            Event::Left { slot }
        }
        EV_PAUSED | EV_RESUMED => {
            let slot = b.u8()?;
            check_slot(slot)?;
            if kind == EV_PAUSED {
                Event::Paused { slot }
            } else {
                Event::Resumed { slot }
            }
        }
        EV_DESYNC => Event::Desync {
            local: b.u64()?,
            remote: b.u64()?,
        },
        EV_RESYNC => Event::Resync {
            state: match b.u8()? {
                0 => None,
                1 => Some(decompress_state(&mut b)?),
                _ => return Err("bad resync state flag"),
            },
        },
        // As written: whoever shows the strings makes them printable.
        EV_CHAT => Event::Chat {
            slot: b.u8()?,
            name: b.string()?,
            text: b.string()?,
        },
        _ => {
            return Ok((
                frame,
                Event::Other {
                    kind,
                    data: b.remaining().to_vec(),
                },
            ))
        }
    };
    if !b.remaining().is_empty() {
        return Err("event record too long");
    }
    Ok((frame, ev))
}

// ---------------------------------------------------------------------------------------------
// Input blocks

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
    fn header_round_trips_with_state_and_without() {
        let mut h = Header {
            core_name: "Genesis Plus GX".into(),
            core_version: "1.7.4".into(),
            content_name: "airstriker.md".into(),
            content_hash: Some(0x1234_5678_9abc_def0),
            core_options: vec![
                ("region".into(), "auto".into()),
                ("k".into(), String::new()),
            ],
            start: Start::State((0..5000u32).map(|i| (i % 7) as u8).collect()),
            start_frame: 42,
            frame_rate: 59.92,
            checksum_interval: 30,
            created_unix: 1_790_000_000,
            core_path: Some("/cores/genesis_plus_gx_libretro.so".into()),
            content_path: Some("/roms/airstriker.md".into()),
            start_sram: Some(vec![0; 65536]),
            netplay_context: true,
            netplay_mode: Some("optimistic".into()),
            ..Header::default()
        };
        h.players[0] = Some("ana".into());
        h.players[5] = Some("bo".into());
        let bytes = encode_header(&h).unwrap();
        assert_eq!(&bytes[..8], &MAGIC);
        let body = &bytes[PREFIX_LEN..bytes.len() - 8];
        assert_eq!(decode_header_body(body).unwrap(), h);
        let plain = Header::default();
        let bytes = encode_header(&plain).unwrap();
        assert_eq!(
            decode_header_body(&bytes[PREFIX_LEN..bytes.len() - 8]).unwrap(),
            plain
        );
        // A reader skips optional fields it does not know.
        let mut body = bytes[PREFIX_LEN..bytes.len() - 8].to_vec();
        body.extend_from_slice(&[0x7E, 3, b'n', b'e', b'w']);
        assert_eq!(decode_header_body(&body).unwrap(), plain);
        body.extend_from_slice(&[HF_CORE_PATH, 5, b'x']);
        assert!(
            decode_header_body(&body).is_err(),
            "field runs past the body"
        );
        h.frame_rate = f64::NAN;
        assert!(encode_header(&h).is_err());
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

    #[test]
    fn events_round_trip_and_unknown_kinds_pass_through() {
        let evs = [
            Event::Joined {
                slot: 3,
                name: "cy".into(),
            },
            Event::Left { slot: 7 },
            Event::Desync {
                local: 1,
                remote: u64::MAX,
            },
            Event::Resync { state: None },
            Event::Paused { slot: 1 },
            Event::Resumed { slot: 0 },
            Event::Resync {
                state: Some(vec![9; 1000]),
            },
            Event::Chat {
                slot: 17,
                name: "eve".into(),
                text: "gg, rematch?".into(),
            },
            Event::Other {
                kind: 0x40,
                data: vec![1, 2, 3],
            },
        ];
        for ev in evs {
            let p = encode_event(77, &ev).unwrap();
            assert_eq!(decode_event(&p).unwrap(), (77, ev));
        }
        assert!(encode_event(0, &Event::Left { slot: 8 }).is_err());
        let taken = Event::Other {
            kind: EV_LEFT,
            data: vec![],
        };
        assert!(encode_event(0, &taken).is_err());
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
