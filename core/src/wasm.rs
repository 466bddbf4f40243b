//! The wasm-bindgen API used by the worker and the browser (wrapped in `worker/src/core.ts`).
//!
//! Kept narrow and copy-free where it matters: byte buffers live in WASM memory and are reused
//! across calls; JS writes input into `inputPtr(len)` and reads output from `outputPtr`/`outputLen`
//! through views of `memory.buffer` (valid until the next call into this object). Sizes are JS
//! numbers (exact up to 2^53 bytes), so no BigInt at the boundary.

use crate::assemble::{AssembleError, Assembler as CoreAssembler};
use crate::checksum::{S3Checksum, StreamingChecksum};
use crate::encode::PartEncoder as CorePartEncoder;
use crate::erasure::EngineKind;
use crate::geometry::Geometry as CoreGeometry;
use crate::http_range;
use crate::plan::ReadPlan as CoreReadPlan;
use crate::verify::ShardVerifier as CoreShardVerifier;
use wasm_bindgen::prelude::*;

/// The core's crate version.
#[wasm_bindgen]
pub fn version() -> String {
    crate::VERSION.to_string()
}

fn err(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// A JS number that must be a whole, non-negative byte count or index.
fn whole(n: f64, what: &str) -> Result<u64, JsError> {
    if n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_992.0 {
        Ok(n as u64)
    } else {
        Err(JsError::new(&format!(
            "{what} must be a whole number of bytes, got {n}"
        )))
    }
}

thread_local! {
    /// The one input buffer every object shares. JS fills it through a view and makes the call
    /// that consumes it right away, with no other call into the core in between, so one buffer
    /// serves them all: allocated and zero-filled only when it grows, not once per request.
    static INPUT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A handle to the shared input buffer (the field keeps each object's API unchanged).
#[derive(Default)]
struct Buffer;

impl Buffer {
    /// Pointer to at least `len` bytes of the shared input buffer.
    fn ptr(&mut self, len: usize) -> *mut u8 {
        INPUT.with_borrow_mut(|b| {
            if b.len() < len {
                b.resize(len, 0);
            }
            b.as_mut_ptr()
        })
    }

    /// Runs `f` on the first `len` bytes JS wrote.
    fn with_filled<R>(&self, len: usize, f: impl FnOnce(&[u8]) -> R) -> Result<R, JsError> {
        INPUT.with_borrow(|b| {
            b.get(..len)
                .map(f)
                .ok_or_else(|| JsError::new("input length exceeds the input buffer"))
        })
    }
}

/// Layout of one erasure-coded object part.
#[wasm_bindgen]
pub struct Geometry(CoreGeometry);

#[wasm_bindgen]
impl Geometry {
    #[wasm_bindgen(constructor)]
    pub fn new(
        size: f64,
        block_bytes: f64,
        data_shards: usize,
        parity_shards: usize,
        chunk_bytes: f64,
    ) -> Result<Geometry, JsError> {
        let g = CoreGeometry::new(
            whole(size, "size")?,
            whole(block_bytes, "blockBytes")?,
            data_shards,
            parity_shards,
            whole(chunk_bytes, "chunkBytes")?,
        )
        .map_err(err)?;
        Ok(Self(g))
    }

    #[wasm_bindgen(getter)]
    pub fn size(&self) -> f64 {
        self.0.size() as f64
    }
    #[wasm_bindgen(getter, js_name = blockBytes)]
    pub fn block_bytes(&self) -> f64 {
        self.0.block_bytes() as f64
    }
    #[wasm_bindgen(getter, js_name = dataShards)]
    pub fn data_shards(&self) -> usize {
        self.0.data_shards()
    }
    #[wasm_bindgen(getter, js_name = parityShards)]
    pub fn parity_shards(&self) -> usize {
        self.0.parity_shards()
    }
    #[wasm_bindgen(getter, js_name = chunkBytes)]
    pub fn chunk_bytes(&self) -> f64 {
        self.0.chunk_bytes() as f64
    }
    #[wasm_bindgen(getter, js_name = blockCount)]
    pub fn block_count(&self) -> f64 {
        self.0.block_count() as f64
    }
    /// Bytes of each framed shard file: the exact length a PUT streams to each node.
    #[wasm_bindgen(getter, js_name = shardFileBytes)]
    pub fn shard_file_bytes(&self) -> f64 {
        self.0.shard_file_bytes() as f64
    }
    #[wasm_bindgen(js_name = blockLen)]
    pub fn block_len(&self, block: f64) -> Result<f64, JsError> {
        Ok(self.0.block_len(whole(block, "block")?) as f64)
    }
}

/// Which shard-file byte ranges a byte range of a part needs.
#[wasm_bindgen]
pub struct ReadPlan(CoreReadPlan);

#[wasm_bindgen]
impl ReadPlan {
    /// Plans reading object bytes `[start, end)` with the given shard indices unavailable.
    #[wasm_bindgen(constructor)]
    pub fn new(
        geometry: &Geometry,
        start: f64,
        end: f64,
        unavailable: &[u32],
    ) -> Result<ReadPlan, JsError> {
        let lost: Vec<usize> = unavailable.iter().map(|&s| s as usize).collect();
        let range = whole(start, "start")?..whole(end, "end")?;
        Ok(Self(
            CoreReadPlan::new(geometry.0, range, &lost).map_err(err)?,
        ))
    }

    #[wasm_bindgen(getter)]
    pub fn degraded(&self) -> bool {
        self.0.is_degraded()
    }

    /// The requests to make, flattened: `[shard, physicalStart, physicalEnd, …]` (end exclusive).
    pub fn fetches(&self) -> Vec<f64> {
        self.0
            .fetches
            .iter()
            .flat_map(|f| {
                [
                    f.shard as f64,
                    f.physical.start as f64,
                    f.physical.end as f64,
                ]
            })
            .collect()
    }
}

/// Turns fetched shard bytes back into the requested bytes, incrementally.
#[wasm_bindgen]
pub struct Assembler {
    inner: CoreAssembler,
    input: Buffer,
    /// Where the bytes of the last `peek` start (inside the assembler's own buffers).
    peeked: *const u8,
    failed_chunk: f64,
}

#[wasm_bindgen]
impl Assembler {
    #[wasm_bindgen(constructor)]
    pub fn new(plan: &ReadPlan) -> Result<Assembler, JsError> {
        Ok(Self {
            inner: CoreAssembler::new(plan.0.clone()).map_err(err)?,
            input: Buffer,
            peeked: std::ptr::null(),
            failed_chunk: -1.0,
        })
    }

    /// Pointer to a reusable input buffer of `len` bytes; write into it, then call `push`.
    #[wasm_bindgen(js_name = inputPtr)]
    pub fn input_ptr(&mut self, len: usize) -> *mut u8 {
        self.input.ptr(len)
    }

    /// Feeds the first `len` bytes of the input buffer as the next bytes of shard `shard`.
    /// Returns false when a chunk failed its checksum (`failedChunk` says which); the shard must
    /// then be treated as unavailable and the rest re-planned from `position`.
    pub fn push(&mut self, shard: usize, len: usize) -> Result<bool, JsError> {
        match self
            .input
            .with_filled(len, |bytes| self.inner.push(shard, bytes))?
        {
            Ok(()) => Ok(true),
            Err(AssembleError::ChecksumMismatch { chunk, .. }) => {
                self.failed_chunk = chunk as f64;
                Ok(false)
            }
            Err(e) => Err(err(e)),
        }
    }

    /// Makes room for the next `len` framed bytes of shard `shard` for JS to copy there in one
    /// piece (no input buffer in between): returns where, and JS calls `commitPlaced` next. 0
    /// when the input is not whole chunks: feed it with `push` instead.
    pub fn place(&mut self, shard: usize, len: usize) -> *mut u8 {
        self.inner.place(shard, len).unwrap_or(std::ptr::null_mut())
    }

    /// Verifies what JS copied for the last `place`. Returns false when a chunk failed its
    /// checksum (`failedChunk` says which), as `push` does.
    #[wasm_bindgen(js_name = commitPlaced)]
    pub fn commit_placed(&mut self) -> Result<bool, JsError> {
        // SAFETY: JS copied the whole input where `place` said, and called nothing else in between
        // (RangeAssembler.push in worker/src/shared/core-api.ts).
        match unsafe { self.inner.commit_placed() } {
            Ok(()) => Ok(true),
            Err(AssembleError::ChecksumMismatch { chunk, .. }) => {
                self.failed_chunk = chunk as f64;
                Ok(false)
            }
            Err(e) => Err(err(e)),
        }
    }

    /// Index of the chunk that failed its checksum in the last `push`, or -1.
    #[wasm_bindgen(getter, js_name = failedChunk)]
    pub fn failed_chunk(&self) -> f64 {
        self.failed_chunk
    }

    /// How many output bytes are ready now in one run (at most `max`; 0: more input is needed).
    /// They are read in place at `outputPtr` (no copy in the core), then consumed with `advance`.
    pub fn peek(&mut self, max: usize) -> Result<usize, JsError> {
        let run = self.inner.peek(max).map_err(err)?;
        self.peeked = run.as_ptr();
        Ok(run.len())
    }

    #[wasm_bindgen(js_name = outputPtr)]
    pub fn output_ptr(&self) -> *const u8 {
        self.peeked
    }

    /// Consumes `n` bytes of the last `peek`'s run.
    pub fn advance(&mut self, n: usize) -> Result<(), JsError> {
        self.inner.advance(n).map_err(err)
    }

    /// Whether shard `shard` should be read further now (bounded look-ahead).
    pub fn wants(&self, shard: usize) -> bool {
        self.inner.wants(shard)
    }

    /// Object offset of the next byte to emit.
    #[wasm_bindgen(getter)]
    pub fn position(&self) -> f64 {
        self.inner.position() as f64
    }

    #[wasm_bindgen(getter)]
    pub fn done(&self) -> bool {
        self.inner.is_done()
    }
}

/// Checks a whole shard file's chunk checksums as its bytes stream in (scrub).
#[wasm_bindgen]
pub struct ShardVerifier {
    inner: CoreShardVerifier,
    input: Buffer,
}

#[wasm_bindgen]
impl ShardVerifier {
    /// A verifier for shard file `shard` of a part laid out as `geometry`.
    #[wasm_bindgen(constructor)]
    pub fn new(geometry: &Geometry, shard: usize) -> Result<ShardVerifier, JsError> {
        Ok(Self {
            inner: CoreShardVerifier::new(geometry.0, shard).map_err(err)?,
            input: Buffer,
        })
    }

    /// Pointer to a reusable input buffer of `len` bytes; write into it, then call `push`.
    #[wasm_bindgen(js_name = inputPtr)]
    pub fn input_ptr(&mut self, len: usize) -> *mut u8 {
        self.input.ptr(len)
    }

    /// Feeds the first `len` bytes of the input buffer as the file's next bytes. Returns the
    /// number of bad chunks found so far.
    pub fn push(&mut self, len: usize) -> Result<usize, JsError> {
        self.input
            .with_filled(len, |bytes| self.inner.push(bytes))?;
        Ok(self.inner.bad_chunks().len())
    }

    /// The file's expected length, checksums included.
    #[wasm_bindgen(getter, js_name = fileBytes)]
    pub fn file_bytes(&self) -> f64 {
        self.inner.file_bytes() as f64
    }

    /// Chunks received whole and checked so far.
    #[wasm_bindgen(getter)]
    pub fn chunks(&self) -> f64 {
        self.inner.chunks() as f64
    }

    /// Bytes received so far (up to the expected length).
    #[wasm_bindgen(getter)]
    pub fn bytes(&self) -> f64 {
        self.inner.bytes() as f64
    }

    /// Bytes received beyond the expected length.
    #[wasm_bindgen(getter)]
    pub fn excess(&self) -> f64 {
        self.inner.excess() as f64
    }

    /// True once the whole expected file was received (false: the file is short so far).
    #[wasm_bindgen(getter)]
    pub fn complete(&self) -> bool {
        self.inner.is_complete()
    }

    /// Indices of the chunks that failed their checksum, in order.
    #[wasm_bindgen(js_name = badChunks)]
    pub fn bad_chunks(&self) -> Vec<f64> {
        self.inner.bad_chunks().iter().map(|&c| c as f64).collect()
    }
}

/// Encodes a part block by block into framed shard-file bytes.
#[wasm_bindgen]
pub struct PartEncoder {
    inner: CorePartEncoder,
    input: Buffer,
}

#[wasm_bindgen]
impl PartEncoder {
    #[wasm_bindgen(constructor)]
    pub fn new(geometry: &Geometry) -> Result<PartEncoder, JsError> {
        Ok(Self {
            inner: CorePartEncoder::new(geometry.0).map_err(err)?,
            input: Buffer,
        })
    }

    /// Length of the next block to encode, or 0 when every block is done.
    #[wasm_bindgen(getter, js_name = nextBlockLen)]
    pub fn next_block_len(&self) -> f64 {
        self.inner.next_block().map_or(0.0, |(_, len)| len as f64)
    }

    #[wasm_bindgen(js_name = inputPtr)]
    pub fn input_ptr(&mut self, len: usize) -> *mut u8 {
        self.input.ptr(len)
    }

    /// Encodes the first `len` bytes of the input buffer as the next block.
    pub fn encode(&mut self, len: usize) -> Result<(), JsError> {
        self.input
            .with_filled(len, |block| self.inner.encode_block(block))?
            .map_err(err)
    }

    /// Number of shard files (k + m): the shards `outputPtr`/`outputLen` answer for.
    #[wasm_bindgen(getter, js_name = shardCount)]
    pub fn shard_count(&self) -> usize {
        self.inner.geometry().total_shards()
    }

    /// Framed bytes the last `encode` produced for shard file `shard` (empty if out of range).
    #[wasm_bindgen(js_name = outputPtr)]
    pub fn output_ptr(&self, shard: usize) -> *const u8 {
        self.output(shard).as_ptr()
    }

    #[wasm_bindgen(js_name = outputLen)]
    pub fn output_len(&self, shard: usize) -> usize {
        self.output(shard).len()
    }
}

impl PartEncoder {
    fn output(&self, shard: usize) -> &[u8] {
        if shard < self.inner.geometry().total_shards() {
            self.inner.output(shard)
        } else {
            &[]
        }
    }
}

/// What a `Checksum` computes: an S3 checksum, or MD5 (an ETag, for clients that have no MD5 of
/// their own: browsers uploading shard files themselves).
enum Digest {
    S3(StreamingChecksum),
    Md5(md5::Md5),
}

/// Streaming CRC32 / CRC32C / CRC64NVME for `x-amz-checksum-*`, and MD5.
#[wasm_bindgen]
pub struct Checksum {
    inner: Option<Digest>,
    input: Buffer,
}

#[wasm_bindgen]
impl Checksum {
    /// `algorithm` is S3's name: "CRC32", "CRC32C" or "CRC64NVME"; or "MD5".
    #[wasm_bindgen(constructor)]
    pub fn new(algorithm: &str) -> Result<Checksum, JsError> {
        let inner = if algorithm == "MD5" {
            Digest::Md5(md5::Md5::default())
        } else {
            let kind = S3Checksum::from_name(algorithm).ok_or_else(|| {
                JsError::new(&format!("unsupported checksum algorithm {algorithm}"))
            })?;
            Digest::S3(StreamingChecksum::new(kind))
        };
        Ok(Self {
            inner: Some(inner),
            input: Buffer,
        })
    }

    #[wasm_bindgen(js_name = inputPtr)]
    pub fn input_ptr(&mut self, len: usize) -> *mut u8 {
        self.input.ptr(len)
    }

    pub fn update(&mut self, len: usize) -> Result<(), JsError> {
        let inner = self
            .inner
            .as_mut()
            .ok_or_else(|| JsError::new("checksum already finished"))?;
        self.input.with_filled(len, |bytes| match inner {
            Digest::S3(c) => c.update(bytes),
            Digest::Md5(h) => md5::Digest::update(h, bytes),
        })
    }

    /// The big-endian digest (what S3 base64-encodes). The checksum cannot be updated afterwards.
    pub fn digest(&mut self) -> Result<Vec<u8>, JsError> {
        let inner = self
            .inner
            .take()
            .ok_or_else(|| JsError::new("checksum already finished"))?;
        Ok(match inner {
            Digest::S3(c) => c.finalize(),
            Digest::Md5(h) => md5::Digest::finalize(h).to_vec(),
        })
    }
}

/// The CRC of A||B from the CRCs of A and B and B's length (`checksum::combine`): a multipart
/// upload's `FULL_OBJECT` checksum from its parts' checksums, without rereading data.
#[wasm_bindgen(js_name = combineChecksums)]
pub fn combine_checksums(
    algorithm: &str,
    crc_a: &[u8],
    crc_b: &[u8],
    len_b: f64,
) -> Result<Vec<u8>, JsError> {
    let kind = S3Checksum::from_name(algorithm)
        .ok_or_else(|| JsError::new(&format!("unsupported checksum algorithm {algorithm}")))?;
    crate::checksum::combine(kind, crc_a, crc_b, whole(len_b, "length")?)
        .ok_or_else(|| JsError::new(&format!("{algorithm} digests have the wrong length")))
}

/// Resolves a `Range` header against an object size with S3's rules.
/// Returns `[start, end]` (end exclusive), `[]` when the header is to be ignored (serve all),
/// and throws `InvalidRange` when it cannot be satisfied (416).
#[wasm_bindgen(js_name = resolveRange)]
pub fn resolve_range(header: &str, size: f64) -> Result<Vec<f64>, JsError> {
    let Some(range) = http_range::parse_range(header) else {
        return Ok(Vec::new());
    };
    let r = http_range::resolve(range, whole(size, "size")?)
        .map_err(|_| JsError::new("InvalidRange"))?;
    Ok(vec![r.start as f64, r.end as f64])
}

/// The 32-byte Argon2id key of `passphrase` with `salt` (`kdf.rs`): client-side encryption's
/// key-encryption key. Throws when a parameter is outside the bounds `kdf.rs` accepts.
#[wasm_bindgen]
pub fn argon2id(
    passphrase: &[u8],
    salt: &[u8],
    memory_kib: f64,
    passes: f64,
    lanes: f64,
) -> Result<Vec<u8>, JsError> {
    // JS numbers, checked whole (a u32 parameter would wrap 2^32 + 64 to 64 silently); anything
    // beyond u32 is far outside the bounds anyway and saturates to be refused by them.
    let param = |n: f64, what: &str| whole(n, what).map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    crate::kdf::argon2id(
        passphrase,
        salt,
        param(memory_kib, "memory")?,
        param(passes, "passes")?,
        param(lanes, "lanes")?,
    )
    .map(|key| key.to_vec())
    .map_err(err)
}

/// A benchmark workload (see `workload.rs`); JS times `run`.
#[wasm_bindgen]
pub struct BenchWorkload(crate::workload::Workload);

#[wasm_bindgen]
impl BenchWorkload {
    /// `op`: "encode", "decode" (m data pieces lost), "checksum" or "copy" (the last two use only
    /// the block). `engine`: "simd128" (the default engine in WASM) or "scalar" (the crate's scalar
    /// engine and decoder: the baseline).
    #[wasm_bindgen(constructor)]
    pub fn new(
        data_shards: usize,
        parity_shards: usize,
        block_bytes: usize,
        op: &str,
        engine: &str,
    ) -> Result<BenchWorkload, JsError> {
        let op = crate::workload::Op::from_name(op)
            .ok_or_else(|| JsError::new(&format!("unknown workload {op}")))?;
        crate::workload::Workload::new(
            data_shards,
            parity_shards,
            block_bytes,
            op,
            engine_kind(engine)?,
        )
        .map(Self)
        .map_err(err)
    }

    pub fn run(&mut self, iterations: u32) -> Result<u32, JsError> {
        self.0.run(iterations).map_err(err)
    }
}

fn engine_kind(name: &str) -> Result<EngineKind, JsError> {
    EngineKind::from_name(name).ok_or_else(|| JsError::new(&format!("unknown engine {name}")))
}

/// Test hook: codes `pieceBytes`-long random pieces (from `seed`) with engines `a` and `b`
/// ("simd128", "scalar") and checks they agree bit for bit on the parity and on rebuilding the
/// `lost` pieces over the column window `[windowStart, windowEnd)`. Throws saying what differed.
#[wasm_bindgen(js_name = erasureCrossCheck)]
#[allow(clippy::too_many_arguments)]
pub fn erasure_cross_check(
    data_shards: usize,
    parity_shards: usize,
    piece_bytes: usize,
    seed: f64,
    lost: &[u32],
    window_start: usize,
    window_end: usize,
    a: &str,
    b: &str,
) -> Result<(), JsError> {
    let lost: Vec<usize> = lost.iter().map(|&i| i as usize).collect();
    crate::workload::cross_check(
        data_shards,
        parity_shards,
        piece_bytes,
        whole(seed, "seed")?,
        &lost,
        window_start..window_end,
        engine_kind(a)?,
        engine_kind(b)?,
    )
    .map_err(|e| JsError::new(&e))
}

/// Validates a manifest given in its JSON form (see `manifest.rs`) and returns its binary row.
#[wasm_bindgen(js_name = encodeManifest)]
pub fn encode_manifest(json: &str) -> Result<Vec<u8>, JsError> {
    let manifest: crate::manifest::Manifest =
        serde_json::from_str(json).map_err(|e| err(format_args!("invalid manifest JSON: {e}")))?;
    manifest
        .encode()
        .map_err(|e| err(format_args!("invalid manifest: {e}")))
}

/// Parses and validates a binary manifest row into its JSON form.
#[wasm_bindgen(js_name = decodeManifest)]
pub fn decode_manifest(bytes: &[u8]) -> Result<String, JsError> {
    let manifest = crate::manifest::Manifest::decode(bytes)
        .map_err(|e| err(format_args!("cannot decode manifest: {e}")))?;
    // Serialising these plain types to a string cannot fail (no maps with non-string keys).
    serde_json::to_string(&manifest).map_err(err)
}
