//! Encoding for small codes (k + m up to 32) in one pass over the data, on the simd128 engine.
//!
//! The crate's rate encoders (`reed-solomon-simd`'s `src/rate/rate_high.rs` and `rate_low.rs`,
//! described in its `src/algorithm.md` under "Encoding") copy the data pieces into a work area,
//! run (I)FFTs over it piece by piece, and leave the parity in the work area to be copied out.
//! Every step of that is a fixed sequence of butterflies between work slots, with constants
//! from the skew table that depend only on k and m:
//!
//! - high rate (k ≥ m, roughly): chunks of `c = m.next_power_of_two()` data slots, each IFFT'd
//!   (with the skew of its position) and XORed into the first; one FFT of the first chunk makes
//!   the m parity slots;
//! - low rate: one IFFT of the k data slots (padded to `c = k.next_power_of_two()`), copied to
//!   every chunk of parity slots, each FFT'd with the skew of its position.
//!
//! [`SmallEncoder::new`] writes that sequence down once per (k, m) by walking the same loops as
//! the crate's encoders and the engines' `fft`/`ifft` (`engine_simd128.rs`, which follows the
//! crate's SSSE3 engine), then decides where each slot's value lives at each step: a slot not
//! yet written is read straight from its data piece (or is zero), a parity slot's last write
//! goes straight into the output, and only the intermediate values go to a small work area.
//! [`SmallEncoder::encode`] runs the steps over tiles of 32 columns (2 KiB of each piece), so
//! the work area stays in L1 cache. Compared with the crate's encoder on the same engine this
//! saves copying the data in and the parity out (V8 turns those copies into `memmove` calls)
//! and a pass over the whole pieces per step. The butterflies are the engine's
//! ([`Simd128::fft_columns`]), so the bytes are the crate's: the tests compare them for many
//! k, m and sizes, high and low rate.

use crate::engine_simd128::{Column, Simd128};
use reed_solomon_simd::engine::{tables, GfElement, GF_MODULUS};

/// One step of the encoder's butterfly network, on work slots (as recorded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// IFFT butterfly: `y ^= x; x ^= y · m` (only `y ^= x` when there is no multiplication).
    Ifft {
        x: u8,
        y: u8,
        log: Option<GfElement>,
    },
    /// FFT butterfly: `x ^= y · m; y ^= x` (only `y ^= x` when there is no multiplication).
    Fft {
        x: u8,
        y: u8,
        log: Option<GfElement>,
    },
    /// `dst ^= src`
    Xor { dst: u8, src: u8 },
    /// `dst = src`
    Copy { dst: u8, src: u8 },
}

/// Where a slot's current value lives during [`SmallEncoder::encode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Still the data piece it started as: read straight from the input.
    Data(usize),
    /// Still zero (the padding slots).
    Zero,
    /// In the work area.
    Work(usize),
    /// Final: already in the parity output.
    Parity(usize),
}

/// A step with its operands resolved to places: reads `src`, writes `dst` (same arity).
#[derive(Debug, Clone, Copy)]
enum Op {
    Ifft {
        src: [Place; 2],
        dst: [Place; 2],
        log: Option<GfElement>,
    },
    Fft {
        src: [Place; 2],
        dst: [Place; 2],
        log: Option<GfElement>,
    },
    Xor {
        src: [Place; 2],
        dst: Place,
    },
    Copy {
        src: Place,
        dst: Place,
    },
}

/// Columns per tile: every step runs over one tile of every piece before the next step, so the
/// work area (slots × tile) stays in L1 cache while each step is one tight loop.
const TILE_COLUMNS: usize = 32;
const TILE: usize = TILE_COLUMNS * 64;

/// The butterfly network of the crate's encoder for one k + m, run tile by tile.
pub struct SmallEncoder {
    k: usize,
    m: usize,
    /// Work slots needed (at most the crate encoder's work area).
    slots: usize,
    ops: Vec<Op>,
}

/// Largest k + m encoded this way.
pub const MAX_PIECES: usize = 32;

impl SmallEncoder {
    pub fn supports(k: usize, m: usize) -> bool {
        k + m <= MAX_PIECES
    }

    /// Records the network for k + m (both valid for the crate, k + m ≤ [`MAX_PIECES`]).
    pub fn new(k: usize, m: usize) -> Self {
        debug_assert!(Self::supports(k, m));
        let mut r = Recorder {
            skew: tables::get_skew(),
            steps: Vec::new(),
        };
        let slots = if use_high_rate(k, m) {
            // HighRateEncoder::encode
            let c = m.next_power_of_two();
            r.ifft(0, c, k.min(c), c);
            let mut start = c;
            while start + c <= k {
                r.ifft(start, c, c, start + c);
                r.xor_chunk(0, start, c);
                start += c;
            }
            let last = k % c;
            if k > c && last > 0 {
                r.ifft(start, c, last, start + c);
                r.xor_chunk(0, start, c);
            }
            r.fft(0, c, m, 0);
            k.next_multiple_of(c)
        } else {
            // LowRateEncoder::encode
            let c = k.next_power_of_two();
            r.ifft(0, c, k, 0);
            let mut start = c;
            while start < m {
                for i in 0..c {
                    r.steps.push(Step::Copy {
                        dst: slot(start + i),
                        src: slot(i),
                    });
                }
                start += c;
            }
            let mut start = 0;
            while start + c <= m {
                r.fft(start, c, c, start + c);
                start += c;
            }
            if m % c > 0 {
                r.fft(start, c, m % c, start + c);
            }
            m.next_multiple_of(c)
        };
        Self {
            k,
            m,
            slots,
            ops: place(k, m, slots, &r.steps),
        }
    }

