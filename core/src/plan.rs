//! Read plans: which byte range of which shard file a range of an object part needs.
//!
//! Healthy, only data shards are read, each needed one with a single ranged request covering every
//! block the range touches (consecutive blocks are adjacent in a shard file), widened only to whole
//! checksum chunks. When a needed data shard is unavailable, the plan reads k survivors (available
//! data shards first, then parity) over the 64-byte column window the range needs in each affected
//! block, so a small degraded read rebuilds a small window, not a block.

use crate::erasure::COLUMN;
use crate::geometry::Geometry;
use std::fmt;
use std::ops::Range;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// The range is empty or extends past the part.
    InvalidRange { start: u64, end: u64, size: u64 },
    /// A shard index is not below k + m.
    InvalidShard(usize),
    /// More than m shard files are unavailable.
    TooManyUnavailable { unavailable: usize, m: usize },
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidRange { start, end, size } => {
                write!(
                    f,
                    "range {start}..{end} is empty or outside a part of {size} bytes"
                )
            }
            Self::InvalidShard(s) => write!(f, "shard index {s} out of range"),
            Self::TooManyUnavailable { unavailable, m } => write!(
                f,
                "{unavailable} shard files unavailable but only {m} can be rebuilt"
            ),
        }
    }
}

impl std::error::Error for PlanError {}

/// One ranged request to one shard file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetch {
    pub shard: usize,
    /// Chunk-aligned range of the shard file's logical bytes (pieces, no checksums).
    pub logical: Range<u64>,
    /// The same range in the framed file: the HTTP range to request.
    pub physical: Range<u64>,
}

/// What one block of the range needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockNeed {
    pub block: u64,
    /// Data pieces the range touches, with the piece-relative bytes it wants from each.
    pub segments: Vec<(usize, Range<u64>)>,
    /// Piece-relative column window to read from every survivor when a needed piece is missing.
    pub window: Option<Range<u64>>,
}

/// Everything needed to serve `range` of a part: the requests to make and what each block needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPlan {
    pub geometry: Geometry,
    pub range: Range<u64>,
    /// Shard files considered lost for this read.
    pub unavailable: Vec<bool>,
    /// One entry per shard file read, in shard order.
    pub fetches: Vec<Fetch>,
}

impl ReadPlan {
    /// Plans reading `range` (half-open, non-empty, within the part) with `unavailable` shards.
    pub fn new(
        geometry: Geometry,
        range: Range<u64>,
        unavailable: &[usize],
    ) -> Result<Self, PlanError> {
        if range.start >= range.end || range.end > geometry.size() {
            return Err(PlanError::InvalidRange {
                start: range.start,
                end: range.end,
                size: geometry.size(),
            });
        }
        let mut lost = vec![false; geometry.total_shards()];
        for &s in unavailable {
            *lost.get_mut(s).ok_or(PlanError::InvalidShard(s))? = true;
        }
        let lost_count = lost.iter().filter(|&&l| l).count();
        if lost_count > geometry.parity_shards() {
            return Err(PlanError::TooManyUnavailable {
                unavailable: lost_count,
                m: geometry.parity_shards(),
            });
        }
        let mut plan = Self {
            geometry,
            range,
            unavailable: lost,
            fetches: Vec::new(),
        };
        plan.fetches = plan.compute_fetches();
        Ok(plan)
    }

    /// True when some block must be rebuilt from parity.
    pub fn is_degraded(&self) -> bool {
        self.blocks().any(|b| b.window.is_some())
    }

    /// The survivors read for rebuilding: the first k available shards, data before parity.
    pub fn survivors(&self) -> Vec<usize> {
        (0..self.geometry.total_shards())
            .filter(|&s| !self.unavailable[s])
            .take(self.geometry.data_shards())
            .collect()
    }

