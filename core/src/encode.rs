//! Writing: one part's bytes, block by block, into its k + m framed shard files.

use crate::erasure::{Codec, ErasureError};
use crate::frame::Framer;
use crate::geometry::Geometry;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeError {
    Erasure(ErasureError),
    /// A block of the wrong length, or more blocks than the part has.
    UnexpectedBlock {
        block: u64,
        expected: u64,
        got: u64,
    },
    /// `finish` before every block was encoded.
    Incomplete {
        encoded: u64,
        blocks: u64,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Erasure(e) => e.fmt(f),
            Self::UnexpectedBlock {
                block,
                expected,
                got,
            } => write!(f, "block {block} should hold {expected} bytes, got {got}"),
            Self::Incomplete { encoded, blocks } => {
                write!(f, "only {encoded} of {blocks} blocks were encoded")
            }
        }
    }
}

impl std::error::Error for EncodeError {}

impl From<ErasureError> for EncodeError {
    fn from(e: ErasureError) -> Self {
        Self::Erasure(e)
    }
}

/// Streams a part's blocks into framed shard-file bytes. Buffers are allocated once and reused,
/// so memory is a few blocks whatever the part's size.
pub struct PartEncoder {
    geometry: Geometry,
    codec: Codec,
    framers: Vec<Framer>,
    pieces: Vec<Vec<u8>>,
    out: Vec<Vec<u8>>,
    next_block: u64,
}

impl PartEncoder {
    pub fn new(geometry: Geometry) -> Result<Self, EncodeError> {
        let n = geometry.total_shards();
        let chunk = geometry.chunk_bytes() as usize;
        let piece = geometry.piece_bytes_for(geometry.block_bytes()) as usize;
        let framed = piece + piece.div_ceil(chunk) * 8 + 8;
        Ok(Self {
            geometry,
            codec: Codec::new(geometry.data_shards(), geometry.parity_shards())?,
            framers: (0..n).map(|i| Framer::new(i, chunk)).collect(),
            pieces: (0..n).map(|_| Vec::with_capacity(piece)).collect(),
            out: (0..n).map(|_| Vec::with_capacity(framed)).collect(),
            next_block: 0,
        })
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// Index of the block `encode_block` expects next, and its length.
    pub fn next_block(&self) -> Option<(u64, u64)> {
        let b = self.next_block;
        (b < self.geometry.block_count()).then(|| (b, self.geometry.block_len(b)))
    }

    /// Encodes the next block. Afterwards `output(i)` holds the framed bytes to append to shard
    /// file i (replacing what the previous call left there).
    pub fn encode_block(&mut self, block: &[u8]) -> Result<(), EncodeError> {
        let b = self.next_block;
        let expected = if b < self.geometry.block_count() {
            self.geometry.block_len(b)
        } else {
            0
        };
        if expected == 0 || block.len() as u64 != expected {
            return Err(EncodeError::UnexpectedBlock {
                block: b,
                expected,
                got: block.len() as u64,
            });
        }
        self.split_into_pieces(block);
        let k = self.geometry.data_shards();
        let (data, parity) = self.pieces.split_at_mut(k);
        let data: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        let mut parity: Vec<&mut [u8]> = parity.iter_mut().map(Vec::as_mut_slice).collect();
        self.codec.encode(&data, &mut parity)?;
        for ((framer, piece), out) in self.framers.iter_mut().zip(&self.pieces).zip(&mut self.out) {
            out.clear();
            framer.push(piece, out);
        }
        self.next_block += 1;
        if self.next_block == self.geometry.block_count() {
            for (framer, out) in self.framers.iter_mut().zip(&mut self.out) {
                framer.finish(out);
            }
        }
        Ok(())
    }

    /// Checks that every block was encoded (the last block's call already closed the files).
    pub fn finish(&self) -> Result<(), EncodeError> {
        let blocks = self.geometry.block_count();
        if self.next_block == blocks {
            Ok(())
        } else {
            Err(EncodeError::Incomplete {
                encoded: self.next_block,
                blocks,
            })
        }
    }

    /// Framed bytes for shard file `shard` produced by the last `encode_block`.
    pub fn output(&self, shard: usize) -> &[u8] {
        &self.out[shard]
    }

    /// Copies the block into k zero-padded data pieces and sizes the parity pieces.
    fn split_into_pieces(&mut self, block: &[u8]) {
        let p = self.geometry.piece_bytes_for(block.len() as u64) as usize;
        let k = self.geometry.data_shards();
        for (j, piece) in self.pieces.iter_mut().enumerate() {
            piece.clear();
            if j < k {
                let start = (j * p).min(block.len());
                let end = ((j + 1) * p).min(block.len());
                piece.extend_from_slice(&block[start..end]);
            }
            piece.resize(p, 0);
        }
    }
}

/// Encodes a whole part in memory: the k + m shard files. For tests, benchmarks and healing small
/// parts; the gateway streams with [`PartEncoder`] instead.
pub fn encode_part(geometry: Geometry, data: &[u8]) -> Result<Vec<Vec<u8>>, EncodeError> {
    let mut enc = PartEncoder::new(geometry)?;
    let mut files = vec![Vec::new(); geometry.total_shards()];
    let mut at = 0usize;
    while let Some((_, len)) = enc.next_block() {
        let end = at + len as usize;
        enc.encode_block(data.get(at..end).unwrap_or_default())?;
        for (i, f) in files.iter_mut().enumerate() {
            f.extend_from_slice(enc.output(i));
        }
        at = end;
    }
    enc.finish()?;
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_files_have_the_computed_length() {
        for size in [1u64, 63, 64, 1000, 4096, 70_000, 200_001] {
            let g = Geometry::new(size, 65_536, 4, 2, 1024).unwrap();
            let data: Vec<u8> = (0..size).map(|i| (i * 31 % 251) as u8).collect();
            let files = encode_part(g, &data).unwrap();
            assert_eq!(files.len(), 6);
            for f in &files {
                assert_eq!(f.len() as u64, g.shard_file_bytes(), "size {size}");
            }
        }
    }

    #[test]
    fn wrong_block_lengths_are_rejected() {
        let g = Geometry::new(100, 64, 2, 1, 64).unwrap();
        let mut enc = PartEncoder::new(g).unwrap();
        assert!(enc.encode_block(&[0; 10]).is_err());
        enc.encode_block(&[0; 64]).unwrap();
        assert!(enc.finish().is_err());
        enc.encode_block(&[0; 36]).unwrap();
        enc.finish().unwrap();
        assert!(enc.encode_block(&[0; 36]).is_err());
    }
}
