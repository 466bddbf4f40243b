// Bitrot with real separate node processes (`npm run cluster`: the gateway over six versitygw S3
// servers, each serving a plain directory): bytes are flipped in shard files directly on the
// nodes' disks, in distinct chunks of data and parity shard files. A report-only deep scrub finds
// exactly the flipped chunks; reads stay byte-identical (sha256) (and heal on read repairs some);
// with the same rot put back, a deep scrub with healing finds every flipped chunk again and puts
// every shard file back bit-identical to the one first written; a second deep pass finds nothing.
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { Cluster, sha256 } from "./cluster";

const MIB = 1 << 20;
const CHUNK = 16 << 10; // the gateway's default: 16 KiB chunks, each followed by an 8-byte checksum
const FRAMED = CHUNK + 8;
const K = 4;
const BUCKET = "rot";

interface Counters {
  objectsChecked: number;
  bytesVerified: number;
  chunksChecked: number;
  badChunks: number;
  badShards: number;
  shardsRebuilt: number;
  shardsFailed: number;
  objectsFailed: number;
}
interface Run {
  pass: number;
  passCompleted: boolean;
  ms: number;
  counters: Counters;
  mibPerSecond: number;
  findings: { bucket: string; key: string; parts: { problems: { shard: number; fault: string; badChunks?: number[] }[] }[]; rebuilt: number; failed: number }[];
}

const c = new Cluster();

beforeAll(async () => {
  await c.start();
  await c.s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
}, 180_000);

afterAll(() => c.stop());

/** Every shard file on every node's disk: "<storage id>/<shard>" → absolute path. */
function shardFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const n of c.info.nodes) {
    const root = join(n.dir, c.info.bucket);
    const walk = (dir: string) => {
      if (!existsSync(dir)) return;
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.name.startsWith(".")) continue;
        if (e.isDirectory()) walk(join(dir, e.name));
        else files.set(relative(root, join(dir, e.name)), join(dir, e.name));
      }
    };
    walk(root);
  }
  return files;
}

/** Chunks of a framed shard file of `length` bytes: [physical start, data length] each. */
function chunks(length: number): [number, number][] {
  const n = Math.ceil(length / FRAMED);
  const data = length - 8 * n;
  return Array.from({ length: n }, (_, c) => [c * FRAMED, Math.min(CHUNK, data - c * CHUNK)]);
}

async function getSha(key: string, range?: string): Promise<string> {
  const res = await c.s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, Range: range }));
  return sha256(await (res.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
}

async function scrubPass(query: string): Promise<Run[]> {
  const runs: Run[] = [];
  for (let i = 0; i < 100; i++) {
    const res = await c.admin.fetch(`${c.info.endpoint}/_shardgate/admin/scrub?${query}`, { method: "POST" });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`scrub: ${res.status} ${text}`);
    const { run } = JSON.parse(text) as { run: Run };
    runs.push(run);
    if (run.passCompleted) return runs;
  }
  throw new Error("the scrub pass did not complete in 100 steps");
}

/** "key shard:chunk" for every bad chunk the runs found in BUCKET, sorted. */
function found(runs: Run[]): string[] {
  return runs
    .flatMap((r) => r.findings)
    .filter((f) => f.bucket === BUCKET)
    .flatMap((f) => f.parts.flatMap((p) => p.problems.flatMap((pr) => (pr.badChunks ?? []).map((c) => `${f.key} ${pr.shard}:${c}`))))
    .sort();
}

const sum = (runs: Run[], name: keyof Counters) => runs.reduce((n, r) => n + r.counters[name], 0);

