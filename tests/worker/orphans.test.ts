// The orphan sweep (worker/src/services/orphans.ts) over the R2 nodes: shard files no manifest,
// upload or garbage entry names, older than the grace period, are deleted; everything referenced,
// anything younger and anything that is not a shard file stays.
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { loadConfig, type Env } from "../../worker/src/config";
import { core } from "../../worker/src/core";
import { storageIdOf, sweepOrphans } from "../../worker/src/services/orphans";
import { expectSameBytes, randomBytes } from "../shared/core-suite";
import { NODES, node, shardFiles } from "./nodes";
import { s3ok } from "./signed";

const gatewayEnv = env as unknown as Env;
const bucket = "orphans";
const MIB = 1 << 20;
const HOUR = 3600_000;

/** A sweep as the scheduler runs it; `now` a minute ahead so files just written count as older than a grace of 0. */
const sweep = (graceMs: number) => sweepOrphans(gatewayEnv, loadConfig(gatewayEnv), core, { graceMs, now: Date.now() + 60_000 });

/** Whole shard files of a part that no manifest names: what a crash between write and commit leaves. */
async function plantOrphan(): Promise<string> {
  const id = `20260101/${crypto.randomUUID()}`;
  for (const [i, n] of NODES.entries()) await node(n).put(`${id}/${i}`, randomBytes(100, i));
  return id;
}

const filesOf = async (storageId: string) => [...(await shardFiles()).keys()].filter((k) => k.startsWith(`${storageId}/`));

beforeAll(() => s3ok(`/${bucket}`, { method: "PUT" }));

describe("the orphan sweep", () => {
  it("deletes shard files nothing references, and keeps objects, uploads in progress and other files", async () => {
    const body = randomBytes(MIB + 5, 1);
    await s3ok(`/${bucket}/kept.bin`, { method: "PUT", body });
    const xml = await (await s3ok(`/${bucket}/upload.bin?uploads`, { method: "POST" })).text();
    const uploadId = /<UploadId>([^<]*)</.exec(xml)?.[1] as string;
    await s3ok(`/${bucket}/upload.bin?partNumber=1&uploadId=${uploadId}`, { method: "PUT", body: randomBytes(MIB, 2) });
    const referenced = [...(await shardFiles()).keys()];
    expect(referenced).toHaveLength(12);
    const orphan = await plantOrphan();
    await node("NODE_0").put("not-a-shard-file", "x");

    expect(await sweep(0)).toEqual({ filesListed: 19, orphans: 6, removed: 6, failed: 0, nodesSkipped: [] });
    expect(await filesOf(orphan)).toEqual([]);
    const after = await shardFiles();
    for (const k of referenced) expect(after.has(k), k).toBe(true);
    expect(after.has("not-a-shard-file")).toBe(true);
    expectSameBytes(new Uint8Array(await (await s3ok(`/${bucket}/kept.bin`)).arrayBuffer()), body);
    await s3ok(`/${bucket}/upload.bin?uploadId=${uploadId}`, { method: "DELETE" }, 204);
  });

  it("leaves files younger than the grace period alone", async () => {
    const young = await plantOrphan();
    expect((await sweep(HOUR)).orphans).toBe(0);
    expect(await filesOf(young)).toHaveLength(6);
    expect((await sweep(0)).removed).toBe(6);
  });

  it("runs from POST /_shardgate/admin/sweep and counts what it removed in the metrics", async () => {
    const orphan = await plantOrphan();
    await new Promise((r) => setTimeout(r, 1100)); // older than a grace period of 0 s, by the node's clock too
    const report = (await (await s3ok("/_shardgate/admin/sweep?grace-seconds=0", { method: "POST" })).json()) as { removed: number };
    expect(report.removed).toBe(6);
    expect(await filesOf(orphan)).toEqual([]);
    const metrics = await (await s3ok("/_shardgate/metrics")).text();
    expect(Number(/^shardgate_orphan_files_total\{result="removed"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(6);
  });

  it("reads a storage id only from a shard file's key", () => {
    expect(storageIdOf("20261124/0b6f0d2e-2a8f-4c43-9a55-3f0c4f1e9b10/5")).toBe("20261124/0b6f0d2e-2a8f-4c43-9a55-3f0c4f1e9b10");
    for (const key of [
      "not-a-shard-file",
      "20261124/0b6f0d2e-2a8f-4c43-9a55-3f0c4f1e9b10",
      "2026112/0b6f0d2e-2a8f-4c43-9a55-3f0c4f1e9b10/1",
      "x/20261124/0b6f0d2e-2a8f-4c43-9a55-3f0c4f1e9b10/1",
    ]) {
      expect(storageIdOf(key), key).toBeNull();
    }
  });
});
