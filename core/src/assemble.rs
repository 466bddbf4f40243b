//! Reading: turns the framed bytes of a [`ReadPlan`]'s fetches back into exactly the requested
//! object bytes, in order, as they arrive.
//!
//! Each fetched stream is verified chunk by chunk; output leaves as soon as the bytes it needs are
//! verified (the first byte needs one chunk of one shard, not a block). Missing data pieces are
//! rebuilt from the survivors' column window, a step at a time. Memory is bounded by [`wants`]:
//! a stream is asked for more only while it is less than two blocks ahead of the output.
//!
//! [`wants`]: Assembler::wants

use crate::erasure::{Codec, ErasureError, COLUMN};
use crate::frame::{verify_chunk, CHECKSUM_BYTES};
use crate::plan::{BlockNeed, Fetch, ReadPlan};
use std::fmt;
use std::ops::Range;

/// Columns rebuilt per reconstruction call (unless the segment ends sooner): the decoder has a
/// fixed cost per call, so tiny steps would be slow, and huge ones would delay the first byte.
const RECONSTRUCT_STEP: u64 = 64 << 10;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AssembleError {
    /// A chunk failed its checksum: the shard file is rotten there. Re-plan without it.
    ChecksumMismatch {
        shard: usize,
        chunk: u64,
    },
    /// Bytes pushed for a shard the plan does not read.
    UnexpectedShard(usize),
    /// More bytes pushed than the shard's fetch covers.
    TooMuchData {
        shard: usize,
    },
    /// `advance` past the bytes the last `peek` returned.
    AdvancePastPeek {
        n: usize,
        peeked: usize,
    },
    Erasure(ErasureError),
}

impl fmt::Display for AssembleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ChecksumMismatch { shard, chunk } => {
                write!(f, "checksum mismatch in shard {shard}, chunk {chunk}")
            }
            Self::UnexpectedShard(s) => write!(f, "shard {s} is not part of this read plan"),
            Self::TooMuchData { shard } => {
                write!(f, "shard {shard} sent more bytes than were requested")
            }
            Self::AdvancePastPeek { n, peeked } => {
                write!(
                    f,
                    "cannot advance {n} bytes: the last peek returned {peeked}"
                )
            }
            Self::Erasure(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for AssembleError {}

impl From<ErasureError> for AssembleError {
    fn from(e: ErasureError) -> Self {
        Self::Erasure(e)
    }
}

/// One fetched shard stream: its framed bytes verified into logical bytes.
struct Stream {
    shard: usize,
    next_chunk: u64,
    last_chunk: u64,
    /// A partly received chunk (data + checksum).
    pending: Vec<u8>,
    /// Verified logical bytes, starting at logical offset `base`.
    data: Vec<u8>,
    base: u64,
}

impl Stream {
    /// `hold`: the most verified bytes the stream keeps at once (its look-ahead), reserved up
    /// front so that arriving chunks never regrow (and recopy) the buffer.
    fn new(fetch: &Fetch, chunk_bytes: u64, hold: u64) -> Self {
        let len = fetch.logical.end - fetch.logical.start;
        Self {
            shard: fetch.shard,
            next_chunk: fetch.logical.start / chunk_bytes,
            last_chunk: fetch.logical.end.div_ceil(chunk_bytes),
            pending: Vec::new(),
            data: Vec::with_capacity(len.min(hold) as usize),
            base: fetch.logical.start,
        }
    }

    fn verified_end(&self) -> u64 {
        self.base + self.data.len() as u64
    }

    fn complete(&self) -> bool {
        self.next_chunk == self.last_chunk
    }

    /// Verified bytes at logical `range`, if all of it has arrived.
    fn bytes(&self, range: Range<u64>) -> Option<&[u8]> {
        let start = range.start.checked_sub(self.base)? as usize;
        let end = range.end.checked_sub(self.base)? as usize;
        self.data.get(start..end)
    }

    /// Forgets verified bytes before logical offset `offset`.
    fn discard_before(&mut self, offset: u64) {
        let n = offset.saturating_sub(self.base).min(self.data.len() as u64);
        if n > 0 {
            self.data.drain(..n as usize);
            self.base += n;
        }
    }
}

/// A rebuilt column window of one missing piece, kept until the output has moved past it.
struct Rebuilt {
    block: u64,
    shard: usize,
    columns: Range<u64>,
    bytes: Vec<u8>,
}

/// Incremental assembly of one [`ReadPlan`].
pub struct Assembler {
    plan: ReadPlan,
    streams: Vec<Option<Stream>>,
    codec: Codec,
    survivors: Vec<usize>,
    pos: u64,
    need: Option<BlockNeed>,
    rebuilt: Option<Rebuilt>,
    /// Length of the run the last `peek` returned: how far `advance` may go.
    peeked: usize,
    /// The input `place` laid out and `commit_placed` verifies: its shard and each chunk's data
    /// length, and the chunks' checksums, copied here by the host.
    placed: Option<usize>,
    placed_lens: Vec<usize>,
    sums: Vec<u8>,
}

/// One copy the host makes of a placed input: bytes [src, src + len) of the input go to `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copy {
    pub src: usize,
    pub dst: *mut u8,
    pub len: usize,
}

