//! Reed-Solomon erasure coding of one block's pieces (`reed-solomon-simd`, GF(2^16)).
//!
//! The code is systematic: data pieces are the block's bytes verbatim, parity pieces are computed.
//! It works on 64-byte columns independently, so any 64-byte-aligned window of k surviving pieces
//! reconstructs the same window of the missing ones; a small degraded read needs only that window.
//!
//! The arithmetic runs on an [`EngineKind`]:
//!
//! - in WASM ([`EngineKind::Simd128`]), codes with k + m up to 32 encode with the crate encoder's
//!   butterfly network run tile by tile (`small_encoder.rs`), larger ones with the crate's own
//!   encoder on our simd128 engine (`engine_simd128.rs`);
//! - natively ([`EngineKind::Native`]), the crate's encoder on its AVX2/SSSE3/Neon engine.
//!
//! Either way, reconstruction of codes with k + m up to 32 uses the small-matrix decoder
//! (`small_decoder.rs`), larger ones the crate's decoder. Every path produces exactly the bytes
//! the crate's own encoder and decoder produce (the property tests compare them).

use crate::engine_simd128::Simd128;
use crate::small_decoder::{self, Kernel, SmallDecoder};
use crate::small_encoder::SmallEncoder;
use reed_solomon_simd::engine::{DefaultEngine, Engine, GfElement, NoSimd, ShardsRefMut, GF_ORDER};
use reed_solomon_simd::rate::{DefaultRateDecoder, DefaultRateEncoder, RateDecoder, RateEncoder};
use reed_solomon_simd::ReedSolomonEncoder;
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

/// Which implementation does a codec's arithmetic. All produce the same bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// Our simd128 engine (`engine_simd128.rs`), the small-code encoder and the small-matrix
    /// decoder: the default on wasm32. On other targets the same code runs on an emulation of
    /// the instructions (for the tests; it is slow).
    Simd128,
    /// The crate's `DefaultEngine` (AVX2, SSSE3 or Neon, chosen at run time) and the
    /// small-matrix decoder: the default natively.
    Native,
    /// The crate's scalar engine, encoder and decoder: the crate as it is without SIMD, what
    /// WASM ran before the simd128 engine. Kept as the benchmark's baseline.
    Scalar,
}

impl EngineKind {
    /// The engine [`Codec::new`] uses on this target: simd128 in WASM (built with it, as
    /// `.cargo/config.toml` does), the crate's own elsewhere.
    pub const PLATFORM: EngineKind =
        if cfg!(all(target_arch = "wasm32", target_feature = "simd128")) {
            EngineKind::Simd128
        } else {
            EngineKind::Native
        };

    /// The name the benchmark and the WASM API use.
    pub fn from_name(name: &str) -> Option<EngineKind> {
        match name {
            "simd128" => Some(EngineKind::Simd128),
            "native" => Some(EngineKind::Native),
            "scalar" => Some(EngineKind::Scalar),
            _ => None,
        }
    }

    fn engine(self) -> CodecEngine {
        match self {
            EngineKind::Simd128 => CodecEngine::Simd128(Simd128::new()),
            EngineKind::Native => CodecEngine::Native(DefaultEngine::new()),
            EngineKind::Scalar => CodecEngine::Scalar(NoSimd::new()),
        }
    }
}

/// The engine the crate's rate encoder and decoder run on, as chosen by [`EngineKind`].
enum CodecEngine {
    Simd128(Simd128),
    Native(DefaultEngine),
    Scalar(NoSimd),
}

impl Engine for CodecEngine {
    fn fft(
        &self,
        data: &mut ShardsRefMut,
        pos: usize,
        size: usize,
        truncated_size: usize,
        skew_delta: usize,
    ) {
        match self {
            Self::Simd128(e) => e.fft(data, pos, size, truncated_size, skew_delta),
            Self::Native(e) => e.fft(data, pos, size, truncated_size, skew_delta),
            Self::Scalar(e) => e.fft(data, pos, size, truncated_size, skew_delta),
        }
    }

    fn ifft(
        &self,
        data: &mut ShardsRefMut,
        pos: usize,
        size: usize,
        truncated_size: usize,
        skew_delta: usize,
    ) {
        match self {
            Self::Simd128(e) => e.ifft(data, pos, size, truncated_size, skew_delta),
            Self::Native(e) => e.ifft(data, pos, size, truncated_size, skew_delta),
            Self::Scalar(e) => e.ifft(data, pos, size, truncated_size, skew_delta),
        }
    }

    fn mul(&self, x: &mut [[u8; 64]], log_m: GfElement) {
        match self {
            Self::Simd128(e) => e.mul(x, log_m),
            Self::Native(e) => e.mul(x, log_m),
            Self::Scalar(e) => e.mul(x, log_m),
        }
    }

    fn eval_poly(erasures: &mut [GfElement; GF_ORDER], truncated_size: usize) {
        // The same arithmetic everywhere; the default engine's copy is compiled with SIMD.
        DefaultEngine::eval_poly(erasures, truncated_size);
    }
}

