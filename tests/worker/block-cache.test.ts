// The block cache (storage/block-cache.ts) in miniflare's Cache API (SHARDGATE_BLOCK_CACHE "edge",
// wrangler.toml): a repeated GET, whole or ranged, reads no node and answers the same bytes; what
// is cached is only ever what a verified read produced, the ciphertext of an encrypted object,
// and never bytes another manifest than the current one names (overwrite, delete, version delete,
// a rotten or a healed shard file).
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { expectSameBytes, randomBytes } from "../shared/core-suite";
import { metricTotal, scrapeMetrics } from "./hostile";
import { node, shardFiles } from "./nodes";
import { s3, s3ok } from "./signed";

const MiB = 1 << 20;
const bucket = "block-cache";
const SEGMENT = 16 * MiB; // storage/block-cache.ts SEGMENT_BYTES
const entry = (storageId: string, index: number) => `https://block-cache.shardgate.invalid/${storageId}/s${SEGMENT}/${index}`;

beforeAll(async () => {
  await s3ok(`/${bucket}`, { method: "PUT" });
});

const nodeBytes = async () => metricTotal(await scrapeMetrics(), "shardgate_node_bytes_read_total");
const fills = async () => metricTotal(await scrapeMetrics(), "shardgate_block_cache_fills_total");

/** PUTs `data` and returns the storage id of its (one) part and its shard files: index → [node id, key]. */
async function put(key: string, data: Uint8Array, headers: Record<string, string> = {}): Promise<{ storageId: string; shards: Map<number, [string, string]> }> {
  const before = await shardFiles();
  await s3ok(`/${bucket}/${key}`, { method: "PUT", body: data, headers });
  const shards = new Map<number, [string, string]>();
  for (const [file, id] of await shardFiles()) if (!before.has(file)) shards.set(Number(file.slice(file.lastIndexOf("/") + 1)), [id, file]);
  const [, file] = shards.get(0) as [string, string];
  return { storageId: file.slice(0, file.lastIndexOf("/")), shards };
}

async function get(path: string, range?: string): Promise<{ bytes: Uint8Array; cache: string | null }> {
  const res = await s3(path, range ? { headers: { range } } : {});
  expect(res.status, path).toBe(range ? 206 : 200);
  return { bytes: new Uint8Array(await res.arrayBuffer()), cache: res.headers.get("x-shardgate-cache") };
}

/** Waits until the cache holds every segment of a part of `size` stored bytes. */
async function filled(storageId: string, size: number): Promise<void> {
  for (let i = 0; i * SEGMENT < size; i++) {
    await expect.poll(async () => (await caches.default.match(entry(storageId, i)))?.status ?? 0, { timeout: 10_000 }).toBe(200);
  }
}

