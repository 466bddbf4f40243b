//! A WebAssembly simd128 [`Engine`] for `reed-solomon-simd`, written on the crate's public API.
//!
//! The crate picks AVX2, SSSE3 or Neon at run time and has nothing for WebAssembly, where it falls
//! back to its scalar engine. This engine does in WASM what its SSSE3 engine does on x86, so the
//! crate's own rate encoders and decoders (`DefaultRateEncoder<Simd128>`, …) run on it unchanged.
//!
//! # The arithmetic (see the crate's `src/algorithm.md`)
//!
//! - Shards are arrays of GF(2^16) elements stored in 64-byte columns: the low bytes of 32
//!   elements, then their high bytes (`[lo_0 … lo_31, hi_0 … hi_31]`). Columns are independent.
//! - Addition is XOR. The crate's encoder and decoder are (inverse) FFTs over the field whose
//!   butterflies are `x ^= y·m; y ^= x` (FFT) or `y ^= x; x ^= y·m` (IFFT), with `m` taken from the
//!   crate's skew table (given as a logarithm, `GF_MODULUS` meaning "no multiplication, only XOR").
//!   So the only expensive operation an engine has is "multiply a shard by a constant".
//! - Multiplying by a constant `c` is linear over GF(2), so split each 16-bit element into four
//!   nibbles: `c·v = c·v[0..4] ^ c·v[4..8] ^ c·v[8..12] ^ c·v[12..16]`. Each term takes one of 16
//!   values, so four 16-entry tables of products (each split into a low-byte and a high-byte
//!   table: eight 16-byte tables per constant, the crate's `tables::Mul128`) and a 16-way byte
//!   lookup per nibble multiply 16 elements at once. WebAssembly's `i8x16.swizzle` is that lookup,
//!   as `pshufb` is for the SSSE3 engine and `vqtbl1q_u8` for Neon.
//! - The FFT and IFFT loops (two layers at a time, skew indices, the final odd layer) are the
//!   crate's SSSE3 engine's (`src/engine/engine_ssse3.rs`) line for line, so results are
//!   bit-identical to the crate's engines (the tests compare them on random data).
//!
//! Two more entry points use the same multiply: [`Simd128::fft_columns`] / [`Simd128::ifft_columns`]
//! (butterflies that read and write different places, for `small_encoder.rs`) and
//! [`Simd128::mul_sum`] (sums of products, for `small_decoder.rs`).
//!
//! On wasm32 with simd128 the lanes (`V`) are `core::arch::wasm32` intrinsics. Everywhere
//! else they are a portable emulation of exactly those instructions, so native tests run this
//! engine's code (slowly) and prove it against the crate's.

use lanes::V;
use reed_solomon_simd::engine::{
    tables::{self, Mul128, Multiply128lutT, Skew},
    utils, Engine, GfElement, ShardsRefMut, GF_MODULUS,
};
use std::iter::zip;

/// The engine. Cheap to copy: it only holds references to the crate's global tables.
#[derive(Clone, Copy)]
pub struct Simd128 {
    mul128: &'static Mul128,
    skew: &'static Skew,
}

impl Simd128 {
    /// Initialises the crate's multiplication (8 MiB, once per process) and skew tables.
    pub fn new() -> Self {
        Self {
            mul128: tables::get_mul128(),
            skew: tables::get_skew(),
        }
    }
}

impl Default for Simd128 {
    fn default() -> Self {
        Self::new()
    }
}

impl Engine for Simd128 {
    fn fft(
        &self,
        data: &mut ShardsRefMut,
        pos: usize,
        size: usize,
        truncated_size: usize,
        skew_delta: usize,
    ) {
        self.fft_private(data, pos, size, truncated_size, skew_delta);
    }

    fn ifft(
        &self,
        data: &mut ShardsRefMut,
        pos: usize,
        size: usize,
        truncated_size: usize,
        skew_delta: usize,
    ) {
        self.ifft_private(data, pos, size, truncated_size, skew_delta);
    }

    /// `x[] *= log_m`
    fn mul(&self, x: &mut [[u8; 64]], log_m: GfElement) {
        let tables = Tables::new(&self.mul128[log_m as usize]);
        for column in x.iter_mut() {
            tables.mul(Column::from_bytes(column)).to_bytes(column);
        }
    }
}

