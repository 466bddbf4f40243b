/* @ts-self-types="./shardgate_core.d.ts" */

/**
 * Turns fetched shard bytes back into the requested bytes, incrementally.
 */
export class Assembler {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        AssemblerFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_assembler_free(ptr, 0);
    }
    /**
     * Consumes `n` bytes of the last `peek`'s run.
     * @param {number} n
     */
    advance(n) {
        const ret = wasm.assembler_advance(this.__wbg_ptr, n);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Verifies what JS copied for the last `place`. Returns false when a chunk failed its
     * checksum (`failedChunk` says which), as `push` does.
     * @returns {boolean}
     */
    commitPlaced() {
        const ret = wasm.assembler_commitPlaced(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] !== 0;
    }
    /**
     * @returns {boolean}
     */
    get done() {
        const ret = wasm.assembler_done(this.__wbg_ptr);
        return ret !== 0;
    }
    /**
     * Index of the chunk that failed its checksum in the last `push`, or -1.
     * @returns {number}
     */
    get failedChunk() {
        const ret = wasm.assembler_failedChunk(this.__wbg_ptr);
        return ret;
    }
    /**
     * Pointer to a reusable input buffer of `len` bytes; write into it, then call `push`.
     * @param {number} len
     * @returns {number}
     */
    inputPtr(len) {
        const ret = wasm.assembler_inputPtr(this.__wbg_ptr, len);
        return ret >>> 0;
    }
    /**
     * @param {ReadPlan} plan
     */
    constructor(plan) {
        _assertClass(plan, ReadPlan);
        const ret = wasm.assembler_new(plan.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        AssemblerFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * @returns {number}
     */
    outputPtr() {
        const ret = wasm.assembler_outputPtr(this.__wbg_ptr);
        return ret >>> 0;
    }
    /**
     * How many output bytes are ready now in one run (at most `max`; 0: more input is needed).
     * They are read in place at `outputPtr` (no copy in the core), then consumed with `advance`.
     * @param {number} max
     * @returns {number}
     */
    peek(max) {
        const ret = wasm.assembler_peek(this.__wbg_ptr, max);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] >>> 0;
    }
    /**
     * Makes room for the next `len` framed bytes of shard `shard` for JS to copy there in one
     * piece (no input buffer in between): returns where, and JS calls `commitPlaced` next. 0
     * when the input is not whole chunks: feed it with `push` instead.
     * @param {number} shard
     * @param {number} len
     * @returns {number}
     */
    place(shard, len) {
        const ret = wasm.assembler_place(this.__wbg_ptr, shard, len);
        return ret >>> 0;
    }
    /**
     * Object offset of the next byte to emit.
     * @returns {number}
     */
    get position() {
        const ret = wasm.assembler_position(this.__wbg_ptr);
        return ret;
    }
    /**
     * Feeds the first `len` bytes of the input buffer as the next bytes of shard `shard`.
     * Returns false when a chunk failed its checksum (`failedChunk` says which); the shard must
     * then be treated as unavailable and the rest re-planned from `position`.
     * @param {number} shard
     * @param {number} len
     * @returns {boolean}
     */
    push(shard, len) {
        const ret = wasm.assembler_push(this.__wbg_ptr, shard, len);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] !== 0;
    }
    /**
     * Whether shard `shard` should be read further now (bounded look-ahead).
     * @param {number} shard
     * @returns {boolean}
     */
    wants(shard) {
        const ret = wasm.assembler_wants(this.__wbg_ptr, shard);
        return ret !== 0;
    }
}
if (Symbol.dispose) Assembler.prototype[Symbol.dispose] = Assembler.prototype.free;

/**
 * A benchmark workload (see `workload.rs`); JS times `run`.
 */