/// An encoder/decoder for one k + m geometry. Keeps the codec's work buffers between calls,
/// so encoding block after block allocates nothing new.
pub struct Codec {
    k: usize,
    m: usize,
    kind: EngineKind,
    encoder: Option<DefaultRateEncoder<CodecEngine>>,
    decoder: Option<DefaultRateDecoder<CodecEngine>>,
    /// Built on the first reconstruction, for codes it supports (not for [`EngineKind::Scalar`]).
    small: Option<SmallDecoder>,
    /// Built on the first encode, for [`EngineKind::Simd128`] and codes it supports.
    small_encoder: Option<(SmallEncoder, Simd128)>,
}

impl Codec {
    /// A codec on this target's fastest engine ([`EngineKind::PLATFORM`]).
    pub fn new(k: usize, m: usize) -> Result<Self, ErasureError> {
        Self::with_engine(k, m, EngineKind::PLATFORM)
    }

    pub fn with_engine(k: usize, m: usize, kind: EngineKind) -> Result<Self, ErasureError> {
        validate_counts(k, m)?;
        Ok(Self {
            k,
            m,
            kind,
            encoder: None,
            decoder: None,
            small: None,
            small_encoder: None,
        })
    }

    pub fn data_shards(&self) -> usize {
        self.k
    }

    pub fn parity_shards(&self) -> usize {
        self.m
    }

    pub fn engine(&self) -> EngineKind {
        self.kind
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
        if self.kind == EngineKind::Simd128 && SmallEncoder::supports(self.k, self.m) {
            let (k, m) = (self.k, self.m);
            let (encoder, engine) = self
                .small_encoder
                .get_or_insert_with(|| (SmallEncoder::new(k, m), Simd128::new()));
            encoder.encode(engine, data, parity);
            return Ok(());
        }
        self.crate_encode(data, parity, bytes)
    }

