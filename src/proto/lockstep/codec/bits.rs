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

    /// The bytes, the last one padded with `1` bits instead of `0`: a run read to the end
    /// of its datagram (`BitReader::only_padding_left`) then needs no count.
    pub fn into_bytes_one_padded(mut self) -> Vec<u8> {
        if self.used != 0 {
            let last = self.bytes.len() - 1;
            self.bytes[last] |= 0xff >> self.used;
        }
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

    /// True when what is left is the padding of `BitWriter::into_bytes_one_padded`: fewer
    /// than 8 bits, all `1`.
    pub fn only_padding_left(&self) -> bool {
        match self.data.len().checked_sub(self.pos / 8) {
            Some(0) | None => true,
            // In the last byte: the bits from `pos` on are all 1.
            Some(1) => {
                let shift = self.pos % 8;
                self.data[self.pos / 8] << shift == 0xff << shift
            }
            Some(_) => false,
        }
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

    #[test]
    fn one_padding_is_told_from_bits_written() {
        for n in 0..=24u32 {
            let mut w = BitWriter::new();
            w.bits(0, n);
            let bytes = w.into_bytes_one_padded();
            let mut r = BitReader::new(&bytes);
            for i in 0..n {
                assert!(!r.only_padding_left(), "{n} bits written, {i} read");
                assert_eq!(r.bit(), Some(false));
            }
            assert!(r.only_padding_left(), "{n} bits written and read");
        }
        // Written ones are not padding while a byte or more is left, nor a 0 after them.
        let mut w = BitWriter::new();
        w.bits(0xff, 8);
        w.bits(0b10, 2);
        let bytes = w.into_bytes_one_padded();
        assert_eq!(bytes, [0xff, 0b1011_1111]);
        let mut r = BitReader::new(&bytes);
        assert!(!r.only_padding_left());
        r.bits(8);
        assert!(!r.only_padding_left());
        r.bits(2);
        assert!(r.only_padding_left());
    }
}