export class BenchWorkload {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        BenchWorkloadFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_benchworkload_free(ptr, 0);
    }
    /**
     * `op`: "encode", "decode" (m data pieces lost), "checksum" or "copy" (the last two use only
     * the block). `engine`: "simd128" (the default engine in WASM) or "scalar" (the crate's scalar
     * engine and decoder: the baseline).
     * @param {number} data_shards
     * @param {number} parity_shards
     * @param {number} block_bytes
     * @param {string} op
     * @param {string} engine
     */
    constructor(data_shards, parity_shards, block_bytes, op, engine) {
        const val3 = +data_shards;
        const val4 = +parity_shards;
        const val5 = +block_bytes;
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(op, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passStringToWasm0(engine, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.benchworkload_new(val3, val4, val5, ptr0, len0, ptr1, len1);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        BenchWorkloadFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * @param {number} iterations
     * @returns {number}
     */
    run(iterations) {
        const ret = wasm.benchworkload_run(this.__wbg_ptr, iterations);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] >>> 0;
    }
}
if (Symbol.dispose) BenchWorkload.prototype[Symbol.dispose] = BenchWorkload.prototype.free;

/**
 * Streaming CRC32 / CRC32C / CRC64NVME for `x-amz-checksum-*`, and MD5.
 */
export class Checksum {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        ChecksumFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_checksum_free(ptr, 0);
    }
    /**
     * The big-endian digest (what S3 base64-encodes). The checksum cannot be updated afterwards.
     * @returns {Uint8Array}
     */
    digest() {
        const ret = wasm.checksum_digest(this.__wbg_ptr);
        if (ret[3]) {
            throw takeFromExternrefTable0(ret[2]);
        }
        var v1 = getArrayU8FromWasm0(ret[0], ret[1]).slice();
        wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
        return v1;
    }
    /**
     * @param {number} len
     * @returns {number}
     */
    inputPtr(len) {
        const ret = wasm.checksum_inputPtr(this.__wbg_ptr, len);
        return ret >>> 0;
    }
    /**
     * `algorithm` is S3's name: "CRC32", "CRC32C" or "CRC64NVME"; or "MD5".
     * @param {string} algorithm
     */
    constructor(algorithm) {
        const ptr0 = passStringToWasm0(algorithm, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.checksum_new(ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        ChecksumFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * @param {number} len
     */
    update(len) {
        const ret = wasm.checksum_update(this.__wbg_ptr, len);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
}
if (Symbol.dispose) Checksum.prototype[Symbol.dispose] = Checksum.prototype.free;

/**
 * Layout of one erasure-coded object part.
 */
export class Geometry {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        GeometryFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_geometry_free(ptr, 0);
    }
    /**
     * @returns {number}
     */
    get blockBytes() {
        const ret = wasm.geometry_blockBytes(this.__wbg_ptr);
        return ret;
    }
    /**
     * @returns {number}
     */
    get blockCount() {
        const ret = wasm.geometry_blockCount(this.__wbg_ptr);
        return ret;
    }
    /**
     * @param {number} block
     * @returns {number}
     */
    blockLen(block) {
        const ret = wasm.geometry_blockLen(this.__wbg_ptr, block);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0];
    }
    /**
     * @returns {number}
     */
    get chunkBytes() {
        const ret = wasm.geometry_chunkBytes(this.__wbg_ptr);
        return ret;
    }
    /**
     * @returns {number}
     */
    get dataShards() {
        const ret = wasm.geometry_dataShards(this.__wbg_ptr);
        return ret >>> 0;
    }
    /**
     * @param {number} size
     * @param {number} block_bytes
     * @param {number} data_shards
     * @param {number} parity_shards
     * @param {number} chunk_bytes
     */
    constructor(size, block_bytes, data_shards, parity_shards, chunk_bytes) {
        const ret = wasm.geometry_new(size, block_bytes, data_shards, parity_shards, chunk_bytes);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        GeometryFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * @returns {number}
     */
    get parityShards() {
        const ret = wasm.geometry_parityShards(this.__wbg_ptr);
        return ret >>> 0;
    }
    /**
     * Bytes of each framed shard file: the exact length a PUT streams to each node.
     * @returns {number}
     */
    get shardFileBytes() {
        const ret = wasm.geometry_shardFileBytes(this.__wbg_ptr);
        return ret;
    }
    /**
     * @returns {number}
     */
    get size() {
        const ret = wasm.geometry_size(this.__wbg_ptr);
        return ret;
    }
}
if (Symbol.dispose) Geometry.prototype[Symbol.dispose] = Geometry.prototype.free;

/**
 * Encodes a part block by block into framed shard-file bytes.
 */
export class PartEncoder {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        PartEncoderFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_partencoder_free(ptr, 0);
    }
    /**
     * Encodes the first `len` bytes of the input buffer as the next block.
     * @param {number} len
     */
    encode(len) {
        const ret = wasm.partencoder_encode(this.__wbg_ptr, len);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * @param {number} len
     * @returns {number}
     */
    inputPtr(len) {
        const ret = wasm.partencoder_inputPtr(this.__wbg_ptr, len);
        return ret >>> 0;
    }
    /**
     * @param {Geometry} geometry
     */
    constructor(geometry) {
        _assertClass(geometry, Geometry);
        const ret = wasm.partencoder_new(geometry.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        PartEncoderFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * Length of the next block to encode, or 0 when every block is done.
     * @returns {number}
     */
    get nextBlockLen() {
        const ret = wasm.partencoder_nextBlockLen(this.__wbg_ptr);
        return ret;
    }
    /**
     * @param {number} shard
     * @returns {number}
     */
    outputLen(shard) {
        const ret = wasm.partencoder_outputLen(this.__wbg_ptr, shard);
        return ret >>> 0;
    }
    /**
     * Framed bytes the last `encode` produced for shard file `shard` (empty if out of range).
     * @param {number} shard
     * @returns {number}
     */
    outputPtr(shard) {
        const ret = wasm.partencoder_outputPtr(this.__wbg_ptr, shard);
        return ret >>> 0;
    }
    /**
     * Number of shard files (k + m): the shards `outputPtr`/`outputLen` answer for.
     * @returns {number}
     */
    get shardCount() {
        const ret = wasm.partencoder_shardCount(this.__wbg_ptr);
        return ret >>> 0;
    }
}
if (Symbol.dispose) PartEncoder.prototype[Symbol.dispose] = PartEncoder.prototype.free;

/**
 * Which shard-file byte ranges a byte range of a part needs.
 */
export class ReadPlan {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        ReadPlanFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_readplan_free(ptr, 0);
    }
    /**
     * @returns {boolean}
     */
    get degraded() {
        const ret = wasm.readplan_degraded(this.__wbg_ptr);
        return ret !== 0;
    }
    /**
     * The requests to make, flattened: `[shard, physicalStart, physicalEnd, …]` (end exclusive).
     * @returns {Float64Array}
     */
    fetches() {
        const ret = wasm.readplan_fetches(this.__wbg_ptr);
        var v1 = getArrayF64FromWasm0(ret[0], ret[1]).slice();
        wasm.__wbindgen_free(ret[0], ret[1] * 8, 8);
        return v1;
    }
    /**
     * Plans reading object bytes `[start, end)` with the given shard indices unavailable.
     * @param {Geometry} geometry
     * @param {number} start
     * @param {number} end
     * @param {Uint32Array | number[]} unavailable
     */
    constructor(geometry, start, end, unavailable) {
        _assertClass(geometry, Geometry);
        const val2 = +start;
        const val3 = +end;
        const ptr0 = passArray32ToWasm0(unavailable, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.readplan_new(geometry.__wbg_ptr, val2, val3, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        ReadPlanFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
}
if (Symbol.dispose) ReadPlan.prototype[Symbol.dispose] = ReadPlan.prototype.free;

/**
 * Checks a whole shard file's chunk checksums as its bytes stream in (scrub).
 */
export class ShardVerifier {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        ShardVerifierFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_shardverifier_free(ptr, 0);
    }
    /**
     * Indices of the chunks that failed their checksum, in order.
     * @returns {Float64Array}
     */
    badChunks() {
        const ret = wasm.shardverifier_badChunks(this.__wbg_ptr);
        var v1 = getArrayF64FromWasm0(ret[0], ret[1]).slice();
        wasm.__wbindgen_free(ret[0], ret[1] * 8, 8);
        return v1;
    }
    /**
     * Bytes received so far (up to the expected length).
     * @returns {number}
     */
    get bytes() {
        const ret = wasm.shardverifier_bytes(this.__wbg_ptr);
        return ret;
    }
    /**
     * Chunks received whole and checked so far.
     * @returns {number}
     */
    get chunks() {
        const ret = wasm.shardverifier_chunks(this.__wbg_ptr);
        return ret;
    }
    /**
     * True once the whole expected file was received (false: the file is short so far).
     * @returns {boolean}
     */
    get complete() {
        const ret = wasm.shardverifier_complete(this.__wbg_ptr);
        return ret !== 0;
    }
    /**
     * Bytes received beyond the expected length.
     * @returns {number}
     */
    get excess() {
        const ret = wasm.shardverifier_excess(this.__wbg_ptr);
        return ret;
    }
    /**
     * The file's expected length, checksums included.
     * @returns {number}
     */
    get fileBytes() {
        const ret = wasm.shardverifier_fileBytes(this.__wbg_ptr);
        return ret;
    }
    /**
     * Pointer to a reusable input buffer of `len` bytes; write into it, then call `push`.
     * @param {number} len
     * @returns {number}
     */
    inputPtr(len) {
        const ret = wasm.shardverifier_inputPtr(this.__wbg_ptr, len);
        return ret >>> 0;
    }
    /**
     * A verifier for shard file `shard` of a part laid out as `geometry`.
     * @param {Geometry} geometry
     * @param {number} shard
     */
    constructor(geometry, shard) {
        _assertClass(geometry, Geometry);
        const ret = wasm.shardverifier_new(geometry.__wbg_ptr, shard);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        ShardVerifierFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * Feeds the first `len` bytes of the input buffer as the file's next bytes. Returns the
     * number of bad chunks found so far.
     * @param {number} len
     * @returns {number}
     */
    push(len) {
        const ret = wasm.shardverifier_push(this.__wbg_ptr, len);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] >>> 0;
    }
}
if (Symbol.dispose) ShardVerifier.prototype[Symbol.dispose] = ShardVerifier.prototype.free;

/**
 * The 32-byte Argon2id key of `passphrase` with `salt` (`kdf.rs`): client-side encryption's
 * key-encryption key. Throws when a parameter is outside the bounds `kdf.rs` accepts.
 * @param {Uint8Array | number[]} passphrase
 * @param {Uint8Array | number[]} salt
 * @param {number} memory_kib
 * @param {number} passes
 * @param {number} lanes
 * @returns {Uint8Array}
 */
export function argon2id(passphrase, salt, memory_kib, passes, lanes) {
    const val3 = +memory_kib;
    const val4 = +passes;
    const val5 = +lanes;
    let ptr0, len0, ptr1, len1;
    try {
        ptr0 = passArray8ToWasm0(passphrase, wasm.__wbindgen_malloc);
        len0 = WASM_VECTOR_LEN;
        ptr1 = passArray8ToWasm0(salt, wasm.__wbindgen_malloc);
        len1 = WASM_VECTOR_LEN;
    } catch (e) {
        if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
        if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
        throw e;
    }
    const ret = wasm.argon2id(ptr0, len0, ptr1, len1, val3, val4, val5);
    if (ret[3]) {
        throw takeFromExternrefTable0(ret[2]);
    }
    var v6 = getArrayU8FromWasm0(ret[0], ret[1]).slice();
    wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
    return v6;
}

/**
 * The CRC of A||B from the CRCs of A and B and B's length (`checksum::combine`): a multipart
 * upload's `FULL_OBJECT` checksum from its parts' checksums, without rereading data.
 * @param {string} algorithm
 * @param {Uint8Array | number[]} crc_a
 * @param {Uint8Array | number[]} crc_b
 * @param {number} len_b
 * @returns {Uint8Array}
 */
export function combineChecksums(algorithm, crc_a, crc_b, len_b) {
    const val4 = +len_b;
    let ptr0, len0, ptr1, len1, ptr2, len2;
    try {
        ptr0 = passStringToWasm0(algorithm, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len0 = WASM_VECTOR_LEN;
        ptr1 = passArray8ToWasm0(crc_a, wasm.__wbindgen_malloc);
        len1 = WASM_VECTOR_LEN;
        ptr2 = passArray8ToWasm0(crc_b, wasm.__wbindgen_malloc);
        len2 = WASM_VECTOR_LEN;
    } catch (e) {
        if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 1, 1); }
        if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
        if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
        throw e;
    }
    const ret = wasm.combineChecksums(ptr0, len0, ptr1, len1, ptr2, len2, val4);
    if (ret[3]) {
        throw takeFromExternrefTable0(ret[2]);
    }
    var v5 = getArrayU8FromWasm0(ret[0], ret[1]).slice();
    wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
    return v5;
}

/**
 * Parses and validates a binary manifest row into its JSON form.
 * @param {Uint8Array | number[]} bytes
 * @returns {string}
 */
export function decodeManifest(bytes) {
    let deferred3_0;
    let deferred3_1;
    try {
        const ptr0 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.decodeManifest(ptr0, len0);
        var ptr2 = ret[0];
        var len2 = ret[1];
        if (ret[3]) {
            ptr2 = 0; len2 = 0;
            throw takeFromExternrefTable0(ret[2]);
        }
        deferred3_0 = ptr2;
        deferred3_1 = len2;
        return getStringFromWasm0(ptr2, len2);
    } finally {
        wasm.__wbindgen_free(deferred3_0, deferred3_1, 1);
    }
}

/**
 * Validates a manifest given in its JSON form (see `manifest.rs`) and returns its binary row.
 * @param {string} json
 * @returns {Uint8Array}
 */
export function encodeManifest(json) {
    const ptr0 = passStringToWasm0(json, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.encodeManifest(ptr0, len0);
    if (ret[3]) {
        throw takeFromExternrefTable0(ret[2]);
    }
    var v2 = getArrayU8FromWasm0(ret[0], ret[1]).slice();
    wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
    return v2;
}

/**
 * Test hook: codes `pieceBytes`-long random pieces (from `seed`) with engines `a` and `b`
 * ("simd128", "scalar") and checks they agree bit for bit on the parity and on rebuilding the
 * `lost` pieces over the column window `[windowStart, windowEnd)`. Throws saying what differed.
 * @param {number} data_shards
 * @param {number} parity_shards
 * @param {number} piece_bytes
 * @param {number} seed
 * @param {Uint32Array | number[]} lost
 * @param {number} window_start
 * @param {number} window_end
 * @param {string} a
 * @param {string} b
 */
export function erasureCrossCheck(data_shards, parity_shards, piece_bytes, seed, lost, window_start, window_end, a, b) {
    const val4 = +data_shards;
    const val5 = +parity_shards;
    const val6 = +piece_bytes;
    const val7 = +seed;
    const val8 = +window_start;
    const val9 = +window_end;
    let ptr0, len0, ptr1, len1, ptr2, len2;
    try {
        ptr0 = passArray32ToWasm0(lost, wasm.__wbindgen_malloc);
        len0 = WASM_VECTOR_LEN;
        ptr1 = passStringToWasm0(a, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len1 = WASM_VECTOR_LEN;
        ptr2 = passStringToWasm0(b, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len2 = WASM_VECTOR_LEN;
    } catch (e) {
        if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 1, 1); }
        if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
        if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 4, 4); }
        throw e;
    }
    const ret = wasm.erasureCrossCheck(val4, val5, val6, val7, ptr0, len0, val8, val9, ptr1, len1, ptr2, len2);
    if (ret[1]) {
        throw takeFromExternrefTable0(ret[0]);
    }
}

/**
 * Resolves a `Range` header against an object size with S3's rules.
 * Returns `[start, end]` (end exclusive), `[]` when the header is to be ignored (serve all),
 * and throws `InvalidRange` when it cannot be satisfied (416).
 * @param {string} header
 * @param {number} size
 * @returns {Float64Array}
 */
export function resolveRange(header, size) {
    const val2 = +size;
    const ptr0 = passStringToWasm0(header, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.resolveRange(ptr0, len0, val2);
    if (ret[3]) {
        throw takeFromExternrefTable0(ret[2]);
    }
    var v3 = getArrayF64FromWasm0(ret[0], ret[1]).slice();
    wasm.__wbindgen_free(ret[0], ret[1] * 8, 8);
    return v3;
}

/**
 * The core's crate version.
 * @returns {string}
 */
export function version() {
    let deferred1_0;
    let deferred1_1;
    try {
        const ret = wasm.version();
        deferred1_0 = ret[0];
        deferred1_1 = ret[1];
        return getStringFromWasm0(ret[0], ret[1]);
    } finally {
        wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
    }
}
function __wbg_get_imports() {
    const import0 = {
        __proto__: null,
        __wbg_Error_208446807d0d1e30: function(arg0, arg1) {
            const ret = Error(getStringFromWasm0(arg0, arg1));
            return ret;
        },
        __wbg___wbindgen_throw_4c88d8bf264fd984: function(arg0, arg1) {
            throw new Error(getStringFromWasm0(arg0, arg1));
        },
        __wbindgen_init_externref_table: function() {
            const table = wasm.__wbindgen_externrefs;
            table.set(0, undefined);
            table.set(1024, undefined);
            table.set(1025, null);
            table.set(1026, true);
            table.set(1027, false);
        },
    };
    return {
        __proto__: null,
        "./shardgate_core_bg.js": import0,
    };
}

const AssemblerFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_assembler_free(ptr, 1));
const BenchWorkloadFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_benchworkload_free(ptr, 1));
const ChecksumFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_checksum_free(ptr, 1));
const GeometryFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_geometry_free(ptr, 1));
const PartEncoderFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_partencoder_free(ptr, 1));
const ReadPlanFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_readplan_free(ptr, 1));
const ShardVerifierFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_shardverifier_free(ptr, 1));