// ======================================================================
// The multiply: one column (32 elements) by one constant.

/// The eight 16-byte product tables of one constant, loaded into lanes.
#[derive(Clone, Copy)]
struct Tables {
    lo: [V; 4],
    hi: [V; 4],
}

impl Tables {
    #[inline(always)]
    fn new(lut: &Multiply128lutT) -> Self {
        Self {
            lo: lut.lo.map(|t| V::from_u128(&t)),
            hi: lut.hi.map(|t| V::from_u128(&t)),
        }
    }

    /// `(lo, hi) · c` for the 16 elements whose low bytes are `lo` and high bytes `hi`
    /// (the crate's `LEO_MUL_128`).
    #[inline(always)]
    fn mul_lanes(&self, lo: V, hi: V) -> (V, V) {
        let (n0, n1) = lo.nibbles();
        let (n2, n3) = hi.nibbles();
        self.mul_nibbles([n0, n1, n2, n3])
    }

    /// The same from the four nibbles of the 16 elements (the low byte's low and high nibbles,
    /// then the high byte's), when they are shared by several constants.
    #[inline(always)]
    fn mul_nibbles(&self, n: [V; 4]) -> (V, V) {
        let mut prod_lo = V::lookup(self.lo[0], n[0]);
        let mut prod_hi = V::lookup(self.hi[0], n[0]);
        for ((lo, hi), n) in zip(self.lo, self.hi).zip(n).skip(1) {
            prod_lo = prod_lo.xor(V::lookup(lo, n));
            prod_hi = prod_hi.xor(V::lookup(hi, n));
        }
        (prod_lo, prod_hi)
    }

    /// One column times c.
    #[inline(always)]
    fn mul(&self, v: Column) -> Column {
        let [lo0, lo1, hi0, hi1] = v.0;
        let (p_lo0, p_hi0) = self.mul_lanes(lo0, hi0);
        let (p_lo1, p_hi1) = self.mul_lanes(lo1, hi1);
        Column([p_lo0, p_lo1, p_hi0, p_hi1])
    }

    /// FFT butterfly: `x ^= y · c; y ^= x` (`LEO_FFTB_128`).
    #[inline(always)]
    fn fft(&self, x: &mut Column, y: &mut Column) {
        *x = x.xor(self.mul(*y));
        *y = y.xor(*x);
    }

    /// IFFT butterfly: `y ^= x; x ^= y · c` (`LEO_IFFTB_128`).
    #[inline(always)]
    fn ifft(&self, x: &mut Column, y: &mut Column) {
        *y = y.xor(*x);
        *x = x.xor(self.mul(*y));
    }
}

/// One 64-byte column as four lanes: low bytes of elements 0..16, 16..32, then their high bytes.
#[derive(Clone, Copy)]
pub struct Column([V; 4]);

impl Column {
    #[inline(always)]
    pub fn zero() -> Self {
        Self([V::zero(); 4])
    }

    /// # Safety
    /// `p` must be valid for reading 64 bytes (no alignment needed).
    #[inline(always)]
    pub unsafe fn load(p: *const u8) -> Self {
        unsafe {
            Self([
                V::load(p),
                V::load(p.add(16)),
                V::load(p.add(32)),
                V::load(p.add(48)),
            ])
        }
    }

    /// # Safety
    /// `p` must be valid for writing 64 bytes (no alignment needed).
    #[inline(always)]
    pub unsafe fn store(self, p: *mut u8) {
        unsafe {
            self.0[0].store(p);
            self.0[1].store(p.add(16));
            self.0[2].store(p.add(32));
            self.0[3].store(p.add(48));
        }
    }

    #[inline(always)]
    fn from_bytes(column: &[u8; 64]) -> Self {
        // SAFETY: the column is 64 readable bytes.
        unsafe { Self::load(column.as_ptr()) }
    }

    #[inline(always)]
    fn to_bytes(self, column: &mut [u8; 64]) {
        // SAFETY: the column is 64 writable bytes.
        unsafe { self.store(column.as_mut_ptr()) }
    }

