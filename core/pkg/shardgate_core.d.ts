/* tslint:disable */
/* eslint-disable */

/**
 * Turns fetched shard bytes back into the requested bytes, incrementally.
 */
export class Assembler {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Consumes `n` bytes of the last `peek`'s run.
     */
    advance(n: number): void;
    /**
     * Verifies what JS copied for the last `place`. Returns false when a chunk failed its
     * checksum (`failedChunk` says which), as `push` does.
     */
    commitPlaced(): boolean;
    /**
     * Pointer to a reusable input buffer of `len` bytes; write into it, then call `push`.
     */
    inputPtr(len: number): number;
    constructor(plan: ReadPlan);
    outputPtr(): number;
    /**
     * How many output bytes are ready now in one run (at most `max`; 0: more input is needed).
     * They are read in place at `outputPtr` (no copy in the core), then consumed with `advance`.
     */
    peek(max: number): number;
    /**
     * Makes room for the next `len` framed bytes of shard `shard` for JS to copy there in one
     * piece (no input buffer in between): returns where, and JS calls `commitPlaced` next. 0
     * when the input is not whole chunks: feed it with `push` instead.
     */
    place(shard: number, len: number): number;
    /**
     * Feeds the first `len` bytes of the input buffer as the next bytes of shard `shard`.
     * Returns false when a chunk failed its checksum (`failedChunk` says which); the shard must
     * then be treated as unavailable and the rest re-planned from `position`.
     */
    push(shard: number, len: number): boolean;
    /**
     * Whether shard `shard` should be read further now (bounded look-ahead).
     */
    wants(shard: number): boolean;
    readonly done: boolean;
    /**
     * Index of the chunk that failed its checksum in the last `push`, or -1.
     */
    readonly failedChunk: number;
    /**
     * Object offset of the next byte to emit.
     */
    readonly position: number;
}

/**
 * A benchmark workload (see `workload.rs`); JS times `run`.
 */
export class BenchWorkload {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * `op`: "encode", "decode" (m data pieces lost), "checksum" or "copy" (the last two use only
     * the block). `engine`: "simd128" (the default engine in WASM) or "scalar" (the crate's scalar
     * engine and decoder: the baseline).
     */
    constructor(data_shards: number, parity_shards: number, block_bytes: number, op: string, engine: string);
    run(iterations: number): number;
}

/**
 * Streaming CRC32 / CRC32C / CRC64NVME for `x-amz-checksum-*`, and MD5.
 */
export class Checksum {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * The big-endian digest (what S3 base64-encodes). The checksum cannot be updated afterwards.
     */
    digest(): Uint8Array;
    inputPtr(len: number): number;
    /**
     * `algorithm` is S3's name: "CRC32", "CRC32C" or "CRC64NVME"; or "MD5".
     */
    constructor(algorithm: string);
    update(len: number): void;
}

/**
 * Layout of one erasure-coded object part.
 */
export class Geometry {
    free(): void;
    [Symbol.dispose](): void;
    blockLen(block: number): number;
    constructor(size: number, block_bytes: number, data_shards: number, parity_shards: number, chunk_bytes: number);
    readonly blockBytes: number;
    readonly blockCount: number;
    readonly chunkBytes: number;
    readonly dataShards: number;
    readonly parityShards: number;
    /**
     * Bytes of each framed shard file: the exact length a PUT streams to each node.
     */
    readonly shardFileBytes: number;
    readonly size: number;
}

/**
 * Encodes a part block by block into framed shard-file bytes.
 */
export class PartEncoder {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Encodes the first `len` bytes of the input buffer as the next block.
     */
    encode(len: number): void;
    inputPtr(len: number): number;
    constructor(geometry: Geometry);
    outputLen(shard: number): number;
    /**
     * Framed bytes the last `encode` produced for shard file `shard` (empty if out of range).
     */
    outputPtr(shard: number): number;
    /**
     * Length of the next block to encode, or 0 when every block is done.
     */
    readonly nextBlockLen: number;
    /**
     * Number of shard files (k + m): the shards `outputPtr`/`outputLen` answer for.
     */
    readonly shardCount: number;
}

/**
 * Which shard-file byte ranges a byte range of a part needs.
 */
export class ReadPlan {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * The requests to make, flattened: `[shard, physicalStart, physicalEnd, …]` (end exclusive).
     */
    fetches(): Float64Array;
    /**
     * Plans reading object bytes `[start, end)` with the given shard indices unavailable.
     */
    constructor(geometry: Geometry, start: number, end: number, unavailable: Uint32Array | number[]);
    readonly degraded: boolean;
}