function _assertClass(instance, klass) {
    if (!(instance instanceof klass)) {
        throw new Error(`expected instance of ${klass.name}`);
    }
}

function getArrayF64FromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return getFloat64ArrayMemory0().subarray(ptr / 8, ptr / 8 + len);
}

function getArrayU8FromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return getUint8ArrayMemory0().subarray(ptr / 1, ptr / 1 + len);
}

let cachedFloat64ArrayMemory0 = null;
function getFloat64ArrayMemory0() {
    if (cachedFloat64ArrayMemory0 === null || cachedFloat64ArrayMemory0.byteLength === 0) {
        cachedFloat64ArrayMemory0 = new Float64Array(wasm.memory.buffer);
    }
    return cachedFloat64ArrayMemory0;
}

function getStringFromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return decodeText(getUint8ArrayMemory0().subarray(ptr, ptr + len));
}

let cachedUint32ArrayMemory0 = null;
function getUint32ArrayMemory0() {
    if (cachedUint32ArrayMemory0 === null || cachedUint32ArrayMemory0.byteLength === 0) {
        cachedUint32ArrayMemory0 = new Uint32Array(wasm.memory.buffer);
    }
    return cachedUint32ArrayMemory0;
}

let cachedUint8ArrayMemory0 = null;
function getUint8ArrayMemory0() {
    if (cachedUint8ArrayMemory0 === null || cachedUint8ArrayMemory0.byteLength === 0) {
        cachedUint8ArrayMemory0 = new Uint8Array(wasm.memory.buffer);
    }
    return cachedUint8ArrayMemory0;
}