    /// Computes the m parity pieces of k data pieces. Lengths are checked by the caller: all
    /// equal, a multiple of 64.
    pub fn encode(&self, engine: &Simd128, data: &[&[u8]], parity: &mut [&mut [u8]]) {
        assert!(data.len() == self.k && parity.len() == self.m);
        let len = data[0].len();
        assert!(len % 64 == 0);
        assert!(data.iter().all(|d| d.len() == len) && parity.iter().all(|p| p.len() == len));
        let mut work = vec![0u8; self.slots * TILE];
        let zero = [0u8; TILE];
        let parity: Vec<*mut u8> = parity.iter_mut().map(|p| p.as_mut_ptr()).collect();
        for at in (0..len).step_by(TILE) {
            let cols = (len - at).min(TILE) / 64;
            let work = work.as_mut_ptr();
            // The address of a place's column 0 in this tile. Data and parity are read and
            // written at `at..at + cols * 64`, work slots and zeros at `0..cols * 64`.
            // SAFETY (every `add` below): `at + cols * 64 <= len` for data and parity, slot
            // indices are below `self.slots` (`place` indexes a slice of that length with
            // them), and `cols * 64 <= TILE`.
            let addr = |p: Place| -> *mut u8 {
                unsafe {
                    match p {
                        Place::Data(i) => data[i].as_ptr().add(at).cast_mut(),
                        Place::Zero => zero.as_ptr().cast_mut(),
                        Place::Work(s) => work.add(s * TILE),
                        Place::Parity(j) => parity[j].add(at),
                    }
                }
            };
            for op in &self.ops {
                // SAFETY: each place addresses `cols` whole columns (see `addr`); a place that
                // is written is never `Data` or `Zero` (see `place`), and a step's two
                // destinations are distinct slots.
                unsafe {
                    match *op {
                        Op::Ifft { src, dst, log } => engine.ifft_columns(
                            cols,
                            [addr(src[0]).cast_const(), addr(src[1]).cast_const()],
                            [addr(dst[0]), addr(dst[1])],
                            log,
                        ),
                        Op::Fft { src, dst, log } => engine.fft_columns(
                            cols,
                            [addr(src[0]).cast_const(), addr(src[1]).cast_const()],
                            [addr(dst[0]), addr(dst[1])],
                            log,
                        ),
                        Op::Xor { src, dst } => {
                            xor_columns(cols, [addr(src[0]), addr(src[1])], addr(dst))
                        }
                        Op::Copy { src, dst } => {
                            core::ptr::copy_nonoverlapping(addr(src), addr(dst), cols * 64)
                        }
                    }
                }
            }
        }
    }
}

/// `dst = src[0] ^ src[1]` over `cols` columns.
///
/// # Safety
/// All three must address `cols` whole columns; `dst` may equal a source but not overlap it
/// otherwise.
unsafe fn xor_columns(cols: usize, src: [*mut u8; 2], dst: *mut u8) {
    for c in 0..cols {
        unsafe {
            let a = Column::load(src[0].add(c * 64));
            let b = Column::load(src[1].add(c * 64));
            a.xor(b).store(dst.add(c * 64));
        }
    }
}

/// Resolves the recorded steps to places: a slot is read from its data piece (or as zero)
/// until a step writes it, each slot's last write goes straight to its parity piece (slots
/// 0..m are the parity), and the rest lives in the work area. Parity slots never written by
/// a step get a final copy.
fn place(k: usize, m: usize, slots: usize, steps: &[Step]) -> Vec<Op> {
    let mut last_write = vec![None; slots];
    for (i, step) in steps.iter().enumerate() {
        for s in written(step) {
            last_write[usize::from(s)] = Some(i);
        }
    }
    let mut now: Vec<Place> = (0..slots)
        .map(|s| if s < k { Place::Data(s) } else { Place::Zero })
        .collect();
    let mut ops = Vec::with_capacity(steps.len() + m);
    for (i, step) in steps.iter().enumerate() {
        // Where step i writes slot s: its parity piece if this is the slot's last write.
        let to = |now: &mut [Place], s: u8| {
            let s = usize::from(s);
            now[s] = if s < m && last_write[s] == Some(i) {
                Place::Parity(s)
            } else {
                Place::Work(s)
            };
            now[s]
        };
        let at = |now: &[Place], s: u8| now[usize::from(s)];
        let op = match *step {
            Step::Ifft { x, y, log } => Op::Ifft {
                src: [at(&now, x), at(&now, y)],
                dst: [to(&mut now, x), to(&mut now, y)],
                log,
            },
            Step::Fft { x, y, log } => Op::Fft {
                src: [at(&now, x), at(&now, y)],
                dst: [to(&mut now, x), to(&mut now, y)],
                log,
            },
            Step::Xor { dst, src } => Op::Xor {
                src: [at(&now, dst), at(&now, src)],
                dst: to(&mut now, dst),
            },
            Step::Copy { dst, src } => Op::Copy {
                src: at(&now, src),
                dst: to(&mut now, dst),
            },
        };
        ops.push(op);
    }
    for (j, p) in now.iter().enumerate().take(m) {
        if !matches!(p, Place::Parity(_)) {
            ops.push(Op::Copy {
                src: *p,
                dst: Place::Parity(j),
            });
        }
    }
    ops
}

