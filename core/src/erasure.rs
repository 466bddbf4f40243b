//! Reed-Solomon erasure coding of one block's pieces (`reed-solomon-simd`, GF(2^16)).
//!
//! The code is systematic: data pieces are the block's bytes verbatim, parity pieces are computed.
//! It works on 64-byte columns independently, so any 64-byte-aligned window of k surviving pieces
//! reconstructs the same window of the missing ones; a small degraded read needs only that window.

use reed_solomon_simd::{ReedSolomonDecoder, ReedSolomonEncoder};
use std::fmt;

/// Column width of the code: piece sizes and reconstruction windows are multiples of it.
pub const COLUMN: usize = 64;
/// Largest k and m we accept (shard indices fit a byte; placement stays small).
pub const MAX_SHARDS: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErasureError {
    /// k or m outside 1..=MAX_SHARDS, or a combination the codec does not support.
    InvalidShardCounts { k: usize, m: usize },
    /// Pieces must be non-empty multiples of [`COLUMN`] bytes, all the same length.
    InvalidPieceSize { bytes: usize },
    /// The slices passed do not match k (data), m (parity) or k + m (all pieces).
    WrongPieceCount { expected: usize, got: usize },
    /// Fewer than k pieces survive: the block cannot be rebuilt.
    TooManyMissing { available: usize, k: usize },
}

impl fmt::Display for ErasureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidShardCounts { k, m } => write!(
                f,
                "unsupported erasure geometry {k}+{m}: k and m must be 1..={MAX_SHARDS}"
            ),
            Self::InvalidPieceSize { bytes } => write!(
                f,
                "piece size {bytes} is not a non-zero multiple of {COLUMN} bytes (or pieces differ in size)"
            ),
            Self::WrongPieceCount { expected, got } => {
                write!(f, "expected {expected} pieces, got {got}")
            }
            Self::TooManyMissing { available, k } => write!(
                f,
                "only {available} pieces available, {k} are needed to reconstruct"
            ),
        }
    }
}

impl std::error::Error for ErasureError {}

/// Checks k and m against our limits and the codec's.
pub fn validate_counts(k: usize, m: usize) -> Result<(), ErasureError> {
    let in_range = (1..=MAX_SHARDS).contains(&k) && (1..=MAX_SHARDS).contains(&m);
    if in_range && ReedSolomonEncoder::supports(k, m) {
        Ok(())
    } else {
        Err(ErasureError::InvalidShardCounts { k, m })
    }
}

fn validate_len(bytes: usize) -> Result<(), ErasureError> {
    if bytes == 0 || bytes % COLUMN != 0 {
        Err(ErasureError::InvalidPieceSize { bytes })
    } else {
        Ok(())
    }
}

fn same_len(mut lens: impl Iterator<Item = usize>) -> Result<usize, ErasureError> {
    let first = lens.next().unwrap_or(0);
    validate_len(first)?;
    match lens.find(|&l| l != first) {
        Some(_) => Err(ErasureError::InvalidPieceSize { bytes: first }),
        None => Ok(first),
    }
}

/// An encoder/decoder for one k + m geometry. Keeps the codec's work buffers between calls,
/// so encoding block after block allocates nothing new.
pub struct Codec {
    k: usize,
    m: usize,
    encoder: Option<ReedSolomonEncoder>,
    decoder: Option<ReedSolomonDecoder>,
}

impl Codec {
    pub fn new(k: usize, m: usize) -> Result<Self, ErasureError> {
        validate_counts(k, m)?;
        Ok(Self {
            k,
            m,
            encoder: None,
            decoder: None,
        })
    }

    pub fn data_shards(&self) -> usize {
        self.k
    }

    pub fn parity_shards(&self) -> usize {
        self.m
    }

    /// Computes the m parity pieces of k data pieces (or of the same column window of each).
    pub fn encode(&mut self, data: &[&[u8]], parity: &mut [&mut [u8]]) -> Result<(), ErasureError> {
        check_count(self.k, data.len())?;
        check_count(self.m, parity.len())?;
        let bytes = same_len(
            data.iter()
                .map(|d| d.len())
                .chain(parity.iter().map(|p| p.len())),
        )?;
        let encoder = self.encoder_for(bytes)?;
        for piece in data {
            encoder
                .add_original_shard(piece)
                .map_err(|_| invalid(bytes))?;
        }
        let result = encoder.encode().map_err(|_| invalid(bytes))?;
        for (out, rec) in parity.iter_mut().zip(result.recovery_iter()) {
            out.copy_from_slice(rec);
        }
        Ok(())
    }

