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
use std::collections::VecDeque;
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

/// Verified bytes appended one by one go into segments of this size (`push`); a placed input
/// (`place`) gets a segment of its own size.
const SEGMENT_BYTES: usize = 256 << 10;

/// A run of verified logical bytes of a stream, from logical offset `start`.
struct Segment {
    start: u64,
    data: Vec<u8>,
}

impl Segment {
    fn end(&self) -> u64 {
        self.start + self.data.len() as u64
    }
}

/// One fetched shard stream: its framed bytes verified into logical bytes.
///
/// The verified bytes are kept in segments, each dropped whole once the output has passed it, so
/// no byte is ever moved to make room: a stream that reads far ahead (large pieces) costs no more
/// per byte than one that keeps close.
struct Stream {
    shard: usize,
    next_chunk: u64,
    last_chunk: u64,
    /// A partly received chunk (data + checksum).
    pending: Vec<u8>,
    /// Verified logical bytes, in order and adjacent, from logical offset `floor` on.
    segments: VecDeque<Segment>,
    /// Bytes before this logical offset are no longer needed.
    floor: u64,
    /// Logical offset where the verified bytes end.
    end: u64,
}

impl Stream {
    fn new(fetch: &Fetch, chunk_bytes: u64) -> Self {
        Self {
            shard: fetch.shard,
            next_chunk: fetch.logical.start / chunk_bytes,
            last_chunk: fetch.logical.end.div_ceil(chunk_bytes),
            pending: Vec::new(),
            segments: VecDeque::new(),
            floor: fetch.logical.start,
            end: fetch.logical.start,
        }
    }

    fn verified_end(&self) -> u64 {
        self.end
    }

    fn complete(&self) -> bool {
        self.next_chunk == self.last_chunk
    }

    /// The segment holding logical offset `at`, if it is verified and still kept.
    fn segment_at(&self, at: u64) -> Option<&Segment> {
        if at < self.floor {
            return None;
        }
        self.segments
            .iter()
            .find(|seg| seg.start <= at && at < seg.end())
    }

    /// Verified bytes at logical `range`, if all of it has arrived and lies in one segment.
    fn bytes(&self, range: Range<u64>) -> Option<&[u8]> {
        let seg = self.segment_at(range.start)?;
        let start = (range.start - seg.start) as usize;
        let end = range.end.checked_sub(seg.start)? as usize;
        seg.data.get(start..end)
    }

    /// The verified bytes from logical offset `at` that lie together, at most `max` (empty when
    /// none has arrived).
    fn run(&self, at: u64, max: u64) -> &[u8] {
        match self.segment_at(at) {
            Some(seg) => {
                let start = (at - seg.start) as usize;
                let end = start + (seg.end() - at).min(max) as usize;
                &seg.data[start..end]
            }
            None => &[],
        }
    }

    /// Where the verified bytes that lie together with logical offset `at` end (`at` when none).
    fn together_until(&self, at: u64) -> u64 {
        self.segment_at(at).map_or(at, Segment::end)
    }

    /// Appends verified bytes: to the last segment while it has room, else to a new one.
    fn append(&mut self, bytes: &[u8]) {
        match self.segments.back_mut() {
            Some(seg) if seg.data.capacity() - seg.data.len() >= bytes.len() => {
                seg.data.extend_from_slice(bytes)
            }
            _ => {
                let mut data = Vec::with_capacity(SEGMENT_BYTES.max(bytes.len()));
                data.extend_from_slice(bytes);
                self.segments.push_back(Segment {
                    start: self.end,
                    data,
                });
            }
        }
        self.end += bytes.len() as u64;
    }