/// The slots a step writes.
fn written(step: &Step) -> Vec<u8> {
    match *step {
        Step::Ifft { x, y, .. } | Step::Fft { x, y, .. } => vec![x, y],
        Step::Xor { dst, .. } | Step::Copy { dst, .. } => vec![dst],
    }
}

fn slot(i: usize) -> u8 {
    u8::try_from(i).expect("small codes have fewer than 256 work slots")
}

/// The crate's choice between its high-rate and low-rate encoder (`rate_default.rs`,
/// `use_high_rate`), for counts it supports.
fn use_high_rate(k: usize, m: usize) -> bool {
    let (kp, mp) = (k.next_power_of_two(), m.next_power_of_two());
    match kp.cmp(&mp) {
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Equal => k <= m,
    }
}

/// Writes down the butterflies the engines' `fft`/`ifft` perform (the loops of
/// `Simd128::fft_private`/`ifft_private`, i.e. the crate's SSSE3 engine).
struct Recorder {
    skew: &'static tables::Skew,
    steps: Vec<Step>,
}

impl Recorder {
    fn log(&self, at: usize) -> Option<GfElement> {
        let log = self.skew[at];
        (log != GF_MODULUS).then_some(log)
    }

    fn ifft_pair(&mut self, x: usize, y: usize, log: Option<GfElement>) {
        self.steps.push(Step::Ifft {
            x: slot(x),
            y: slot(y),
            log,
        });
    }

    fn fft_pair(&mut self, x: usize, y: usize, log: Option<GfElement>) {
        self.steps.push(Step::Fft {
            x: slot(x),
            y: slot(y),
            log,
        });
    }

    /// `work[a + i] ^= work[b + i]` for i in 0..count (the crate's `xor_within`).
    fn xor_chunk(&mut self, a: usize, b: usize, count: usize) {
        for i in 0..count {
            self.steps.push(Step::Xor {
                dst: slot(a + i),
                src: slot(b + i),
            });
        }
    }

    fn ifft(&mut self, pos: usize, size: usize, truncated: usize, skew_delta: usize) {
        let (mut dist, mut dist4) = (1, 4);
        while dist4 <= size {
            let mut r = 0;
            while r < truncated {
                let base = r + dist + skew_delta - 1;
                let (m01, m02, m23) = (
                    self.log(base),
                    self.log(base + dist),
                    self.log(base + dist * 2),
                );
                for i in r..r + dist {
                    let s = pos + i;
                    self.ifft_pair(s, s + dist, m01);
                    self.ifft_pair(s + 2 * dist, s + 3 * dist, m23);
                    self.ifft_pair(s, s + 2 * dist, m02);
                    self.ifft_pair(s + dist, s + 3 * dist, m02);
                }
                r += dist4;
            }
            dist = dist4;
            dist4 <<= 2;
        }
        if dist < size {
            let log = self.log(dist + skew_delta - 1);
            for i in 0..dist {
                self.ifft_pair(pos + i, pos + dist + i, log);
            }
        }
    }

    fn fft(&mut self, pos: usize, size: usize, truncated: usize, skew_delta: usize) {
        let (mut dist4, mut dist) = (size, size >> 2);
        while dist != 0 {
            let mut r = 0;
            while r < truncated {
                let base = r + dist + skew_delta - 1;
                let (m01, m02, m23) = (
                    self.log(base),
                    self.log(base + dist),
                    self.log(base + dist * 2),
                );
                for i in r..r + dist {
                    let s = pos + i;
                    self.fft_pair(s, s + 2 * dist, m02);
                    self.fft_pair(s + dist, s + 3 * dist, m02);
                    self.fft_pair(s, s + dist, m01);
                    self.fft_pair(s + 2 * dist, s + 3 * dist, m23);
                }
                r += dist4;
            }
            dist4 = dist;
            dist >>= 2;
        }
        if dist4 == 2 {
            let mut r = 0;
            while r < truncated {
                let log = self.log(r + skew_delta);
                self.fft_pair(pos + r, pos + r + 1, log);
                r += 2;
            }
        }
    }
}
