//! Scrubbing: checking a whole shard file, as it streams in, against its chunk checksums.
//!
//! The scrub reads every shard file of a part from its node and pushes the bytes through a
//! [`ShardVerifier`] in pieces of whatever size the network delivers. The verifier knows the
//! file's layout from the part's [`Geometry`] (chunk lengths, the last one shorter) and reports
//! every chunk whose checksum does not match, so a scrub can say exactly which chunks rotted. The
//! checksum is the one [`frame`](crate::frame) writes, seeded with the shard and chunk index, so a
//! chunk from the wrong file or offset fails too. Memory is constant: one streaming hasher and an
//! 8-byte checksum buffer, whatever the file's size.

use crate::frame::{chunk_hasher, verify_chunk, CHECKSUM_BYTES};
use crate::geometry::Geometry;
use std::fmt;
use xxhash_rust::xxh3::Xxh3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    /// The shard index is not one of the geometry's k + m shards.
    NoSuchShard { shard: usize, shards: usize },
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSuchShard { shard, shards } => {
                write!(f, "shard {shard} is not one of the part's {shards} shards")
            }
        }
    }
}

impl std::error::Error for VerifyError {}

/// What a verifier found, so far or in the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Chunks received whole and checked (good and bad).
    pub chunks: u64,
    /// Indices of the chunks whose checksum did not match, in order.
    pub bad_chunks: Vec<u64>,
    /// Bytes of the file received (checksums included), up to its expected length.
    pub bytes: u64,
    /// The file ended before its expected length: its last chunks were never checked.
    pub short: bool,
    /// Bytes received beyond the file's expected length (ignored; a well-formed file has none).
    pub excess: u64,
}

/// Checks one shard file's chunks as its bytes arrive, in pieces of any size.
pub struct ShardVerifier {
    shard: usize,
    chunk_bytes: u64,
    data_bytes: u64,
    chunk_count: u64,
    file_bytes: u64,
    /// The chunk being received.
    chunk: u64,
    /// Data bytes of the current chunk received (hashed) so far.
    filled: u64,
    hasher: Xxh3,
    stored: [u8; CHECKSUM_BYTES],
    stored_filled: usize,
    checked: u64,
    bad: Vec<u64>,
    received: u64,
    excess: u64,
}

impl ShardVerifier {
    /// A verifier for shard file `shard` of a part laid out as `geometry`.
    pub fn new(geometry: Geometry, shard: usize) -> Result<Self, VerifyError> {
        if shard >= geometry.total_shards() {
            return Err(VerifyError::NoSuchShard {
                shard,
                shards: geometry.total_shards(),
            });
        }
        Ok(Self {
            shard,
            chunk_bytes: geometry.chunk_bytes(),
            data_bytes: geometry.shard_data_bytes(),
            chunk_count: geometry.chunk_count(),
            file_bytes: geometry.shard_file_bytes(),
            chunk: 0,
            filled: 0,
            hasher: chunk_hasher(shard, 0),
            stored: [0; CHECKSUM_BYTES],
            stored_filled: 0,
            checked: 0,
            bad: Vec::new(),
            received: 0,
            excess: 0,
        })
    }

    /// The file's expected length, checksums included.
    pub fn file_bytes(&self) -> u64 {
        self.file_bytes
    }

    /// Chunks checked so far.
    pub fn chunks(&self) -> u64 {
        self.checked
    }

    /// Bad chunk indices found so far.
    pub fn bad_chunks(&self) -> &[u64] {
        &self.bad
    }

    /// Bytes received so far (up to the expected length).
    pub fn bytes(&self) -> u64 {
        self.received
    }

    /// Bytes received beyond the expected length so far.
    pub fn excess(&self) -> u64 {
        self.excess
    }

    /// True once the whole expected file has been received.
    pub fn is_complete(&self) -> bool {
        self.checked == self.chunk_count
    }

    /// Data bytes of chunk `c` (the last one may be shorter).
    fn chunk_len(&self, c: u64) -> u64 {
        (self.data_bytes - c * self.chunk_bytes).min(self.chunk_bytes)
    }