    #[inline(always)]
    pub fn xor(self, other: Self) -> Self {
        let (a, b) = (self.0, other.0);
        Self([
            a[0].xor(b[0]),
            a[1].xor(b[1]),
            a[2].xor(b[2]),
            a[3].xor(b[3]),
        ])
    }
}

// ======================================================================
// Butterflies between places, for `small_encoder.rs`

impl Simd128 {
    /// FFT butterfly `x ^= y · m; y ^= x` on `cols` columns: x and y are read from `src` and
    /// written to `dst`. `log` is the logarithm of m, `None` for XOR only (`GF_MODULUS`).
    ///
    /// # Safety
    /// Every pointer must address `cols` whole columns. A destination may be its own source;
    /// otherwise destinations must not overlap each other or the sources.
    pub unsafe fn fft_columns(
        &self,
        cols: usize,
        src: [*const u8; 2],
        dst: [*mut u8; 2],
        log: Option<GfElement>,
    ) {
        let tables = log.map(|log| Tables::new(&self.mul128[log as usize]));
        for c in 0..cols {
            unsafe {
                let mut x = Column::load(src[0].add(c * 64));
                let mut y = Column::load(src[1].add(c * 64));
                match &tables {
                    Some(t) => t.fft(&mut x, &mut y),
                    None => y = y.xor(x),
                }
                x.store(dst[0].add(c * 64));
                y.store(dst[1].add(c * 64));
            }
        }
    }

    /// IFFT butterfly `y ^= x; x ^= y · m` on `cols` columns, read from `src`, written to `dst`.
    ///
    /// # Safety
    /// As for [`Simd128::fft_columns`].
    pub unsafe fn ifft_columns(
        &self,
        cols: usize,
        src: [*const u8; 2],
        dst: [*mut u8; 2],
        log: Option<GfElement>,
    ) {
        let tables = log.map(|log| Tables::new(&self.mul128[log as usize]));
        for c in 0..cols {
            unsafe {
                let mut x = Column::load(src[0].add(c * 64));
                let mut y = Column::load(src[1].add(c * 64));
                match &tables {
                    Some(t) => t.ifft(&mut x, &mut y),
                    None => y = y.xor(x),
                }
                x.store(dst[0].add(c * 64));
                y.store(dst[1].add(c * 64));
            }
        }
    }
}

// ======================================================================
// Sums of products, for `small_decoder.rs`

impl Simd128 {
    /// `outs[o] = Σ_s rows[o][s] · sources[s]`, where `rows[o][s]` are the product tables of a
    /// coefficient. All slices have the same length, a multiple of 64; every row has one entry
    /// per source.
    ///
    /// One column at a time, for up to four outputs at once: each source column is loaded and
    /// split into nibbles once, looked up in every output's tables and accumulated in
    /// registers, so each source is read once per four outputs and each output written once.
    pub fn mul_sum(&self, outs: &mut [&mut [u8]], sources: &[&[u8]], rows: &[&[Multiply128lutT]]) {
        assert_eq!(outs.len(), rows.len(), "one row per output");
        let Some(len) = outs.first().map(|o| o.len()) else {
            return;
        };
        assert_eq!(len % 64, 0, "shards are whole 64-byte columns");
        for piece in outs
            .iter()
            .map(|o| o.len())
            .chain(sources.iter().map(|s| s.len()))
        {
            assert_eq!(piece, len, "sources and outputs differ in length");
        }
        for row in rows {
            assert_eq!(row.len(), sources.len(), "one coefficient per source");
        }
        for (outs, rows) in outs.chunks_mut(4).zip(rows.chunks(4)) {
            match outs {
                [a] => mul_sum_batch([&mut **a], sources, rows),
                [a, b] => mul_sum_batch([&mut **a, &mut **b], sources, rows),
                [a, b, c] => mul_sum_batch([&mut **a, &mut **b, &mut **c], sources, rows),
                [a, b, c, d] => {
                    mul_sum_batch([&mut **a, &mut **b, &mut **c, &mut **d], sources, rows)
                }
                _ => unreachable!("chunks of one to four outputs"),
            }
        }
    }
}

