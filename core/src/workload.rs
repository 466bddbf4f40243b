//! Benchmark workloads shared by the native benchmark binary and the WASM build, so both engines
//! run exactly the same work, and an engine cross-check that tests run in every runtime (natively
//! in `cargo test`, in WASM through the Node and workerd core suite). Pure: the caller owns the clock.

use crate::erasure::{Codec, EngineKind, ErasureError, COLUMN};
use std::ops::Range;

/// Deterministic pseudo-random bytes (xorshift64), for workloads and tests.
pub fn pseudo_random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed ^ 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Chunk size of the checksum workload: the default `SHARDGATE_CHUNK_BYTES`.
pub const CHECKSUM_CHUNK: usize = 16 << 10;

/// What a [`Workload`] repeats over one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Encode k data pieces into m parity pieces.
    Encode,
    /// Rebuild m lost data pieces from the k survivors (the worst degraded read).
    Decode,
    /// The per-chunk checksum of shard files (`frame::chunk_checksum`, xxh3) over the block in
    /// [`CHECKSUM_CHUNK`] chunks.
    Checksum,
    /// A plain copy of the block into another buffer: the memory-bandwidth yardstick.
    Copy,
}

impl Op {
    pub fn from_name(name: &str) -> Option<Op> {
        match name {
            "encode" => Some(Op::Encode),
            "decode" => Some(Op::Decode),
            "checksum" => Some(Op::Checksum),
            "copy" => Some(Op::Copy),
            _ => None,
        }
    }
}

/// One operation over one block, repeatable.
pub struct Workload {
    codec: Codec,
    op: Op,
    pieces: Vec<Vec<u8>>,
    scratch: Vec<Vec<u8>>,
}

impl Workload {
    /// Erasure ops code the block as k + m pieces on `engine`; checksum and copy use only the
    /// block (as one piece) and ignore the engine.
    pub fn new(
        k: usize,
        m: usize,
        block_bytes: usize,
        op: Op,
        engine: EngineKind,
    ) -> Result<Self, ErasureError> {
        let mut codec = Codec::with_engine(k, m, engine)?;
        if matches!(op, Op::Checksum | Op::Copy) {
            return Ok(Self {
                codec,
                op,
                pieces: vec![pseudo_random_bytes(block_bytes, 1)],
                scratch: vec![vec![0; block_bytes]],
            });
        }
        let piece = block_bytes.div_ceil(k).next_multiple_of(COLUMN);
        let mut pieces: Vec<Vec<u8>> = (0..k + m)
            .map(|i| pseudo_random_bytes(piece, i as u64))
            .collect();
        {
            let (data, parity) = pieces.split_at_mut(k);
            let data: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
            let mut parity: Vec<&mut [u8]> = parity.iter_mut().map(Vec::as_mut_slice).collect();
            codec.encode(&data, &mut parity)?;
        }
        let scratch = (0..m).map(|_| vec![0u8; piece]).collect();
        Ok(Self {
            codec,
            op,
            pieces,
            scratch,
        })
    }

    /// Runs the operation `iterations` times; returns a value derived from the output so the
    /// work cannot be optimised away.
    pub fn run(&mut self, iterations: u32) -> Result<u32, ErasureError> {
        let mut sink = 0u32;
        for _ in 0..iterations {
            sink = sink.wrapping_add(match self.op {
                Op::Encode => self.encode()?,
                Op::Decode => self.rebuild()?,
                Op::Checksum => self.checksum(),
                Op::Copy => self.copy(),
            });
        }
        Ok(sink)
    }

    fn encode(&mut self) -> Result<u32, ErasureError> {
        let k = self.codec.data_shards();
        let data: Vec<&[u8]> = self.pieces[..k].iter().map(Vec::as_slice).collect();
        let mut parity: Vec<&mut [u8]> = self.scratch.iter_mut().map(Vec::as_mut_slice).collect();
        self.codec.encode(&data, &mut parity)?;
        Ok(u32::from(self.scratch[0][0]))
    }

    fn rebuild(&mut self) -> Result<u32, ErasureError> {
        let m = self.codec.parity_shards();
        let present: Vec<Option<&[u8]>> = self
            .pieces
            .iter()
            .enumerate()
            .map(|(i, p)| (i >= m).then_some(p.as_slice()))
            .collect();
        let mut out: Vec<Option<&mut [u8]>> = (0..self.pieces.len()).map(|_| None).collect();
        for (slot, buf) in out.iter_mut().zip(self.scratch.iter_mut()) {
            *slot = Some(buf.as_mut_slice());
        }
        self.codec.reconstruct(&present, &mut out)?;
        Ok(u32::from(self.scratch[0][0]))
    }

