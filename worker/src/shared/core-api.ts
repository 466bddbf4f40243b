// Idiomatic TypeScript over the core's wasm-bindgen API (core/src/wasm.rs).
//
// Independent of how the module was instantiated (workerd imports the .wasm as a module, Node reads
// the file, the browser fetches it): callers pass the bindings and the instance's memory. Bytes
// cross the boundary through views of WASM memory: input is written straight into the core's
// reusable buffers, output is read from its buffers and copied once into a fresh Uint8Array.
// Views are made right after the call that sizes them, since a memory.grow detaches old views.
import type * as Bindings from "../../../core/pkg/shardgate_core.js";
import type { Manifest, ShardedLayout } from "./core-types";
import { Lru } from "./bounded";

export type CoreBindings = typeof Bindings;

/** The instance's linear memory (structural: workers-types does not declare WebAssembly.Memory). */
export interface CoreMemory {
  readonly buffer: ArrayBuffer;
}

/** Layout parameters of one erasure-coded object part (docs/storage-format.md). */
export interface GeometrySpec {
  size: number;
  blockBytes: number;
  dataShards: number;
  parityShards: number;
  chunkBytes: number;
}

/** The geometry of a stored part: its size and the layout its manifest recorded. */
export function partGeometry(size: number, layout: Pick<ShardedLayout, "blockBytes" | "dataShards" | "parityShards" | "chunkBytes">): GeometrySpec {
  return { size, blockBytes: layout.blockBytes, dataShards: layout.dataShards, parityShards: layout.parityShards, chunkBytes: layout.chunkBytes };
}

/** One ranged request to make: bytes [start, end) of shard file `shard`. */
export interface ShardFetch {
  shard: number;
  start: number;
  end: number;
}

// A manifest in the JSON form the core exchanges (core/src/manifest.rs): bytes are standard base64
// strings, name/value pairs are [name, value] arrays, sizes are numbers. The core rejects unknown
// fields, since the binary row would silently drop them. The types come from the core's Rust
// definitions, generated into shared/core-types.ts by a test of the core, so the two cannot drift apart.
export type { ChecksumKind, Encryption, EncryptionMode, Manifest, ManifestPart, ObjectChecksum, PartLayout, ShardedLayout } from "./core-types";

/** Bytes of the checksum after every chunk of a shard file (core/src/frame.rs CHECKSUM_BYTES). */
export const CHUNK_CHECKSUM_BYTES = 8;

/** A chunk of a shard file failed its checksum: treat the shard as unavailable and re-plan. */
export class ChecksumMismatchError extends Error {
  constructor(
    readonly shard: number,
    readonly chunk: number,
  ) {
    super(`checksum mismatch in shard ${shard}, chunk ${chunk}`);
    this.name = "ChecksumMismatchError";
  }
}

/** Argon2id's cost parameters: memory in KiB, passes (t) and lanes (p). */
export interface Argon2Params {
  memoryKiB: number;
  passes: number;
  lanes: number;
}

/**
 * Manifests decodeManifest keeps, the rows' bytes they come from in all (a manifest in memory can
 * take ~16 times its row: 256 KiB of rows, ~4 MiB), and the largest row it keeps one of.
 */
const MEMO_ENTRIES = 256;
const MEMO_BYTES = 256 * 1024;
const MEMO_ROW_BYTES = 16 * 1024;

/** `value` and everything in it made read-only: a shared manifest cannot be changed by one of its users. */
function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** Largest slice copied into WASM memory per call: bounds the input buffer's size. */
const INPUT_SLICE = 256 * 1024;

export class Core {
  private readonly decoded = new Lru<string, Manifest>({ entries: MEMO_ENTRIES, weight: MEMO_BYTES });

  constructor(
    private readonly wasm: CoreBindings,
    private readonly memory: CoreMemory,
  ) {}

  version(): string {
    return this.wasm.version();
  }