/// [`Simd128::mul_sum`] for N outputs (lengths checked by the caller).
#[inline(always)]
fn mul_sum_batch<const N: usize>(
    outs: [&mut [u8]; N],
    sources: &[&[u8]],
    rows: &[&[Multiply128lutT]],
) {
    let len = outs[0].len();
    let out_ptrs: [*mut u8; N] = outs.map(|o| o.as_mut_ptr());
    for at in (0..len).step_by(64) {
        let mut acc = [Column::zero(); N];
        for (s, src) in sources.iter().enumerate() {
            // SAFETY: every source is `len` bytes long and `at + 64 <= len`.
            let Column([lo0, lo1, hi0, hi1]) = unsafe { Column::load(src.as_ptr().add(at)) };
            let ((a0, a1), (a2, a3)) = (lo0.nibbles(), hi0.nibbles());
            let ((b0, b1), (b2, b3)) = (lo1.nibbles(), hi1.nibbles());
            for (o, acc) in acc.iter_mut().enumerate() {
                let t = Tables::new(&rows[o][s]);
                let (p_lo0, p_hi0) = t.mul_nibbles([a0, a1, a2, a3]);
                let (p_lo1, p_hi1) = t.mul_nibbles([b0, b1, b2, b3]);
                *acc = acc.xor(Column([p_lo0, p_lo1, p_hi0, p_hi1]));
            }
        }
        for (p, acc) in out_ptrs.iter().zip(acc) {
            // SAFETY: every output is `len` bytes long and `at + 64 <= len`.
            unsafe { acc.store(p.add(at)) };
        }
    }
}

// ======================================================================
// FFT (the crate's `Ssse3::fft_private`, on simd128 lanes)

impl Simd128 {
    /// FFT butterfly over two shards: `x ^= y · m; y ^= x` (`LEO_FFTB_128`).
    #[inline(always)]
    fn fft_butterfly_partial(&self, x: &mut [[u8; 64]], y: &mut [[u8; 64]], log_m: GfElement) {
        let tables = Tables::new(&self.mul128[log_m as usize]);
        for (x, y) in zip(x.iter_mut(), y.iter_mut()) {
            let (mut vx, mut vy) = (Column::from_bytes(x), Column::from_bytes(y));
            tables.fft(&mut vx, &mut vy);
            vx.to_bytes(x);
            vy.to_bytes(y);
        }
    }

    #[inline(always)]
    fn fft_butterfly_two_layers(
        &self,
        data: &mut ShardsRefMut,
        pos: usize,
        dist: usize,
        log_m01: GfElement,
        log_m23: GfElement,
        log_m02: GfElement,
    ) {
        let (s0, s1, s2, s3) = data.dist4_mut(pos, dist);

        // FIRST LAYER
        if log_m02 == GF_MODULUS {
            utils::xor(s2, s0);
            utils::xor(s3, s1);
        } else {
            self.fft_butterfly_partial(s0, s2, log_m02);
            self.fft_butterfly_partial(s1, s3, log_m02);
        }

        // SECOND LAYER
        if log_m01 == GF_MODULUS {
            utils::xor(s1, s0);
        } else {
            self.fft_butterfly_partial(s0, s1, log_m01);
        }
        if log_m23 == GF_MODULUS {
            utils::xor(s3, s2);
        } else {
            self.fft_butterfly_partial(s2, s3, log_m23);
        }
    }

    fn fft_private(
        &self,
        data: &mut ShardsRefMut,
        pos: usize,
        size: usize,
        truncated_size: usize,
        skew_delta: usize,
    ) {
        // TWO LAYERS AT A TIME
        let mut dist4 = size;
        let mut dist = size >> 2;
        while dist != 0 {
            let mut r = 0;
            while r < truncated_size {
                let base = r + dist + skew_delta - 1;
                let log_m01 = self.skew[base];
                let log_m02 = self.skew[base + dist];
                let log_m23 = self.skew[base + dist * 2];
                for i in r..r + dist {
                    self.fft_butterfly_two_layers(data, pos + i, dist, log_m01, log_m23, log_m02);
                }
                r += dist4;
            }
            dist4 = dist;
            dist >>= 2;
        }

        // FINAL ODD LAYER
        if dist4 == 2 {
            let mut r = 0;
            while r < truncated_size {
                let log_m = self.skew[r + skew_delta];
                let (x, y) = data.dist2_mut(pos + r, 1);
                if log_m == GF_MODULUS {
                    utils::xor(y, x);
                } else {
                    self.fft_butterfly_partial(x, y, log_m);
                }
                r += 2;
            }
        }
    }
}

