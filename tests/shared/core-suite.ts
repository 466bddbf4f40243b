// The core's WASM API exercised on random data. Defined once and run in every runtime that loads
// the core (Node in tests/node, workerd in tests/worker), so both prove the same behaviour.
import { describe, expect, it } from "vitest";
import { ChecksumMismatchError, type Core, type GeometrySpec, type Manifest } from "../../worker/src/shared/core-api";

/** Deterministic pseudo-random bytes (xorshift), so failures reproduce. */
export function randomBytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** Byte-for-byte equality; vitest's deep toEqual is very slow on large typed arrays. */
export function expectSameBytes(actual: Uint8Array, expected: Uint8Array): void {
  expect(actual.length).toBe(expected.length);
  const at = actual.findIndex((b, i) => b !== expected[i]);
  expect(at, `first differing byte at ${at}`).toBe(-1);
}

/** A seeded pseudo-random generator (xorshift32) in [0, 1): the same sequence for the same seed. */
export function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** Encodes `data` with the streaming encoder into in-memory shard files. */
function encodeToFiles(core: Core, spec: GeometrySpec, data: Uint8Array): Uint8Array[] {
  const geometry = core.geometry(spec);
  const total = spec.dataShards + spec.parityShards;
  const files = Array.from({ length: total }, () => new Uint8Array(geometry.shardFileBytes));
  const written = new Array<number>(total).fill(0);
  const encoder = core.encoder(geometry);
  let at = 0;
  while (encoder.nextBlockLength > 0) {
    const len = encoder.nextBlockLength;
    encoder.encode(data.subarray(at, at + len), (shard, bytes) => {
      files[shard].set(bytes, written[shard]);
      written[shard] += bytes.length;
    });
    at += len;
  }
  encoder.free();
  expect(written).toEqual(new Array(total).fill(geometry.shardFileBytes));
  geometry.free();
  return files;
}

/** Reads [start, end) back from the files the way the worker will: round-robin, bounded. */
function readRange(
  core: Core,
  spec: GeometrySpec,
  files: Uint8Array[],
  start: number,
  end: number,
  lost: number[],
  step: number,
): { bytes: Uint8Array; fetched: number; degraded: boolean } {
  const geometry = core.geometry(spec);
  const plan = core.planRead(geometry, start, end, lost);
  for (const f of plan.fetches) expect(lost).not.toContain(f.shard);
  const asm = plan.assembler();
  const offsets = plan.fetches.map((f) => f.start);
  const out = new Uint8Array(end - start);
  let written = 0;
  let fetched = 0;
  while (!asm.done) {
    let progressed = false;
    const take = (chunk: Uint8Array) => {
      out.set(chunk, written);
      written += chunk.length;
      return chunk.length;
    };
    while (asm.pull(1 << 20, take) !== null) progressed = true;
    plan.fetches.forEach((f, i) => {
      if (offsets[i] < f.end && asm.wants(f.shard)) {
        const next = Math.min(offsets[i] + step, f.end);
        asm.push(f.shard, files[f.shard].subarray(offsets[i], next));
        fetched += next - offsets[i];
        offsets[i] = next;
        progressed = true;
      }
    });
    if (!progressed) throw new Error(`assembly stalled at ${asm.position}`);
  }
  const degraded = plan.degraded;
  asm.free();
  plan.free();
  geometry.free();
  expect(written).toBe(end - start);
  return { bytes: out, fetched, degraded };
}

