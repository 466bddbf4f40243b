//! Shard-file framing: every chunk of a shard file's bytes is followed by an 8-byte checksum.
//!
//! The checksum is xxh3-64 (fast in WASM with simd128) seeded with the shard index and the chunk's
//! index, so a chunk served from the wrong place or the wrong shard fails like a rotten one.

use xxhash_rust::xxh3::{xxh3_64_with_seed, Xxh3};

/// Bytes of the checksum after each chunk (little-endian u64).
pub const CHECKSUM_BYTES: usize = 8;

fn seed(shard: usize, chunk: u64) -> u64 {
    ((shard as u64) << 48) ^ chunk
}

/// Checksum of chunk `chunk` of shard file `shard`.
pub fn chunk_checksum(shard: usize, chunk: u64, bytes: &[u8]) -> u64 {
    xxh3_64_with_seed(bytes, seed(shard, chunk))
}

/// A streaming hasher for chunk `chunk` of shard file `shard` (the same checksum, fed in pieces).
pub(crate) fn chunk_hasher(shard: usize, chunk: u64) -> Xxh3 {
    Xxh3::with_seed(seed(shard, chunk))
}

/// True when `stored` (the 8 bytes after the chunk) matches the chunk's bytes.
pub fn verify_chunk(shard: usize, chunk: u64, bytes: &[u8], stored: &[u8]) -> bool {
    stored.len() == CHECKSUM_BYTES
        && chunk_checksum(shard, chunk, bytes).to_le_bytes().as_slice() == stored
}

/// Frames one shard file's logical bytes as they stream in, in pieces of any size.
pub struct Framer {
    shard: usize,
    chunk_bytes: usize,
    chunk: u64,
    filled: usize,
    hasher: Xxh3,
}

impl Framer {
    /// `chunk_bytes` must match the geometry the file is read back with.
    pub fn new(shard: usize, chunk_bytes: usize) -> Self {
        Self {
            shard,
            chunk_bytes,
            chunk: 0,
            filled: 0,
            hasher: Xxh3::with_seed(seed(shard, 0)),
        }
    }

    /// Appends `data` to `out`, inserting a checksum after every completed chunk.
    pub fn push(&mut self, mut data: &[u8], out: &mut Vec<u8>) {
        while !data.is_empty() {
            let take = (self.chunk_bytes - self.filled).min(data.len());
            let (now, rest) = data.split_at(take);
            if self.filled == 0 && take == self.chunk_bytes {
                // A whole chunk at once: one-shot hashing is faster than streaming.
                out.extend_from_slice(now);
                let sum = chunk_checksum(self.shard, self.chunk, now);
                out.extend_from_slice(&sum.to_le_bytes());
                self.next_chunk();
            } else {
                self.hasher.update(now);
                out.extend_from_slice(now);
                self.filled += take;
                if self.filled == self.chunk_bytes {
                    self.seal(out);
                }
            }
            data = rest;
        }
    }

    /// Closes the last, shorter chunk (if any). The framer can then be dropped.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        if self.filled > 0 {
            self.seal(out);
        }
    }

    fn seal(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.hasher.digest().to_le_bytes());
        self.next_chunk();
    }

    fn next_chunk(&mut self) {
        self.chunk += 1;
        self.filled = 0;
        self.hasher = Xxh3::with_seed(seed(self.shard, self.chunk));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Splits a framed file back into its chunks, checking every checksum.
    fn unframe(shard: usize, chunk_bytes: usize, framed: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        for (c, chunk) in framed.chunks(chunk_bytes + CHECKSUM_BYTES).enumerate() {
            let (data, sum) = chunk.split_at(chunk.len().checked_sub(CHECKSUM_BYTES)?);
            if !verify_chunk(shard, c as u64, data, sum) {
                return None;
            }
            out.extend_from_slice(data);
        }
        Some(out)
    }

    proptest! {
        #[test]
        fn framing_round_trips_whatever_the_pieces(
            data in proptest::collection::vec(any::<u8>(), 0..5000),
            cuts in proptest::collection::vec(0usize..5000, 0..6),
            chunk_cols in 1usize..8, shard in 0usize..8,
        ) {
            let chunk_bytes = chunk_cols * 64;
            let mut framer = Framer::new(shard, chunk_bytes);
            let mut framed = Vec::new();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(data.len())).collect();
            cuts.sort_unstable();
            let mut at = 0;
            for cut in cuts.into_iter().chain([data.len()]) {
                framer.push(&data[at..cut], &mut framed);
                at = cut;
            }
            framer.finish(&mut framed);
            let chunks = data.len().div_ceil(chunk_bytes);
            prop_assert_eq!(framed.len(), data.len() + chunks * CHECKSUM_BYTES);
            prop_assert_eq!(unframe(shard, chunk_bytes, &framed), Some(data));
        }

        #[test]
        fn any_flipped_byte_is_detected(
            data in proptest::collection::vec(any::<u8>(), 1..3000),
            at in any::<prop::sample::Index>(), bit in 0u8..8,
        ) {
            let mut framer = Framer::new(3, 256);
            let mut framed = Vec::new();
            framer.push(&data, &mut framed);
            framer.finish(&mut framed);
            let i = at.index(framed.len());
            framed[i] ^= 1 << bit;
            prop_assert_eq!(unframe(3, 256, &framed), None);
        }
    }

    #[test]
    fn chunks_are_bound_to_their_shard_and_position() {
        let data = [7u8; 64];
        let sum = chunk_checksum(1, 0, &data).to_le_bytes();
        assert!(verify_chunk(1, 0, &data, &sum));
        assert!(!verify_chunk(2, 0, &data, &sum));
        assert!(!verify_chunk(1, 1, &data, &sum));
    }
}
