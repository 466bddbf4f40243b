// The direct path's guards (docs/direct-path.md, "Shard files are written once" and "Tickets"):
//   - a shard write that started before its session's commit (or abort) and finishes after it is
//     refused and never replaces the committed file, also in a bucket with object lock; a commit
//     waits for a shard write that is completing (it holds a lease of the bucket's index);
//   - a shard ticket is checked again on every use against the key that obtained it: disabled,
//     losing its right, or denied by the bucket policy, its shard URLs stop working within the
//     5 s every other request gets (at once in the isolate that made the change, as here).
import { AwsClient } from "aws4fetch";
import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { codePart } from "../../client/src/coding";
import type { Env } from "../../worker/src/config";
import { core } from "../../worker/src/core";
import { type DirectReadPlan, type DirectUploadSession, SHARD_PATH } from "../../worker/src/shared/direct-protocol";
import { bucketIndex } from "../../worker/src/meta/stubs";
import { expectSameBytes, randomBytes } from "../shared/core-suite";
import { node } from "./nodes";
import { GATEWAY, s3, s3ok } from "./signed";

const gatewayEnv = env as unknown as Env;
const send = (request: Request) => exports.default.fetch(request);
const MIB = 1 << 20;

type Direct = Extract<DirectUploadSession, { mode: "direct" }>;
type Signed = (path: string, init?: RequestInit) => Promise<Response>;

async function session(req: Signed, bucket: string, key: string, size: number): Promise<Direct> {
  const res = await req(`/${bucket}/${key}?shardgate-upload`, { method: "POST", body: JSON.stringify({ size }) });
  expect(res.status, await res.clone().text()).toBe(200);
  const opened = (await res.json()) as DirectUploadSession;
  if (opened.mode !== "direct") throw new Error(`a classic session: ${opened.reason}`);
  return opened;
}

function commitBody(s: Direct, partMd5s: string[]): string {
  return JSON.stringify({ upload: s.upload, parts: s.parts.map(({ storageId, placement }) => ({ storageId, placement })), partMd5s });
}

/** The session id inside an upload ticket (base64url JSON before the dot). */
function sessionId(s: Direct): string {
  const body = s.upload.slice(0, s.upload.indexOf(".")).replace(/-/g, "+").replace(/_/g, "/");
  return (JSON.parse(atob(body)) as { session: string }).session;
}

const errorOf = async (res: Response) => /<Code>([^<]*)<\/Code>/.exec(await res.text())?.[1];
const health = async () => (await send(new Request(`${GATEWAY}/_shardgate/health`))).status;

async function nodeFile(part: Direct["parts"][number], shard: number): Promise<Uint8Array | null> {
  const object = await node(part.placement[shard]).get(`${part.storageId}/${shard}`);
  return object ? new Uint8Array(await object.arrayBuffer()) : null;
}

/** A shard PUT whose body the test holds open: all but its last `held` bytes are sent at once. */
async function stalledPut(url: string, file: Uint8Array, held: number): Promise<{ finish: () => Promise<Response> }> {
  const pipe = new IdentityTransformStream();
  const writer = pipe.writable.getWriter();
  const answer = send(new Request(`${GATEWAY}${url}`, { method: "PUT", body: pipe.readable, headers: { "content-length": String(file.length) } }));
  // A write completes once the gateway has read it: by then it has checked the session and is streaming.
  await writer.write(file.slice(0, file.length - held));
  return {
    finish: async () => {
      await writer.write(file.slice(file.length - held));
      await writer.close();
      return answer;
    },
  };
}

