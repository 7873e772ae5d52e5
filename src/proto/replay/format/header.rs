//! The header of a `.flr` file: how the session started and what it ran, with optional fields
//! appended after the start state.

use xxhash_rust::xxh3::xxh3_64;

use crate::input::MAX_PLAYERS;

use super::{
    compress_state, decompress_state, put_bytes, put_varint, Bytes, Reason, FORMAT_VERSION, MAGIC,
    MAX_HEADER_LEN, MAX_STATE_LEN, PREFIX_LEN,
};

/// Optional header fields appended after the start state (tag, varint length, bytes).
const HF_CORE_PATH: u8 = 0x01;
const HF_CONTENT_PATH: u8 = 0x02;
const HF_START_SRAM: u8 = 0x03;
const HF_NETPLAY_CONTEXT: u8 = 0x04;
const HF_NETPLAY_MODE: u8 = 0x05;
const HF_CHECKSUM_BITS: u8 = 0x06;

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
    /// The checksum records hold only the low this many bits of the machine's checksum (a
    /// server's recording, from the 32-bit checksums the players report); `None`: all 64.
    pub checksum_bits: Option<u8>,
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
            checksum_bits: None,
        }
    }
}
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
    if let Some(bits) = h.checksum_bits {
        field(HF_CHECKSUM_BITS, &[bits]);
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
            HF_CHECKSUM_BITS => match data {
                [bits @ 1..=64] => h.checksum_bits = Some(*bits),
                _ => return Err("checksum bits field is not 1 to 64"),
            },
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
            checksum_bits: Some(32),
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
}
