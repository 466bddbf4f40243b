// The block cache on plain workerd (`npm start` with cacheMiB): its store is a directory of the
// data directory, reached through workerd's cacheApiOutbound (scripts/workerd/block-cache.js). A
// repeated GET, whole and ranged, reads no node and answers the same bytes (sha256); the entries
// survive a restart; the store stays within its size, the least recently used out first; its
// files are the owner's alone; with `--processes 2` both processes share it.
import { createHash, randomBytes } from "node:crypto";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, Gateway } from "./gateway";

const MiB = 1024 * 1024;
const bucket = "cached";
const s3 = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const gateway = new Gateway({ runtime: "workerd", config: { cacheMiB: 24 }, vars: { SHARDGATE_CACHE_HEADER: "on" } });

async function put(key: string, body: Uint8Array): Promise<void> {
  const res = await s3.fetch(`${gateway.base}/${bucket}/${key}`, { method: "PUT", body, headers: { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } });
  await res.arrayBuffer();
  expect(res.status).toBe(200);
}

async function get(key: string, range?: string): Promise<{ sha: string; cache: string | null }> {
  const res = await s3.fetch(`${gateway.base}/${bucket}/${key}`, range ? { headers: { range } } : {});
  const bytes = new Uint8Array(await res.arrayBuffer());
  expect(res.status, key).toBe(range ? 206 : 200);
  return { sha: sha(bytes), cache: res.headers.get("x-shardgate-cache") };
}

/** GETs until the cache answers (the fill runs after the first response). */
async function untilHit(key: string, range?: string): Promise<void> {
  await expect.poll(async () => (await get(key, range)).cache, { timeout: 15_000, interval: 100 }).toBe("hit");
}

async function nodeBytesRead(): Promise<number> {
  const res = await s3.fetch(`${gateway.base}/_shardgate/metrics`);
  let sum = 0;
  for (const line of (await res.text()).split("\n"))
    if (line.startsWith("shardgate_node_bytes_read_total")) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  return sum;
}

const cacheDir = () => join(gateway.persist, "cache");

beforeAll(async () => {
  await gateway.start();
  const res = await s3.fetch(`${gateway.base}/${bucket}`, { method: "PUT" });
  expect(res.status).toBe(200);
}, 120_000);
afterAll(() => gateway.dispose());

describe("the block cache on plain workerd", () => {
  const big = randomBytes(9 * MiB + 7);
  const small = randomBytes(MiB);

  it("serves a repeated GET, whole and ranged, with no node read and the same bytes", async () => {
    await put("big", big);
    await put("small", small);
    expect((await get("big")).cache).toBe("miss");
    await untilHit("big");
    await untilHit("small");
    const range = "bytes=4194000-5000000";
    await untilHit("big", range);
    const before = await nodeBytesRead();
    expect(await get("big")).toEqual({ sha: sha(big), cache: "hit" });
    expect(await get("small")).toEqual({ sha: sha(small), cache: "hit" });
    expect(await get("big", range)).toEqual({ sha: sha(big.subarray(4194000, 5000001)), cache: "hit" });
    expect(await nodeBytesRead()).toBe(before);
  });

  it("keeps its files in the data directory, the owner's alone", () => {
    expect(statSync(cacheDir()).mode & 0o777).toBe(0o700);
    const files = readdirSync(cacheDir());
    expect(files.length).toBeGreaterThanOrEqual(2);
    for (const f of files) expect(statSync(join(cacheDir(), f)).mode & 0o777).toBe(0o600);
  });

  it("still serves from it after a restart", async () => {
    await gateway.stop();
    await gateway.start();
    const before = await nodeBytesRead();
    expect(await get("big")).toEqual({ sha: sha(big), cache: "hit" });
    expect(await nodeBytesRead()).toBe(before);
  }, 120_000);

  it("stays within its size: the least recently used go first", async () => {
    // 24 MiB: big (9 MiB) and small (1 MiB) are there; 16 MiB more push out what was used least lately.
    await get("small"); // small is now used more lately than big
    const more = randomBytes(16 * MiB);
    await put("more", more);
    await untilHit("more");
    const bytes = readdirSync(cacheDir()).reduce((n, f) => n + statSync(join(cacheDir(), f)).size, 0);
    expect(bytes).toBeLessThanOrEqual(24 * MiB);
    expect((await get("small")).cache).toBe("hit");
    expect((await get("big")).cache).toBe("miss");
    const metrics = await (await s3.fetch(`${gateway.base}/_shardgate/metrics`)).text();
    expect(Number(/^shardgate_block_cache_evictions (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    expect(Number(/^shardgate_block_cache_capacity_bytes (\d+)/m.exec(metrics)?.[1])).toBe(24 * MiB);
    // What the console's Nodes page shows: the hit ratio's counts and what the store holds.
    const { cache } = (await (await s3.fetch(`${gateway.base}/_shardgate/admin/nodes`)).json()) as {
      cache: { on: boolean; hits: number; misses: number; store: { bytes: number; capacity: number } };
    };
    expect(cache.on).toBe(true);
    expect(cache.hits).toBeGreaterThan(0);
    expect(cache.misses).toBeGreaterThan(0);
    expect(cache.store.capacity).toBe(24 * MiB);
    expect(cache.store.bytes).toBeGreaterThan(0);
    expect(cache.store.bytes).toBeLessThanOrEqual(24 * MiB);
  });
});

describe("the block cache with --processes 2", () => {
  const two = new Gateway({ runtime: "workerd", processes: 2, config: { cacheMiB: 64 }, vars: { SHARDGATE_CACHE_HEADER: "on" } });
  beforeAll(() => two.start(), 120_000);
  afterAll(() => two.dispose());

  it("is one cache: whichever process answers, a repeated GET is a hit", async () => {
    expect((await s3.fetch(`${two.base}/${bucket}`, { method: "PUT" })).status).toBe(200);
    const body = randomBytes(2 * MiB);
    const put = await s3.fetch(`${two.base}/${bucket}/shared`, { method: "PUT", body, headers: { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } });
    expect(put.status).toBe(200);
    const getOne = async () => {
      const res = await s3.fetch(`${two.base}/${bucket}/shared`);
      return { sha: sha(new Uint8Array(await res.arrayBuffer())), cache: res.headers.get("x-shardgate-cache") };
    };
    await expect.poll(async () => (await getOne()).cache, { timeout: 15_000, interval: 100 }).toBe("hit");
    // New connections spread over both processes: every one answers from the same store.
    const answers = await Promise.all(Array.from({ length: 12 }, getOne));
    for (const a of answers) expect(a).toEqual({ sha: sha(body), cache: "hit" });
  });
});
