// The block cache (storage/block-cache.ts) in miniflare's Cache API (SHARDGATE_BLOCK_CACHE "edge",
// wrangler.toml): a repeated GET, whole or ranged, reads no node and answers the same bytes; what
// is cached is only ever what a verified read produced, the ciphertext of an encrypted object,
// and never bytes another manifest than the current one names (overwrite, delete, version delete,
// a rotten or a healed shard file).
import { beforeAll, describe, expect, it } from "vitest";
import { expectSameBytes, randomBytes } from "../shared/core-suite";
import { metricTotal, scrapeMetrics } from "./hostile";
import { node, shardFiles } from "./nodes";
import { s3, s3ok } from "./signed";

const MiB = 1 << 20;
const bucket = "block-cache";
const SEGMENT = 4 * MiB; // storage/block-cache.ts SEGMENT_BYTES
const entry = (storageId: string, index: number) => `https://block-cache.shardgate.invalid/${storageId}/${index}`;

beforeAll(async () => {
  await s3ok(`/${bucket}`, { method: "PUT" });
});

const nodeBytes = async () => metricTotal(await scrapeMetrics(), "shardgate_node_bytes_read_total");

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
    ["a whole object of three segments", 9 * MiB + 17, undefined],
    ["a range across two segments", 9 * MiB + 17, "bytes=3000000-6000000"],
    ["a 128 KiB range of a 1 MiB object", MiB, "bytes=500000-631071"],
  ] as const) {
    it(`serves ${what} again from the cache: no node read, the same bytes`, async () => {
      const data = randomBytes(size, size % 251);
      const key = `repeat-${size}-${range ?? "whole"}`;
      const { storageId } = await put(key, data);
      const [from, to] = range ? range.slice(6).split("-").map(Number) : [0, size - 1];
      const want = data.subarray(from, (to as number) + 1);
      const first = await get(`/${bucket}/${key}`, range);
      expect(first.cache).toBe("miss");
      expectSameBytes(first.bytes, want);
      if (!range) await filled(storageId, size);
      else await expect.poll(async () => (await get(`/${bucket}/${key}`, range)).cache, { timeout: 10_000 }).toBe("hit");
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

  it("still checks authorization first: an unsigned GET of a cached object is refused", async () => {
    const { storageId } = await put("private", randomBytes(MiB, 9));
    await get(`/${bucket}/private`);
    await filled(storageId, MiB);
    const res = await (await import("cloudflare:workers")).exports.default.fetch(`http://gateway.test/${bucket}/private`);
    expect(res.status).toBe(403);
    await res.body?.cancel();
  });
});