impl Assembler {
    pub fn new(plan: ReadPlan) -> Result<Self, AssembleError> {
        let g = plan.geometry;
        let mut streams: Vec<Option<Stream>> = (0..g.total_shards()).map(|_| None).collect();
        // What `wants` lets a stream hold: up to two pieces ahead, plus the read that crosses.
        let hold = 3 * g.piece_bytes(0);
        for f in &plan.fetches {
            streams[f.shard] = Some(Stream::new(f, g.chunk_bytes(), hold));
        }
        Ok(Self {
            codec: Codec::new(g.data_shards(), g.parity_shards())?,
            survivors: plan.survivors(),
            pos: plan.range.start,
            streams,
            plan,
            need: None,
            rebuilt: None,
            peeked: 0,
            placed: None,
            placed_lens: Vec::new(),
            sums: Vec::new(),
        })
    }

    pub fn plan(&self) -> &ReadPlan {
        &self.plan
    }

    /// Object offset of the next byte to emit: where a re-plan resumes after a failure.
    pub fn position(&self) -> u64 {
        self.pos
    }

    pub fn is_done(&self) -> bool {
        self.pos == self.plan.range.end
    }

    /// Whether shard `shard`'s stream should be read further now (bounded look-ahead).
    pub fn wants(&self, shard: usize) -> bool {
        let Some(Some(s)) = self.streams.get(shard) else {
            return false;
        };
        let g = &self.plan.geometry;
        let block = self.pos / g.block_bytes();
        !s.complete() && s.verified_end() < g.piece_offset(block + 2)
    }

    /// Feeds framed bytes of shard `shard`, in order from its fetch's start, in pieces of any size.
    pub fn push(&mut self, shard: usize, mut input: &[u8]) -> Result<(), AssembleError> {
        let g = self.plan.geometry;
        let s = self
            .streams
            .get_mut(shard)
            .and_then(Option::as_mut)
            .ok_or(AssembleError::UnexpectedShard(shard))?;
        while !input.is_empty() {
            if s.complete() {
                return Err(AssembleError::TooMuchData { shard });
            }
            let chunk = s.next_chunk;
            let framed = g.chunk_len(chunk) as usize + CHECKSUM_BYTES;
            if s.pending.is_empty() && input.len() >= framed {
                // Fast path: a whole chunk in the input, verified in place.
                let (whole, rest) = input.split_at(framed);
                accept_chunk(s, chunk, whole)?;
                input = rest;
                continue;
            }
            let take = (framed - s.pending.len()).min(input.len());
            s.pending.extend_from_slice(&input[..take]);
            input = &input[take..];
            if s.pending.len() == framed {
                let whole = std::mem::take(&mut s.pending);
                accept_chunk(s, chunk, &whole)?;
                s.pending = whole;
                s.pending.clear();
            }
        }
        Ok(())
    }