/**
 * Checks a whole shard file's chunk checksums as its bytes stream in (scrub).
 */
export class ShardVerifier {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Indices of the chunks that failed their checksum, in order.
     */
    badChunks(): Float64Array;
    /**
     * Pointer to a reusable input buffer of `len` bytes; write into it, then call `push`.
     */
    inputPtr(len: number): number;
    /**
     * A verifier for shard file `shard` of a part laid out as `geometry`.
     */
    constructor(geometry: Geometry, shard: number);
    /**
     * Feeds the first `len` bytes of the input buffer as the file's next bytes. Returns the
     * number of bad chunks found so far.
     */
    push(len: number): number;
    /**
     * Bytes received so far (up to the expected length).
     */
    readonly bytes: number;
    /**
     * Chunks received whole and checked so far.
     */
    readonly chunks: number;
    /**
     * True once the whole expected file was received (false: the file is short so far).
     */
    readonly complete: boolean;
    /**
     * Bytes received beyond the expected length.
     */
    readonly excess: number;
    /**
     * The file's expected length, checksums included.
     */
    readonly fileBytes: number;
}

/**
 * The 32-byte Argon2id key of `passphrase` with `salt` (`kdf.rs`): client-side encryption's
 * key-encryption key. Throws when a parameter is outside the bounds `kdf.rs` accepts.
 */
export function argon2id(passphrase: Uint8Array | number[], salt: Uint8Array | number[], memory_kib: number, passes: number, lanes: number): Uint8Array;

/**
 * The CRC of A||B from the CRCs of A and B and B's length (`checksum::combine`): a multipart
 * upload's `FULL_OBJECT` checksum from its parts' checksums, without rereading data.
 */
export function combineChecksums(algorithm: string, crc_a: Uint8Array | number[], crc_b: Uint8Array | number[], len_b: number): Uint8Array;

/**
 * Parses and validates a binary manifest row into its JSON form.
 */
export function decodeManifest(bytes: Uint8Array | number[]): string;

/**
 * Validates a manifest given in its JSON form (see `manifest.rs`) and returns its binary row.
 */
export function encodeManifest(json: string): Uint8Array;

/**
 * Test hook: codes `pieceBytes`-long random pieces (from `seed`) with engines `a` and `b`
 * ("simd128", "scalar") and checks they agree bit for bit on the parity and on rebuilding the
 * `lost` pieces over the column window `[windowStart, windowEnd)`. Throws saying what differed.
 */
export function erasureCrossCheck(data_shards: number, parity_shards: number, piece_bytes: number, seed: number, lost: Uint32Array | number[], window_start: number, window_end: number, a: string, b: string): void;

/**
 * Resolves a `Range` header against an object size with S3's rules.
 * Returns `[start, end]` (end exclusive), `[]` when the header is to be ignored (serve all),
 * and throws `InvalidRange` when it cannot be satisfied (416).
 */
export function resolveRange(header: string, size: number): Float64Array;

/**
 * The core's crate version.
 */
export function version(): string;

export type InitInput = RequestInfo | URL | Response | BufferSource | WebAssembly.Module;

