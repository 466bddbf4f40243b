// The production runtime (plain workerd, what `npm start` serves) keeps its data across a clean
// restart and across `kill -9` of the whole server: every acknowledged write reads back byte for
// byte, writes cut off by the crash are either whole or absent (never half an object), and the
// server takes new writes afterwards, and the orphan sweep removes the shard files nothing
// references. Also: the background-job alarm is armed in the data directory's Durable Object
// storage, so it survives a restart too.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, Gateway } from "./gateway";

const gateway = new Gateway({ runtime: "workerd" });
const s3 = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
const bucket = "crash-test";
const KiB = 1024;
const MiB = 1024 * KiB;

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const url = (key = "") => `${gateway.base}/${bucket}${key ? `/${key}` : ""}`;

async function put(key: string, body: Uint8Array): Promise<Response> {
  const res = await s3.fetch(url(key), { method: "PUT", body, headers: { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } });
  await res.arrayBuffer();
  return res;
}

/** The object's sha256, or null when it does not exist. */
async function readBack(key: string): Promise<string | null> {
  const res = await s3.fetch(url(key));
  const body = new Uint8Array(await res.arrayBuffer());
  if (res.status === 404) return null;
  expect(res.status, `GET ${key}`).toBe(200);
  return sha(body);
}

/** Shard files on the disk nodes (`DAY/UU/UUID.SHARD`: worker/src/storage/disk-node.ts). */
function shardFiles(): number {
  const nodes = join(gateway.persist, "nodes");
  return readdirSync(nodes, { recursive: true, encoding: "utf8" }).filter((p) => /(^|\/)[0-9a-f-]{36}\.\d+$/.test(p)).length;
}

beforeAll(() => gateway.start(), 120_000);
afterAll(() => gateway.dispose());

describe("plain workerd keeps data across restarts and kill -9", () => {
  const acknowledged = new Map<string, string>();

  it("reads every acknowledged object back after a clean restart", async () => {
    expect((await s3.fetch(url(), { method: "PUT" })).status).toBe(200);
    // Inline (in the manifest), one block, several blocks with a short last one.
    for (const [key, size] of [
      ["inline", 1 * KiB],
      ["one-block", 300 * KiB],
      ["blocks", 3 * MiB + 17],
    ] as const) {
      const body = randomBytes(size);
      expect((await put(key, body)).status).toBe(200);
      acknowledged.set(key, sha(body));
    }
    await gateway.stop();
    await gateway.start();
    for (const [key, digest] of acknowledged) expect(await readBack(key), key).toBe(digest);
  }, 120_000);

  it("loses no acknowledged write to kill -9, and shows no half object", async () => {
    // Acknowledged just before the crash: nothing may be lost.
    for (let i = 0; i < 4; i++) {
      const body = randomBytes(512 * KiB + i);
      expect((await put(`acked-${i}`, body)).status).toBe(200);
      acknowledged.set(`acked-${i}`, sha(body));
    }
    // In flight when the server dies: each either whole or absent afterwards.
    const inFlight = Array.from({ length: 4 }, (_, i) => ({ key: `in-flight-${i}`, body: randomBytes(8 * MiB) }));
    const sending = inFlight.map((o) => put(o.key, o.body).catch(() => null));
    await new Promise((r) => setTimeout(r, 150));
    await gateway.crash();
    const answers = await Promise.all(sending);
    await gateway.start();

    for (const [key, digest] of acknowledged) expect(await readBack(key), key).toBe(digest);
    for (const [i, o] of inFlight.entries()) {
      const found = await readBack(o.key);
      if (answers[i]?.status === 200) expect(found, o.key).toBe(sha(o.body));
      else expect([null, sha(o.body)], o.key).toContain(found);
    }
    // The listing names every acknowledged object.
    const listing = await (await s3.fetch(`${url()}?list-type=2`)).text();
    for (const key of acknowledged.keys()) expect(listing).toContain(`<Key>${key}</Key>`);
  }, 180_000);

  it("sweeps the shard files nothing references after the crash, and nothing else", async () => {
    // What a crash between writing shard files and committing their manifest leaves: whole shard
    // files of a part no manifest names (planted, so the test does not depend on the crash's timing).
    const day = new Date().toISOString().slice(0, 10).replace(/-/g, "");
    const orphanId = randomUUID();
    for (let i = 0; i < 6; i++) {
      const dir = join(gateway.persist, "nodes", `NODE_${i}`, day, orphanId.slice(0, 2));
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${orphanId}.${i}`), randomBytes(1000));
    }
    const listing = await (await s3.fetch(`${url()}?list-type=2`)).text();
    const objects = [...listing.matchAll(/<Key>([^<]*)<\/Key><LastModified>[^<]*<\/LastModified><ETag>[^<]*<\/ETag><Size>(\d+)<\/Size>/g)];
    const sharded = objects.filter(([, , size]) => Number(size) > 4 * KiB).length; // SHARDGATE_INLINE_BYTES
    const before = shardFiles();
    expect(before).toBeGreaterThanOrEqual(6 * sharded + 6);

    const res = await s3.fetch(`${gateway.base}/_shardgate/admin/sweep?grace-seconds=0`, { method: "POST" });
    expect(res.status).toBe(200);
    const report = (await res.json()) as { orphans: number; removed: number; failed: number; nodesSkipped: string[] };
    expect(report).toMatchObject({ failed: 0, nodesSkipped: [] });
    expect(report.removed).toBe(before - 6 * sharded);
    expect(shardFiles()).toBe(6 * sharded);
    for (const [key, digest] of acknowledged) expect(await readBack(key), key).toBe(digest);
  }, 120_000);

  it("takes new writes after the crash", async () => {
    const body = randomBytes(2 * MiB);
    expect((await put("after-crash", body)).status).toBe(200);
    expect(await readBack("after-crash")).toBe(sha(body));
    expect(gateway.log).not.toContain("had hung");
  }, 60_000);
});
