// The storage path in workerd with real R2 nodes: where an object's shard files land, reads that
// lose shard files (deleted or rotten on their node) still return exactly the right bytes from
// parity, small ranges read only small pieces of the nodes, and the metrics say so.
import { exports } from "cloudflare:workers";
import { METRICS_TOKEN } from "../shared/credentials";
import { beforeAll, describe, expect, it } from "vitest";
import { expectSameBytes, randomBytes } from "../shared/core-suite";
import { s3, s3ok } from "./signed";
import { node, shardFiles } from "./nodes";

const MIB = 1 << 20;

interface Stored {
  data: Uint8Array;
  /** shard index → [node id, key] */
  shards: Map<number, [string, string]>;
}

/** PUTs `data` and finds the shard files it created. */
async function putObject(bucket: string, key: string, data: Uint8Array): Promise<Stored> {
  const before = await shardFiles();
  await s3ok(`/${bucket}/${key}`, { method: "PUT", body: data });
  // New files, grouped by part (storage id): a heal of an earlier object may have put back a file
  // meanwhile, so take the group that holds a whole part's k + m files.
  const groups = new Map<string, Map<number, [string, string]>>();
  for (const [file, id] of await shardFiles()) {
    if (before.has(file)) continue;
    const at = file.lastIndexOf("/");
    const group = groups.get(file.slice(0, at)) ?? new Map<number, [string, string]>();
    group.set(Number(file.slice(at + 1)), [id, file]);
    groups.set(file.slice(0, at), group);
  }
  const shards = [...groups.values()].sort((a, b) => b.size - a.size)[0] ?? new Map<number, [string, string]>();
  return { data, shards };
}

async function getBytes(path: string, range?: string): Promise<{ status: number; bytes: Uint8Array }> {
  const res = await s3(path, { headers: range ? { range } : {} });
  return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()) };
}

/** The gateway's counters, parsed from GET /_shardgate/metrics: series → value (and, under "",
 *  the size of the scrape's own body, which the next scrape counts as sent). */
async function scrape(): Promise<Map<string, number>> {
  const res = await s3ok("/_shardgate/metrics");
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  const series = new Map<string, number>([["", new TextEncoder().encode(text).length]]);
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}

/** Sum of every series of `name` whose labels include all of `labels`. */
function total(m: Map<string, number>, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const [series, value] of m) {
    if (series !== name && !series.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => series.includes(`${k}="${v}"`))) sum += value;
  }
  return sum;
}

const bucket = "read-path";
beforeAll(async () => {
  await s3ok(`/${bucket}`, { method: "PUT" });
});

