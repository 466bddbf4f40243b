// Healing in workerd with real R2 nodes: a read that goes around a missing or rotten shard file
// puts it back afterwards, bit-identical to the one first written; POST /_shardgate/admin/heal
// finds and rebuilds missing shard files (parity ones too, which reads never touch), in batches.
import { beforeAll, describe, expect, it } from "vitest";
import { expectSameBytes, randomBytes } from "../shared/core-suite";
import { s3, s3ok } from "./signed";
import { node, shardFiles } from "./nodes";

const MIB = 1 << 20;
const bucket = "heal";

beforeAll(async () => {
  await s3ok(`/${bucket}`, { method: "PUT" });
});

/** PUTs `data` and returns its shard files: index → [node id, key, bytes as stored]. */
async function put(key: string, data: Uint8Array, into = bucket): Promise<Map<number, [string, string, Uint8Array]>> {
  const before = await shardFiles();
  await s3ok(`/${into}/${key}`, { method: "PUT", body: data });
  const shards = new Map<number, [string, string, Uint8Array]>();
  for (const [file, id] of await shardFiles()) {
    if (before.has(file)) continue;
    const bytes = new Uint8Array(await ((await node(id).get(file)) as R2ObjectBody).arrayBuffer());
    shards.set(Number(file.slice(file.lastIndexOf("/") + 1)), [id, file, bytes]);
  }
  return shards;
}

async function stored(id: string, file: string): Promise<Uint8Array | null> {
  const o = await node(id).get(file);
  return o ? new Uint8Array(await o.arrayBuffer()) : null;
}

async function expectRestored(shard: [string, string, Uint8Array]): Promise<void> {
  const [id, file, original] = shard;
  await expect.poll(async () => (await stored(id, file))?.length ?? 0, { timeout: 10_000 }).toBe(original.length);
  expectSameBytes((await stored(id, file)) as Uint8Array, original);
}

describe("heal on read", () => {
  it("puts back a missing data shard file after a read went around it", async () => {
    const data = randomBytes(3 * MIB + 321, 1);
    const shards = await put("missing.bin", data);
    const lost = shards.get(1) as [string, string, Uint8Array];
    await node(lost[0]).delete(lost[1]);
    expectSameBytes(new Uint8Array(await (await s3ok(`/${bucket}/missing.bin`)).arrayBuffer()), data);
    await expectRestored(lost);
  });

  it("puts back a missing shard file of a noncurrent version read by its id", async () => {
    const versioned = `${bucket}-versions`;
    await s3ok(`/${versioned}`, { method: "PUT" });
    await s3ok(`/${versioned}?versioning`, { method: "PUT", body: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>" });
    const data = randomBytes(2 * MIB + 9, 5);
    const shards = await put("old.bin", data, versioned);
    const listed = await (await s3ok(`/${versioned}?versions`)).text();
    const oldId = /<VersionId>([0-9a-f]+)<\/VersionId>/.exec(listed)?.[1] as string;
    await s3ok(`/${versioned}/old.bin`, { method: "PUT", body: randomBytes(MIB, 6) });
    const lost = shards.get(0) as [string, string, Uint8Array];
    await node(lost[0]).delete(lost[1]);
    expectSameBytes(new Uint8Array(await (await s3ok(`/${versioned}/old.bin?versionId=${oldId}`)).arrayBuffer()), data);
    await expectRestored(lost);
  });

  it("rewrites a rotten shard file (a flipped byte) with its original bytes", async () => {
    const data = randomBytes(2 * MIB + 5, 2);
    const shards = await put("rotten.bin", data);
    const [id, file, original] = shards.get(0) as [string, string, Uint8Array];
    const rotten = original.slice();
    rotten[1000] ^= 0x40;
    await node(id).put(file, rotten);
    const res = await s3(`/${bucket}/rotten.bin`, { headers: { range: "bytes=0-99999" } });
    expect(res.status).toBe(206);
    expectSameBytes(new Uint8Array(await res.arrayBuffer()), data.subarray(0, 100_000));
    await expect.poll(async () => ((await stored(id, file)) as Uint8Array)[1000], { timeout: 10_000 }).toBe(original[1000]);
    expectSameBytes((await stored(id, file)) as Uint8Array, original);
  });
});

describe("POST /_shardgate/admin/heal", () => {
  it("rebuilds every missing shard file of a bucket, parity included, in resumable batches", async () => {
    const a = await put("walk/a.bin", randomBytes(MIB + 1, 3));
    const b = await put("walk/b.bin", randomBytes(5 * MIB, 4));
    await s3ok(`/${bucket}/walk/inline.txt`, { method: "PUT", body: "small" });
    const gone = [a.get(4), a.get(5), b.get(0), b.get(5)] as [string, string, Uint8Array][];
    for (const [id, file] of gone) await node(id).delete(file);

    const first = await s3ok(`/_shardgate/admin/heal?bucket=${bucket}&prefix=walk/&max-objects=1`, { method: "POST" });
    const r1 = (await first.json()) as { objectsChecked: number; shardsRebuilt: number; next: string | null; objectsFailed: unknown[] };
    expect(r1).toMatchObject({ objectsChecked: 1, shardsRebuilt: 2, next: "walk/a.bin", objectsFailed: [] });
    const rest = await s3ok(`/_shardgate/admin/heal?bucket=${bucket}&prefix=walk/&start-after=walk/a.bin`, { method: "POST" });
    expect(await rest.json()).toMatchObject({ objectsChecked: 2, shardsRebuilt: 2, shardsFailed: 0, next: null, objectsFailed: [] });
    for (const shard of gone) await expectRestored(shard);

    const again = await s3ok(`/_shardgate/admin/heal?bucket=${bucket}&prefix=walk/`, { method: "POST" });
    expect(await again.json()).toMatchObject({ objectsChecked: 3, shardsRebuilt: 0 });
    expect((await s3(`/_shardgate/admin/heal?bucket=no-such-bucket-x`, { method: "POST" })).status).toBe(404);
  });
});