    /// Lays out `len` framed bytes of shard `shard` (its next bytes, whole chunks only) so the
    /// host copies them straight where they go: each chunk's data to the end of the stream's
    /// verified bytes, its checksum aside. That spares the copy into an input buffer and the
    /// one out of it that `push` makes. Fills `copies` and returns true; false (nothing changed)
    /// when the input is not whole chunks of this stream, or a partial chunk is pending: `push`
    /// then takes it. Follow with the copies and `commit_placed` before any other call.
    pub fn place(&mut self, shard: usize, len: usize, copies: &mut Vec<Copy>) -> bool {
        copies.clear();
        self.placed = None;
        let g = self.plan.geometry;
        let Some(Some(s)) = self.streams.get_mut(shard) else {
            return false;
        };
        if !s.pending.is_empty() {
            return false;
        }
        self.placed_lens.clear();
        let (mut at, mut chunk, mut data) = (0, s.next_chunk, 0);
        while at < len {
            // Past the chunks the plan fetches: not this stream's (and no chunk length to ask for).
            if chunk == s.last_chunk {
                return false;
            }
            let c = g.chunk_len(chunk) as usize;
            if at + c + CHECKSUM_BYTES > len {
                return false;
            }
            self.placed_lens.push(c);
            at += c + CHECKSUM_BYTES;
            data += c;
            chunk += 1;
        }
        if self.placed_lens.is_empty() {
            return false;
        }
        s.data.reserve(data);
        self.sums.clear();
        self.sums.resize(self.placed_lens.len() * CHECKSUM_BYTES, 0);
        let (mut src, mut dst) = (0, s.data.len());
        let tail = s.data.as_mut_ptr();
        let sums = self.sums.as_mut_ptr();
        for (i, &c) in self.placed_lens.iter().enumerate() {
            copies.push(Copy {
                src,
                dst: tail.wrapping_add(dst),
                len: c,
            });
            copies.push(Copy {
                src: src + c,
                dst: sums.wrapping_add(i * CHECKSUM_BYTES),
                len: CHECKSUM_BYTES,
            });
            src += c + CHECKSUM_BYTES;
            dst += c;
        }
        self.placed = Some(shard);
        true
    }

    /// Verifies the chunks of the input the last `place` laid out and makes them the stream's.
    /// A chunk that fails its checksum is never served (ChecksumMismatch: re-plan without it).
    ///
    /// # Safety
    /// Every copy of that `place` was made in full, and nothing was called on the assembler since.
    pub unsafe fn commit_placed(&mut self) -> Result<(), AssembleError> {
        let shard = self
            .placed
            .take()
            .ok_or(AssembleError::UnexpectedShard(usize::MAX))?;
        let s = self.streams[shard].as_mut().expect("placed on a stream");
        for (i, &c) in self.placed_lens.iter().enumerate() {
            let start = s.data.len();
            // SAFETY: `place` reserved these bytes past the end and the host wrote all of them.
            let data = unsafe { std::slice::from_raw_parts(s.data.as_ptr().add(start), c) };
            let sum = &self.sums[i * CHECKSUM_BYTES..(i + 1) * CHECKSUM_BYTES];
            if !verify_chunk(shard, s.next_chunk, data, sum) {
                return Err(AssembleError::ChecksumMismatch {
                    shard,
                    chunk: s.next_chunk,
                });
            }
            // SAFETY: as above, and within the capacity `place` reserved.
            unsafe { s.data.set_len(start + c) };
            s.next_chunk += 1;
        }
        Ok(())
    }