describe("a shard write never changes a committed object", () => {
  const bucket = "direct-locked";

  beforeAll(async () => {
    await s3ok(`/${bucket}`, { method: "PUT", headers: { "x-amz-bucket-object-lock-enabled": "true" } });
    const config =
      "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Days>1</Days></DefaultRetention></Rule></ObjectLockConfiguration>";
    const md5 = btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("MD5", new TextEncoder().encode(config)))));
    await s3ok(`/${bucket}?object-lock`, { method: "PUT", body: config, headers: { "content-md5": md5 } });
  });

  it("a stalled shard upload that completes after the commit is refused; the locked object reads back unchanged", async () => {
    const data = randomBytes(1 * MIB + 17, 71);
    const s = await session(s3, bucket, "held.bin", data.length);
    // A bucket with object lock gets only the gateway's shard URLs (presigned node URLs cannot be taken back).
    for (const url of s.parts[0].urls) expect(url.startsWith(SHARD_PATH)).toBe(true);
    const honest = codePart(core, s.geometry, s.parts[0], data);
    for (const [shard, url] of s.parts[0].urls.entries()) {
      expect((await send(new Request(`${GATEWAY}${url}`, { method: "PUT", body: honest.files[shard] }))).status).toBe(200);
    }
    // Other bytes with valid checksums for data shard 0, sent through the same ticket and held open.
    const other = codePart(core, s.geometry, s.parts[0], randomBytes(data.length, 72));
    const late = await stalledPut(s.parts[0].urls[0], other.files[0], 1000);
    expect(await health()).toBe(200);

    const committed = await s3ok(`/${bucket}/held.bin?shardgate-commit`, { method: "POST", body: commitBody(s, [honest.md5]) });
    const versionId = committed.headers.get("x-amz-version-id");
    expect(versionId).toBeTruthy();

    const refused = await late.finish();
    expect(refused.status).toBe(403);
    expect(await errorOf(refused)).toBe("AccessDenied");
    expect(await health()).toBe(200);
    // The committed file is the one the commit checked, byte for byte, and so is the object.
    expectSameBytes((await nodeFile(s.parts[0], 0)) ?? new Uint8Array(0), honest.files[0]);
    const got = await s3ok(`/${bucket}/held.bin?versionId=${versionId}`);
    expect(got.headers.get("x-amz-object-lock-mode")).toBe("COMPLIANCE");
    expectSameBytes(new Uint8Array(await got.arrayBuffer()), data);
  });

  it("a stalled shard upload that completes after the abort stores nothing", async () => {
    const data = randomBytes(900_000, 73);
    const s = await session(s3, bucket, "aborted.bin", data.length);
    const coded = codePart(core, s.geometry, s.parts[0], data);
    const late = await stalledPut(s.parts[0].urls[1], coded.files[1], 500);
    const abort = await s3(`/${bucket}/aborted.bin?shardgate-abort`, {
      method: "POST",
      body: JSON.stringify({ upload: s.upload, parts: s.parts.map(({ storageId, placement }) => ({ storageId, placement })) }),
    });
    expect(abort.status).toBe(204);
    expect((await late.finish()).status).toBe(403);
    expect(await nodeFile(s.parts[0], 1)).toBeNull();
  });

  it("a commit waits for a shard write that is completing, and answers 503 while one does not end", async () => {
    const data = randomBytes(700_000, 74);
    const index = bucketIndex(gatewayEnv, bucket);

    const s = await session(s3, bucket, "waits.bin", data.length);
    const coded = codePart(core, s.geometry, s.parts[0], data);
    for (const [shard, url] of s.parts[0].urls.entries()) await send(new Request(`${GATEWAY}${url}`, { method: "PUT", body: coded.files[shard] }));
    // A shard write of the session holds a lease (as one does while its node completes the file).
    const lease = await index.beginShardWrite(sessionId(s), s.expires);
    expect(lease).not.toBeNull();
    const started = Date.now();
    const commit = s3(`/${bucket}/waits.bin?shardgate-commit`, { method: "POST", body: commitBody(s, [coded.md5]) });
    await new Promise((r) => setTimeout(r, 300));
    await index.endShardWrite(sessionId(s), lease as string);
    expect((await commit).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    // Once the commit has begun, no shard write of the session gets a lease any more.
    expect(await index.beginShardWrite(sessionId(s), s.expires)).toBeNull();

    const stuck = await session(s3, bucket, "stuck.bin", data.length);
    const again = codePart(core, stuck.geometry, stuck.parts[0], data);
    for (const [shard, url] of stuck.parts[0].urls.entries()) await send(new Request(`${GATEWAY}${url}`, { method: "PUT", body: again.files[shard] }));
    const held = await index.beginShardWrite(sessionId(stuck), stuck.expires);
    const refused = await s3(`/${bucket}/stuck.bin?shardgate-commit`, { method: "POST", body: commitBody(stuck, [again.md5]) });
    expect(refused.status).toBe(503);
    expect(await errorOf(refused)).toBe("ServiceUnavailable");
    expect((await s3(`/${bucket}/stuck.bin`)).status).toBe(404);
    await index.endShardWrite(sessionId(stuck), held as string);
    await s3ok(`/${bucket}/stuck.bin?shardgate-commit`, { method: "POST", body: commitBody(stuck, [again.md5]) });
    expectSameBytes(new Uint8Array(await (await s3ok(`/${bucket}/stuck.bin`)).arrayBuffer()), data);
  });

  it("a session that handed out presigned node URLs does not commit once the bucket has object lock", async () => {
    // The R2 nodes here give no presigned URLs: the index's seal is asked as a session that had some
    // (tests/node/direct.test.ts does it end to end over S3 nodes that presign).
    const index = bucketIndex(gatewayEnv, bucket);
    expect(await index.sealSession({ id: crypto.randomUUID(), until: Date.now() + 60_000 }, true)).toBe("locked");
    expect(await index.sealSession({ id: crypto.randomUUID(), until: Date.now() + 60_000 }, false)).toBe("sealed");
  });
});

