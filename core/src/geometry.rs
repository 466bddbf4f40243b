//! How one object part maps to blocks, pieces and shard files (docs/storage-format.md).
//!
//! ```text
//! part (size S) -> blocks of B bytes (the last shorter)
//! block b       -> k data pieces (contiguous slices of the block, zero-padded) + m parity pieces
//! shard file i  =  piece_i(b0) | piece_i(b1) | ...  framed as [chunk][xxh3] [chunk][xxh3] ...
//! ```
//! A piece is `ceil(len / k)` rounded up to the 64-byte column; only the last block's pieces can be
//! shorter. Offsets in the concatenated pieces are "logical"; offsets in the framed file "physical".

use crate::erasure::{self, ErasureError, COLUMN};
use crate::frame::CHECKSUM_BYTES;
use std::fmt;
use std::ops::Range;

/// Largest block and chunk we accept: keeps per-request memory bounded and offsets in u32 range.
pub const MAX_BLOCK_BYTES: u64 = 64 << 20;
pub const MAX_CHUNK_BYTES: u64 = 16 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GeometryError {
    Erasure(ErasureError),
    /// Block size must be 1..=MAX_BLOCK_BYTES.
    InvalidBlockBytes(u64),
    /// Chunk size must be a non-zero multiple of 64 up to MAX_CHUNK_BYTES.
    InvalidChunkBytes(u64),
}

impl fmt::Display for GeometryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Erasure(e) => e.fmt(f),
            Self::InvalidBlockBytes(b) => {
                write!(f, "block size {b} must be between 1 and {MAX_BLOCK_BYTES} bytes")
            }
            Self::InvalidChunkBytes(c) => write!(
                f,
                "chunk size {c} must be a non-zero multiple of {COLUMN} up to {MAX_CHUNK_BYTES} bytes"
            ),
        }
    }
}

impl std::error::Error for GeometryError {}

impl From<ErasureError> for GeometryError {
    fn from(e: ErasureError) -> Self {
        Self::Erasure(e)
    }
}

/// The layout of one erasure-coded object part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    size: u64,
    block_bytes: u64,
    k: usize,
    m: usize,
    chunk_bytes: u64,
}

impl Geometry {
    pub fn new(
        size: u64,
        block_bytes: u64,
        k: usize,
        m: usize,
        chunk_bytes: u64,
    ) -> Result<Self, GeometryError> {
        erasure::validate_counts(k, m)?;
        if block_bytes == 0 || block_bytes > MAX_BLOCK_BYTES {
            return Err(GeometryError::InvalidBlockBytes(block_bytes));
        }
        let chunk_ok =
            chunk_bytes > 0 && chunk_bytes <= MAX_CHUNK_BYTES && chunk_bytes % COLUMN as u64 == 0;
        if !chunk_ok {
            return Err(GeometryError::InvalidChunkBytes(chunk_bytes));
        }
        Ok(Self {
            size,
            block_bytes,
            k,
            m,
            chunk_bytes,
        })
    }

    pub fn size(&self) -> u64 {
        self.size
    }
    pub fn block_bytes(&self) -> u64 {
        self.block_bytes
    }
    pub fn data_shards(&self) -> usize {
        self.k
    }
    pub fn parity_shards(&self) -> usize {
        self.m
    }
    pub fn total_shards(&self) -> usize {
        self.k + self.m
    }
    pub fn chunk_bytes(&self) -> u64 {
        self.chunk_bytes
    }

    pub fn block_count(&self) -> u64 {
        self.size.div_ceil(self.block_bytes)
    }

    /// Object bytes in block `b` (the last block may be shorter).
    pub fn block_len(&self, b: u64) -> u64 {
        self.size
            .saturating_sub(b * self.block_bytes)
            .min(self.block_bytes)
    }

    /// Object offset where block `b` starts.
    pub fn block_start(&self, b: u64) -> u64 {
        b * self.block_bytes
    }

    /// Bytes of each piece of a block holding `len` object bytes.
    pub fn piece_bytes_for(&self, len: u64) -> u64 {
        len.div_ceil(self.k as u64).next_multiple_of(COLUMN as u64)
    }

    /// Bytes of each of block `b`'s pieces.
    pub fn piece_bytes(&self, b: u64) -> u64 {
        self.piece_bytes_for(self.block_len(b))
    }

    /// Logical offset of block `b`'s piece in every shard file (all blocks before it are full).
    pub fn piece_offset(&self, b: u64) -> u64 {
        b * self.piece_bytes_for(self.block_bytes)
    }