    /// `place`, the copies and `commit_placed` in one (the host's part done here): for tests and
    /// the native benchmark. Falls back to `push` when the input cannot be placed.
    pub fn push_placed(&mut self, shard: usize, input: &[u8]) -> Result<(), AssembleError> {
        let mut copies = Vec::new();
        if !self.place(shard, input.len(), &mut copies) {
            return self.push(shard, input);
        }
        for c in &copies {
            let from = &input[c.src..c.src + c.len];
            // SAFETY: `place` made `dst` point at `len` reserved bytes, apart from `input`.
            unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), c.dst, c.len) };
        }
        // SAFETY: every copy was made just above.
        unsafe { self.commit_placed() }
    }

    /// Appends to `out` as many requested bytes as can be produced now, at most `max`.
    /// Returns how many were appended; 0 means more input is needed (or the read is done).
    pub fn pull(&mut self, out: &mut Vec<u8>, max: usize) -> Result<usize, AssembleError> {
        let start_len = out.len();
        loop {
            let run = self.peek(max - (out.len() - start_len))?;
            if run.is_empty() {
                break;
            }
            out.extend_from_slice(run);
            let n = run.len();
            self.advance(n)?;
        }
        Ok(out.len() - start_len)
    }

    /// The next run of requested bytes that is ready now (at most `max`), in place: verified
    /// stream bytes or a rebuilt window, so the caller copies them once, straight to where they
    /// go. Empty when more input is needed (or the read is done). `advance` consumes them.
    pub fn peek(&mut self, max: usize) -> Result<&[u8], AssembleError> {
        self.peeked = 0;
        if self.pos >= self.plan.range.end || max == 0 {
            return Ok(&[]);
        }
        let g = self.plan.geometry;
        let block = self.pos / g.block_bytes();
        self.enter_block(block);
        let p = g.piece_bytes(block);
        let rel = self.pos - g.block_start(block);
        let j = (rel / p) as usize;
        let local = rel - j as u64 * p;
        let seg_end = self
            .need
            .as_ref()
            .and_then(|n| n.segments.iter().find(|(s, _)| *s == j))
            .map_or(local, |(_, r)| r.end);
        let want = (seg_end - local).min(max as u64);
        let base = g.piece_offset(block);
        if !self.plan.unavailable[j] {
            let run = self.streams[j].as_ref().and_then(|s| {
                let avail = s.verified_end().saturating_sub(base + local).min(want);
                s.bytes(base + local..base + local + avail)
            });
            let run = run.unwrap_or(&[]);
            self.peeked = run.len();
            return Ok(run);
        }
        if !self.rebuilt_covers(block, j, local) && !self.rebuild(block, j, local, seg_end)? {
            return Ok(&[]);
        }
        let r = self.rebuilt.as_ref().expect("rebuilt window covers pos");
        let n = (r.columns.end - local).min(want) as usize;
        let at = (local - r.columns.start) as usize;
        self.peeked = n;
        Ok(&r.bytes[at..at + n])
    }

    /// Consumes the first `n` bytes of the last `peek`'s run.
    pub fn advance(&mut self, n: usize) -> Result<(), AssembleError> {
        if n > self.peeked {
            return Err(AssembleError::AdvancePastPeek {
                n,
                peeked: self.peeked,
            });
        }
        self.peeked -= n;
        self.pos += n as u64;
        Ok(())
    }

    /// On reaching a new block: compute its needs and drop what earlier blocks held.
    fn enter_block(&mut self, block: u64) {
        if self.need.as_ref().is_some_and(|n| n.block == block) {
            return;
        }
        let offset = self.plan.geometry.piece_offset(block);
        for s in self.streams.iter_mut().flatten() {
            s.discard_before(offset);
        }
        self.need = Some(self.plan.block_need(block));
    }

    fn rebuilt_covers(&self, block: u64, shard: usize, local: u64) -> bool {
        self.rebuilt
            .as_ref()
            .is_some_and(|r| r.block == block && r.shard == shard && r.columns.contains(&local))
    }

    /// Rebuilds the next step of missing piece `shard` from `local`, if the survivors have it.
    fn rebuild(
        &mut self,
        block: u64,
        shard: usize,
        local: u64,
        seg_end: u64,
    ) -> Result<bool, AssembleError> {
        let g = self.plan.geometry;
        let col = COLUMN as u64;
        let window = self
            .need
            .as_ref()
            .and_then(|n| n.window.clone())
            .unwrap_or(0..g.piece_bytes(block));
        let base = g.piece_offset(block);
        let lo = local / col * col;
        let target = seg_end.next_multiple_of(col).min(window.end);
        let arrived = self
            .survivors
            .iter()
            .filter_map(|&s| self.streams[s].as_ref())
            .map(|s| s.verified_end().saturating_sub(base))
            .min()
            .unwrap_or(0);
        let hi = if arrived >= target {
            target
        } else {
            arrived / col * col
        };
        if hi <= local || (hi < target && hi - lo < RECONSTRUCT_STEP) {
            return Ok(false);
        }
        let total = g.total_shards();
        let mut present: Vec<Option<&[u8]>> = vec![None; total];
        for &s in &self.survivors {
            present[s] = self.streams[s]
                .as_ref()
                .and_then(|st| st.bytes(base + lo..base + hi));
        }
        let mut bytes = self.rebuilt.take().map(|r| r.bytes).unwrap_or_default();
        bytes.clear();
        bytes.resize((hi - lo) as usize, 0);
        let mut out: Vec<Option<&mut [u8]>> = (0..total).map(|_| None).collect();
        out[shard] = Some(&mut bytes);
        self.codec.reconstruct(&present, &mut out)?;
        self.rebuilt = Some(Rebuilt {
            block,
            shard,
            columns: lo..hi,
            bytes,
        });
        Ok(true)
    }
}