    /// Rebuilds missing pieces from any k survivors.
    ///
    /// `present[i]` is piece i (0..k data, k..k+m parity) or its window, when available.
    /// For every i with `present[i] == None` and `out[i] == Some(buf)`, `buf` receives the piece.
    /// All slices are the same length, a multiple of [`COLUMN`]; passing a column window of every
    /// piece rebuilds exactly that window.
    pub fn reconstruct(
        &mut self,
        present: &[Option<&[u8]>],
        out: &mut [Option<&mut [u8]>],
    ) -> Result<(), ErasureError> {
        let (k, n) = (self.k, self.k + self.m);
        check_count(n, present.len())?;
        check_count(n, out.len())?;
        let available = present.iter().filter(|p| p.is_some()).count();
        if available < k {
            return Err(ErasureError::TooManyMissing { available, k });
        }
        let bytes = same_len(
            present
                .iter()
                .flatten()
                .map(|p| p.len())
                .chain(out.iter().flatten().map(|o| o.len())),
        )?;
        let data_missing = (0..k).any(|i| present[i].is_none());
        if data_missing {
            self.decode_data(present, out, bytes)?;
        }
        let parity_wanted = (k..n).any(|i| present[i].is_none() && out[i].is_some());
        if parity_wanted {
            self.rebuild_parity(present, out, bytes)?;
        }
        Ok(())
    }

    /// Restores missing data pieces via the decoder, writing those asked for into `out`.
    fn decode_data(
        &mut self,
        present: &[Option<&[u8]>],
        out: &mut [Option<&mut [u8]>],
        bytes: usize,
    ) -> Result<(), ErasureError> {
        let k = self.k;
        let decoder = self.decoder_for(bytes)?;
        // The decoder wants exactly k shards: data first (cheaper), then parity.
        let mut given = 0;
        for (i, piece) in present.iter().enumerate() {
            let Some(piece) = piece else { continue };
            if given == k {
                break;
            }
            let added = if i < k {
                decoder.add_original_shard(i, piece)
            } else {
                decoder.add_recovery_shard(i - k, piece)
            };
            added.map_err(|_| invalid(bytes))?;
            given += 1;
        }
        let result = decoder.decode().map_err(|_| invalid(bytes))?;
        for (i, slot) in out.iter_mut().enumerate().take(k) {
            if let (None, Some(buf)) = (present[i], slot.as_deref_mut()) {
                let restored = result.restored_original(i).ok_or(invalid(bytes))?;
                buf.copy_from_slice(restored);
            }
        }
        Ok(())
    }

    /// Re-encodes parity once every data piece is known (present or just restored into `out`).
    fn rebuild_parity(
        &mut self,
        present: &[Option<&[u8]>],
        out: &mut [Option<&mut [u8]>],
        bytes: usize,
    ) -> Result<(), ErasureError> {
        let (k, m) = (self.k, self.m);
        let mut data: Vec<Vec<u8>> = Vec::with_capacity(k);
        for i in 0..k {
            let piece: &[u8] = match (present[i], out[i].as_deref()) {
                (Some(p), _) => p,
                (None, Some(restored)) => restored,
                // A data piece nobody asked for: restore it into scratch space.
                (None, None) => {
                    let mut scratch = vec![0u8; bytes];
                    let mut want: Vec<Option<&mut [u8]>> = (0..k + m).map(|_| None).collect();
                    want[i] = Some(&mut scratch);
                    self.decode_data(present, &mut want, bytes)?;
                    data.push(scratch);
                    continue;
                }
            };
            data.push(piece.to_vec());
        }
        let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        let mut parity: Vec<Vec<u8>> = (0..m).map(|_| vec![0u8; bytes]).collect();
        let mut parity_refs: Vec<&mut [u8]> = parity.iter_mut().map(Vec::as_mut_slice).collect();
        self.encode(&refs, &mut parity_refs)?;
        for (j, p) in parity.iter().enumerate() {
            if let (None, Some(buf)) = (present[k + j], out[k + j].as_deref_mut()) {
                buf.copy_from_slice(p);
            }
        }
        Ok(())
    }

    fn encoder_for(&mut self, bytes: usize) -> Result<&mut ReedSolomonEncoder, ErasureError> {
        let (k, m) = (self.k, self.m);
        match &mut self.encoder {
            Some(e) => e.reset(k, m, bytes).map_err(|_| invalid(bytes))?,
            slot @ None => {
                *slot = Some(ReedSolomonEncoder::new(k, m, bytes).map_err(|_| invalid(bytes))?)
            }
        }
        self.encoder.as_mut().ok_or(invalid(bytes))
    }

    fn decoder_for(&mut self, bytes: usize) -> Result<&mut ReedSolomonDecoder, ErasureError> {
        let (k, m) = (self.k, self.m);
        match &mut self.decoder {
            Some(d) => d.reset(k, m, bytes).map_err(|_| invalid(bytes))?,
            slot @ None => {
                *slot = Some(ReedSolomonDecoder::new(k, m, bytes).map_err(|_| invalid(bytes))?)
            }
        }
        self.decoder.as_mut().ok_or(invalid(bytes))
    }
}

fn check_count(expected: usize, got: usize) -> Result<(), ErasureError> {
    if expected == got {
        Ok(())
    } else {
        Err(ErasureError::WrongPieceCount { expected, got })
    }
}