    /// Object bytes of block `b` held by data piece `j`, relative to the piece's start.
    pub fn data_in_piece(&self, b: u64, j: usize) -> Range<u64> {
        let p = self.piece_bytes(b);
        let len = self.block_len(b);
        let start = (j as u64 * p).min(len);
        let end = ((j as u64 + 1) * p).min(len);
        0..end - start
    }

    /// Logical length of every shard file: the concatenation of its pieces.
    pub fn shard_data_bytes(&self) -> u64 {
        match self.block_count() {
            0 => 0,
            n => self.piece_offset(n - 1) + self.piece_bytes(n - 1),
        }
    }

    pub fn chunk_count(&self) -> u64 {
        self.shard_data_bytes().div_ceil(self.chunk_bytes)
    }

    /// Data bytes of chunk `c` (the last chunk may be shorter).
    pub fn chunk_len(&self, c: u64) -> u64 {
        (self.shard_data_bytes() - c * self.chunk_bytes).min(self.chunk_bytes)
    }

    /// Physical length of every shard file, checksums included: what a PUT streams to each node.
    pub fn shard_file_bytes(&self) -> u64 {
        self.shard_data_bytes() + self.chunk_count() * CHECKSUM_BYTES as u64
    }

    /// Physical offset of the start of chunk `c`.
    pub fn chunk_physical_offset(&self, c: u64) -> u64 {
        c * (self.chunk_bytes + CHECKSUM_BYTES as u64)
    }

    /// Widens a logical range to whole chunks and returns (logical, physical) ranges to fetch.
    pub fn chunk_aligned(&self, logical: Range<u64>) -> (Range<u64>, Range<u64>) {
        let first = logical.start / self.chunk_bytes;
        let last = logical
            .end
            .div_ceil(self.chunk_bytes)
            .min(self.chunk_count());
        let start = first * self.chunk_bytes;
        let end = (last * self.chunk_bytes).min(self.shard_data_bytes());
        let phys_end = if last == 0 {
            0
        } else {
            self.chunk_physical_offset(last - 1) + self.chunk_len(last - 1) + CHECKSUM_BYTES as u64
        };
        (start..end, self.chunk_physical_offset(first)..phys_end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn default_geometry_numbers() {
        let g = Geometry::new(10 * MIB + 5, MIB, 4, 2, 16 << 10).unwrap();
        assert_eq!(g.block_count(), 11);
        assert_eq!(g.piece_bytes(0), 256 << 10);
        assert_eq!(g.block_len(10), 5);
        assert_eq!(g.piece_bytes(10), 64);
        assert_eq!(g.shard_data_bytes(), 10 * (256 << 10) + 64);
        assert_eq!(g.chunk_count(), 10 * 16 + 1);
        assert_eq!(g.shard_file_bytes(), g.shard_data_bytes() + 161 * 8);
        assert_eq!(g.data_in_piece(10, 0), 0..5);
        assert_eq!(g.data_in_piece(10, 1), 0..0);
    }

    #[test]
    fn odd_k_rounds_pieces_to_columns() {
        let g = Geometry::new(MIB, MIB, 6, 3, 16 << 10).unwrap();
        assert_eq!(g.piece_bytes(0), 174_784);
        assert_eq!(g.data_in_piece(0, 5), 0..MIB - 5 * 174_784);
    }

    #[test]
    fn empty_part_has_empty_shard_files() {
        let g = Geometry::new(0, MIB, 4, 2, 16 << 10).unwrap();
        assert_eq!(g.block_count(), 0);
        assert_eq!(g.shard_file_bytes(), 0);
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(Geometry::new(1, 0, 4, 2, 64).is_err());
        assert!(Geometry::new(1, MIB, 4, 2, 100).is_err());
        assert!(Geometry::new(1, MIB, 0, 2, 64).is_err());
        assert!(Geometry::new(1, MAX_BLOCK_BYTES + 1, 4, 2, 64).is_err());
    }

    #[test]
    fn chunk_alignment_covers_the_last_short_chunk() {
        let g = Geometry::new(1000, 1000, 2, 1, 128).unwrap();
        // piece = ceil(500/64)*64 = 512; 4 chunks of 128.
        assert_eq!(g.shard_data_bytes(), 512);
        assert_eq!(g.chunk_aligned(130..300), (128..384, 136..408));
        let g = Geometry::new(1000, 1000, 2, 1, 192).unwrap();
        // chunks 192,192,128
        assert_eq!(g.chunk_aligned(400..512), (384..512, 400..536));
    }
}