    fn checksum(&self) -> u32 {
        self.pieces[0]
            .chunks(CHECKSUM_CHUNK)
            .enumerate()
            .fold(0, |acc, (i, chunk)| {
                acc ^ crate::frame::chunk_checksum(0, i as u64, chunk) as u32
            })
    }

    fn copy(&mut self) -> u32 {
        self.scratch[0].copy_from_slice(&self.pieces[0]);
        u32::from(self.scratch[0][self.scratch[0].len() / 2])
    }
}

/// Codes random pieces with engines `a` and `b` and checks they agree bit for bit: the parity,
/// then every piece in `lost` rebuilt (over the column `window`) from the others, which must
/// also equal the original. `Err` says what differed first.
#[allow(clippy::too_many_arguments)]
pub fn cross_check(
    k: usize,
    m: usize,
    piece_bytes: usize,
    seed: u64,
    lost: &[usize],
    window: Range<usize>,
    a: EngineKind,
    b: EngineKind,
) -> Result<(), String> {
    let err = |e: ErasureError| e.to_string();
    if lost.iter().any(|&i| i >= k + m) || window.start > window.end || window.end > piece_bytes {
        return Err("lost piece or window out of range".into());
    }
    let mut codec_a = Codec::with_engine(k, m, a).map_err(err)?;
    let mut codec_b = Codec::with_engine(k, m, b).map_err(err)?;
    let data: Vec<Vec<u8>> = (0..k as u64)
        .map(|i| pseudo_random_bytes(piece_bytes, seed.wrapping_mul(131).wrapping_add(i)))
        .collect();
    let encode = |codec: &mut Codec| -> Result<Vec<Vec<u8>>, String> {
        let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        let mut parity = vec![vec![0u8; piece_bytes]; m];
        let mut prefs: Vec<&mut [u8]> = parity.iter_mut().map(Vec::as_mut_slice).collect();
        codec.encode(&refs, &mut prefs).map_err(err)?;
        Ok(parity)
    };
    let parity = encode(&mut codec_a)?;
    let parity_b = encode(&mut codec_b)?;
    if let Some(j) = (0..m).find(|&j| parity[j] != parity_b[j]) {
        return Err(format!(
            "{a:?} and {b:?} encode parity piece {j} differently"
        ));
    }
    let all: Vec<&Vec<u8>> = data.iter().chain(&parity).collect();
    let present: Vec<Option<&[u8]>> = all
        .iter()
        .enumerate()
        .map(|(i, p)| (!lost.contains(&i)).then(|| &p[window.clone()]))
        .collect();
    let rebuild = |codec: &mut Codec| -> Result<Vec<Vec<u8>>, String> {
        let mut bufs: Vec<Vec<u8>> = lost.iter().map(|_| vec![0; window.len()]).collect();
        let mut out: Vec<Option<&mut [u8]>> = (0..k + m).map(|_| None).collect();
        for (buf, &i) in bufs.iter_mut().zip(lost) {
            out[i] = Some(buf.as_mut_slice());
        }
        codec.reconstruct(&present, &mut out).map_err(err)?;
        Ok(bufs)
    };
    let rebuilt_a = rebuild(&mut codec_a)?;
    let rebuilt_b = rebuild(&mut codec_b)?;
    for ((ra, rb), &i) in rebuilt_a.iter().zip(&rebuilt_b).zip(lost) {
        if ra != rb {
            return Err(format!("{a:?} and {b:?} rebuild piece {i} differently"));
        }
        if ra[..] != all[i][window.clone()] {
            return Err(format!("piece {i} rebuilt wrong"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebuild_restores_the_lost_pieces() {
        for engine in [EngineKind::Native, EngineKind::Simd128, EngineKind::Scalar] {
            let mut w = Workload::new(4, 2, 4096, Op::Decode, engine).unwrap();
            w.run(1).unwrap();
            assert_eq!(w.scratch[0], w.pieces[0]);
            assert_eq!(w.scratch[1], w.pieces[1]);
        }
    }

    #[test]
    fn checksum_and_copy_run() {
        let mut c = Workload::new(4, 2, 100_000, Op::Copy, EngineKind::PLATFORM).unwrap();
        c.run(1).unwrap();
        assert_eq!(c.scratch[0], c.pieces[0]);
        let mut h = Workload::new(4, 2, 100_000, Op::Checksum, EngineKind::PLATFORM).unwrap();
        let once = h.run(1).unwrap();
        assert_eq!(h.run(1).unwrap(), once);
    }

    #[test]
    fn cross_check_reports_bad_arguments() {
        let r = cross_check(
            4,
            2,
            128,
            1,
            &[6],
            0..64,
            EngineKind::Native,
            EngineKind::Scalar,
        );
        assert!(r.is_err());
    }
}
