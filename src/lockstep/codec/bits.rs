//! A tiny MSB-first bit writer and reader for the delta-coded input runs.

/// Appends bits to a byte vector, most significant bit first; the last byte is zero-padded.
#[derive(Default, Debug)]
pub struct BitWriter {
    bytes: Vec<u8>,
    /// Bits used in the last byte (0 = the last byte is full or there is none).
    used: u8,
}

impl BitWriter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn bit(&mut self, b: bool) {
        if self.used == 0 {
            self.bytes.push(0);
        }
        if b {
            let last = self.bytes.len() - 1;
            self.bytes[last] |= 0x80 >> self.used;
        }
        self.used = (self.used + 1) % 8;
    }

    /// Writes the low `n` bits of `value`, highest first (`n` <= 32).
    pub fn bits(&mut self, value: u32, n: u32) {
        for i in (0..n).rev() {
            self.bit((value >> i) & 1 == 1);
        }
    }

    #[cfg(test)]
    pub fn len_bits(&self) -> usize {
        match self.used {
            0 => self.bytes.len() * 8,
            u => (self.bytes.len() - 1) * 8 + usize::from(u),
        }
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// Reads bits written by [`BitWriter`]; every read is bounds-checked.
#[derive(Debug)]
pub struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> BitReader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        BitReader { data, pos: 0 }
    }

    pub fn bit(&mut self) -> Option<bool> {
        let byte = *self.data.get(self.pos / 8)?;
        let b = byte & (0x80 >> (self.pos % 8)) != 0;
        self.pos += 1;
        Some(b)
    }

    /// Reads `n` bits (`n` <= 32).
    pub fn bits(&mut self, n: u32) -> Option<u32> {
        let mut v = 0u32;
        for _ in 0..n {
            v = (v << 1) | u32::from(self.bit()?);
        }
        Some(v)
    }

    /// Bytes touched so far (a partly read byte counts).
    pub fn bytes_used(&self) -> usize {
        self.pos.div_ceil(8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_and_stop_at_the_end() {
        let mut w = BitWriter::new();
        w.bit(true);
        w.bits(0xabcd, 16);
        w.bit(false);
        w.bits(5, 3);
        assert_eq!(w.len_bits(), 21);
        let bytes = w.into_bytes();
        assert_eq!(bytes.len(), 3);
        let mut r = BitReader::new(&bytes);
        assert_eq!(r.bit(), Some(true));
        assert_eq!(r.bits(16), Some(0xabcd));
        assert_eq!(r.bit(), Some(false));
        assert_eq!(r.bits(3), Some(5));
        assert_eq!(r.bytes_used(), 3);
        assert_eq!(r.bits(3), Some(0));
        assert_eq!(r.bit(), None);
    }
}
