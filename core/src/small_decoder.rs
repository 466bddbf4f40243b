//! Reconstruction for small codes (k + m up to [`MAX_PIECES`]) without the 65536-point transforms.
//!
//! The crate's decoder (`reed-solomon-simd`, see its `src/algorithm.md`) evaluates an erasure
//! polynomial with two Walsh transforms of 65536 points, then runs an IFFT, a formal derivative
//! and an FFT over the whole (power-of-two padded) code length, on every call. For our sizes
//! that fixed cost and the padding dominate: decode was several times slower than encode.
//!
//! But the code is linear over GF(2^16), element by element: parity piece j is
//! `p_j = Σ_i G[j][i] · d_i` for one m × k matrix G, the same at every element position. So:
//!
//! 1. **G** is read off the crate's own encoder once per (k, m): encode data pieces where piece i
//!    holds the element 1 at position i and 0 elsewhere; parity j then holds `G[j][i]` at i.
//! 2. **Per loss pattern**, with S the k surviving pieces used (the first k available, data
//!    first, exactly as the crate decoder is fed), the rows of `[I; G]` for S form a k × k
//!    matrix A, invertible because the code is MDS. Every piece p is `E_p · A⁻¹ · s` (s: the
//!    survivors, `E_p` the row of p in `[I; G]`), so its recovery row is `E_p · A⁻¹`. These rows,
//!    with the nibble product tables of their coefficients, are cached per loss pattern.
//! 3. **Per call**, each wanted piece is `Σ_t row[t] · s_t`: k table-lookup multiply-accumulates,
//!    the same operation the engine's FFT butterflies use (`Simd128::mul_sum` in WASM, which
//!    does up to four wanted pieces per pass over the survivors).
//!
//! Any k pieces determine exactly one codeword, and the crate's decoder is linear and exact on
//! codewords, so on the same k survivors both compute the same linear map: the bytes are
//! identical whatever the input (tests compare them on random data, losses and windows).

use crate::engine_simd128::Simd128;
use reed_solomon_simd::engine::{
    tables::{self, Multiply128lutT},
    DefaultEngine, Engine, GfElement, GF_MODULUS,
};

/// Largest k + m this decoder takes; larger codes use the crate's decoder, whose cost grows
/// as n log n where this one's grows as k × (pieces rebuilt).
pub const MAX_PIECES: usize = 32;

/// Loss patterns whose recovery rows are kept (per codec).
const CACHED_PATTERNS: usize = 8;

/// Columns per tile in the engine-generic kernel: the scratch copy stays in L1.
const TILE_COLUMNS: usize = 64;

/// How `Σ c · s` is computed.
pub enum Kernel {
    /// One fused pass per column with the simd128 engine's table lookups.
    Simd128(Simd128),
    /// Any crate engine (natively its AVX2/SSSE3 one): copy, `Engine::mul` in place, XOR; in tiles.
    Engine(DefaultEngine),
}

/// The recovery row of one piece: its coefficient for every survivor, as product tables (for
/// the simd128 kernel) and as logarithms (`None` for zero; for `Engine::mul`).
struct Row {
    luts: Vec<Multiply128lutT>,
    logs: Vec<Option<GfElement>>,
}

/// The recovery rows for one set of survivors.
struct Recovery {
    /// Bit i set: piece i is one of the k survivors.
    survivors: u64,
    /// The survivor piece indices, ascending (the columns of every row).
    order: Vec<usize>,
    /// Per piece: its row over the survivors. Empty for survivors.
    rows: Vec<Row>,
}

/// Field arithmetic over the crate's tables (its basis and polynomial).
struct Field {
    exp: &'static tables::Exp,
    log: &'static tables::Log,
}

impl Field {
    fn new() -> Self {
        let t = tables::get_exp_log();
        Self {
            exp: &t.exp,
            log: &t.log,
        }
    }

    fn one(&self) -> GfElement {
        self.exp[0]
    }

    fn mul(&self, a: GfElement, b: GfElement) -> GfElement {
        if a == 0 || b == 0 {
            return 0;
        }
        let sum = u32::from(self.log[a as usize]) + u32::from(self.log[b as usize]);
        self.exp[(sum % u32::from(GF_MODULUS)) as usize]
    }

    fn inv(&self, a: GfElement) -> GfElement {
        debug_assert_ne!(a, 0);
        let l = u32::from(self.log[a as usize]);
        self.exp[((u32::from(GF_MODULUS) - l) % u32::from(GF_MODULUS)) as usize]
    }

    /// The nibble product tables of `c` (the crate's `Mul128[log c]`, built for one constant).
    fn lut(&self, c: GfElement) -> Multiply128lutT {
        let mut lut = Multiply128lutT {
            lo: [0; 4],
            hi: [0; 4],
        };
        for nibble in 0..4 {
            let mut lo = [0u8; 16];
            let mut hi = [0u8; 16];
            for x in 0..16u16 {
                let [l, h] = self.mul(x << (4 * nibble), c).to_le_bytes();
                lo[x as usize] = l;
                hi[x as usize] = h;
            }
            lut.lo[nibble] = u128::from_le_bytes(lo);
            lut.hi[nibble] = u128::from_le_bytes(hi);
        }
        lut
    }
}