describe("the block cache", () => {
  for (const [what, size, range] of [
    ["a whole 1 MiB object", MiB, undefined],
    ["a whole object of two segments", SEGMENT + 17, undefined],
    ["a range across two segments", SEGMENT + 17, `bytes=${SEGMENT - 2_500_000}-${SEGMENT + 10}`],
    ["a 128 KiB range of a 1 MiB object", MiB, "bytes=500000-631071"],
  ] as const) {
    it(`serves ${what} again from the cache: no node read, the same bytes`, async () => {
      const data = randomBytes(size, size % 251);
      const key = `repeat-${size}-${range ?? "whole"}`;
      const { storageId } = await put(key, data);
      const [from, to] = range ? range.slice(6).split("-").map(Number) : [0, size - 1];
      const want = data.subarray(from, (to as number) + 1);
      const missed = await nodeBytes();
      const first = await get(`/${bucket}/${key}`, range);
      expect(first.cache).toBe("miss");
      expectSameBytes(first.bytes, want);
      if (!range) {
        await filled(storageId, size);
        // A whole read fills the cache with the bytes it read: the nodes are read once, not twice.
        expect((await nodeBytes()) - missed).toBeLessThan(size * 1.05);
      } else await expect.poll(async () => (await get(`/${bucket}/${key}`, range)).cache, { timeout: 10_000 }).toBe("hit");
      const before = await nodeBytes();
      const again = await get(`/${bucket}/${key}`, range);
      expect(again.cache).toBe("hit");
      expectSameBytes(again.bytes, want);
      expect(await nodeBytes()).toBe(before);
    });
  }

  it("fills nothing for a small range: a 4 KiB range keeps reading one chunk, never a whole segment", async () => {
    const data = randomBytes(9 * MiB, 11);
    await put("small-ranges", data);
    const before = await nodeBytes();
    for (let i = 0; i < 8; i++) {
      const at = 4 * MiB + i * 100_000;
      const got = await get(`/${bucket}/small-ranges`, `bytes=${at}-${at + 4095}`);
      expect(got.cache).toBe("miss");
      expectSameBytes(got.bytes, data.subarray(at, at + 4096));
    }
    // Each read one 16 KiB chunk of one data shard (and its checksum), nothing more.
    await new Promise((r) => setTimeout(r, 500));
    expect((await nodeBytes()) - before).toBeLessThanOrEqual(8 * 2 * 16 * 1024);
  });

  it("fills a range's partly read segments only when the range is read again, and never what a client did not take", async () => {
    const data = randomBytes(2 * SEGMENT, 13);
    await put("eighths", data);
    // One eighth of each of two segments, each read once: nothing is filled, nothing read twice.
    const before = await nodeBytes();
    const fillsBefore = await fills();
    for (let i = 0; i < 2; i++) {
      const at = i * SEGMENT + 1000;
      expectSameBytes((await get(`/${bucket}/eighths`, `bytes=${at}-${at + SEGMENT / 8 - 1}`)).bytes, data.subarray(at, at + SEGMENT / 8));
    }
    await new Promise((r) => setTimeout(r, 500));
    expect((await nodeBytes()) - before).toBeLessThan(2 * (SEGMENT / 8) * 1.1);
    expect(await fills()).toBe(fillsBefore);
    // The same range again: now its segment is filled, and a third read is a hit.
    const range = `bytes=1000-${1000 + SEGMENT / 8 - 1}`;
    expect((await get(`/${bucket}/eighths`, range)).cache).toBe("miss");
    await expect.poll(async () => (await get(`/${bucket}/eighths`, range)).cache, { timeout: 10_000 }).toBe("hit");
    // A GET whose body the client drops at once fills nothing: no segment is read for the cache
    // that the client did not take (node bytes count what the shard requests asked for at once, so
    // they cannot show it; the fills can).
    const fillsNow = await fills();
    const res = await s3(`/${bucket}/eighths`);
    await res.body?.cancel();
    await new Promise((r) => setTimeout(r, 1000));
    expect(await fills()).toBe(fillsNow);
  });

  it("refills only the segments that went missing", async () => {
    const data = randomBytes(2 * SEGMENT, 14);
    const { storageId } = await put("refill", data);
    await get(`/${bucket}/refill`);
    await filled(storageId, data.length);
    await caches.default.delete(entry(storageId, 1));
    const fillsBefore = await fills();
    expect((await get(`/${bucket}/refill`)).cache).toBe("miss");
    await filled(storageId, data.length);
    await new Promise((r) => setTimeout(r, 300));
    expect((await fills()) - fillsBefore).toBe(1);
    expect((await get(`/${bucket}/refill`)).cache).toBe("hit");
  });

  it("answers an overwritten object's new bytes, and drops the old entries", async () => {
    const { storageId } = await put("overwritten", randomBytes(2 * MiB, 1));
    await get(`/${bucket}/overwritten`);
    await filled(storageId, 2 * MiB);
    const next = randomBytes(2 * MiB, 2);
    await s3ok(`/${bucket}/overwritten`, { method: "PUT", body: next });
    expectSameBytes((await get(`/${bucket}/overwritten`)).bytes, next);
    await expect.poll(async () => (await caches.default.match(entry(storageId, 0))) === undefined, { timeout: 10_000 }).toBe(true);
  });

  it("forgets a deleted object: NoSuchKey, and its entries go", async () => {
    const { storageId } = await put("deleted", randomBytes(MiB, 3));
    await get(`/${bucket}/deleted`);
    await filled(storageId, MiB);
    await s3ok(`/${bucket}/deleted`, { method: "DELETE" }, 204);
    expect((await s3(`/${bucket}/deleted`)).status).toBe(404);
    await expect.poll(async () => (await caches.default.match(entry(storageId, 0))) === undefined, { timeout: 10_000 }).toBe(true);
  });

  it("forgets an object a lifecycle rule expired", async () => {
    const expiring = `${bucket}-lifecycle`;
    await s3ok(`/${expiring}`, { method: "PUT" });
    const rule = "<Rule><ID>all</ID><Status>Enabled</Status><Filter><Prefix></Prefix></Filter><Expiration><Days>1</Days></Expiration></Rule>";
    await s3ok(`/${expiring}?lifecycle`, { method: "PUT", body: `<LifecycleConfiguration>${rule}</LifecycleConfiguration>` });
    const before = await shardFiles();
    await s3ok(`/${expiring}/old.bin`, { method: "PUT", body: randomBytes(MiB, 12) });
    const file = [...(await shardFiles()).keys()].find((f) => !before.has(f)) as string;
    const storageId = file.slice(0, file.lastIndexOf("/"));
    await get(`/${expiring}/old.bin`);
    await filled(storageId, MiB);
    await s3ok(`/_shardgate/admin/lifecycle?bucket=${expiring}&now=${new Date(Date.now() + 3 * 86_400_000).toISOString()}`, { method: "POST" });
    expect((await s3(`/${expiring}/old.bin`)).status).toBe(404);
    await expect.poll(async () => (await caches.default.match(entry(storageId, 0))) === undefined, { timeout: 10_000 }).toBe(true);
  });

  it("forgets a deleted version: the version is gone, the current one still served", async () => {
    const versioned = `${bucket}-versions`;
    await s3ok(`/${versioned}`, { method: "PUT" });
    await s3ok(`/${versioned}?versioning`, { method: "PUT", body: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>" });
    const old = randomBytes(MiB, 4);
    const oldId = (await s3ok(`/${versioned}/v.bin`, { method: "PUT", body: old })).headers.get("x-amz-version-id") as string;
    const current = randomBytes(MiB, 5);
    await s3ok(`/${versioned}/v.bin`, { method: "PUT", body: current });
    expectSameBytes((await get(`/${versioned}/v.bin?versionId=${oldId}`)).bytes, old);
    await expect.poll(async () => (await get(`/${versioned}/v.bin?versionId=${oldId}`)).cache, { timeout: 10_000 }).toBe("hit");
    await s3ok(`/${versioned}/v.bin?versionId=${oldId}`, { method: "DELETE" }, 204);
    expect((await s3(`/${versioned}/v.bin?versionId=${oldId}`)).status).toBe(404);
    expectSameBytes((await get(`/${versioned}/v.bin`)).bytes, current);
  });

  it("is never poisoned by a rotten shard file: the bytes cached are the verified ones", async () => {
    const data = randomBytes(2 * MiB + 5, 6);
    const { storageId, shards } = await put("rotten", data);
    const [id, file] = shards.get(0) as [string, string];
    const stored = new Uint8Array(await ((await node(id).get(file)) as R2ObjectBody).arrayBuffer());
    stored[100] ^= 0x55;
    await node(id).put(file, stored);
    expectSameBytes((await get(`/${bucket}/rotten`)).bytes, data);
    await filled(storageId, data.length);
    const cached = await caches.default.match(entry(storageId, 0));
    expectSameBytes(new Uint8Array(await (cached as Response).arrayBuffer()), data);
    expectSameBytes((await get(`/${bucket}/rotten`)).bytes, data);
  });

  it("serves the same bytes after a read healed a lost shard file", async () => {
    const data = randomBytes(3 * MiB, 7);
    const { storageId, shards } = await put("healed", data);
    const [id, file] = shards.get(1) as [string, string];
    await node(id).delete(file);
    expectSameBytes((await get(`/${bucket}/healed`)).bytes, data);
    await expect.poll(async () => (await node(id).head(file)) !== null, { timeout: 10_000 }).toBe(true);
    await filled(storageId, data.length);
    const again = await get(`/${bucket}/healed`);
    expect(again.cache).toBe("hit");
    expectSameBytes(again.bytes, data);
  });

  it("holds only ciphertext of an encrypted object, and serves its plaintext from it", async () => {
    const marker = new TextEncoder().encode("PLAINTEXT-MARKER-BLOCK-CACHE");
    const data = randomBytes(MiB + 3, 8);
    for (let at = 0; at + marker.length <= data.length; at += 4096) data.set(marker, at);
    const { storageId } = await put("secret", data, { "x-amz-server-side-encryption": "AES256" });
    expectSameBytes((await get(`/${bucket}/secret`)).bytes, data);
    await expect.poll(async () => (await caches.default.match(entry(storageId, 0)))?.status ?? 0, { timeout: 10_000 }).toBe(200);
    const cached = new Uint8Array(await ((await caches.default.match(entry(storageId, 0))) as Response).arrayBuffer());
    expect(cached.length).toBeGreaterThan(data.length); // the segments' tags
    let found = false;
    for (let i = cached.indexOf(marker[0] as number); i >= 0 && !found; i = cached.indexOf(marker[0] as number, i + 1)) {
      found = marker.every((b, j) => cached[i + j] === b);
    }
    expect(found).toBe(false);
    const before = await nodeBytes();
    const again = await get(`/${bucket}/secret`, "bytes=70000-80000");
    expect(again.cache).toBe("hit");
    expectSameBytes(again.bytes, data.subarray(70000, 80001));
    expect(await nodeBytes()).toBe(before);
  });

  it("still asks an SSE-C object's key: its cached ciphertext is no answer without it, or to another key", async () => {
    const key = new Uint8Array(32).fill(7);
    const other = new Uint8Array(32).fill(8);
    const b64 = (b: Uint8Array) => btoa(String.fromCharCode(...b));
    const md5 = async (b: Uint8Array) => b64(new Uint8Array(await crypto.subtle.digest("MD5", b)));
    const sseC = async (k: Uint8Array) => ({
      "x-amz-server-side-encryption-customer-algorithm": "AES256",
      "x-amz-server-side-encryption-customer-key": b64(k),
      "x-amz-server-side-encryption-customer-key-MD5": await md5(k),
    });
    const data = randomBytes(MiB, 15);
    const { storageId } = await put("customer", data, await sseC(key));
    const first = await s3(`/${bucket}/customer`, { headers: await sseC(key) });
    expectSameBytes(new Uint8Array(await first.arrayBuffer()), data);
    await expect.poll(async () => (await caches.default.match(entry(storageId, 0)))?.status ?? 0, { timeout: 10_000 }).toBe(200);
    const without = await s3(`/${bucket}/customer`);
    expect(without.status).toBe(400);
    await without.body?.cancel();
    const wrong = await s3(`/${bucket}/customer`, { headers: await sseC(other) });
    expect(wrong.status).toBe(403);
    await wrong.body?.cancel();
    const again = await s3(`/${bucket}/customer`, { headers: await sseC(key) });
    expect(again.headers.get("x-shardgate-cache")).toBe("hit");
    expectSameBytes(new Uint8Array(await again.arrayBuffer()), data);
  });

  it("still checks authorization first: a cached object is refused to whom the policy no longer lets in", async () => {
    const open = `${bucket}-public`;
    await s3ok(`/${open}`, { method: "PUT" });
    const policy = { Version: "2012-10-17", Statement: [{ Effect: "Allow", Principal: "*", Action: "s3:GetObject", Resource: `arn:aws:s3:::${open}/*` }] };
    await s3ok(`/${open}?policy`, { method: "PUT", body: JSON.stringify(policy) }, 204);
    const data = randomBytes(MiB, 9);
    await s3ok(`/${open}/page.bin`, { method: "PUT", body: data });
    const anonymous = () => exports.default.fetch(`http://gateway.test/${open}/page.bin`);
    const first = await anonymous();
    expectSameBytes(new Uint8Array(await first.arrayBuffer()), data);
    await expect
      .poll(async () => (await anonymous().then(async (r) => (await r.arrayBuffer(), r))).headers.get("x-shardgate-cache"), { timeout: 10_000 })
      .toBe("hit");
    await s3ok(`/${open}?policy`, { method: "DELETE" }, 204);
    const refused = await anonymous();
    expect(refused.status).toBe(403);
    expect(refused.headers.get("x-shardgate-cache")).toBeNull();
    await refused.body?.cancel();
  });
});
