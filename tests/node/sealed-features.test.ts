// Sealed objects (issue #43 item 4; client/src/sealed.ts) through the gateway's other features, over
// `npm start`'s gateway and disk nodes: to the gateway they are ordinary objects of ciphertext, so
// heal (a shard file removed, another rotten), the deep scrub, replication to another gateway,
// versions, lifecycle, object lock and quotas work on them unchanged, and what comes back still
// decrypts byte for byte (sha256) with the passphrase, and only with it.
//
// Re-wrapping (client.rewrap: CopyObject onto itself, REPLACE metadata) in a versioned bucket makes
// a new version with shard files of its own, as any copy does there (docs/storage-format.md, "Client-side
// encryption"): the earlier version keeps the old wrapping and its own files, a lifecycle rule or a
// delete of it takes only those, and a quota counts both.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Encryption, ShardgateClient, ShardgateError, WrongPassphraseError } from "../../client/src/index";
import { storedSize, SEGMENT_BYTES } from "../../client/src/sealed";
import * as bindings from "../../core/pkg/shardgate_core.js";
import { Core } from "../../worker/src/shared/core-api";
import type { DirectReadPlan } from "../../worker/src/shared/direct-protocol";
import { randomBytes } from "../shared/core-suite";
import { CREDENTIALS, Gateway } from "./gateway";

const memory = bindings.initSync({ module: readFileSync(new URL("../../core/pkg/shardgate_core_bg.wasm", import.meta.url)) }).memory;
const core = new Core(bindings, memory);
const MIB = 1024 * 1024;
/** A cheap Argon2id cost: these tests are about the gateway's features, not the KDF. */
const FAST = { memoryKiB: 256, passes: 1, lanes: 1 };
const OLD: Encryption = { passphrase: "the old passphrase", kdf: FAST };
const NEW: Encryption = { passphrase: "the new passphrase", kdf: FAST };
const DAY = 24 * 3600 * 1000;

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []));
}

/** Polls `check` until it returns true (every 200 ms, `ms` at most). */
async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// The replica's gateway first: the source's configuration names it as a replication target.
const twin = new Gateway();
let g: Gateway;
const aws = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
let client: ShardgateClient;
let twinClient: ShardgateClient;
const s3 = (path: string, init: RequestInit = {}) => aws.fetch(`${g.base}${path}`, init);

async function s3ok(path: string, init: RequestInit = {}): Promise<Response> {
  const res = await s3(path, init);
  if (!res.ok) throw new Error(`${init.method ?? "GET"} ${path}: ${res.status} ${await res.text()}`);
  return res;
}

/** The object's plaintext, opened with `encryption` (a version of it, a range of it). */
async function opened(
  c: ShardgateClient,
  bucket: string,
  key: string,
  encryption: Encryption,
  opts: { versionId?: string; range?: { start: number; end: number } } = {},
): Promise<Uint8Array> {
  const down = await c.download(bucket, key, { encryption, ...opts });
  return new Uint8Array(await new Response(down.body).arrayBuffer());
}

/** The read plan of a version: its parts' storage ids and placements. */
async function planOf(bucket: string, key: string, versionId?: string): Promise<Extract<DirectReadPlan, { mode: "direct" }>> {
  const plan = (await (await s3ok(`/${bucket}/${key}?shardgate-plan${versionId ? `&versionId=${versionId}` : ""}`)).json()) as DirectReadPlan;
  if (plan.mode !== "direct") throw new Error(`no direct plan: ${plan.reason}`);
  return plan;
}

/** A storage id's files on the disk nodes: nodes/NODE/<day>/<2 hex>/<uuid>.<shard> for a storage id <day>/<uuid>. */
const filesOfId = (files: string[], storageId: string) => files.filter((f) => basename(f).startsWith(`${storageId.split("/").pop()}.`));

/** The shard files on the disk nodes of the parts of `plan`. */
function shardFilesOf(plan: Extract<DirectReadPlan, { mode: "direct" }>): string[] {
  const files = filesUnder(join(g.persist, "nodes"));
  return plan.parts.flatMap((p) => filesOfId(files, p.storageId));
}