describe("bitrot on the nodes' disks", () => {
  const objects = new Map<string, Uint8Array>();
  /** key → shard index → [path on disk, bytes as first written] */
  const layout = new Map<string, Map<number, [string, Buffer]>>();
  const flipped: string[] = [];
  /** The rotten files: path → bytes with the flips. */
  const rotten = new Map<string, Buffer>();

  it("stores objects, then flips bytes in distinct chunks of data and parity shard files on disk", async () => {
    for (const [i, size] of [3 * MIB + 17, 2 * MIB, 700_000, 20_000].entries()) {
      const key = `obj-${i}`;
      const before = new Set(shardFiles().keys());
      const data = randomBytes(size, 100 + i);
      await c.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: data }));
      objects.set(key, data);
      const shards = new Map<number, [string, Buffer]>();
      for (const [name, path] of shardFiles()) {
        if (before.has(name)) continue;
        shards.set(Number(name.slice(name.lastIndexOf("/") + 1)), [path, readFileSync(path)]);
      }
      expect(shards.size).toBe(6);
      layout.set(key, shards);
    }
    await c.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "inline", Body: "no shard files" }));

    // Per object, one data and one parity shard file (never more than m = 2 bad), one to three
    // chunks each, in chunk bytes or in checksum bytes.
    const plan: [string, number, number[], "data" | "checksum"][] = [
      ["obj-0", 1, [0, 7, 40], "data"],
      ["obj-0", 5, [2, 48], "checksum"],
      ["obj-1", 3, [31], "checksum"],
      ["obj-1", 4, [0, 1, 16], "data"],
      ["obj-2", 0, [3, 10], "data"],
      ["obj-2", 4, [5], "data"],
      ["obj-3", 2, [0], "data"],
    ];
    for (const [key, shard, list, where] of plan) {
      const [path] = (layout.get(key) as Map<number, [string, Buffer]>).get(shard) as [string, Buffer];
      const bytes = readFileSync(path);
      const all = chunks(bytes.length);
      for (const c of list) {
        const [start, len] = all[c] as [number, number];
        const at = where === "data" ? start + ((c * 7919) % len) : start + len + (c % 8);
        bytes[at] ^= 1 << (c % 8);
        flipped.push(`${key} ${shard}:${c}`);
      }
      writeFileSync(path, bytes);
      rotten.set(path, bytes);
    }
    flipped.sort();
    expect(new Set(flipped).size).toBe(13);
    expect(plan.some(([, shard]) => shard < K) && plan.some(([, shard]) => shard >= K)).toBe(true);
  }, 120_000);

  it("a report-only deep scrub finds exactly the flipped chunks", async () => {
    const runs = await scrubPass("mode=deep&heal=false");
    expect(found(runs)).toEqual(flipped);
    expect(sum(runs, "shardsRebuilt")).toBe(0);
    expect(sum(runs, "objectsFailed")).toBe(0);
    expect(sum(runs, "objectsChecked")).toBe(5);
  }, 120_000);

  it("reads stay byte-identical (full and ranged) with the rot in place", async () => {
    for (const [key, data] of objects) {
      expect(await getSha(key), key).toBe(sha256(data));
      const to = Math.min(data.length - 1, 300_000);
      expect(await getSha(key, `bytes=1000-${to}`), key).toBe(sha256(data.subarray(1000, to + 1)));
    }
    // Heal on read runs after the responses: let it finish before the scrub looks again.
    await new Promise((r) => setTimeout(r, 3000));
  }, 120_000);

  it("with the rot put back, a deep scrub finds every flipped chunk and heals every shard file back to its original bytes; a second deep pass finds nothing", async () => {
    // The reads healed what they went around: put the same rot back, so the scrub has it all to do.
    const healedByReads = [...rotten.keys()].filter((path) => !readFileSync(path).equals(rotten.get(path) as Buffer)).length;
    for (const [path, bytes] of rotten) writeFileSync(path, bytes);
    const heal = await scrubPass("mode=deep");
    const healFound = found(heal);
    expect(healFound).toEqual(flipped);
    expect(sum(heal, "badChunks")).toBe(flipped.length);
    expect(sum(heal, "badShards")).toBe(rotten.size);
    expect(sum(heal, "shardsRebuilt")).toBe(rotten.size);
    expect(sum(heal, "shardsFailed")).toBe(0);
    expect(sum(heal, "objectsFailed")).toBe(0);
    for (const [key, shards] of layout) {
      for (const [shard, [path, original]] of shards) {
        expect(sha256(readFileSync(path)), `${key} shard ${shard}`).toBe(sha256(original));
      }
    }

    const again = await scrubPass("mode=deep");
    expect(sum(again, "badChunks")).toBe(0);
    expect(sum(again, "badShards")).toBe(0);
    expect(found(again)).toEqual([]);
    for (const [key, data] of objects) expect(await getSha(key), key).toBe(sha256(data));

    const status = (await (await c.admin.fetch(`${c.info.endpoint}/_shardgate/admin/heal`)).json()) as {
      scrub: { pass: number; lastPass: { counters: Counters } | null };
    };
    expect(status.scrub.pass).toBe(3);
    expect(status.scrub.lastPass?.counters.badChunks).toBe(0);

    const bytes = sum(again, "bytesVerified");
    const ms = again.reduce((n, r) => n + r.ms, 0);
    console.log(
      JSON.stringify({
        chunksFlipped: flipped.length,
        foundByReportOnlyPass: flipped.length,
        shardFilesRotten: rotten.size,
        shardFilesHealedByReads: healedByReads,
        foundByHealPass: healFound.length,
        shardsRebuiltByScrub: sum(heal, "shardsRebuilt"),
        healPassMiBPerSecond:
          Math.round(
            (sum(heal, "bytesVerified") /
              MIB /
              (Math.max(
                heal.reduce((n, r) => n + r.ms, 0),
                1,
              ) /
                1000)) *
              10,
          ) / 10,
        secondPassBadChunks: 0,
        deepPassBytesVerified: bytes,
        deepPassMiBPerSecond: Math.round((bytes / MIB / (Math.max(ms, 1) / 1000)) * 10) / 10,
      }),
    );
  }, 180_000);
});