  /** Validates the spec (throws an Error saying what is wrong) and returns the layout. */
  geometry(spec: GeometrySpec): Bindings.Geometry {
    return new this.wasm.Geometry(spec.size, spec.blockBytes, spec.dataShards, spec.parityShards, spec.chunkBytes);
  }

  /** Plans reading object bytes [start, end) of a part with some shard files unavailable. */
  planRead(geometry: Bindings.Geometry, start: number, end: number, unavailable: readonly number[] = []): ReadPlan {
    const plan = new this.wasm.ReadPlan(geometry, start, end, Uint32Array.from(unavailable));
    return new ReadPlan(this.wasm, this.memory, plan);
  }

  /** Starts encoding a part; feed it `nextBlockLength` bytes at a time. */
  encoder(geometry: Bindings.Geometry): PartEncoder {
    return new PartEncoder(this.memory, new this.wasm.PartEncoder(geometry));
  }

  /**
   * Checks shard file `shard` of a part laid out as `geometry` against its chunk checksums, as
   * its bytes stream in (scrub). Throws when `shard` is not one of the part's shards.
   */
  shardVerifier(geometry: Bindings.Geometry, shard: number): ShardVerifier {
    return new ShardVerifier(this.memory, new this.wasm.ShardVerifier(geometry, shard));
  }

  /** Streaming S3 checksum: "CRC32", "CRC32C" or "CRC64NVME". */
  checksum(algorithm: string): StreamingChecksum {
    return new StreamingChecksum(this.memory, new this.wasm.Checksum(algorithm));
  }

  /** Streaming MD5 (an ETag), for callers without one of their own: browsers have no MD5. */
  md5(): StreamingChecksum {
    return this.checksum("MD5");
  }

  /** The CRC ("CRC32", "CRC32C", "CRC64NVME") of A||B from the CRCs of A and B and B's length. */
  combineChecksums(algorithm: string, crcA: Uint8Array, crcB: Uint8Array, lengthB: number): Uint8Array {
    return this.wasm.combineChecksums(algorithm, crcA, crcB, lengthB);
  }

  /** The manifest's binary row. Throws an Error naming the problem if it is malformed or inconsistent. */
  encodeManifest(manifest: Manifest): Uint8Array {
    return this.wasm.encodeManifest(JSON.stringify(manifest));
  }

  /**
   * The 32-byte Argon2id (RFC 9106) key of `passphrase` with `salt`: client-side encryption's
   * key-encryption key (docs/storage-format.md). Throws an Error when a parameter is outside the
   * core's bounds (memory at most 256 MiB, at most 10 passes and 8 lanes, a 16 to 64 byte salt),
   * which keeps a hostile object header from making a client allocate gigabytes.
   */
  argon2id(passphrase: Uint8Array, salt: Uint8Array, params: Argon2Params): Uint8Array {
    return this.wasm.argon2id(passphrase, salt, params.memoryKiB, params.passes, params.lanes);
  }

  /**
   * Test hook: codes random `pieceBytes`-long pieces (from `seed`) with two erasure engines
   * ("simd128", the default in WASM, or "scalar", the crate's own scalar engine and decoder) and
   * checks they agree bit for bit: the parity, and the `lost` pieces rebuilt over the column window
   * [windowStart, windowEnd) (multiples of 64). Throws an Error saying what differed.
   */
  erasureCrossCheck(
    dataShards: number,
    parityShards: number,
    pieceBytes: number,
    seed: number,
    lost: readonly number[],
    windowStart: number,
    windowEnd: number,
    engines: [string, string] = ["simd128", "scalar"],
  ): void {
    this.wasm.erasureCrossCheck(dataShards, parityShards, pieceBytes, seed, Uint32Array.from(lost), windowStart, windowEnd, engines[0], engines[1]);
  }