// ======================================================================
// IFFT (the crate's `Ssse3::ifft_private`, on simd128 lanes)

impl Simd128 {
    /// IFFT butterfly over two shards: `y ^= x; x ^= y · m` (`LEO_IFFTB_128`).
    #[inline(always)]
    fn ifft_butterfly_partial(&self, x: &mut [[u8; 64]], y: &mut [[u8; 64]], log_m: GfElement) {
        let tables = Tables::new(&self.mul128[log_m as usize]);
        for (x, y) in zip(x.iter_mut(), y.iter_mut()) {
            let (mut vx, mut vy) = (Column::from_bytes(x), Column::from_bytes(y));
            tables.ifft(&mut vx, &mut vy);
            vx.to_bytes(x);
            vy.to_bytes(y);
        }
    }

    #[inline(always)]
    fn ifft_butterfly_two_layers(
        &self,
        data: &mut ShardsRefMut,
        pos: usize,
        dist: usize,
        log_m01: GfElement,
        log_m23: GfElement,
        log_m02: GfElement,
    ) {
        let (s0, s1, s2, s3) = data.dist4_mut(pos, dist);

        // FIRST LAYER
        if log_m01 == GF_MODULUS {
            utils::xor(s1, s0);
        } else {
            self.ifft_butterfly_partial(s0, s1, log_m01);
        }
        if log_m23 == GF_MODULUS {
            utils::xor(s3, s2);
        } else {
            self.ifft_butterfly_partial(s2, s3, log_m23);
        }

        // SECOND LAYER
        if log_m02 == GF_MODULUS {
            utils::xor(s2, s0);
            utils::xor(s3, s1);
        } else {
            self.ifft_butterfly_partial(s0, s2, log_m02);
            self.ifft_butterfly_partial(s1, s3, log_m02);
        }
    }

    fn ifft_private(
        &self,
        data: &mut ShardsRefMut,
        pos: usize,
        size: usize,
        truncated_size: usize,
        skew_delta: usize,
    ) {
        // TWO LAYERS AT A TIME
        let mut dist = 1;
        let mut dist4 = 4;
        while dist4 <= size {
            let mut r = 0;
            while r < truncated_size {
                let base = r + dist + skew_delta - 1;
                let log_m01 = self.skew[base];
                let log_m02 = self.skew[base + dist];
                let log_m23 = self.skew[base + dist * 2];
                for i in r..r + dist {
                    self.ifft_butterfly_two_layers(data, pos + i, dist, log_m01, log_m23, log_m02);
                }
                r += dist4;
            }
            dist = dist4;
            dist4 <<= 2;
        }

        // FINAL ODD LAYER
        if dist < size {
            let log_m = self.skew[dist + skew_delta - 1];
            if log_m == GF_MODULUS {
                utils::xor_within(data, pos + dist, pos, dist);
            } else {
                let (mut a, mut b) = data.split_at_mut(pos + dist);
                for i in 0..dist {
                    self.ifft_butterfly_partial(&mut a[pos + i], &mut b[i], log_m);
                }
            }
        }
    }
}