function passArray32ToWasm0(arg, malloc) {
    const ptr = malloc(arg.length * 4, 4) >>> 0;
    getUint32ArrayMemory0().set(arg, ptr / 4);
    WASM_VECTOR_LEN = arg.length;
    return ptr;
}

function passArray8ToWasm0(arg, malloc) {
    const ptr = malloc(arg.length * 1, 1) >>> 0;
    getUint8ArrayMemory0().set(arg, ptr / 1);
    WASM_VECTOR_LEN = arg.length;
    return ptr;
}

function passStringToWasm0(arg, malloc, realloc) {
    if (realloc === undefined) {
        const buf = cachedTextEncoder.encode(arg);
        const ptr = malloc(buf.length, 1) >>> 0;
        getUint8ArrayMemory0().subarray(ptr, ptr + buf.length).set(buf);
        WASM_VECTOR_LEN = buf.length;
        return ptr;
    }

    let len = arg.length;
    let ptr = malloc(len, 1) >>> 0;

    const mem = getUint8ArrayMemory0();

    let offset = 0;

    for (; offset < len; offset++) {
        const code = arg.charCodeAt(offset);
        if (code > 0x7F) break;
        mem[ptr + offset] = code;
    }
    if (offset !== len) {
        if (offset !== 0) {
            arg = arg.slice(offset);
        }
        ptr = realloc(ptr, len, len = offset + arg.length * 3, 1) >>> 0;
        const view = getUint8ArrayMemory0().subarray(ptr + offset, ptr + len);
        const ret = cachedTextEncoder.encodeInto(arg, view);

        offset += ret.written;
        ptr = realloc(ptr, len, offset, 1) >>> 0;
    }

    WASM_VECTOR_LEN = offset;
    return ptr;
}