    /// The blocks of the range, in order, with what each needs.
    pub fn blocks(&self) -> impl Iterator<Item = BlockNeed> + '_ {
        let g = &self.geometry;
        let first = self.range.start / g.block_bytes();
        let last = (self.range.end - 1) / g.block_bytes();
        (first..=last).map(move |b| self.block_need(b))
    }

    /// What block `b` (which must intersect the range) needs.
    pub fn block_need(&self, b: u64) -> BlockNeed {
        let g = &self.geometry;
        let start = g.block_start(b);
        let p = g.piece_bytes(b);
        let lo = self.range.start.max(start) - start;
        let hi = self.range.end.min(start + g.block_len(b)) - start;
        let segments: Vec<(usize, Range<u64>)> = (0..g.data_shards())
            .filter_map(|j| {
                let piece = j as u64 * p..(j as u64 + 1) * p;
                let (s, e) = (lo.max(piece.start), hi.min(piece.end));
                (s < e).then(|| (j, s - piece.start..e - piece.start))
            })
            .collect();
        let degraded = segments.iter().any(|(j, _)| self.unavailable[*j]);
        let window = degraded.then(|| {
            let col = COLUMN as u64;
            let s = segments.iter().map(|(_, r)| r.start).min().unwrap_or(0);
            let e = segments.iter().map(|(_, r)| r.end).max().unwrap_or(0);
            s / col * col..e.next_multiple_of(col).min(p)
        });
        BlockNeed {
            block: b,
            segments,
            window,
        }
    }

    /// Logical bytes of shard `shard` this plan needs in block `need.block`, if any.
    pub fn shard_need(&self, need: &BlockNeed, shard: usize) -> Option<Range<u64>> {
        let base = self.geometry.piece_offset(need.block);
        let local = match &need.window {
            Some(w) => self.survivors().contains(&shard).then(|| w.clone()),
            None => need
                .segments
                .iter()
                .find(|(j, _)| *j == shard)
                .map(|(_, r)| r.clone()),
        }?;
        Some(base + local.start..base + local.end)
    }

    /// One fetch per shard file: the hull of what it needs over all blocks, chunk-aligned.
    fn compute_fetches(&self) -> Vec<Fetch> {
        let g = &self.geometry;
        let survivors = self.survivors();
        let mut hulls: Vec<Option<Range<u64>>> = vec![None; g.total_shards()];
        for need in self.blocks() {
            let shards: Vec<usize> = match &need.window {
                Some(_) => survivors.clone(),
                None => need.segments.iter().map(|(j, _)| *j).collect(),
            };
            for s in shards {
                if let Some(r) = self.shard_need(&need, s) {
                    let h = &mut hulls[s];
                    *h = Some(match h.take() {
                        Some(h) => h.start.min(r.start)..h.end.max(r.end),
                        None => r,
                    });
                }
            }
        }
        hulls
            .into_iter()
            .enumerate()
            .filter_map(|(shard, h)| {
                let (logical, physical) = g.chunk_aligned(h?);
                Some(Fetch {
                    shard,
                    logical,
                    physical,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn geom(size: u64) -> Geometry {
        Geometry::new(size, MIB, 4, 2, 16 << 10).unwrap()
    }

    #[test]
    fn a_long_range_is_one_request_per_data_shard() {
        let plan = ReadPlan::new(geom(64 * MIB), 0..64 * MIB, &[]).unwrap();
        assert_eq!(plan.fetches.len(), 4);
        for f in &plan.fetches {
            assert!(f.shard < 4);
            assert_eq!(f.logical, 0..64 * (256 << 10));
        }
        assert!(!plan.is_degraded());
    }

    #[test]
    fn a_small_read_costs_about_one_chunk() {
        let plan = ReadPlan::new(geom(16 * MIB), 5 * MIB + 4096..5 * MIB + 8192, &[]).unwrap();
        assert_eq!(plan.fetches.len(), 1);
        let f = &plan.fetches[0];
        assert_eq!(f.shard, 0);
        assert_eq!(f.logical.end - f.logical.start, 16 << 10);
        assert_eq!(f.physical.end - f.physical.start, (16 << 10) + 8);
    }

    #[test]
    fn a_small_degraded_read_reads_a_small_window_of_k_survivors() {
        let plan = ReadPlan::new(geom(16 * MIB), 5 * MIB + 4096..5 * MIB + 8192, &[0]).unwrap();
        assert!(plan.is_degraded());
        let shards: Vec<usize> = plan.fetches.iter().map(|f| f.shard).collect();
        assert_eq!(shards, vec![1, 2, 3, 4]);
        for f in &plan.fetches {
            assert_eq!(f.logical.end - f.logical.start, 16 << 10);
        }
    }

    #[test]
    fn rejects_bad_input() {
        let g = geom(100);
        assert!(ReadPlan::new(g, 0..0, &[]).is_err());
        assert!(ReadPlan::new(g, 0..101, &[]).is_err());
        assert!(ReadPlan::new(g, 0..10, &[6]).is_err());
        assert!(ReadPlan::new(g, 0..10, &[0, 1, 2]).is_err());
    }
}