describe("placement", () => {
  it("stores k + m shard files of a sharded object on k + m different nodes, and none for an inline one", async () => {
    const stored = await putObject(bucket, "placed.bin", randomBytes(2 * MIB + 5, 1));
    expect([...stored.shards.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(new Set([...stored.shards.values()].map(([id]) => id)).size).toBe(6);
    const small = await putObject(bucket, "inline.txt", randomBytes(4096, 2));
    expect(small.shards.size).toBe(0);
  });
});

describe("reads that lose shard files", () => {
  const size = 3 * MIB + 12_345;
  const ranges = ["bytes=0-99", `bytes=${MIB - 10}-${MIB + 10}`, `bytes=${2 * MIB + 777}-`, "bytes=-5000", `bytes=100000-${size - 1}`];

  type Damage = (shards: Map<number, [string, string]>) => Promise<void>;

  /**
   * A full read and every range of `ranges`, each of a fresh object damaged by `damage` (a read
   * that goes around a shard file heals it afterwards, so the next read gets a new one).
   */
  async function expectReadsCorrect(name: string, seed: number, damage: Damage): Promise<void> {
    for (const range of [null, ...ranges]) {
      const { data, shards } = await putObject(bucket, `${name}-${range ?? "full"}`, randomBytes(size, seed));
      await damage(shards);
      const path = `/${bucket}/${name}-${range ?? "full"}`;
      if (range === null) {
        const full = await getBytes(path);
        expect(full.status).toBe(200);
        expectSameBytes(full.bytes, data);
        continue;
      }
      const [, a, b] = /^bytes=(\d*)-(\d*)$/.exec(range) as RegExpExecArray;
      const start = a === "" ? data.length - Number(b) : Number(a);
      const end = a === "" || b === "" ? data.length : Number(b) + 1;
      const got = await getBytes(path, range);
      expect(got.status, range).toBe(206);
      expectSameBytes(got.bytes, data.subarray(start, end));
    }
  }

  const remove =
    (...lost: number[]): Damage =>
    async (shards) => {
      for (const shard of lost) {
        const [id, key] = shards.get(shard) as [string, string];
        await node(id).delete(key);
      }
    };

  it("serves a missing data shard file from parity and counts a degraded read", async () => {
    const before = await scrape();
    await expectReadsCorrect("missing.bin", 3, remove(1));
    const after = await scrape();
    // The full read and every range touching shard 1's pieces needed parity.
    expect(total(after, "shardgate_degraded_reads_total") - total(before, "shardgate_degraded_reads_total")).toBeGreaterThanOrEqual(2);
    expect(total(after, "shardgate_node_requests_total", { method: "GET", status: "404" })).toBeGreaterThan(
      total(before, "shardgate_node_requests_total", { method: "GET", status: "404" }),
    );
  });

  it("reads around a rotten shard file (same length, flipped bytes) and counts the checksum failure", async () => {
    const before = await scrape();
    await expectReadsCorrect("rotten.bin", 4, async (shards) => {
      const [id, key] = shards.get(0) as [string, string];
      const file = new Uint8Array(await ((await node(id).get(key)) as R2ObjectBody).arrayBuffer());
      for (let i = 0; i < file.length; i += 4099) file[i] ^= 0x5a;
      await node(id).put(key, file);
    });
    const after = await scrape();
    expect(total(after, "shardgate_checksum_failures_total")).toBeGreaterThan(total(before, "shardgate_checksum_failures_total"));
  });

  it("survives losing m = 2 shard files (one data, one parity; then two data), and answers 503 when k are left no more", async () => {
    await expectReadsCorrect("two-lost.bin", 5, remove(2, 5));
    await expectReadsCorrect("two-data-lost.bin", 6, remove(0, 3));

    const { shards } = await putObject(bucket, "three-lost.bin", randomBytes(size, 7));
    await remove(0, 2, 5)(shards);
    const res = await s3(`/${bucket}/three-lost.bin`);
    expect(res.status).toBe(503);
    expect(await res.text()).toContain("<Code>ServiceUnavailable</Code>");
  });
});

describe("read amplification", () => {
  it("reads random 4 KiB ranges of a 16 MiB object with at most 64 KiB per node request on average", async () => {
    const size = 16 * MIB;
    const { data } = await putObject(bucket, "sixteen.bin", randomBytes(size, 7));
    const before = await scrape();
    let x = 12345;
    let clientBytes = 0;
    for (let i = 0; i < 64; i++) {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      const start = x % (size - 4096);
      const got = await getBytes(`/${bucket}/sixteen.bin`, `bytes=${start}-${start + 4095}`);
      expect(got.status).toBe(206);
      expectSameBytes(got.bytes, data.subarray(start, start + 4096));
      clientBytes += got.bytes.length;
    }
    const after = await scrape();
    const delta = (name: string, labels?: Record<string, string>) => total(after, name, labels) - total(before, name, labels);
    const nodeBytes = delta("shardgate_node_bytes_read_total");
    const nodeGets = delta("shardgate_node_requests_total", { method: "GET" });
    expect(delta("shardgate_requests_total", { op: "GetObject", status: "206" })).toBe(64);
    expect(delta("shardgate_client_bytes_sent_total")).toBe(clientBytes + (before.get("") as number));
    // A 4 KiB range within one data shard's 16 KiB chunk: one node request of one or two chunks.
    expect(nodeGets).toBeGreaterThanOrEqual(64);
    expect(nodeGets).toBeLessThanOrEqual(64 * 2);
    expect(nodeBytes / nodeGets).toBeLessThanOrEqual(64 * 1024);
    expect(nodeBytes / clientBytes).toBeLessThanOrEqual(8);
  });
});

describe("GET /_shardgate/metrics", () => {
  it("lists every counter with HELP and TYPE; takes SigV4 or the bearer token, nothing else", async () => {
    await s3ok("/");
    const text = await (await s3ok("/_shardgate/metrics")).text();
    for (const name of [
      "shardgate_requests_total",
      "shardgate_client_bytes_sent_total",
      "shardgate_client_bytes_received_total",
      "shardgate_node_bytes_read_total",
      "shardgate_node_bytes_written_total",
      "shardgate_node_requests_total",
      "shardgate_degraded_reads_total",
      "shardgate_checksum_failures_total",
    ]) {
      expect(text).toContain(`# TYPE ${name} counter\n`);
    }
    expect(text).toMatch(/^shardgate_requests_total\{op="ListBuckets",status="200"\} [1-9]\d*$/m);
    const scrape = (headers: Record<string, string>) => exports.default.fetch("http://gateway.test/_shardgate/metrics", { headers });
    expect((await scrape({})).status).toBe(403);
    expect((await scrape({ authorization: "Bearer not-the-token" })).status).toBe(403);
    const bearer = await scrape({ authorization: `Bearer ${METRICS_TOKEN}` });
    expect(bearer.status).toBe(200);
    expect(await bearer.text()).toContain("# TYPE shardgate_requests_total counter");
  });
});