    /// Forgets verified bytes before logical offset `offset`: whole segments, never moving bytes.
    fn discard_before(&mut self, offset: u64) {
        self.floor = self.floor.max(offset.min(self.end));
        while self
            .segments
            .front()
            .is_some_and(|seg| seg.end() <= self.floor)
        {
            self.segments.pop_front();
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
    /// The input `place` laid out and `commit_placed` verifies: its shard, each chunk's data
    /// length, and the segment the host copies it into.
    placed: Option<usize>,
    placed_lens: Vec<usize>,
    placed_data: Vec<u8>,
}

impl Assembler {
    pub fn new(plan: ReadPlan) -> Result<Self, AssembleError> {
        let g = plan.geometry;
        let mut streams: Vec<Option<Stream>> = (0..g.total_shards()).map(|_| None).collect();
        for f in &plan.fetches {
            streams[f.shard] = Some(Stream::new(f, g.chunk_bytes()));
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
            placed_data: Vec::new(),
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

    /// Makes room for `len` framed bytes of shard `shard` (its next bytes, whole chunks only) in a
    /// new segment of the stream's verified bytes, for the host to copy there in one piece:
    /// `commit_placed` then checks each chunk and moves its data up over the checksums before it.
    /// One large copy by the host and one move of each chunk in the core cost far less than a
    /// copy per chunk by the host, or `push`'s copy into an input buffer and out of it again.
    /// Returns where to copy the input; None (nothing changed) when it is not whole chunks of this
    /// stream, or a partial chunk is pending: `push` then takes it. Follow with the copy and
    /// `commit_placed` before any other call.
    pub fn place(&mut self, shard: usize, len: usize) -> Option<*mut u8> {
        self.placed = None;
        let g = self.plan.geometry;
        let Some(Some(s)) = self.streams.get_mut(shard) else {
            return None;
        };
        if !s.pending.is_empty() {
            return None;
        }
        self.placed_lens.clear();
        let (mut at, mut chunk) = (0, s.next_chunk);
        while at < len {
            // Past the chunks the plan fetches: not this stream's (and no chunk length to ask for).
            if chunk == s.last_chunk {
                return None;
            }
            let c = g.chunk_len(chunk) as usize;
            if at + c + CHECKSUM_BYTES > len {
                return None;
            }
            self.placed_lens.push(c);
            at += c + CHECKSUM_BYTES;
            chunk += 1;
        }
        if self.placed_lens.is_empty() {
            return None;
        }
        self.placed_data = Vec::with_capacity(len);
        self.placed = Some(shard);
        Some(self.placed_data.as_mut_ptr())
    }

    /// Verifies the chunks of the input the last `place` laid out and makes their data the
    /// stream's. A chunk that fails its checksum is never served (ChecksumMismatch: re-plan
    /// without it).
    ///
    /// # Safety
    /// The host copied all of that `place`'s input, and called nothing on the assembler since.
    pub unsafe fn commit_placed(&mut self) -> Result<(), AssembleError> {
        let shard = self
            .placed
            .take()
            .ok_or(AssembleError::UnexpectedShard(usize::MAX))?;
        let s = self.streams[shard].as_mut().expect("placed on a stream");
        let mut data = std::mem::take(&mut self.placed_data);
        let base = data.as_mut_ptr();
        // Each chunk is checked where it was copied, then moved up to the end of the data before
        // it, over checksums already read.
        let (mut from, mut to) = (0, 0);
        for &c in &self.placed_lens {
            // SAFETY: `place` reserved the input's length and the host wrote all of it; chunks
            // and their checksums lie within it, and `to <= from` (the move overlaps safely).
            let (chunk, sum) = unsafe {
                (
                    std::slice::from_raw_parts(base.add(from), c),
                    std::slice::from_raw_parts(base.add(from + c), CHECKSUM_BYTES),
                )
            };
            if !verify_chunk(shard, s.next_chunk, chunk, sum) {
                return Err(AssembleError::ChecksumMismatch {
                    shard,
                    chunk: s.next_chunk,
                });
            }
            if from != to {
                // SAFETY: as above.
                unsafe { std::ptr::copy(base.add(from), base.add(to), c) };
            }
            from += c + CHECKSUM_BYTES;
            to += c;
            s.next_chunk += 1;
        }
        // SAFETY: the first `to` bytes are the verified chunks' data, moved there just above.
        unsafe { data.set_len(to) };
        let start = s.end;
        s.end += to as u64;
        s.segments.push_back(Segment { start, data });
        Ok(())
    }

    /// `place`, the copy and `commit_placed` in one (the host's part done here): for tests and
    /// the native benchmark. Falls back to `push` when the input cannot be placed.
    pub fn push_placed(&mut self, shard: usize, input: &[u8]) -> Result<(), AssembleError> {
        let Some(dst) = self.place(shard, input.len()) else {
            return self.push(shard, input);
        };
        // SAFETY: `place` made `dst` point at `input.len()` reserved bytes, apart from `input`.
        unsafe { std::ptr::copy_nonoverlapping(input.as_ptr(), dst, input.len()) };
        // SAFETY: the copy was made just above.
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
            let run = self.streams[j]
                .as_ref()
                .map_or(&[][..], |s| s.run(base + local, want));
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
        // One step reads each survivor's bytes where they lie together (in one segment); segments
        // end on chunk boundaries, which are whole columns, so the step still ends past `local`.
        let together = self
            .survivors
            .iter()
            .filter_map(|&s| self.streams[s].as_ref())
            .map(|s| s.together_until(base + lo).saturating_sub(base))
            .min()
            .unwrap_or(0);
        let hi = hi.min(together / col * col);
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
    s.append(data);
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

    /// Like `read_from_files`, but each fetch is fed whole framed chunks through `push_placed`
    /// (what the gateway's byte streams deliver): `chunks` at a time, more for some shards, so
    /// that the survivors' segments end at different places.
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
                    let n = chunks + f.shard as u64 % 3;
                    let end =
                        (*at + n * (g.chunk_bytes() + CHECKSUM_BYTES as u64)).min(f.physical.end);
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
        assert!(asm.place(0, 1000).is_none()); // part of a chunk
        assert!(asm.place(2, 1032).is_none()); // a shard the plan does not read
        assert!(asm.place(0, 100_000).is_none()); // past the fetch
        asm.push(0, &files[0][..10]).unwrap();
        assert!(asm.place(0, 1022).is_none()); // a chunk is pending
        assert!(asm.place(1, 2 * 1032).is_some());
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