    /// The next bytes of the file, in order.
    pub fn push(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.chunk >= self.chunk_count {
                self.excess += data.len() as u64;
                return;
            }
            let len = self.chunk_len(self.chunk);
            let framed = len as usize + CHECKSUM_BYTES;
            if self.filled == 0 && self.stored_filled == 0 && data.len() >= framed {
                // A whole framed chunk at once: one-shot hashing is faster than streaming.
                let (bytes, rest) = data.split_at(len as usize);
                let ok = verify_chunk(self.shard, self.chunk, bytes, &rest[..CHECKSUM_BYTES]);
                self.received += framed as u64;
                self.checked_chunk(ok);
                data = &rest[CHECKSUM_BYTES..];
            } else if self.filled < len {
                let take = ((len - self.filled) as usize).min(data.len());
                let (now, rest) = data.split_at(take);
                self.hasher.update(now);
                self.filled += take as u64;
                self.received += take as u64;
                data = rest;
            } else {
                let take = (CHECKSUM_BYTES - self.stored_filled).min(data.len());
                let (now, rest) = data.split_at(take);
                self.stored[self.stored_filled..self.stored_filled + take].copy_from_slice(now);
                self.stored_filled += take;
                self.received += take as u64;
                data = rest;
                if self.stored_filled == CHECKSUM_BYTES {
                    let ok = self.hasher.digest().to_le_bytes() == self.stored;
                    self.checked_chunk(ok);
                }
            }
        }
    }

    fn checked_chunk(&mut self, ok: bool) {
        if !ok {
            self.bad.push(self.chunk);
        }
        self.checked += 1;
        self.chunk += 1;
        self.filled = 0;
        self.stored_filled = 0;
        if self.chunk < self.chunk_count {
            self.hasher = chunk_hasher(self.shard, self.chunk);
        }
    }

    /// What was found. A file that ended before its expected length is `short`.
    pub fn report(&self) -> VerifyReport {
        VerifyReport {
            chunks: self.checked,
            bad_chunks: self.bad.clone(),
            bytes: self.received,
            short: !self.is_complete(),
            excess: self.excess,
        }
    }
}