describe("shard tickets are checked again on every use", () => {
  const bucket = "direct-tickets";
  type Key = { id: string; secret: string };
  const admin = (method: string, path: string, body?: unknown) =>
    s3(`/_shardgate/admin${path}`, { method, ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }) });
  const as = (key: Key): Signed => {
    const client = new AwsClient({ accessKeyId: key.id, secretAccessKey: key.secret, service: "s3", region: "us-east-1" });
    return async (path, init = {}) => send(await client.sign(`${GATEWAY}${path}`, init));
  };
  const rights = async (key: Key, r: { read?: boolean; write?: boolean }) =>
    expect((await admin("PUT", `/keys/${key.id}/buckets/${bucket}`, { read: false, write: false, owner: false, ...r })).status).toBe(200);
  const policy = (statement: object) => JSON.stringify({ Version: "2012-10-17", Statement: [statement] });
  const shardGet = async (url: string) => (await send(new Request(`${GATEWAY}${url}`, { headers: { range: "bytes=0-99" } }))).status;

  /** The status shard URL `url` answers within ~7 s, once it is not 2xx (the promise is 5 s). */
  async function refusedWithin(probe: () => Promise<number>): Promise<number> {
    const deadline = Date.now() + 7_000;
    for (;;) {
      const status = await probe();
      if (status >= 300 || Date.now() > deadline) return status;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  let key: Key;
  const data = randomBytes(600_000, 81);

  beforeAll(async () => {
    await s3ok(`/${bucket}`, { method: "PUT" });
    await s3ok(`/${bucket}/o.bin`, { method: "PUT", body: data });
    const made = await admin("POST", "/keys", { name: "ticket holder" });
    expect(made.status).toBe(201);
    key = (await made.json()) as Key;
  });

  async function plan(req: Signed): Promise<Extract<DirectReadPlan, { mode: "direct" }>> {
    const res = await req(`/${bucket}/o.bin?shardgate-plan`);
    expect(res.status, await res.clone().text()).toBe(200);
    const p = (await res.json()) as DirectReadPlan;
    if (p.mode !== "direct") throw new Error(`a classic plan: ${p.reason}`);
    return p;
  }

  it("a read ticket stops working when its key is disabled, and again when the key is enabled", async () => {
    await rights(key, { read: true });
    const url = (await plan(as(key))).parts[0].urls[0];
    expect(await shardGet(url)).toBe(206);
    expect((await admin("PATCH", `/keys/${key.id}`, { enabled: false })).status).toBe(200);
    expect(await refusedWithin(() => shardGet(url))).toBe(403);
    expect(await health()).toBe(200);
    expect((await admin("PATCH", `/keys/${key.id}`, { enabled: true })).status).toBe(200);
    expect(await shardGet(url)).toBe(206);
  });

  it("a read ticket stops working when its key loses the read right", async () => {
    await rights(key, { read: true });
    const url = (await plan(as(key))).parts[0].urls[1];
    expect(await shardGet(url)).toBe(206);
    await rights(key, { write: true });
    expect(await refusedWithin(() => shardGet(url))).toBe(403);
  });

  it("a read ticket stops working when the bucket policy denies its key; the root key's tickets stay valid", async () => {
    await rights(key, { read: true });
    const url = (await plan(as(key))).parts[0].urls[2];
    const rootUrl = (await plan(s3)).parts[0].urls[2];
    const deny = policy({ Effect: "Deny", Principal: { AWS: [key.id] }, Action: "s3:GetObject", Resource: `arn:aws:s3:::${bucket}/o.bin` });
    await s3ok(`/${bucket}?policy`, { method: "PUT", body: deny }, 204);
    expect(await refusedWithin(() => shardGet(url))).toBe(403);
    expect(await shardGet(rootUrl)).toBe(206);
    await s3ok(`/${bucket}?policy`, { method: "DELETE" }, 204);
    expect(await shardGet(url)).toBe(206);
  });

  it("an anonymous ticket lasts only as long as the policy that allowed it", async () => {
    const allow = policy({ Effect: "Allow", Principal: "*", Action: "s3:GetObject", Resource: `arn:aws:s3:::${bucket}/*` });
    await s3ok(`/${bucket}?policy`, { method: "PUT", body: allow }, 204);
    const url = (await plan((path, init) => send(new Request(`${GATEWAY}${path}`, init)))).parts[0].urls[3];
    expect(await shardGet(url)).toBe(206);
    await s3ok(`/${bucket}?policy`, { method: "DELETE" }, 204);
    expect(await refusedWithin(() => shardGet(url))).toBe(403);
  });

  it("a write ticket stops taking shard files when its key loses the write right", async () => {
    await rights(key, { read: true, write: true });
    const s = await session(as(key), bucket, "w.bin", data.length);
    const coded = codePart(core, s.geometry, s.parts[0], data);
    const put = async (shard: number) => (await send(new Request(`${GATEWAY}${s.parts[0].urls[shard]}`, { method: "PUT", body: coded.files[shard] }))).status;
    expect(await put(0)).toBe(200);
    await rights(key, { read: true });
    expect(await refusedWithin(() => put(1))).toBe(403);
    expect(await nodeFile(s.parts[0], 1)).toBeNull();
    // Nor does its HEAD (a resumed upload's question) answer.
    expect((await send(new Request(`${GATEWAY}${s.parts[0].urls[0]}`, { method: "HEAD" }))).status).toBe(403);
  });
});