/// The element at `position` of a shard (64-byte columns of 32 low then 32 high bytes).
pub fn element(shard: &[u8], position: usize) -> GfElement {
    let (col, lane) = (position / 32 * 64, position % 32);
    u16::from_le_bytes([shard[col + lane], shard[col + 32 + lane]])
}

/// Sets the element at `position` of a shard.
pub fn set_element(shard: &mut [u8], position: usize, value: GfElement) {
    let (col, lane) = (position / 32 * 64, position % 32);
    let [lo, hi] = value.to_le_bytes();
    shard[col + lane] = lo;
    shard[col + 32 + lane] = hi;
}

/// Data pieces for reading G off an encoder: piece i holds the element 1 at position i.
/// Each piece is `unit_piece_bytes(k)` long.
pub fn unit_pieces(k: usize) -> Vec<Vec<u8>> {
    let one = Field::new().one();
    (0..k)
        .map(|i| {
            let mut piece = vec![0u8; unit_piece_bytes(k)];
            set_element(&mut piece, i, one);
            piece
        })
        .collect()
}

/// Length of the pieces [`unit_pieces`] makes: room for k element positions.
pub fn unit_piece_bytes(k: usize) -> usize {
    k.div_ceil(32) * 64
}

pub struct SmallDecoder {
    k: usize,
    m: usize,
    /// `generator[j * k + i] = G[j][i]`.
    generator: Vec<GfElement>,
    kernel: Kernel,
    field: Field,
    /// Most recently used first.
    cache: Vec<Recovery>,
    scratch: Vec<[u8; 64]>,
}

impl SmallDecoder {
    /// Whether a k + m code is small enough for this decoder.
    pub fn supports(k: usize, m: usize) -> bool {
        k + m <= MAX_PIECES
    }

