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
    let pixels: Vec<u8> = frame.pixels.iter().flat_map(|p| p.to_le_bytes()).collect();
    part(0x21, &pixels);
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
}
