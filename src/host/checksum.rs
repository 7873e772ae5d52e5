//! The desync checksum of the emulated machine.
//!
//! Raw savestates do not qualify: Genesis Plus GX states carry process-specific pointer
//! bytes, so two processes in identical emulated states produce different states. The
//! checksum hashes what the game itself can observe instead: the memory regions the
//! core exposes (system RAM, save RAM, video RAM) and the last presented frame. Only a
//! core that exposes no memory falls back to its serialized state.

use xxhash_rust::xxh3::Xxh3;

use super::{MemoryRegion, VideoFrame};

/// The regions hashed, in order.
pub const REGIONS: [MemoryRegion; 3] = [
    MemoryRegion::SystemRam,
    MemoryRegion::SaveRam,
    MemoryRegion::VideoRam,
];

/// What goes into one checksum.
pub enum Basis<'a> {
    /// The exposed memory regions (at least one).
    Memory(Vec<(MemoryRegion, &'a [u8])>),
    /// The serialized state, for cores that expose no memory (empty if it has none).
    State(&'a [u8]),
}

/// xxh3-64 over the basis and the frame, each part prefixed by a tag and its length so
/// that moving bytes between parts changes the result.
pub fn compute(basis: &Basis<'_>, frame: &VideoFrame<'_>) -> u64 {
    let mut h = Xxh3::new();
    let mut part = |tag: u8, bytes: &[u8]| {
        h.update(&[tag]);
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    match basis {
        Basis::Memory(regions) => {
            for (region, bytes) in regions {
                part(*region as u8, bytes);
            }
        }
        Basis::State(bytes) => part(0x10, bytes),
    }
    let mut dims = [0u8; 8];
    dims[..4].copy_from_slice(&frame.width.to_le_bytes());
    dims[4..].copy_from_slice(&frame.height.to_le_bytes());
    part(0x20, &dims);
    // The pixels as little-endian bytes, streamed through a small buffer (xxh3's streaming
    // digest does not depend on how the input is split).
    h.update(&[0x21]);
    h.update(&(std::mem::size_of_val(frame.pixels) as u64).to_le_bytes());
    let mut buf = [0u8; 4096];
    for chunk in frame.pixels.chunks(buf.len() / 4) {
        for (b, p) in buf.chunks_exact_mut(4).zip(chunk) {
            b.copy_from_slice(&p.to_le_bytes());
        }
        h.update(&buf[..chunk.len() * 4]);
    }
    h.digest()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_counts() {
        let frame = VideoFrame {
            width: 1,
            height: 1,
            pixels: &[5],
        };
        let other_frame = VideoFrame {
            width: 1,
            height: 1,
            pixels: &[6],
        };
        let a = Basis::Memory(vec![(MemoryRegion::SystemRam, &[1, 2][..])]);
        let b = Basis::Memory(vec![(MemoryRegion::SystemRam, &[1, 3][..])]);
        let c = Basis::Memory(vec![
            (MemoryRegion::SystemRam, &[1][..]),
            (MemoryRegion::SaveRam, &[2][..]),
        ]);
        let base = compute(&a, &frame);
        assert_eq!(base, compute(&a, &frame));
        assert_ne!(base, compute(&b, &frame));
        assert_ne!(base, compute(&c, &frame));
        assert_ne!(base, compute(&a, &other_frame));
        assert_ne!(base, compute(&Basis::State(&[1, 2]), &frame));
    }

    #[test]
    fn frame_bytes_are_hashed_little_endian_after_tag_and_length() {
        // The checksum's meaning is fixed: peers and replays compare it. Rebuild it by hand
        // (one shot) for a frame longer than the streaming buffer.
        let pixels: Vec<u32> = (0..3000u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
        let frame = VideoFrame {
            width: 60,
            height: 50,
            pixels: &pixels,
        };
        let state = [7u8, 8, 9];
        let mut want = vec![0x10];
        want.extend_from_slice(&3u64.to_le_bytes());
        want.extend_from_slice(&state);
        want.push(0x20);
        want.extend_from_slice(&8u64.to_le_bytes());
        want.extend_from_slice(&60u32.to_le_bytes());
        want.extend_from_slice(&50u32.to_le_bytes());
        want.push(0x21);
        want.extend_from_slice(&12000u64.to_le_bytes());
        want.extend(pixels.iter().flat_map(|p| p.to_le_bytes()));
        assert_eq!(
            compute(&Basis::State(&state), &frame),
            xxhash_rust::xxh3::xxh3_64(&want)
        );
    }
}