/// Verifies a whole shard file in memory (tests and tools; the worker streams).
pub fn verify_shard_file(
    geometry: Geometry,
    shard: usize,
    file: &[u8],
) -> Result<VerifyReport, VerifyError> {
    let mut v = ShardVerifier::new(geometry, shard)?;
    v.push(file);
    Ok(v.report())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::encode_part;
    use crate::frame::Framer;
    use proptest::prelude::*;

    fn framed_file(g: &Geometry, shard: usize, seed: u64) -> Vec<u8> {
        let data = crate::workload::pseudo_random_bytes(g.shard_data_bytes() as usize, seed);
        let mut framer = Framer::new(shard, g.chunk_bytes() as usize);
        let mut out = Vec::new();
        framer.push(&data, &mut out);
        framer.finish(&mut out);
        assert_eq!(out.len() as u64, g.shard_file_bytes());
        out
    }

    /// The chunk physical offset `at` belongs to (its checksum bytes included).
    fn chunk_of(g: &Geometry, at: u64) -> u64 {
        at / (g.chunk_bytes() + CHECKSUM_BYTES as u64)
    }

    fn push_in_steps(v: &mut ShardVerifier, file: &[u8], steps: &[usize]) {
        let mut at = 0;
        let mut i = 0;
        while at < file.len() {
            let step = steps
                .get(i % steps.len().max(1))
                .copied()
                .unwrap_or(file.len())
                .max(1);
            let end = (at + step).min(file.len());
            v.push(&file[at..end]);
            at = end;
            i += 1;
        }
    }

    fn geometry() -> impl Strategy<Value = Geometry> {
        (0u64..40_000, 1u64..20_000, 1usize..6, 1usize..4, 1u64..6).prop_map(
            |(size, block, k, m, chunk_cols)| {
                Geometry::new(size, block, k, m, chunk_cols * 64).unwrap()
            },
        )
    }

    #[test]
    fn encoder_output_verifies_clean() {
        for size in [1u64, 1000, 70_000, 300_001] {
            let g = Geometry::new(size, 65_536, 4, 2, 1024).unwrap();
            let data = crate::workload::pseudo_random_bytes(size as usize, size);
            for (shard, file) in encode_part(g, &data).unwrap().iter().enumerate() {
                let r = verify_shard_file(g, shard, file).unwrap();
                assert_eq!(r.bad_chunks, Vec::<u64>::new());
                assert_eq!(r.chunks, g.chunk_count());
                assert_eq!(r.bytes, g.shard_file_bytes());
                assert!(!r.short);
                assert_eq!(r.excess, 0);
            }
        }
    }

    #[test]
    fn a_file_of_another_shard_fails_everywhere() {
        let g = Geometry::new(100_000, 65_536, 4, 2, 1024).unwrap();
        let file = framed_file(&g, 1, 9);
        let r = verify_shard_file(g, 2, &file).unwrap();
        assert_eq!(r.bad_chunks, (0..g.chunk_count()).collect::<Vec<_>>());
    }

    #[test]
    fn empty_parts_and_bad_shards() {
        let g = Geometry::new(0, 65_536, 4, 2, 1024).unwrap();
        let r = verify_shard_file(g, 5, &[]).unwrap();
        assert_eq!((r.chunks, r.short, r.excess), (0, false, 0));
        assert!(ShardVerifier::new(g, 6).is_err());
        let r = verify_shard_file(g, 0, &[1, 2, 3]).unwrap();
        assert_eq!(r.excess, 3);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn any_flipped_bit_is_found_at_exactly_its_chunk(
            g in geometry(), shard_pick in any::<prop::sample::Index>(), seed in any::<u64>(),
            flips in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..5),
            steps in proptest::collection::vec(1usize..3000, 0..5),
        ) {
            let shard = shard_pick.index(g.total_shards());
            let mut file = framed_file(&g, shard, seed);
            prop_assume!(!file.is_empty());
            let mut expected = std::collections::BTreeSet::new();
            let mut flipped = std::collections::BTreeSet::new();
            for (at, bit) in flips {
                let i = at.index(file.len());
                // Two flips of the same bit cancel out: flip each position at most once.
                if flipped.insert(i) {
                    file[i] ^= 1 << bit;
                    expected.insert(chunk_of(&g, i as u64));
                }
            }
            let mut v = ShardVerifier::new(g, shard).unwrap();
            push_in_steps(&mut v, &file, &steps);
            let r = v.report();
            prop_assert_eq!(r.bad_chunks, expected.into_iter().collect::<Vec<_>>());
            prop_assert_eq!(r.chunks, g.chunk_count());
            prop_assert_eq!(r.bytes, g.shard_file_bytes());
            prop_assert!(!r.short);
        }

        #[test]
        fn any_push_sizes_give_the_same_answer(
            g in geometry(), seed in any::<u64>(),
            rot in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
            steps in proptest::collection::vec(1usize..5000, 1..8),
            cut in any::<prop::sample::Index>(), truncate in any::<bool>(),
        ) {
            let shard = g.total_shards() - 1;
            let mut file = framed_file(&g, shard, seed);
            if !file.is_empty() {
                for at in rot {
                    let i = at.index(file.len());
                    file[i] = file[i].wrapping_add(1);
                }
            }
            if truncate && !file.is_empty() {
                file.truncate(cut.index(file.len()));
            }
            let whole = verify_shard_file(g, shard, &file).unwrap();
            let mut v = ShardVerifier::new(g, shard).unwrap();
            push_in_steps(&mut v, &file, &steps);
            prop_assert_eq!(&v.report(), &whole);
            let mut bytewise = ShardVerifier::new(g, shard).unwrap();
            for b in &file {
                bytewise.push(std::slice::from_ref(b));
            }
            prop_assert_eq!(&bytewise.report(), &whole);
            // A cut file is short exactly when it lost bytes, and only its whole chunks count.
            let full = g.shard_file_bytes();
            prop_assert_eq!(whole.short, (file.len() as u64) < full);
            prop_assert_eq!(whole.bytes, file.len() as u64);
            let whole_chunks = (0..g.chunk_count())
                .filter(|&c| g.chunk_physical_offset(c) + g.chunk_len(c) + CHECKSUM_BYTES as u64 <= file.len() as u64)
                .count() as u64;
            prop_assert_eq!(whole.chunks, whole_chunks);
        }
    }
}