fn invalid(bytes: usize) -> ErasureError {
    ErasureError::InvalidPieceSize { bytes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn random_pieces(k: usize, bytes: usize, seed: u64) -> Vec<Vec<u8>> {
        (0..k as u64)
            .map(|i| crate::workload::pseudo_random_bytes(bytes, seed.wrapping_add(i)))
            .collect()
    }

    fn encode_all(codec: &mut Codec, data: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let bytes = data[0].len();
        let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        let mut parity: Vec<Vec<u8>> = (0..codec.m).map(|_| vec![0; bytes]).collect();
        let mut prefs: Vec<&mut [u8]> = parity.iter_mut().map(Vec::as_mut_slice).collect();
        codec.encode(&refs, &mut prefs).unwrap();
        data.iter().cloned().chain(parity).collect()
    }

    /// Reconstructs every piece in `lost` (whole or the window) and returns them.
    fn rebuild(
        codec: &mut Codec,
        all: &[Vec<u8>],
        lost: &[usize],
        window: std::ops::Range<usize>,
    ) -> Vec<Vec<u8>> {
        let present: Vec<Option<&[u8]>> = all
            .iter()
            .enumerate()
            .map(|(i, p)| (!lost.contains(&i)).then(|| &p[window.clone()]))
            .collect();
        let mut bufs: Vec<Vec<u8>> = lost.iter().map(|_| vec![0; window.len()]).collect();
        let mut out: Vec<Option<&mut [u8]>> = (0..all.len()).map(|_| None).collect();
        for (buf, &i) in bufs.iter_mut().zip(lost) {
            out[i] = Some(buf.as_mut_slice());
        }
        codec.reconstruct(&present, &mut out).unwrap();
        bufs
    }

    #[test]
    fn rejects_bad_geometry_and_sizes() {
        assert!(Codec::new(0, 2).is_err());
        assert!(Codec::new(4, 0).is_err());
        assert!(Codec::new(4, MAX_SHARDS + 1).is_err());
        let mut c = Codec::new(2, 1).unwrap();
        let a = [0u8; 63];
        let mut p = [0u8; 63];
        let err = c.encode(&[&a, &a], &mut [&mut p]).unwrap_err();
        assert_eq!(err, ErasureError::InvalidPieceSize { bytes: 63 });
        let b = [0u8; 64];
        let err = c.encode(&[&b], &mut [&mut [0u8; 64]]).unwrap_err();
        assert_eq!(
            err,
            ErasureError::WrongPieceCount {
                expected: 2,
                got: 1
            }
        );
    }

    #[test]
    fn too_many_missing_is_an_error() {
        let mut c = Codec::new(4, 2).unwrap();
        let all = encode_all(&mut c, &random_pieces(4, 128, 7));
        let present: Vec<Option<&[u8]>> = all
            .iter()
            .enumerate()
            .map(|(i, p)| (i >= 3).then_some(p.as_slice()))
            .collect();
        let mut out: Vec<Option<&mut [u8]>> = (0..6).map(|_| None).collect();
        let err = c.reconstruct(&present, &mut out).unwrap_err();
        assert_eq!(err, ErasureError::TooManyMissing { available: 3, k: 4 });
    }

    fn geometry() -> impl Strategy<Value = (usize, usize, usize, Vec<usize>, u64)> {
        (1usize..=12, 1usize..=6, 1usize..=40, any::<u64>()).prop_flat_map(|(k, m, cols, seed)| {
            let lost = proptest::sample::subsequence((0..k + m).collect::<Vec<_>>(), 0..=m);
            (Just(k), Just(m), Just(cols * COLUMN), lost, Just(seed))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn any_loss_up_to_m_reconstructs_exactly((k, m, bytes, lost, seed) in geometry()) {
            let mut c = Codec::new(k, m).unwrap();
            let all = encode_all(&mut c, &random_pieces(k, bytes, seed));
            let rebuilt = rebuild(&mut c, &all, &lost, 0..bytes);
            for (buf, &i) in rebuilt.iter().zip(&lost) {
                prop_assert_eq!(buf, &all[i]);
            }
        }

        #[test]
        fn column_window_reconstructs_that_window(
            (k, m, bytes, lost, seed) in geometry(),
            a in 0usize..40, len in 1usize..40,
        ) {
            let cols = bytes / COLUMN;
            let start = a % cols;
            let end = (start + len).min(cols);
            let window = start * COLUMN..end * COLUMN;
            let mut c = Codec::new(k, m).unwrap();
            let all = encode_all(&mut c, &random_pieces(k, bytes, seed));
            let rebuilt = rebuild(&mut c, &all, &lost, window.clone());
            for (buf, &i) in rebuilt.iter().zip(&lost) {
                prop_assert_eq!(buf.as_slice(), &all[i][window.clone()]);
            }
        }
    }
}