/// Verifies one framed chunk and appends its data to the stream.
fn accept_chunk(s: &mut Stream, chunk: u64, framed: &[u8]) -> Result<(), AssembleError> {
    let (data, sum) = framed.split_at(framed.len() - CHECKSUM_BYTES);
    if !verify_chunk(s.shard, chunk, data, sum) {
        return Err(AssembleError::ChecksumMismatch {
            shard: s.shard,
            chunk,
        });
    }
    s.data.extend_from_slice(data);
    s.next_chunk += 1;
    Ok(())
}

/// Serves a plan from whole shard files in memory, feeding each fetch in `step`-byte pieces
/// round-robin. For tests and benchmarks; the gateway feeds network streams instead.
pub fn read_from_files(
    plan: ReadPlan,
    files: &[Vec<u8>],
    step: usize,
) -> Result<Vec<u8>, AssembleError> {
    let fetches = plan.fetches.clone();
    let mut asm = Assembler::new(plan)?;
    let mut offsets: Vec<u64> = fetches.iter().map(|f| f.physical.start).collect();
    let mut out = Vec::new();
    while !asm.is_done() {
        let mut progressed = asm.pull(&mut out, usize::MAX)? > 0;
        for (f, at) in fetches.iter().zip(offsets.iter_mut()) {
            if *at < f.physical.end && asm.wants(f.shard) {
                let end = (*at + step as u64).min(f.physical.end);
                asm.push(f.shard, &files[f.shard][*at as usize..end as usize])?;
                *at = end;
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::encode_part;
    use crate::geometry::Geometry;
    use proptest::prelude::*;

    fn object(size: usize, seed: u64) -> Vec<u8> {
        crate::workload::pseudo_random_bytes(size, seed)
    }

    #[test]
    fn healthy_read_of_everything() {
        let g = Geometry::new(300_000, 65_536, 4, 2, 4096).unwrap();
        let data = object(300_000, 1);
        let files = encode_part(g, &data).unwrap();
        let plan = ReadPlan::new(g, 0..300_000, &[]).unwrap();
        assert_eq!(read_from_files(plan, &files, 5000).unwrap(), data);
    }

    #[test]
    fn first_bytes_leave_after_one_chunk() {
        let g = Geometry::new(1 << 20, 1 << 20, 4, 2, 16 << 10).unwrap();
        let files = encode_part(g, &object(1 << 20, 2)).unwrap();
        let plan = ReadPlan::new(g, 0..1 << 20, &[]).unwrap();
        let mut asm = Assembler::new(plan).unwrap();
        asm.push(0, &files[0][..(16 << 10) + 8]).unwrap();
        let mut out = Vec::new();
        assert_eq!(asm.pull(&mut out, usize::MAX).unwrap(), 16 << 10);
    }

    #[test]
    fn a_rotten_chunk_is_never_served() {
        let g = Geometry::new(100_000, 65_536, 4, 2, 1024).unwrap();
        let mut files = encode_part(g, &object(100_000, 3)).unwrap();
        files[1][2000] ^= 0x40;
        let plan = ReadPlan::new(g, 0..100_000, &[]).unwrap();
        let err = read_from_files(plan, &files, 700).unwrap_err();
        assert_eq!(err, AssembleError::ChecksumMismatch { shard: 1, chunk: 1 });
    }

    #[test]
    fn extra_bytes_and_unknown_shards_are_refused() {
        let g = Geometry::new(1000, 1000, 2, 1, 64).unwrap();
        let files = encode_part(g, &object(1000, 4)).unwrap();
        let mut asm = Assembler::new(ReadPlan::new(g, 0..10, &[]).unwrap()).unwrap();
        assert_eq!(asm.push(2, &[0]), Err(AssembleError::UnexpectedShard(2)));
        assert_eq!(
            asm.push(0, &files[0][..73]),
            Err(AssembleError::TooMuchData { shard: 0 })
        );
    }

    #[test]
    fn peeked_runs_are_consumed_in_any_steps_and_never_beyond() {
        let g = Geometry::new(200_000, 65_536, 4, 2, 4096).unwrap();
        let data = object(200_000, 5);
        let files = encode_part(g, &data).unwrap();
        let plan = ReadPlan::new(g, 1000..150_000, &[2]).unwrap();
        let fetches = plan.fetches.clone();
        let mut asm = Assembler::new(plan).unwrap();
        assert_eq!(
            asm.advance(1),
            Err(AssembleError::AdvancePastPeek { n: 1, peeked: 0 })
        );
        for f in &fetches {
            let bytes = &files[f.shard][f.physical.start as usize..f.physical.end as usize];
            asm.push(f.shard, bytes).unwrap();
        }
        let mut out = Vec::new();
        while !asm.is_done() {
            let run = asm.peek(10_000).unwrap().to_vec();
            assert!(!run.is_empty() && run.len() <= 10_000);
            let half = run.len().div_ceil(2);
            out.extend_from_slice(&run[..half]);
            asm.advance(half).unwrap();
            let rest = run.len() - half;
            assert_eq!(
                asm.advance(rest + 1),
                Err(AssembleError::AdvancePastPeek {
                    n: rest + 1,
                    peeked: rest
                })
            );
            out.extend_from_slice(&run[half..]);
            asm.advance(rest).unwrap();
        }
        assert_eq!(out, &data[1000..150_000]);
    }

    /// Like `read_from_files`, but each fetch is fed `chunks` whole framed chunks at a time
    /// through `push_placed` (what the gateway's byte streams deliver).
    fn read_placed(
        plan: ReadPlan,
        files: &[Vec<u8>],
        chunks: u64,
    ) -> Result<Vec<u8>, AssembleError> {
        let g = plan.geometry;
        let fetches = plan.fetches.clone();
        let mut asm = Assembler::new(plan)?;
        let mut at: Vec<u64> = fetches.iter().map(|f| f.physical.start).collect();
        let mut out = Vec::new();
        while !asm.is_done() {
            let mut progressed = asm.pull(&mut out, usize::MAX)? > 0;
            for (f, at) in fetches.iter().zip(at.iter_mut()) {
                if *at < f.physical.end && asm.wants(f.shard) {
                    let end = (*at + chunks * (g.chunk_bytes() + CHECKSUM_BYTES as u64))
                        .min(f.physical.end);
                    asm.push_placed(f.shard, &files[f.shard][*at as usize..end as usize])?;
                    *at = end;
                    progressed = true;
                }
            }
            if !progressed {
                break;
            }
        }
        Ok(out)
    }

    #[test]
    fn placed_input_is_verified_before_it_is_served() {
        let g = Geometry::new(100_000, 65_536, 4, 2, 1024).unwrap();
        let data = object(100_000, 3);
        let mut files = encode_part(g, &data).unwrap();
        let plan = ReadPlan::new(g, 0..100_000, &[]).unwrap();
        assert_eq!(read_placed(plan, &files, 3).unwrap(), data);
        files[1][2000] ^= 0x40;
        let plan = ReadPlan::new(g, 0..100_000, &[]).unwrap();
        let err = read_placed(plan, &files, 3).unwrap_err();
        assert_eq!(err, AssembleError::ChecksumMismatch { shard: 1, chunk: 1 });
    }

    #[test]
    fn inputs_that_are_not_whole_chunks_are_not_placed() {
        let g = Geometry::new(10_000, 10_000, 2, 1, 1024).unwrap();
        let files = encode_part(g, &object(10_000, 4)).unwrap();
        let mut asm = Assembler::new(ReadPlan::new(g, 0..10_000, &[]).unwrap()).unwrap();
        let mut copies = Vec::new();
        assert!(!asm.place(0, 1000, &mut copies)); // part of a chunk
        assert!(!asm.place(2, 1032, &mut copies)); // a shard the plan does not read
        assert!(!asm.place(0, 100_000, &mut copies)); // past the fetch
        asm.push(0, &files[0][..10]).unwrap();
        assert!(!asm.place(0, 1022, &mut copies)); // a chunk is pending
        assert!(asm.place(1, 2 * 1032, &mut copies));
        assert_eq!(copies.len(), 4);
        assert_eq!((copies[1].src, copies[1].len), (1024, 8));
    }

    fn case() -> impl Strategy<Value = (usize, usize, u64, u64, usize, Vec<usize>, u64, u64, usize)>
    {
        (1usize..=6, 1usize..=3, 1u64..=8, 1u64..=6, 1usize..60_000).prop_flat_map(
            |(k, m, block_cols, chunk_cols, size)| {
                let lost = proptest::sample::subsequence((0..k + m).collect::<Vec<_>>(), 0..=m);
                (
                    Just(k),
                    Just(m),
                    Just(block_cols * 1000 + 7),
                    Just(chunk_cols * 64),
                    Just(size),
                    lost,
                    0..size as u64,
                    1..=size as u64,
                    1usize..5000,
                )
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(160))]

        #[test]
        fn any_range_any_loss_returns_exactly_those_bytes(
            (k, m, block, chunk, size, lost, a, len, step) in case(), seed in any::<u64>(),
        ) {
            let g = Geometry::new(size as u64, block, k, m, chunk).unwrap();
            let data = object(size, seed);
            let mut files = encode_part(g, &data).unwrap();
            for &s in &lost {
                files[s] = vec![0xEE; files[s].len()]; // gone: must never be read
            }
            let end = (a + len).min(size as u64);
            let plan = ReadPlan::new(g, a..end, &lost).unwrap();
            for f in &plan.fetches {
                prop_assert!(!lost.contains(&f.shard));
            }
            let got = read_from_files(plan.clone(), &files, step).unwrap();
            prop_assert_eq!(got.as_slice(), &data[a as usize..end as usize]);
            let placed = read_placed(plan, &files, 1 + step as u64 % 5).unwrap();
            prop_assert_eq!(placed.as_slice(), &data[a as usize..end as usize]);
        }
    }
}