    /// Encodes with the crate's own rate encoder on this codec's engine.
    fn crate_encode(
        &mut self,
        data: &[&[u8]],
        parity: &mut [&mut [u8]],
        bytes: usize,
    ) -> Result<(), ErasureError> {
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
    /// piece rebuilds exactly that window. When more than k pieces are present, the first k
    /// (in index order) are used.
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
        if let Some(small) = self.small_decoder()? {
            if small.reconstruct(present, out) {
                return Ok(());
            }
        }
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

    /// The small-matrix decoder, built on first use, when it applies to this codec.
    fn small_decoder(&mut self) -> Result<Option<&mut SmallDecoder>, ErasureError> {
        let (k, m) = (self.k, self.m);
        if self.kind == EngineKind::Scalar || !SmallDecoder::supports(k, m) {
            return Ok(None);
        }
        if self.small.is_none() {
            // Read the generator matrix off the crate's encoder (see small_decoder.rs).
            let units = small_decoder::unit_pieces(k);
            let bytes = small_decoder::unit_piece_bytes(k);
            let mut parity = vec![vec![0u8; bytes]; m];
            let data: Vec<&[u8]> = units.iter().map(Vec::as_slice).collect();
            let mut refs: Vec<&mut [u8]> = parity.iter_mut().map(Vec::as_mut_slice).collect();
            self.crate_encode(&data, &mut refs, bytes)?;
            let parity: Vec<&[u8]> = parity.iter().map(Vec::as_slice).collect();
            let kernel = match self.kind {
                EngineKind::Simd128 => Kernel::Simd128(Simd128::new()),
                _ => Kernel::Engine(DefaultEngine::new()),
            };
            self.small = Some(SmallDecoder::new(k, m, &parity, kernel));
        }
        Ok(self.small.as_mut())
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

    fn encoder_for(
        &mut self,
        bytes: usize,
    ) -> Result<&mut DefaultRateEncoder<CodecEngine>, ErasureError> {
        let (k, m) = (self.k, self.m);
        match &mut self.encoder {
            Some(e) => e.reset(k, m, bytes).map_err(|_| invalid(bytes))?,
            slot @ None => {
                let engine = self.kind.engine();
                *slot = Some(
                    DefaultRateEncoder::new(k, m, bytes, engine, None)
                        .map_err(|_| invalid(bytes))?,
                )
            }
        }
        self.encoder.as_mut().ok_or(invalid(bytes))
    }

    fn decoder_for(
        &mut self,
        bytes: usize,
    ) -> Result<&mut DefaultRateDecoder<CodecEngine>, ErasureError> {
        let (k, m) = (self.k, self.m);
        match &mut self.decoder {
            Some(d) => d.reset(k, m, bytes).map_err(|_| invalid(bytes))?,
            slot @ None => {
                let engine = self.kind.engine();
                *slot = Some(
                    DefaultRateDecoder::new(k, m, bytes, engine, None)
                        .map_err(|_| invalid(bytes))?,
                )
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
    use std::ops::Range;

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

    /// What the crate itself makes of `present` (its simple API, as the codec used it before
    /// the simd128 engine): the first k pieces go to `ReedSolomonDecoder`, and lost parity is
    /// re-encoded from the data with `ReedSolomonEncoder`. Returns the pieces in `lost`.
    fn crate_reconstruct(
        k: usize,
        m: usize,
        present: &[Option<&[u8]>],
        lost: &[usize],
    ) -> Vec<Vec<u8>> {
        use reed_solomon_simd::ReedSolomonDecoder;
        let bytes = present.iter().flatten().next().unwrap().len();
        let mut decoder = ReedSolomonDecoder::new(k, m, bytes).unwrap();
        for (i, p) in present
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some((i, (*p)?)))
            .take(k)
        {
            if i < k {
                decoder.add_original_shard(i, p).unwrap();
            } else {
                decoder.add_recovery_shard(i - k, p).unwrap();
            }
        }
        let result = decoder.decode().unwrap();
        let data: Vec<Vec<u8>> = (0..k)
            .map(|i| match present[i] {
                Some(p) => p.to_vec(),
                None => result.restored_original(i).unwrap().to_vec(),
            })
            .collect();
        let mut encoder = ReedSolomonEncoder::new(k, m, bytes).unwrap();
        for d in &data {
            encoder.add_original_shard(d).unwrap();
        }
        let parity: Vec<Vec<u8>> = encoder
            .encode()
            .unwrap()
            .recovery_iter()
            .map(<[u8]>::to_vec)
            .collect();
        lost.iter()
            .map(|&i| {
                if i < k {
                    data[i].clone()
                } else {
                    parity[i - k].clone()
                }
            })
            .collect()
    }

    /// Small codes (k + m <= 32), with 4+2 and 8+4 always in the mix; up to m pieces lost
    /// (at least one); a 64-byte-aligned window.
    fn small_code() -> impl Strategy<Value = (usize, usize, usize, Vec<usize>, Range<usize>, u64)> {
        let counts = prop_oneof![
            Just((4usize, 2usize)),
            Just((8, 4)),
            (1usize..=28).prop_flat_map(|k| (Just(k), 1usize..=(32 - k).min(16))),
        ];
        (counts, 1usize..=24, any::<u64>()).prop_flat_map(|((k, m), cols, seed)| {
            let lost = proptest::sample::subsequence((0..k + m).collect::<Vec<_>>(), 1..=m);
            let window = (0..cols, 1..=cols)
                .prop_map(move |(a, len)| a * COLUMN..(a + len).min(cols) * COLUMN);
            (
                Just(k),
                Just(m),
                Just(cols * COLUMN),
                lost,
                window,
                Just(seed),
            )
        })
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The simd128 engine (emulated natively) and the crate's default engine encode exactly
        /// as the crate's scalar engine, and the small-matrix decoder rebuilds exactly as the
        /// crate's decoder, over random windows.
        #[test]
        fn engines_and_small_decoder_match_the_crate((k, m, bytes, lost, window, seed) in small_code()) {
            for engine in [EngineKind::Simd128, EngineKind::Native] {
                let r = crate::workload::cross_check(k, m, bytes, seed, &lost, window.clone(), engine, EngineKind::Scalar);
                prop_assert_eq!(r, Ok(()));
            }
        }

        /// On arbitrary bytes (not a codeword, as with an undetected bad piece), the small-matrix
        /// decoder still returns what the crate's decoder returns from the same k survivors.
        #[test]
        fn small_decoder_matches_the_crate_on_any_input(
            (k, m, bytes, lost, window, seed) in small_code(), extra_lost in any::<bool>(),
        ) {
            let all = random_pieces(k + m, bytes, seed);
            // Sometimes fewer losses than m, so more than k pieces are present and only the
            // first k may be used.
            let lost: Vec<usize> = if extra_lost { lost } else { lost[..1].to_vec() };
            let present: Vec<Option<&[u8]>> = all
                .iter()
                .enumerate()
                .map(|(i, p)| (!lost.contains(&i)).then(|| &p[window.clone()]))
                .collect();
            let expected = crate_reconstruct(k, m, &present, &lost);
            for engine in [EngineKind::Simd128, EngineKind::Native] {
                let mut c = Codec::with_engine(k, m, engine).unwrap();
                let mut bufs: Vec<Vec<u8>> = lost.iter().map(|_| vec![0; window.len()]).collect();
                let mut out: Vec<Option<&mut [u8]>> = (0..k + m).map(|_| None).collect();
                for (buf, &i) in bufs.iter_mut().zip(&lost) {
                    out[i] = Some(buf.as_mut_slice());
                }
                c.reconstruct(&present, &mut out).unwrap();
                prop_assert_eq!(&bufs, &expected);
            }
        }

        /// Codes beyond the small decoder run the crate's decoder on our engine.
        #[test]
        fn large_codes_on_the_simd128_engine_match_the_crate(
            k in 25usize..=48, m in 8usize..=20, cols in 1usize..=4, seed in any::<u64>(),
            lost in proptest::collection::vec(any::<prop::sample::Index>(), 1..8),
        ) {
            let mut lost: Vec<usize> = lost.iter().map(|i| i.index(k + m)).collect();
            lost.sort_unstable();
            lost.dedup();
            let r = crate::workload::cross_check(k, m, cols * COLUMN, seed, &lost, 0..cols * COLUMN, EngineKind::Simd128, EngineKind::Scalar);
            prop_assert_eq!(r, Ok(()));
        }
    }
}