export function defineCoreSuite(runtime: string, getCore: () => Core): void {
  describe(`core WASM API in ${runtime}`, () => {
    it("reports the crate version", () => {
      expect(getCore().version()).toMatch(/^\d+\.\d+\.\d+/);
    });

    it("rejects invalid geometry with a clear message", () => {
      const core = getCore();
      expect(() => core.geometry({ size: 10, blockBytes: 1 << 20, dataShards: 0, parityShards: 2, chunkBytes: 16384 })).toThrow(/erasure geometry 0\+2/);
      expect(() => core.geometry({ size: 10, blockBytes: 1 << 20, dataShards: 4, parityShards: 2, chunkBytes: 1000 })).toThrow(/chunk size 1000/);
      expect(() => core.geometry({ size: -1, blockBytes: 1 << 20, dataShards: 4, parityShards: 2, chunkBytes: 16384 })).toThrow(/size must be a whole number/);
    });

    it("encodes and reads back random ranges under random loss", () => {
      const core = getCore();
      const random = rng(42);
      for (let round = 0; round < 12; round++) {
        const k = 1 + Math.floor(random() * 6);
        const m = 1 + Math.floor(random() * 3);
        const spec: GeometrySpec = {
          size: 1 + Math.floor(random() * 300_000),
          blockBytes: 4096 + Math.floor(random() * 100_000),
          dataShards: k,
          parityShards: m,
          chunkBytes: 64 * (1 + Math.floor(random() * 64)),
        };
        const data = randomBytes(spec.size, round + 1);
        const files = encodeToFiles(core, spec, data);
        const lost = [...Array(k + m).keys()].filter(() => random() < m / (k + m)).slice(0, m);
        for (let r = 0; r < 4; r++) {
          const start = Math.floor(random() * spec.size);
          const end = start + 1 + Math.floor(random() * (spec.size - start));
          const { bytes } = readRange(core, spec, files, start, end, lost, 1 + Math.floor(random() * 70_000));
          expectSameBytes(bytes, data.subarray(start, end));
        }
      }
    });

    it("the simd128 engine and small-matrix decoder match the crate's scalar engine and decoder", () => {
      const core = getCore();
      const random = rng(7);
      const configs: [number, number][] = [
        [4, 2],
        [8, 4],
        [1, 1],
        [3, 5],
        [16, 16],
        [24, 12], // beyond the small codes: the crate's encoder and decoder on the simd128 engine
      ];
      for (let round = 0; round < 60; round++) {
        const [k, m] =
          round < configs.length
            ? configs[round]
            : (() => {
                const k = 1 + Math.floor(random() * 28);
                return [k, 1 + Math.floor(random() * Math.min(16, 32 - k))];
              })();
        const cols = 1 + Math.floor(random() * 40);
        // Up to m lost pieces (at least one), anywhere among the k + m.
        const order = [...Array(k + m).keys()].sort(() => random() - 0.5);
        const lost = order.slice(0, 1 + Math.floor(random() * m)).sort((a, b) => a - b);
        const start = Math.floor(random() * cols);
        const end = start + 1 + Math.floor(random() * (cols - start));
        expect(() => core.erasureCrossCheck(k, m, cols * 64, round + 1, lost, start * 64, end * 64)).not.toThrow();
      }
      // The check itself notices a difference: the scalar engine against itself passes, and a
      // window past the pieces is refused.
      core.erasureCrossCheck(4, 2, 256, 1, [0, 5], 0, 256, ["scalar", "scalar"]);
      expect(() => core.erasureCrossCheck(4, 2, 256, 1, [0], 0, 320)).toThrow(/out of range/);
    });

    it("reads a 4 KiB range of a large object with about one chunk per shard touched", () => {
      const core = getCore();
      const spec: GeometrySpec = { size: 4 << 20, blockBytes: 1 << 20, dataShards: 4, parityShards: 2, chunkBytes: 16384 };
      const data = randomBytes(spec.size, 7);
      const files = encodeToFiles(core, spec, data);
      const start = 3 * (1 << 20) + 100_000;
      const healthy = readRange(core, spec, files, start, start + 4096, [], 65536);
      expectSameBytes(healthy.bytes, data.subarray(start, start + 4096));
      expect(healthy.fetched).toBe(16384 + 8);
      const degraded = readRange(core, spec, files, start, start + 4096, [0], 65536);
      expect(degraded.degraded).toBe(true);
      expectSameBytes(degraded.bytes, data.subarray(start, start + 4096));
      expect(degraded.fetched).toBe(4 * (16384 + 8));
    });

    it("never serves a rotten chunk", () => {
      const core = getCore();
      const spec: GeometrySpec = { size: 200_000, blockBytes: 65536, dataShards: 4, parityShards: 2, chunkBytes: 4096 };
      const files = encodeToFiles(core, spec, randomBytes(spec.size, 9));
      files[2][5000] ^= 1;
      const err = (() => {
        try {
          readRange(core, spec, files, 0, spec.size, [], 3000);
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(ChecksumMismatchError);
      expect(err).toMatchObject({ shard: 2, chunk: 1 });
    });

    it("computes S3 checksums in pieces", () => {
      const core = getCore();
      const b64 = (d: Uint8Array) => btoa(String.fromCharCode(...d));
      const text = new TextEncoder().encode("hello world");
      const crc32 = core.checksum("CRC32");
      crc32.update(text.subarray(0, 4));
      crc32.update(text.subarray(4));
      expect(b64(crc32.digest())).toBe("DUoRhQ==");
      const crc32c = core.checksum("crc32c");
      crc32c.update(text);
      expect(b64(crc32c.digest())).toBe("yZRlqg==");
      const nvme = core.checksum("CRC64NVME");
      nvme.update(new TextEncoder().encode("123456789"));
      expect([...nvme.digest()].map((b) => b.toString(16).padStart(2, "0")).join("")).toBe("ae8b14860a799888");
      expect(() => core.checksum("MD4")).toThrow(/unsupported checksum/);
    });

    it("computes MD5 in pieces (the ETag of a browser's own upload)", () => {
      const core = getCore();
      const hex = (d: Uint8Array) => [...d].map((b) => b.toString(16).padStart(2, "0")).join("");
      const md5 = core.md5();
      md5.update(new TextEncoder().encode("a"));
      md5.update(new TextEncoder().encode("bc"));
      expect(hex(md5.digest())).toBe("900150983cd24fb0d6963f7d28e17f72");
      const big = new Uint8Array(1_000_000).fill(97);
      const whole = core.md5();
      whole.update(big);
      expect(hex(whole.digest())).toBe("7707d6ae4e027c70eea2a935c2296f21"); // a million "a"s (RFC 1321 suite)
    });

    it("resolves Range headers like S3", () => {
      const core = getCore();
      expect(core.resolveRange("bytes=0-9", 100)).toEqual({ start: 0, end: 10 });
      expect(core.resolveRange("bytes=90-", 100)).toEqual({ start: 90, end: 100 });
      expect(core.resolveRange("bytes=-10", 100)).toEqual({ start: 90, end: 100 });
      expect(core.resolveRange("bytes=50-500", 100)).toEqual({ start: 50, end: 100 });
      expect(core.resolveRange("bytes=100-", 100)).toBe("unsatisfiable");
      expect(core.resolveRange("bytes=abc", 100)).toBeNull();
      expect(core.resolveRange("items=0-1", 100)).toBeNull();
    });

    it("round-trips manifests through the binary format", () => {
      const core = getCore();
      const manifest: Manifest = {
        size: 5 + 10_000_000,
        etag: "9b2cf535f27731c974343645a3985328-2",
        lastModifiedMs: 1_700_000_000_123,
        headers: [
          ["content-type", "text/plain; charset=utf-8"],
          ["cache-control", "no-cache"],
        ],
        userMetadata: [["author", "Zoë"]],
        checksums: [{ algorithm: "CRC32C", kind: "COMPOSITE", value: "yZRlqg==" }],
        tags: [["team", "storage"]],
        parts: [
          { size: 5, etag: "5d41402abc4b2a76b9719d911017c592", layout: { type: "inline", data: btoa("hello") } },
          {
            size: 10_000_000,
            etag: "7d793037a0760186574b0282f2f435e7",
            layout: {
              type: "sharded",
              blockBytes: 1 << 20,
              dataShards: 4,
              parityShards: 2,
              chunkBytes: 65536,
              storageId: "01J9ZX8Q",
              placement: ["n0", "n1", "n2", "n3", "n4", "n5"],
              partChecksums: [{ algorithm: "CRC32C", kind: "FULL_OBJECT", value: "AQIDBA==" }],
            },
          },
        ],
      };
      const bytes = core.encodeManifest(manifest);
      expect([...bytes.subarray(0, 4)]).toEqual([0x53, 0x47, 0x4d, 1]); // "SGM", version 1
      expect(core.decodeManifest(bytes)).toEqual(manifest);
      // The same row decoded again (a copy of it) is the same manifest, parsed once and frozen.
      const again = core.decodeManifest(bytes.slice());
      expect(again).toBe(core.decodeManifest(bytes));
      expect(Object.isFrozen(again.parts[1].layout)).toBe(true);
      expect(() => (again.tags as [string, string][]).push(["k", "v"])).toThrow(TypeError);

      const corrupted = bytes.slice();
      corrupted[20] ^= 1;
      expect(() => core.decodeManifest(corrupted)).toThrow(/hash mismatch/);

      const sharded = manifest.parts[1].layout;
      if (sharded.type !== "sharded") throw new Error("part 1 is sharded");
      const short: Manifest = {
        ...manifest,
        parts: [manifest.parts[0], { ...manifest.parts[1], layout: { ...sharded, placement: ["n0"] } }],
      };
      expect(() => core.encodeManifest(short)).toThrow(/part 1: placement length is not data \+ parity shards/);
      // Fields the binary row has no place for are refused rather than dropped.
      const extra = { ...manifest, storageClass: "STANDARD" };
      expect(() => core.encodeManifest(extra)).toThrow(/unknown field `storageClass`/);
    });

    it("verifies whole shard files streamed in pieces of any size and names every flipped chunk", () => {
      const core = getCore();
      const random = rng(7);
      const spec: GeometrySpec = { size: 700_001, blockBytes: 262_144, dataShards: 4, parityShards: 2, chunkBytes: 4096 };
      const files = encodeToFiles(core, spec, randomBytes(spec.size, 9));
      const geometry = core.geometry(spec);
      const framed = spec.chunkBytes + 8;
      const verify = (shard: number, file: Uint8Array) => {
        const v = core.shardVerifier(geometry, shard);
        expect(v.fileBytes).toBe(geometry.shardFileBytes);
        for (let at = 0; at < file.length; ) {
          const next = Math.min(file.length, at + 1 + Math.floor(random() * 20_000));
          v.push(file.subarray(at, next));
          at = next;
        }
        const result = v.finish();
        v.free();
        return result;
      };
      const chunks = Math.ceil(geometry.shardFileBytes / framed);
      for (const [shard, file] of files.entries()) {
        expect(verify(shard, file)).toEqual({ chunks, badChunks: [], bytes: file.length, short: false, excess: 0 });
        const rotten = file.slice();
        const bad = [...new Set([0, chunks - 1, 1 + Math.floor(random() * (chunks - 2))])].sort((a, b) => a - b);
        for (const c of bad) rotten[Math.min(c * framed + Math.floor(random() * framed), rotten.length - 1)] ^= 0x80;
        expect(verify(shard, rotten).badChunks).toEqual(bad);
        // Checked against another shard's checksums, every chunk fails; cut short, it says so.
        expect(verify((shard + 1) % files.length, file).badChunks).toHaveLength(chunks);
        expect(verify(shard, file.subarray(0, file.length - 100))).toMatchObject({ chunks: chunks - 1, badChunks: [], short: true });
      }
      expect(() => core.shardVerifier(geometry, 6)).toThrow(/shard 6/);
      geometry.free();
    });
  });
}