beforeAll(async () => {
  await twin.start();
  const target = { endpoint: twin.base, region: "us-east-1", accessKeyId: CREDENTIALS.accessKeyId, secretAccessKey: CREDENTIALS.secretAccessKey };
  g = new Gateway({
    vars: {
      // Direct-path parts of 1 MiB: a few MiB make several parts, each with its own shard files.
      SHARDGATE_DIRECT_PART_BYTES: String(MIB),
      SHARDGATE_REPLICATION_TARGETS: JSON.stringify({ twin: target }),
      SHARDGATE_NOTIFY_RETRY_MS: "100",
      SHARDGATE_NOTIFY_RETRY_MAX_MS: "400",
    },
  });
  await g.start();
  client = new ShardgateClient({ endpoint: g.base, ...CREDENTIALS, core, readStallMs: 2_000 });
  twinClient = new ShardgateClient({ endpoint: twin.base, ...CREDENTIALS, core });
}, 180_000);
afterAll(async () => {
  await g?.dispose();
  await twin.dispose();
});

describe("sealed objects through heal, scrub, replication, versions, lifecycle, object lock and quotas", () => {
  it("heal: a shard file removed and another rotten on the nodes; the download still decrypts byte-exact; heal and the deep scrub put both back bit-identical", async () => {
    await s3ok("/heal", { method: "PUT" });
    const data = randomBytes(3 * MIB + 999, 21);
    expect((await client.upload("heal", "h.bin", data, { encryption: OLD })).mode).toBe("direct");
    const plan = await planOf("heal", "h.bin");
    const files = shardFilesOf(plan);
    const k = plan.parts[0].placement.length;
    expect(files.length).toBe(plan.parts.length * k); // every shard file of every part, on disk
    const originals = new Map(files.map((f) => [f, readFileSync(f)]));
    // A shard file of the first part gone, one of the second rotten (a byte flipped in its middle).
    // Both data shards (shard 0), which a download must read: a parity shard it would never meet.
    const dataShard = (storageId: string) => filesOfId(files, storageId).find((f) => basename(f).endsWith(".0")) as string;
    const gone = dataShard(plan.parts[0].storageId);
    const rotten = dataShard(plan.parts[1].storageId);
    rmSync(gone);
    const bad = Buffer.from(originals.get(rotten) as Buffer);
    bad[bad.length >> 1] ^= 0x40;
    writeFileSync(rotten, bad);

    const down = await client.download("heal", "h.bin", { encryption: OLD });
    expect(sha256(new Uint8Array(await new Response(down.body).arrayBuffer()))).toBe(sha256(data));
    expect(down.readAround.length).toBeGreaterThanOrEqual(1);

    // The removed file: back after the bucket's heal (unless the heal on read was first).
    const backOnRead = existsSync(gone);
    const healed = (await (await s3ok("/_shardgate/admin/heal?bucket=heal", { method: "POST" })).json()) as {
      objectsChecked: number;
      shardsRebuilt: number;
      shardsFailed: number;
      objectsFailed: unknown[];
    };
    expect(healed).toMatchObject({ objectsChecked: 1, shardsFailed: 0, objectsFailed: [] });
    if (!backOnRead) expect(healed.shardsRebuilt).toBeGreaterThanOrEqual(1);
    expect(readFileSync(gone).equals(originals.get(gone) as Buffer)).toBe(true);
    // The rotten one (its length is right: the bucket's heal checks presence and length) is the deep scrub's.
    await s3ok("/_shardgate/admin/scrub?mode=deep&max-objects=100000", { method: "POST" });
    expect(readFileSync(rotten).equals(originals.get(rotten) as Buffer)).toBe(true);
    expect(shardFilesOf(plan).length).toBe(files.length);
    expect(sha256(await opened(client, "heal", "h.bin", OLD))).toBe(sha256(data));
  }, 120_000);

  it("the deep scrub finds rot in a sealed object's shard file and rebuilds it; the object still decrypts", async () => {
    await s3ok("/scrub", { method: "PUT" });
    const data = randomBytes(2 * MIB + 5, 22);
    await client.upload("scrub", "s.bin", data, { encryption: OLD });
    const files = shardFilesOf(await planOf("scrub", "s.bin"));
    const original = readFileSync(files[0]);
    const bad = Buffer.from(original);
    bad[100] ^= 1;
    writeFileSync(files[0], bad);
    const res = await s3ok("/_shardgate/admin/scrub?mode=deep&max-objects=100000", { method: "POST" });
    const run = ((await res.json()) as { run: { counters: { badShards: number; shardsRebuilt: number } } }).run;
    expect(run.counters.badShards).toBeGreaterThanOrEqual(1);
    expect(run.counters.shardsRebuilt).toBeGreaterThanOrEqual(1);
    expect(readFileSync(files[0]).equals(original)).toBe(true);
    expect(sha256(await opened(client, "scrub", "s.bin", OLD))).toBe(sha256(data));
  }, 120_000);

  it("replication: the replica on another gateway is the same ciphertext and header, and decrypts there with the same passphrase", async () => {
    for (const base of [g.base, twin.base]) {
      for (const bucket of base === g.base ? ["repl"] : ["replica"]) {
        expect((await aws.fetch(`${base}/${bucket}`, { method: "PUT" })).status).toBe(200);
        const versioning = "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
        expect((await aws.fetch(`${base}/${bucket}?versioning`, { method: "PUT", body: versioning })).status).toBe(200);
      }
    }
    const rule =
      "<ReplicationConfiguration><Role></Role><Rule><ID>twin</ID><Priority>1</Priority><Status>Enabled</Status><Filter><Prefix></Prefix></Filter>" +
      "<DeleteMarkerReplication><Status>Disabled</Status></DeleteMarkerReplication><Destination><Bucket>arn:shardgate:s3:::twin/replica</Bucket></Destination></Rule></ReplicationConfiguration>";
    await s3ok("/repl?replication", { method: "PUT", body: rule });
    const data = randomBytes(2 * MIB + 77, 23);
    await client.upload("repl", "r.bin", data, { encryption: OLD, contentType: "application/x-sealed" });
    await until(async () => (await aws.fetch(`${twin.base}/replica/r.bin`, { method: "HEAD" })).status === 200, 60_000, "the replica");
    const [source, replica] = await Promise.all([s3("/repl/r.bin"), aws.fetch(`${twin.base}/replica/r.bin`)]);
    expect(replica.headers.get("x-amz-meta-shardgate-sealed")).toBe(source.headers.get("x-amz-meta-shardgate-sealed"));
    expect(sha256(new Uint8Array(await replica.arrayBuffer()))).toBe(sha256(new Uint8Array(await source.arrayBuffer())));
    expect(sha256(await opened(twinClient, "replica", "r.bin", OLD))).toBe(sha256(data));
    const range = { start: MIB - 10, end: MIB + 10 };
    expect(sha256(await opened(twinClient, "replica", "r.bin", OLD, { range }))).toBe(sha256(data.subarray(range.start, range.end)));
    await expect(opened(twinClient, "replica", "r.bin", NEW)).rejects.toBeInstanceOf(WrongPassphraseError);
  }, 120_000);

  it("versions: after a rewrap the earlier version keeps the old wrapping and its own shard files; lifecycle expires it alone", async () => {
    await s3ok("/ver", { method: "PUT" });
    await s3ok("/ver?versioning", { method: "PUT", body: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>" });
    const data = randomBytes(2 * MIB + 3, 24);
    const v1 = (await client.upload("ver", "v.bin", data, { encryption: OLD })).versionId as string;
    const v2 = (await client.rewrap("ver", "v.bin", OLD, NEW)).versionId as string;
    expect(v2).toBeTruthy();
    expect(v2).not.toBe(v1);
    // The current version opens with the new passphrase only, the earlier one with the old only.
    expect(sha256(await opened(client, "ver", "v.bin", NEW))).toBe(sha256(data));
    await expect(opened(client, "ver", "v.bin", OLD)).rejects.toBeInstanceOf(WrongPassphraseError);
    expect(sha256(await opened(client, "ver", "v.bin", OLD, { versionId: v1 }))).toBe(sha256(data));
    await expect(opened(client, "ver", "v.bin", NEW, { versionId: v1 })).rejects.toBeInstanceOf(WrongPassphraseError);
    // The same ciphertext, in shard files of its own: the copy moved the data (docs/storage-format.md).
    const [p1, p2] = [await planOf("ver", "v.bin", v1), await planOf("ver", "v.bin", v2)];
    expect((await (await s3(`/ver/v.bin?versionId=${v1}`)).arrayBuffer()).byteLength).toBe(storedSize(data.length, SEGMENT_BYTES));
    expect(sha256(new Uint8Array(await (await s3(`/ver/v.bin?versionId=${v2}`)).arrayBuffer()))).toBe(
      sha256(new Uint8Array(await (await s3(`/ver/v.bin?versionId=${v1}`)).arrayBuffer())),
    );
    const ids1 = new Set(p1.parts.map((p) => p.storageId));
    expect(p2.parts.some((p) => ids1.has(p.storageId))).toBe(false);
    const oldFiles = shardFilesOf(p1);
    expect(oldFiles.length).toBeGreaterThan(0);

    // Lifecycle: noncurrent versions expire after a day; a run as of two days on takes v1 and its files, not v2.
    const lifecycle =
      '<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Rule><ID>old</ID><Filter><Prefix></Prefix></Filter><Status>Enabled</Status>' +
      "<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule></LifecycleConfiguration>";
    await s3ok("/ver?lifecycle", { method: "PUT", body: lifecycle });
    await s3ok(`/_shardgate/admin/lifecycle?bucket=ver&now=${new Date(Date.now() + 2 * DAY).toISOString()}`, { method: "POST" });
    expect((await s3(`/ver/v.bin?versionId=${v1}`, { method: "HEAD" })).status).toBe(404);
    await until(async () => shardFilesOf(p1).length === 0, 10_000, "the expired version's shard files deleted");
    expect(shardFilesOf(p2).length).toBeGreaterThan(0);
    expect(sha256(await opened(client, "ver", "v.bin", NEW))).toBe(sha256(data));
  }, 120_000);

  it("in an unversioned bucket a rewrap replaces only the metadata: the same shard files", async () => {
    await s3ok("/plain", { method: "PUT" });
    const data = randomBytes(MIB + 5, 25);
    await client.upload("plain", "p.bin", data, { encryption: OLD });
    const before = await planOf("plain", "p.bin");
    const files = new Map(shardFilesOf(before).map((f) => [f, sha256(readFileSync(f))]));
    expect(files.size).toBe(before.parts.length * before.parts[0].placement.length);
    await client.rewrap("plain", "p.bin", OLD, NEW);
    const after = await planOf("plain", "p.bin");
    expect(after.parts.map((p) => p.storageId)).toEqual(before.parts.map((p) => p.storageId));
    expect(new Map(shardFilesOf(after).map((f) => [f, sha256(readFileSync(f))]))).toEqual(files);
    expect(sha256(await opened(client, "plain", "p.bin", NEW))).toBe(sha256(data));
    await expect(opened(client, "plain", "p.bin", OLD)).rejects.toBeInstanceOf(WrongPassphraseError);
  }, 120_000);

  it("object lock: retention on a sealed version refuses its deletion; a rewrap under COMPLIANCE is a new version, the locked one keeps the old wrapping", async () => {
    await s3ok("/locked", { method: "PUT", headers: { "x-amz-bucket-object-lock-enabled": "true" } });
    const data = randomBytes(MIB + 11, 26);
    const v1 = (await client.upload("locked", "l.bin", data, { encryption: OLD })).versionId as string;
    const until1 = new Date(Date.now() + 2 * DAY).toISOString();
    const retention = `<Retention><Mode>COMPLIANCE</Mode><RetainUntilDate>${until1}</RetainUntilDate></Retention>`;
    await s3ok(`/locked/l.bin?retention&versionId=${v1}`, { method: "PUT", body: retention });
    // New versions get a default retention too (the bucket's), so that the re-wrapped one is locked as well.
    const config =
      "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Days>1</Days></DefaultRetention></Rule></ObjectLockConfiguration>";
    await s3ok("/locked?object-lock", { method: "PUT", body: config });

    const refused = await s3(`/locked/l.bin?versionId=${v1}`, { method: "DELETE", headers: { "x-amz-bypass-governance-retention": "true" } });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("AccessDenied");

    // The rewrap is allowed: CopyObject onto itself is a new version (as in S3); v1 is untouched.
    const v2 = (await client.rewrap("locked", "l.bin", OLD, NEW)).versionId as string;
    expect(v2).not.toBe(v1);
    const head2 = await s3ok(`/locked/l.bin?versionId=${v2}`, { method: "HEAD" });
    expect(head2.headers.get("x-amz-object-lock-mode")).toBe("COMPLIANCE");
    const head1 = await s3ok(`/locked/l.bin?versionId=${v1}`, { method: "HEAD" });
    expect(Date.parse(head1.headers.get("x-amz-object-lock-retain-until-date") ?? "")).toBe(Date.parse(until1));
    expect(sha256(await opened(client, "locked", "l.bin", NEW))).toBe(sha256(data));
    // Until its retention ends, the old passphrase still opens the locked version: re-wrapping does not revoke it.
    expect(sha256(await opened(client, "locked", "l.bin", OLD, { versionId: v1 }))).toBe(sha256(data));
    expect((await s3(`/locked/l.bin?versionId=${v1}`, { method: "DELETE" })).status).toBe(403);
    // Sealed uploads into the bucket now that it has a default retention, by the direct path and by PutObject.
    for (const [key, n] of [
      ["big.bin", MIB + 5],
      ["small.bin", 1000],
    ] as const) {
      const bytes = randomBytes(n, 28);
      const up = await client.upload("locked", key, bytes, { encryption: OLD });
      expect((await s3ok(`/locked/${key}?versionId=${up.versionId}`, { method: "HEAD" })).headers.get("x-amz-object-lock-mode")).toBe("COMPLIANCE");
      expect(sha256(await opened(client, "locked", key, OLD))).toBe(sha256(bytes));
    }
  }, 120_000);

  it("quotas count the stored ciphertext, every version of it, and refuse a sealed upload past them", async () => {
    await s3ok("/quota", { method: "PUT" });
    await s3ok("/quota?versioning", { method: "PUT", body: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>" });
    const n = MIB + 1234;
    const stored = storedSize(n, SEGMENT_BYTES);
    const setQuota = (maxBytes: number) =>
      s3ok("/_shardgate/admin/buckets/quota/quota", { method: "PUT", body: JSON.stringify({ maxBytes }), headers: { "content-type": "application/json" } });
    await setQuota(2 * stored + 100);
    const usage = async () => ((await (await s3ok("/_shardgate/admin/buckets/quota/quota")).json()) as { usage: { bytes: number; objects: number } }).usage;
    const data = randomBytes(n, 27);
    await client.upload("quota", "q.bin", data, { encryption: OLD });
    expect(await usage()).toMatchObject({ bytes: stored, objects: 1 });
    // A rewrap in a versioned bucket stores the ciphertext again: the quota counts it twice.
    await client.rewrap("quota", "q.bin", OLD, NEW);
    expect(await usage()).toMatchObject({ bytes: 2 * stored, objects: 2 });
    // A third copy does not fit: refused, by the direct path and by PutObject alike, and nothing more is counted.
    const refused = await client.upload("quota", "q2.bin", data, { encryption: OLD }).catch((e) => e);
    expect(refused).toBeInstanceOf(ShardgateError);
    expect((refused as ShardgateError).code).toBe("QuotaExceeded");
    const small = await client.upload("quota", "tiny.bin", randomBytes(1000, 1), { encryption: OLD }).catch((e) => e);
    expect((small as ShardgateError).code).toBe("QuotaExceeded");
    const rewrapped = await client.rewrap("quota", "q.bin", NEW, OLD).catch((e) => e);
    expect((rewrapped as ShardgateError).code).toBe("QuotaExceeded");
    expect(await usage()).toMatchObject({ bytes: 2 * stored, objects: 2 });
    expect(sha256(await opened(client, "quota", "q.bin", NEW))).toBe(sha256(data));
  }, 120_000);
});