export interface InitOutput {
    readonly memory: WebAssembly.Memory;
    readonly __wbg_assembler_free: (a: number, b: number) => void;
    readonly __wbg_benchworkload_free: (a: number, b: number) => void;
    readonly __wbg_checksum_free: (a: number, b: number) => void;
    readonly __wbg_geometry_free: (a: number, b: number) => void;
    readonly __wbg_partencoder_free: (a: number, b: number) => void;
    readonly __wbg_readplan_free: (a: number, b: number) => void;
    readonly __wbg_shardverifier_free: (a: number, b: number) => void;
    readonly argon2id: (a: number, b: number, c: number, d: number, e: number, f: number, g: number) => [number, number, number, number];
    readonly assembler_advance: (a: number, b: number) => [number, number];
    readonly assembler_commitPlaced: (a: number) => [number, number, number];
    readonly assembler_done: (a: number) => number;
    readonly assembler_failedChunk: (a: number) => number;
    readonly assembler_inputPtr: (a: number, b: number) => number;
    readonly assembler_new: (a: number) => [number, number, number];
    readonly assembler_outputPtr: (a: number) => number;
    readonly assembler_peek: (a: number, b: number) => [number, number, number];
    readonly assembler_place: (a: number, b: number, c: number) => number;
    readonly assembler_position: (a: number) => number;
    readonly assembler_push: (a: number, b: number, c: number) => [number, number, number];
    readonly assembler_wants: (a: number, b: number) => number;
    readonly benchworkload_new: (a: number, b: number, c: number, d: number, e: number, f: number, g: number) => [number, number, number];
    readonly benchworkload_run: (a: number, b: number) => [number, number, number];
    readonly checksum_digest: (a: number) => [number, number, number, number];
    readonly checksum_inputPtr: (a: number, b: number) => number;
    readonly checksum_new: (a: number, b: number) => [number, number, number];
    readonly checksum_update: (a: number, b: number) => [number, number];
    readonly combineChecksums: (a: number, b: number, c: number, d: number, e: number, f: number, g: number) => [number, number, number, number];
    readonly decodeManifest: (a: number, b: number) => [number, number, number, number];
    readonly encodeManifest: (a: number, b: number) => [number, number, number, number];
    readonly erasureCrossCheck: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number, i: number, j: number, k: number, l: number) => [number, number];
    readonly geometry_blockBytes: (a: number) => number;
    readonly geometry_blockCount: (a: number) => number;
    readonly geometry_blockLen: (a: number, b: number) => [number, number, number];
    readonly geometry_chunkBytes: (a: number) => number;
    readonly geometry_dataShards: (a: number) => number;
    readonly geometry_new: (a: number, b: number, c: number, d: number, e: number) => [number, number, number];
    readonly geometry_parityShards: (a: number) => number;
    readonly geometry_shardFileBytes: (a: number) => number;
    readonly geometry_size: (a: number) => number;
    readonly partencoder_encode: (a: number, b: number) => [number, number];
    readonly partencoder_inputPtr: (a: number, b: number) => number;
    readonly partencoder_new: (a: number) => [number, number, number];
    readonly partencoder_nextBlockLen: (a: number) => number;
    readonly partencoder_outputLen: (a: number, b: number) => number;
    readonly partencoder_outputPtr: (a: number, b: number) => number;
    readonly partencoder_shardCount: (a: number) => number;
    readonly readplan_degraded: (a: number) => number;
    readonly readplan_fetches: (a: number) => [number, number];
    readonly readplan_new: (a: number, b: number, c: number, d: number, e: number) => [number, number, number];
    readonly resolveRange: (a: number, b: number, c: number) => [number, number, number, number];
    readonly shardverifier_badChunks: (a: number) => [number, number];
    readonly shardverifier_bytes: (a: number) => number;
    readonly shardverifier_chunks: (a: number) => number;
    readonly shardverifier_complete: (a: number) => number;
    readonly shardverifier_excess: (a: number) => number;
    readonly shardverifier_fileBytes: (a: number) => number;
    readonly shardverifier_inputPtr: (a: number, b: number) => number;
    readonly shardverifier_new: (a: number, b: number) => [number, number, number];
    readonly shardverifier_push: (a: number, b: number) => [number, number, number];
    readonly version: () => [number, number];
    readonly __wbindgen_externrefs: WebAssembly.Table;
    readonly __wbindgen_malloc: (a: number, b: number) => number;
    readonly __wbindgen_free: (a: number, b: number, c: number) => void;
    readonly __externref_table_dealloc: (a: number) => void;
    readonly __wbindgen_realloc: (a: number, b: number, c: number, d: number) => number;
    readonly __wbindgen_start: () => void;
}

export type SyncInitInput = BufferSource | WebAssembly.Module;

/**
 * Instantiates the given `module`, which can either be bytes or
 * a precompiled `WebAssembly.Module`.
 *
 * @param {{ module: SyncInitInput }} module - Passing `SyncInitInput` directly is deprecated.
 *
 * @returns {InitOutput}
 */
export function initSync(module: { module: SyncInitInput } | SyncInitInput): InitOutput;

/**
 * If `module_or_path` is {RequestInfo} or {URL}, makes a request and
 * for everything else, calls `WebAssembly.instantiate` directly.
 *
 * @param {{ module_or_path: InitInput | Promise<InitInput> }} module_or_path - Passing `InitInput` directly is deprecated.
 *
 * @returns {Promise<InitOutput>}
 */
export default function __wbg_init (module_or_path?: { module_or_path: InitInput | Promise<InitInput> } | InitInput | Promise<InitInput>): Promise<InitOutput>;
