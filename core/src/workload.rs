//! Benchmark workloads shared by the native benchmark binary and the WASM build, so both engines
//! run exactly the same work. Pure: the caller owns the clock.

use crate::erasure::{Codec, ErasureError};

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

/// One erasure operation over one block, repeatable: encode k pieces, or rebuild m lost data
/// pieces from the k survivors (the worst degraded read).
pub struct Workload {
    codec: Codec,
    decode: bool,
    pieces: Vec<Vec<u8>>,
    scratch: Vec<Vec<u8>>,
}

impl Workload {
    pub fn new(k: usize, m: usize, block_bytes: usize, decode: bool) -> Result<Self, ErasureError> {
        let piece = block_bytes
            .div_ceil(k)
            .next_multiple_of(crate::erasure::COLUMN);
        let mut pieces: Vec<Vec<u8>> = (0..k + m)
            .map(|i| pseudo_random_bytes(piece, i as u64))
            .collect();
        let mut codec = Codec::new(k, m)?;
        {
            let (data, parity) = pieces.split_at_mut(k);
            let data: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
            let mut parity: Vec<&mut [u8]> = parity.iter_mut().map(Vec::as_mut_slice).collect();
            codec.encode(&data, &mut parity)?;
        }
        let scratch = (0..m).map(|_| vec![0u8; piece]).collect();
        Ok(Self {
            codec,
            decode,
            pieces,
            scratch,
        })
    }

    /// Runs the operation `iterations` times; returns a value derived from the output so the
    /// work cannot be optimised away.
    pub fn run(&mut self, iterations: u32) -> Result<u32, ErasureError> {
        let mut sink = 0u32;
        for _ in 0..iterations {
            sink = sink.wrapping_add(if self.decode {
                self.rebuild()?
            } else {
                self.encode()?
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebuild_restores_the_lost_pieces() {
        let mut w = Workload::new(4, 2, 4096, true).unwrap();
        w.run(1).unwrap();
        assert_eq!(w.scratch[0], w.pieces[0]);
        assert_eq!(w.scratch[1], w.pieces[1]);
    }
}