    /// `parity[j]` is parity piece j of the encoded [`unit_pieces`] of k.
    pub fn new(k: usize, m: usize, parity: &[&[u8]], kernel: Kernel) -> Self {
        debug_assert!(Self::supports(k, m) && parity.len() == m);
        let generator = parity
            .iter()
            .flat_map(|p| (0..k).map(move |i| element(p, i)))
            .collect();
        Self {
            k,
            m,
            generator,
            kernel,
            field: Field::new(),
            cache: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Rebuilds `out[p]` for every piece p that is absent from `present` and wanted in `out`,
    /// from the first k pieces present. Lengths are checked by the caller: all equal, a
    /// multiple of 64, and at least k pieces present.
    ///
    /// Returns false, having written nothing, if those k pieces' rows of `[I; G]` were not
    /// independent. A Reed-Solomon code is MDS, so that never happens; the caller then uses
    /// the crate's decoder rather than trusting this module's algebra.
    #[must_use]
    pub fn reconstruct(
        &mut self,
        present: &[Option<&[u8]>],
        out: &mut [Option<&mut [u8]>],
    ) -> bool {
        let mut survivors = 0u64;
        for (i, _) in present
            .iter()
            .enumerate()
            .filter(|(_, p)| p.is_some())
            .take(self.k)
        {
            survivors |= 1 << i;
        }
        if !self.prepare(survivors) {
            return false;
        }
        let recovery = &self.cache[0];
        let sources: Vec<&[u8]> = recovery.order.iter().filter_map(|&i| present[i]).collect();
        let mut wanted = Vec::new();
        let mut outs: Vec<&mut [u8]> = Vec::new();
        for (p, slot) in out.iter_mut().enumerate() {
            if let (None, Some(buf)) = (present[p], slot.as_deref_mut()) {
                wanted.push(&recovery.rows[p]);
                outs.push(buf);
            }
        }
        match &self.kernel {
            Kernel::Simd128(engine) => {
                let rows: Vec<&[Multiply128lutT]> =
                    wanted.iter().map(|r| r.luts.as_slice()).collect();
                engine.mul_sum(&mut outs, &sources, &rows);
            }
            Kernel::Engine(engine) => {
                for (buf, row) in outs.into_iter().zip(wanted) {
                    engine_mul_sum(engine, &mut self.scratch, buf, row, &sources);
                }
            }
        }
        true
    }

    /// Puts the recovery rows for these survivors first in the cache, deriving them if needed.
    /// False if they cannot be derived (see [`SmallDecoder::reconstruct`]).
    fn prepare(&mut self, survivors: u64) -> bool {
        match self.cache.iter().position(|r| r.survivors == survivors) {
            Some(at) => self.cache[..=at].rotate_right(1),
            None => {
                let Some(recovery) = self.derive(survivors) else {
                    return false;
                };
                self.cache.truncate(CACHED_PATTERNS - 1);
                self.cache.insert(0, recovery);
            }
        }
        true
    }

    /// Row of piece p in `[I; G]`: its coefficients over the k data pieces.
    fn code_row(&self, p: usize) -> Vec<GfElement> {
        let k = self.k;
        if p < k {
            (0..k)
                .map(|i| if i == p { self.field.one() } else { 0 })
                .collect()
        } else {
            self.generator[(p - k) * k..(p - k + 1) * k].to_vec()
        }
    }

    fn derive(&self, survivors: u64) -> Option<Recovery> {
        let (k, n) = (self.k, self.k + self.m);
        let f = &self.field;
        let order: Vec<usize> = (0..n).filter(|&i| survivors >> i & 1 == 1).collect();
        debug_assert_eq!(order.len(), k);

        // Gauss-Jordan: [A | I] → [I | A⁻¹], A's rows being the survivors' rows of [I; G].
        let mut a: Vec<Vec<GfElement>> = order.iter().map(|&p| self.code_row(p)).collect();
        let mut inv: Vec<Vec<GfElement>> = (0..k)
            .map(|r| (0..k).map(|c| if r == c { f.one() } else { 0 }).collect())
            .collect();
        for col in 0..k {
            // Any k rows of an MDS code's generator are independent, so a pivot exists.
            let pivot = (col..k).find(|&r| a[r][col] != 0)?;
            a.swap(col, pivot);
            inv.swap(col, pivot);
            let scale = f.inv(a[col][col]);
            for c in 0..k {
                a[col][c] = f.mul(a[col][c], scale);
                inv[col][c] = f.mul(inv[col][c], scale);
            }
            for r in 0..k {
                let factor = a[r][col];
                if r == col || factor == 0 {
                    continue;
                }
                for c in 0..k {
                    a[r][c] ^= f.mul(factor, a[col][c]);
                    inv[r][c] ^= f.mul(factor, inv[col][c]);
                }
            }
        }

        // Piece p = E_p · A⁻¹ · survivors.
        let rows = (0..n)
            .map(|p| {
                if survivors >> p & 1 == 1 {
                    return Row {
                        luts: Vec::new(),
                        logs: Vec::new(),
                    };
                }
                let e = self.code_row(p);
                let coefs: Vec<GfElement> = (0..k)
                    .map(|t| (0..k).fold(0, |acc, i| acc ^ f.mul(e[i], inv[i][t])))
                    .collect();
                Row {
                    luts: coefs.iter().map(|&c| f.lut(c)).collect(),
                    logs: coefs
                        .iter()
                        .map(|&c| (c != 0).then(|| f.log[c as usize]))
                        .collect(),
                }
            })
            .collect();
        Some(Recovery {
            survivors,
            order,
            rows,
        })
    }
}

/// `out = Σ c_t · s_t` with a crate engine: per tile, copy the source, multiply it in place
/// (`Engine::mul`), XOR it into the output.
fn engine_mul_sum(
    engine: &DefaultEngine,
    scratch: &mut Vec<[u8; 64]>,
    out: &mut [u8],
    row: &Row,
    sources: &[&[u8]],
) {
    out.fill(0);
    scratch.resize(TILE_COLUMNS, [0; 64]);
    let tile = TILE_COLUMNS * 64;
    for start in (0..out.len()).step_by(tile) {
        let end = (start + tile).min(out.len());
        let cols = (end - start) / 64;
        let out = &mut out[start..end];
        for (source, log) in sources.iter().zip(&row.logs) {
            let Some(log) = *log else { continue };
            let product = &mut scratch[..cols];
            product
                .as_flattened_mut()
                .copy_from_slice(&source[start..end]);
            if log != 0 {
                engine.mul(product, log);
            }
            for (o, p) in out.iter_mut().zip(product.as_flattened()) {
                *o ^= p;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luts_are_the_crates() {
        let f = Field::new();
        let mul128 = tables::get_mul128();
        for c in [1u16, 2, 3, 0x1234, 0xffff, 0x8000] {
            let lut = f.lut(c);
            let theirs = &mul128[f.log[c as usize] as usize];
            assert_eq!(lut.lo, theirs.lo);
            assert_eq!(lut.hi, theirs.hi);
        }
    }

    #[test]
    fn field_inverse_and_one() {
        let f = Field::new();
        assert_eq!(f.one(), 1);
        for a in [1u16, 2, 77, 0x1234, 0xffff] {
            assert_eq!(f.mul(a, f.inv(a)), f.one());
            assert_eq!(f.mul(a, f.one()), a);
        }
    }

    #[test]
    fn elements_round_trip() {
        let mut shard = vec![0u8; 128];
        set_element(&mut shard, 33, 0xBEEF);
        assert_eq!(element(&shard, 33), 0xBEEF);
        assert_eq!(shard[64 + 1], 0xEF);
        assert_eq!(shard[64 + 32 + 1], 0xBE);
    }
}