function takeFromExternrefTable0(idx) {
    const value = wasm.__wbindgen_externrefs.get(idx);
    wasm.__externref_table_dealloc(idx);
    return value;
}

let cachedTextDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
cachedTextDecoder.decode();
const MAX_SAFARI_DECODE_BYTES = 2146435072;
let numBytesDecoded = 0;
function decodeText(bytes) {
    numBytesDecoded += bytes.length;
    if (numBytesDecoded >= MAX_SAFARI_DECODE_BYTES) {
        cachedTextDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
        cachedTextDecoder.decode();
        numBytesDecoded = bytes.length;
    }
    return cachedTextDecoder.decode(bytes);
}

const cachedTextEncoder = new TextEncoder();

if (!('encodeInto' in cachedTextEncoder)) {
    cachedTextEncoder.encodeInto = function (arg, view) {
        const buf = cachedTextEncoder.encode(arg);
        view.set(buf);
        return {
            read: arg.length,
            written: buf.length
        };
    };
}

let WASM_VECTOR_LEN = 0;

let wasmModule, wasmInstance, wasm;
function __wbg_finalize_init(instance, module) {
    wasmInstance = instance;
    wasm = instance.exports;
    wasmModule = module;
    cachedFloat64ArrayMemory0 = null;
    cachedUint32ArrayMemory0 = null;
    cachedUint8ArrayMemory0 = null;
    wasm.__wbindgen_start();
    return wasm;
}