  /**
   * Parses a binary manifest row. Throws on a corrupted or unknown row. The manifest is frozen and
   * shared by the callers that decode the same row while it is among the last rows decoded
   * (MEMO_ENTRIES, MEMO_BYTES): a hot object's GETs parse it once (docs/benchmarks.md "Hot reads").
   */
  decodeManifest(bytes: Uint8Array): Manifest {
    // The row's bytes as a string, one character per byte, are the key: equal keys are equal rows.
    const key = bytes.length <= MEMO_ROW_BYTES ? String.fromCharCode(...bytes) : null;
    const known = key === null ? undefined : this.decoded.get(key);
    if (known) return known;
    // The core wrote this JSON from its typed manifest, so it has exactly the Manifest shape.
    const manifest: Manifest = deepFreeze(JSON.parse(this.wasm.decodeManifest(bytes)));
    if (key !== null) this.decoded.set(key, manifest, key.length);
    return manifest;
  }

  /**
   * Resolves a Range header with S3's rules: the [start, end) to serve, `null` when the header is
   * to be ignored (serve the whole object), or "unsatisfiable" (416 InvalidRange).
   */
  resolveRange(header: string, size: number): { start: number; end: number } | null | "unsatisfiable" {
    try {
      const r = this.wasm.resolveRange(header, size);
      return r.length === 2 ? { start: r[0], end: r[1] } : null;
    } catch (e) {
      if (e instanceof Error && e.message === "InvalidRange") return "unsatisfiable";
      throw e;
    }
  }
}

/** Copies `bytes` into WASM memory at the pointer `inner.inputPtr(len)` returns, slice by slice, handing each to `use`. */
function copyIn(memory: CoreMemory, bytes: Uint8Array, inner: { inputPtr(len: number): number }, use: (len: number) => void): void {
  for (let at = 0; at < bytes.length; at += INPUT_SLICE) {
    const slice = bytes.subarray(at, at + INPUT_SLICE);
    const ptr = inner.inputPtr(slice.length);
    new Uint8Array(memory.buffer, ptr, slice.length).set(slice);
    use(slice.length);
  }
}

/** A core object behind its wasm-bindgen handle, which free() releases; its bytes cross through `memory`. */
class CoreHandle<T extends { free(): void }> {
  constructor(
    protected readonly memory: CoreMemory,
    protected readonly inner: T,
  ) {}

  free(): void {
    this.inner.free();
  }
}

export class ReadPlan extends CoreHandle<Bindings.ReadPlan> {
  readonly fetches: readonly ShardFetch[];

  constructor(
    private readonly wasm: CoreBindings,
    memory: CoreMemory,
    inner: Bindings.ReadPlan,
  ) {
    super(memory, inner);
    const flat = inner.fetches();
    const fetches: ShardFetch[] = [];
    for (let i = 0; i < flat.length; i += 3) fetches.push({ shard: flat[i], start: flat[i + 1], end: flat[i + 2] });
    this.fetches = fetches;
  }

  /** True when some block is rebuilt from parity. */
  get degraded(): boolean {
    return this.inner.degraded;
  }

  assembler(): RangeAssembler {
    return new RangeAssembler(this.memory, new this.wasm.Assembler(this.inner));
  }
}

/** Feeds fetched shard bytes in, gets the requested object bytes out, in order, incrementally. */
export class RangeAssembler extends CoreHandle<Bindings.Assembler> {
  /** The next bytes of `shard`'s fetch, in order. Throws ChecksumMismatchError on bitrot. */
  push(shard: number, bytes: Uint8Array): void {
    // Whole chunks (what byte streams deliver) are copied once, in one piece, straight where the
    // core keeps them; it checks each chunk there and moves the data up over the checksums.
    const at = this.inner.place(shard, bytes.length);
    if (at !== 0) {
      new Uint8Array(this.memory.buffer, at, bytes.length).set(bytes);
      if (!this.inner.commitPlaced()) throw new ChecksumMismatchError(shard, this.inner.failedChunk);
      return;
    }
    copyIn(this.memory, bytes, this.inner, (len) => {
      if (!this.inner.push(shard, len)) throw new ChecksumMismatchError(shard, this.inner.failedChunk);
    });
  }