// ======================================================================
// Lanes: the simd128 instructions this engine uses.

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod lanes {
    use core::arch::wasm32::{
        u64x2_shr, u8x16_splat, v128, v128_and, v128_load, v128_store, v128_xor,
    };

    /// 16 bytes in one simd128 register.
    #[derive(Clone, Copy)]
    pub struct V(v128);

    impl V {
        #[inline(always)]
        pub fn zero() -> Self {
            Self(u8x16_splat(0))
        }

        /// A product table: the 16 bytes of `t`, little-endian (as the crate builds them).
        #[inline(always)]
        pub fn from_u128(t: &u128) -> Self {
            // SAFETY: a u128 is 16 readable bytes; wasm32 is little-endian.
            unsafe { Self::load(core::ptr::from_ref(t).cast()) }
        }

        /// # Safety
        /// `p` must be valid for reading 16 bytes (no alignment needed).
        #[inline(always)]
        pub unsafe fn load(p: *const u8) -> Self {
            Self(unsafe { v128_load(p.cast()) })
        }

        /// # Safety
        /// `p` must be valid for writing 16 bytes (no alignment needed).
        #[inline(always)]
        pub unsafe fn store(self, p: *mut u8) {
            unsafe { v128_store(p.cast(), self.0) }
        }

        #[inline(always)]
        pub fn xor(self, other: Self) -> Self {
            Self(v128_xor(self.0, other.0))
        }

        /// The low and the high nibble of every byte. (`i64x2.shr_u` then a mask: the mask
        /// drops the bits that crossed from the neighbouring byte; x86 has no byte shift, so
        /// `i8x16.shr_u` would cost a mask of its own on top.)
        #[inline(always)]
        pub fn nibbles(self) -> (Self, Self) {
            let mask = u8x16_splat(0x0f);
            (
                Self(v128_and(self.0, mask)),
                Self(v128_and(u64x2_shr(self.0, 4), mask)),
            )
        }

        /// `table[idx[i]]` for each byte (every index is below 16).
        ///
        /// `i8x16.swizzle` must give 0 for indices of 16 and up, which `pshufb` does not, so V8
        /// adds a saturating add before every `pshufb` (two more instructions per lookup). With
        /// indices known to be in range, `i8x16.relaxed_swizzle` is the bare `pshufb`; building
        /// with `-C target-feature=+simd128,+relaxed-simd` uses it (25-50% faster here), at
        /// the price of a module only runtimes with relaxed SIMD accept.
        #[inline(always)]
        pub fn lookup(table: Self, idx: Self) -> Self {
            #[cfg(target_feature = "relaxed-simd")]
            return Self(core::arch::wasm32::i8x16_relaxed_swizzle(table.0, idx.0));
            #[cfg(not(target_feature = "relaxed-simd"))]
            Self(core::arch::wasm32::u8x16_swizzle(table.0, idx.0))
        }
    }
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
mod lanes {
    /// 16 bytes, with the semantics of the simd128 instructions the wasm build uses
    /// (`v128.load`/`store`, `v128.xor`, `v128.and`, `i64x2.shr_u`, `i8x16.swizzle`).
    #[derive(Clone, Copy)]
    pub struct V([u8; 16]);

    impl V {
        #[inline(always)]
        pub fn zero() -> Self {
            Self([0; 16])
        }

        #[inline(always)]
        pub fn from_u128(t: &u128) -> Self {
            Self(t.to_le_bytes())
        }

        /// # Safety
        /// `p` must be valid for reading 16 bytes (no alignment needed).
        #[inline(always)]
        pub unsafe fn load(p: *const u8) -> Self {
            Self(unsafe { core::ptr::read_unaligned(p.cast::<[u8; 16]>()) })
        }

        /// # Safety
        /// `p` must be valid for writing 16 bytes (no alignment needed).
        #[inline(always)]
        pub unsafe fn store(self, p: *mut u8) {
            unsafe { core::ptr::write_unaligned(p.cast::<[u8; 16]>(), self.0) }
        }

        #[inline(always)]
        pub fn xor(self, other: Self) -> Self {
            Self(std::array::from_fn(|i| self.0[i] ^ other.0[i]))
        }

        #[inline(always)]
        pub fn nibbles(self) -> (Self, Self) {
            let shifted = u128::from_le_bytes(self.0);
            // i64x2.shr_u by 4: each 64-bit half shifted on its own.
            let halves = [shifted as u64 >> 4, (shifted >> 64) as u64 >> 4];
            let mut hi = [0u8; 16];
            hi[..8].copy_from_slice(&halves[0].to_le_bytes());
            hi[8..].copy_from_slice(&halves[1].to_le_bytes());
            (Self(self.0.map(|b| b & 0x0f)), Self(hi.map(|b| b & 0x0f)))
        }

        /// `i8x16.swizzle`: out-of-range indices give 0.
        #[inline(always)]
        pub fn lookup(table: Self, idx: Self) -> Self {
            Self(
                idx.0
                    .map(|i| table.0.get(usize::from(i)).copied().unwrap_or(0)),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use reed_solomon_simd::engine::{Naive, NoSimd};

    /// Shards as the crate lays them out: `count` shards of `cols` 64-byte columns.
    fn shards(count: usize, cols: usize, seed: u64) -> Vec<[u8; 64]> {
        let bytes = crate::workload::pseudo_random_bytes(count * cols * 64, seed);
        bytes
            .chunks_exact(64)
            .map(|c| c.try_into().unwrap())
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// FFT and IFFT on random data, at random positions, sizes, truncations and skews,
        /// against the crate's scalar engine.
        #[test]
        fn fft_and_ifft_match_the_crate(
            log_size in 1u32..7, cols in 1usize..4, seed in any::<u64>(),
            pos_chunks in 0usize..3, trunc in any::<prop::sample::Index>(),
            skew_delta in 0usize..2000,
        ) {
            let size = 1usize << log_size;
            let pos = pos_chunks * size;
            let count = pos + size;
            let truncated = 1 + trunc.index(size);
            let skew_delta = skew_delta + pos + size;
            for inverse in [false, true] {
                let mut ours = shards(count, cols, seed);
                let mut theirs = ours.clone();
                let mut a = ShardsRefMut::new(count, cols, &mut ours);
                let mut b = ShardsRefMut::new(count, cols, &mut theirs);
                if inverse {
                    Simd128::new().ifft(&mut a, pos, size, truncated, skew_delta);
                    NoSimd::new().ifft(&mut b, pos, size, truncated, skew_delta);
                } else {
                    Simd128::new().fft(&mut a, pos, size, truncated, skew_delta);
                    NoSimd::new().fft(&mut b, pos, size, truncated, skew_delta);
                }
                prop_assert_eq!(&ours, &theirs);
            }
        }

        #[test]
        fn mul_matches_the_crate(cols in 0usize..6, seed in any::<u64>(), log_m in any::<u16>()) {
            let mut ours = shards(1, cols, seed);
            let mut theirs = ours.clone();
            Simd128::new().mul(&mut ours, log_m);
            Naive::new().mul(&mut theirs, log_m);
            prop_assert_eq!(ours, theirs);
        }

        #[test]
        fn mul_sum_is_a_sum_of_products(
            cols in 1usize..5, seed in any::<u64>(), outputs in 0usize..7,
            logs in proptest::collection::vec(any::<u16>(), 0..40),
            sources in 0usize..6,
        ) {
            let engine = Simd128::new();
            let mul128 = tables::get_mul128();
            let srcs: Vec<Vec<[u8; 64]>> = (0..sources as u64).map(|i| shards(1, cols, seed ^ i)).collect();
            let src_refs: Vec<&[u8]> = srcs.iter().map(|s| s.as_flattened()).collect();
            // Coefficient (o, s): a log from the list, or 0xffff-ish filler when it runs out.
            let log = |o: usize, s: usize| logs.get(o * sources + s).copied().unwrap_or((o * 7 + s) as u16);
            let rows: Vec<Vec<&Multiply128lutT>> = (0..outputs)
                .map(|o| (0..sources).map(|s| &mul128[log(o, s) as usize]).collect())
                .collect();
            let lut_rows: Vec<Vec<Multiply128lutT>> = rows.iter().map(|r| r.iter().map(|&l| l.clone()).collect()).collect();
            let row_refs: Vec<&[Multiply128lutT]> = lut_rows.iter().map(Vec::as_slice).collect();
            let mut outs: Vec<Vec<u8>> = (0..outputs).map(|_| vec![0xAAu8; cols * 64]).collect();
            let mut out_refs: Vec<&mut [u8]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
            engine.mul_sum(&mut out_refs, &src_refs, &row_refs);

            for (o, out) in outs.iter().enumerate() {
                let mut expected = vec![[0u8; 64]; cols];
                for (s, source) in srcs.iter().enumerate() {
                    let mut product = source.clone();
                    Naive::new().mul(&mut product, log(o, s));
                    utils::xor(&mut expected, &product);
                }
                prop_assert_eq!(out.as_slice(), expected.as_flattened());
            }
        }
    }
}