async function __wbg_load(module, imports) {
    if (typeof Response === 'function' && module instanceof Response) {
        if (!module.ok) {
            throw new Error(`failed to fetch Wasm: ${module.status} ${module.statusText} fetching '${module.url}'`);
        }

        if (typeof WebAssembly.instantiateStreaming === 'function') {
            try {
                return await WebAssembly.instantiateStreaming(module, imports);
            } catch (e) {
                const validResponse = expectedResponseType(module.type);

                if (validResponse && module.headers.get('Content-Type') !== 'application/wasm') {
                    console.warn("`WebAssembly.instantiateStreaming` failed because your server does not serve Wasm with `application/wasm` MIME type. Falling back to `WebAssembly.instantiate` which is slower. Original error:\n", e);

                } else { throw e; }
            }
        }

        const bytes = await module.arrayBuffer();
        return await WebAssembly.instantiate(bytes, imports);
    } else {
        const instance = await WebAssembly.instantiate(module, imports);

        if (instance instanceof WebAssembly.Instance) {
            return { instance, module };
        } else {
            return instance;
        }
    }

    function expectedResponseType(type) {
        switch (type) {
            case 'basic': case 'cors': case 'default': return true;
        }
        return false;
    }
}

function initSync(module) {
    if (wasm !== undefined) return wasm;


    if (module !== undefined) {
        if (Object.getPrototypeOf(module) === Object.prototype) {
            ({module} = module)
        } else {
            console.warn('using deprecated parameters for `initSync()`; pass a single object instead')
        }
    }

    const imports = __wbg_get_imports();
    if (!(module instanceof WebAssembly.Module)) {
        module = new WebAssembly.Module(module);
    }
    const instance = new WebAssembly.Instance(module, imports);
    return __wbg_finalize_init(instance, module);
}

let __wbg_init_promise;
async function __wbg_init(module_or_path) {
    if (wasm !== undefined) return wasm;
    if (__wbg_init_promise === undefined) {
        __wbg_init_promise = __wbg_init_once(module_or_path);
        __wbg_init_promise.catch(() => { __wbg_init_promise = undefined; });
    }
    return __wbg_init_promise;
}

async function __wbg_init_once(module_or_path) {

    if (module_or_path !== undefined) {
        if (Object.getPrototypeOf(module_or_path) === Object.prototype) {
            ({module_or_path} = module_or_path)
        } else {
            console.warn('using deprecated parameters for the initialization function; pass a single object instead')
        }
    }

    if (module_or_path === undefined) {
        module_or_path = new URL('shardgate_core_bg.wasm', import.meta.url);
    }
    const imports = __wbg_get_imports();

    if (typeof module_or_path === 'string' || (typeof Request === 'function' && module_or_path instanceof Request) || (typeof URL === 'function' && module_or_path instanceof URL)) {
        module_or_path = fetch(module_or_path);
    }

    const { instance, module } = await __wbg_load(await module_or_path, imports);

    return __wbg_finalize_init(instance, module);
}

export { initSync, __wbg_init as default };