  /**
   * Hands the next verified output bytes that are ready, at most `max` (one run: a shard's
   * stretch or a rebuilt window), to `use` and returns what it returned; null when more input is
   * needed first. The bytes are a view of the core's memory, valid only during the call.
   */
  pull<T>(max: number, use: (bytes: Uint8Array) => T): T | null {
    const n = this.inner.peek(max);
    if (n === 0) return null;
    const out = use(new Uint8Array(this.memory.buffer, this.inner.outputPtr(), n));
    this.inner.advance(n);
    return out;
  }

  /** Whether to read more of `shard` now: false once it is far enough ahead of the output. */
  wants(shard: number): boolean {
    return this.inner.wants(shard);
  }

  /** Object offset of the next byte to come out: where a re-plan resumes. */
  get position(): number {
    return this.inner.position;
  }

  get done(): boolean {
    return this.inner.done;
  }
}

export class PartEncoder extends CoreHandle<Bindings.PartEncoder> {
  /** Bytes the next `encode` call must be given; 0 once every block is encoded. */
  get nextBlockLength(): number {
    return this.inner.nextBlockLen;
  }

  /**
   * Encodes the next block and calls `emit(shard, bytes)` with the framed bytes to append to each
   * shard file. `bytes` is a view into WASM memory, valid only during the callback.
   */
  encode(block: Uint8Array, emit: (shard: number, bytes: Uint8Array) => void): void {
    const ptr = this.inner.inputPtr(block.length);
    new Uint8Array(this.memory.buffer, ptr, block.length).set(block);
    this.inner.encode(block.length);
    const shards = this.inner.shardCount;
    for (let shard = 0; shard < shards; shard++) {
      emit(shard, new Uint8Array(this.memory.buffer, this.inner.outputPtr(shard), this.inner.outputLen(shard)));
    }
  }
}

/** What a ShardVerifier found in one shard file. */
export interface ShardVerification {
  /** Chunks received whole and checked (good and bad). */
  chunks: number;
  /** Indices of the chunks that failed their checksum, in order. */
  badChunks: number[];
  /** Bytes of the file received, checksums included (up to its expected length). */
  bytes: number;
  /** The file ended before its expected length: its last chunks were never checked. */
  short: boolean;
  /** Bytes received beyond the file's expected length (a well-formed file has none). */
  excess: number;
}

/** Checks a whole shard file, fed in pieces of any size, against its chunk checksums. */
export class ShardVerifier extends CoreHandle<Bindings.ShardVerifier> {
  /** The file's expected length, checksums included. */
  get fileBytes(): number {
    return this.inner.fileBytes;
  }

  /** Feeds the file's next bytes, in order. */
  push(bytes: Uint8Array): void {
    copyIn(this.memory, bytes, this.inner, (len) => this.inner.push(len));
  }

  /** Whether a chunk pushed so far failed its checksum. */
  get failed(): boolean {
    return this.inner.badChunks().length > 0;
  }

  /** What was found (the verifier stays usable until `free`). */
  finish(): ShardVerification {
    return {
      chunks: this.inner.chunks,
      badChunks: Array.from(this.inner.badChunks()),
      bytes: this.inner.bytes,
      short: !this.inner.complete,
      excess: this.inner.excess,
    };
  }
}

export class StreamingChecksum extends CoreHandle<Bindings.Checksum> {
  update(bytes: Uint8Array): void {
    copyIn(this.memory, bytes, this.inner, (len) => this.inner.update(len));
  }

  /** The big-endian digest (base64 it for the x-amz-checksum-* header). Ends the checksum. */
  digest(): Uint8Array {
    const d = this.inner.digest();
    this.inner.free();
    return d;
  }
}
