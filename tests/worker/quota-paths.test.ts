// Quotas bound what the nodes hold, on every path (issue #39, item 6): a direct-path session
// reserves its declared size against the bucket's quota when it opens (403 QuotaExceeded beyond it,
// before any shard URL is handed out), so sessions opened and never committed cannot together
// exceed it; a commit turns the reservation into the object's bytes, an abort, a refused commit or
// expiry releases it; a refused commit removes its shard files at once; a key and a bucket hold a
// bounded number of sessions open (503 SlowDown beyond). POST forms, CopyObject, UploadPartCopy and
// UploadPart are refused over the quota too, and leave no shard files behind. In workerd with real
// Durable Objects and R2 nodes, signed by a key with write rights (not the root key) where it matters.
import { AwsClient } from "aws4fetch";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { codePart } from "../../client/src/coding";
import { type Env, loadConfig } from "../../worker/src/config";
import { core } from "../../worker/src/core";
import { SESSIONS_PER_BUCKET, SESSIONS_PER_KEY } from "../../worker/src/meta/direct-sessions";
import { drainGarbage } from "../../worker/src/services/garbage";
import type { DirectUploadSession } from "../../worker/src/shared/direct-protocol";
import { randomBytes } from "../shared/core-suite";
import { shardFiles } from "./nodes";
import { signedPostFields } from "./post-form";
import { GATEWAY, s3, s3ok } from "./signed";

const MIB = 1 << 20;
const gatewayEnv = env as unknown as Env;
type Direct = Extract<DirectUploadSession, { mode: "direct" }>;
type Signed = (path: string, init?: RequestInit) => Promise<Response>;
type Usage = { bytes: number; objects: number; pending: number };

const code = async (res: Response) => /<Code>([^<]*)<\/Code>/.exec(await res.text())?.[1];
const admin = (method: string, path: string, body?: unknown) =>
  s3(`/_shardgate/admin${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }) });

async function setQuota(bucket: string, quota: { maxBytes?: number | null; maxObjects?: number | null }): Promise<void> {
  expect((await admin("PUT", `/buckets/${bucket}/quota`, quota)).status).toBe(200);
}

async function usage(bucket: string): Promise<Usage> {
  return ((await (await admin("GET", `/buckets/${bucket}/quota`)).json()) as { usage: Usage }).usage;
}

/** A new access key with read and write rights on `buckets` (no owner right), as a signer. */
async function writer(...buckets: string[]): Promise<Signed> {
  const key = (await (await admin("POST", "/keys", { name: "quota writer" })).json()) as { id: string; secret: string };
  for (const b of buckets) expect((await admin("PUT", `/keys/${key.id}/buckets/${b}`, { read: true, write: true, owner: false })).status).toBe(200);
  const client = new AwsClient({ accessKeyId: key.id, secretAccessKey: key.secret, service: "s3", region: "us-east-1" });
  return async (path, init = {}) => exports.default.fetch(await client.sign(`${GATEWAY}${path}`, init));
}

const open = (req: Signed, bucket: string, key: string, size: number) =>
  req(`/${bucket}/${key}?shardgate-upload`, { method: "POST", body: JSON.stringify({ size }) });

async function session(req: Signed, bucket: string, key: string, size: number): Promise<Direct> {
  const res = await open(req, bucket, key, size);
  expect(res.status, await res.clone().text()).toBe(200);
  const opened = (await res.json()) as DirectUploadSession;
  if (opened.mode !== "direct") throw new Error(`a classic session: ${opened.reason}`);
  return opened;
}

const places = (s: Direct) => s.parts.map(({ storageId, placement }) => ({ storageId, placement }));

/** Codes `data` for session `s` and sends every shard file: the parts' MD5s. */
async function sendShards(s: Direct, data: Uint8Array): Promise<string[]> {
  const md5s: string[] = [];
  let offset = 0;
  for (const part of s.parts) {
    const coded = codePart(core, s.geometry, part, data.subarray(offset, offset + part.size));
    offset += part.size;
    md5s.push(coded.md5);
    for (const [shard, url] of part.urls.entries()) {
      expect((await exports.default.fetch(new Request(`${GATEWAY}${url}`, { method: "PUT", body: coded.files[shard] }))).status).toBe(200);
    }
  }
  return md5s;
}

const commit = (req: Signed, bucket: string, key: string, s: Direct, partMd5s: string[], headers: Record<string, string> = {}) =>
  req(`/${bucket}/${key}?shardgate-commit`, { method: "POST", body: JSON.stringify({ upload: s.upload, parts: places(s), partMd5s }), headers });
const abort = (req: Signed, bucket: string, key: string, s: Direct) =>
  req(`/${bucket}/${key}?shardgate-abort`, { method: "POST", body: JSON.stringify({ upload: s.upload, parts: places(s) }) });

/** How many shard files of session `s` are on their nodes. */
async function storedFiles(s: Direct): Promise<number> {
  const files = await shardFiles();
  return s.parts.reduce((n, part) => n + part.placement.filter((_, shard) => files.has(`${part.storageId}/${shard}`)).length, 0);
}

const indexOf = (bucket: string) => gatewayEnv.BUCKET_INDEX.get(gatewayEnv.BUCKET_INDEX.idFromName(bucket));

describe("quotas on the direct path", () => {
  let req: Signed;
  beforeAll(async () => {
    const buckets = ["qp-open", "qp-pending", "qp-refused", "qp-caps", "qp-caps-bucket", "qp-race", "qp-anonymous"];
    for (const b of buckets) await s3ok(`/${b}`, { method: "PUT" });
    req = await writer(...buckets);
  });

  it("a session larger than the quota is refused at open (403 QuotaExceeded, as a PUT), nothing handed out or reserved", async () => {
    await setQuota("qp-open", { maxBytes: MIB });
    const put = await req("/qp-open/two", { method: "PUT", body: randomBytes(2 * MIB, 1) });
    expect([put.status, await code(put)]).toEqual([403, "QuotaExceeded"]);
    for (const size of [5 * 1024 ** 3, 20 * MIB, 2 * MIB, MIB + 1]) {
      const res = await open(req, "qp-open", "huge", size);
      expect([res.status, await code(res)], String(size)).toEqual([403, "QuotaExceeded"]);
    }
    expect(await usage("qp-open")).toEqual({ bytes: 0, objects: 0, pending: 0 });
    // Within it, a session opens; the bytes stored count against it.
    await s3ok("/qp-open/small", { method: "PUT", body: randomBytes(300_000, 2) });
    expect((await open(req, "qp-open", "fits", MIB - 300_000)).status).toBe(200);
    expect((await usage("qp-open")).pending).toBe(MIB - 300_000);
    const over = await open(req, "qp-open", "over", 10_000);
    expect([over.status, await code(over)]).toEqual([403, "QuotaExceeded"]);
  });

  it("sessions opened and never committed cannot together exceed the quota; abort, commit and expiry release what they reserved", async () => {
    await setQuota("qp-pending", { maxBytes: 5 * MIB });
    const a = await session(req, "qp-pending", "a", 2 * MIB);
    const b = await session(req, "qp-pending", "b", 2 * MIB);
    expect(await usage("qp-pending")).toEqual({ bytes: 0, objects: 0, pending: 4 * MIB });
    const third = await open(req, "qp-pending", "c", 2 * MIB);
    expect([third.status, await code(third)]).toEqual([403, "QuotaExceeded"]);
    // What the sessions reserved counts against every other write too.
    const put = await req("/qp-pending/p", { method: "PUT", body: randomBytes(1.5 * MIB, 3) });
    expect([put.status, await code(put)]).toEqual([403, "QuotaExceeded"]);
    // An abort releases its reservation (and its files go).
    expect((await abort(req, "qp-pending", "a", a)).status).toBe(204);
    expect((await usage("qp-pending")).pending).toBe(2 * MIB);
    const c = await session(req, "qp-pending", "c", 2 * MIB);
    // A commit turns its reservation into the object's bytes, even under a quota lowered meanwhile.
    const data = randomBytes(2 * MIB, 4);
    const md5s = await sendShards(b, data);
    await setQuota("qp-pending", { maxBytes: MIB });
    expect((await commit(req, "qp-pending", "b", b, md5s)).status).toBe(200);
    expect(await usage("qp-pending")).toEqual({ bytes: 2 * MIB, objects: 1, pending: 2 * MIB });
    // A session that expires uncommitted is released by the bucket's alarm, and its shard files
    // become garbage that the garbage job removes.
    const cData = randomBytes(2 * MIB, 5);
    const cMd5s = await sendShards(c, cData);
    expect(await storedFiles(c)).toBe(c.parts.length * 6);
    const stub = indexOf("qp-pending");
    await runInDurableObject(stub, async (_i: unknown, state: DurableObjectState) => {
      state.storage.sql.exec("UPDATE open_sessions SET until = ?", Date.now() - 1000);
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await usage("qp-pending")).pending).toBe(0);
    await drainGarbage(gatewayEnv, loadConfig(gatewayEnv), 100);
    expect(await storedFiles(c)).toBe(0);
    // Its commit is refused from then on (its ticket is still valid here: the index ended it).
    const late = await commit(req, "qp-pending", "c", c, cMd5s);
    expect([late.status, await code(late)]).toEqual([400, "InvalidRequest"]);
    expect((await s3("/qp-pending/c", { method: "HEAD" })).status).toBe(404);
  });

  it("a refused commit ends its session and removes its shard files at once, releasing its reservation", async () => {
    await setQuota("qp-refused", { maxObjects: 1 });
    await s3ok("/qp-refused/first", { method: "PUT", body: "1" });
    const before = (await shardFiles()).size;
    const data = randomBytes(3 * MIB, 6);
    const s = await session(req, "qp-refused", "second", data.length);
    const md5s = await sendShards(s, data);
    expect((await shardFiles()).size).toBe(before + s.parts.length * 6);
    const refused = await commit(req, "qp-refused", "second", s, md5s);
    expect([refused.status, await code(refused)]).toEqual([403, "QuotaExceeded"]);
    // Removed after the answer (waitUntil), not left to an abort or the orphan sweep.
    await expect.poll(async () => (await shardFiles()).size, { timeout: 10_000 }).toBe(before);
    expect(await usage("qp-refused")).toEqual({ bytes: 1, objects: 1, pending: 0 });
    // The session is over: no commit, no shard write, no abort of it is taken any more.
    await s3ok("/qp-refused/first", { method: "DELETE" }, 204);
    const again = await commit(req, "qp-refused", "second", s, md5s);
    expect([again.status, await code(again)]).toEqual([400, "InvalidRequest"]);
    const file = codePart(core, s.geometry, s.parts[0], data.subarray(0, s.parts[0].size)).files[0];
    const shard = await exports.default.fetch(new Request(`${GATEWAY}${s.parts[0].urls[0]}`, { method: "PUT", body: file }));
    expect(shard.status).toBe(403);
    expect((await abort(req, "qp-refused", "second", s)).status).toBe(404);
    expect((await shardFiles()).size).toBe(before);
  });

  it("of eight sessions opened at once exactly as many are granted as fit", async () => {
    await setQuota("qp-race", { maxBytes: 3 * MIB });
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => open(req, "qp-race", `r${i}`, MIB)));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(3);
    expect(answers.filter((r) => r.status === 403)).toHaveLength(5);
    expect((await usage("qp-race")).pending).toBe(3 * MIB);
  });

  it("two commits of one session at once, one refused: a visible object keeps every shard file, and none is left otherwise", async () => {
    await setQuota("qp-race", { maxBytes: null });
    for (let round = 0; round < 3; round++) {
      const data = randomBytes(600_000, 20 + round);
      const s = await session(req, "qp-race", `twice${round}`, data.length);
      const md5s = await sendShards(s, data);
      // The second commit's If-Match names an object that is not there: it is refused (404), and
      // whichever runs first, the refusal must never remove the files of a commit that won.
      const [plain, conditional] = await Promise.all([
        commit(req, "qp-race", `twice${round}`, s, md5s),
        commit(req, "qp-race", `twice${round}`, s, md5s, { "if-match": '"0123456789abcdef0123456789abcdef"' }),
      ]);
      expect(conditional.status).toBeGreaterThanOrEqual(400);
      await new Promise((resolve) => setTimeout(resolve, 200)); // the refused commit's removal runs after its answer
      const visible = (await s3(`/qp-race/twice${round}`, { method: "HEAD" })).status === 200;
      expect(visible).toBe(plain.status === 200);
      expect(await storedFiles(s)).toBe(visible ? 6 : 0);
      if (visible) expect(new Uint8Array(await (await s3ok(`/qp-race/twice${round}`)).arrayBuffer())).toEqual(data);
    }
  });

  it(`a key holds at most ${SESSIONS_PER_KEY} sessions open in a bucket (503 SlowDown beyond); other keys are not held up`, async () => {
    const sessions = [];
    for (let i = 0; i < SESSIONS_PER_KEY; i++) sessions.push(await session(req, "qp-caps", `k${i}`, 5000));
    const refused = await open(req, "qp-caps", "one-more", 5000);
    expect([refused.status, await code(refused)]).toEqual([503, "SlowDown"]);
    expect((await usage("qp-caps")).pending).toBe(SESSIONS_PER_KEY * 5000);
    // Another key (here the root key) still opens one; an abort makes room for the first key again.
    expect((await s3("/qp-caps/root?shardgate-upload", { method: "POST", body: JSON.stringify({ size: 5000 }) })).status).toBe(200);
    expect((await abort(req, "qp-caps", "k0", sessions[0])).status).toBe(204);
    expect((await open(req, "qp-caps", "one-more", 5000)).status).toBe(200);
  });

  it(`anonymous writers a bucket policy lets in hold ${SESSIONS_PER_KEY} sessions open together, as one key`, async () => {
    const policy = { Version: "2012-10-17", Statement: [{ Effect: "Allow", Principal: "*", Action: "s3:PutObject", Resource: "arn:aws:s3:::qp-anonymous/*" }] };
    await s3ok("/qp-anonymous?policy", { method: "PUT", body: JSON.stringify(policy) }, 204);
    const anonymous: Signed = (path, init = {}) => exports.default.fetch(new Request(`${GATEWAY}${path}`, init));
    for (let i = 0; i < SESSIONS_PER_KEY; i++) expect((await open(anonymous, "qp-anonymous", `a${i}`, 5000)).status).toBe(200);
    const refused = await open(anonymous, "qp-anonymous", "one-more", 5000);
    expect([refused.status, await code(refused)]).toEqual([503, "SlowDown"]);
    expect((await open(req, "qp-anonymous", "signed", 5000)).status).toBe(200);
  });

  it(`a bucket holds at most ${SESSIONS_PER_BUCKET} sessions open (503 SlowDown beyond), whoever opened them`, async () => {
    // The other keys' sessions, written straight into the index (opening 999 through HTTP is slow).
    const stub = indexOf("qp-caps-bucket");
    await runInDurableObject(stub, async (_i: unknown, state: DurableObjectState) => {
      for (let i = 0; i < SESSIONS_PER_BUCKET - 1; i++) {
        state.storage.sql.exec(
          "INSERT INTO open_sessions (id, holder, bytes, until, parts) VALUES (?, ?, 0, ?, '[]')",
          `s${i}`,
          `KEY${i}`,
          Date.now() + 3_600_000,
        );
      }
    });
    await session(req, "qp-caps-bucket", "last", 5000);
    const refused = await s3("/qp-caps-bucket/over?shardgate-upload", { method: "POST", body: JSON.stringify({ size: 5000 }) });
    expect([refused.status, await code(refused)]).toEqual([503, "SlowDown"]);
    // Expired sessions do not count: one expires, and a session opens again.
    await runInDurableObject(stub, async (_i: unknown, state: DurableObjectState) => {
      state.storage.sql.exec("UPDATE open_sessions SET until = ? WHERE id = 's0'", Date.now() - 1000);
    });
    expect((await s3("/qp-caps-bucket/over?shardgate-upload", { method: "POST", body: JSON.stringify({ size: 5000 }) })).status).toBe(200);
  });
});

describe("quotas on the other write paths", () => {
  let req: Signed;
  beforeAll(async () => {
    for (const b of ["qp-form", "qp-copy", "qp-source", "qp-parts"]) await s3ok(`/${b}`, { method: "PUT" });
    req = await writer("qp-form", "qp-copy", "qp-source", "qp-parts");
  });

  it("a POST form over the quota is refused (403 QuotaExceeded), nothing stored, its shard files removed", async () => {
    await setQuota("qp-form", { maxBytes: 500_000 });
    const before = (await shardFiles()).size;
    const form = new FormData();
    for (const [name, value] of Object.entries({ key: "form.bin", ...(await signedPostFields([{ bucket: "qp-form" }, { key: "form.bin" }])) })) {
      form.append(name, value);
    }
    form.append("file", new File([randomBytes(600_000, 7)], "form.bin"));
    const serialized = new Response(form);
    const bytes = new Uint8Array(await serialized.arrayBuffer());
    const body = new Uint8Array([...bytes, 13, 10]); // the CRLF browsers end a form with (post-object.test.ts)
    const headers = { "content-type": serialized.headers.get("content-type") as string };
    const res = await exports.default.fetch(new Request(`${GATEWAY}/qp-form`, { method: "POST", body, headers }));
    expect([res.status, await code(res)]).toEqual([403, "QuotaExceeded"]);
    expect((await s3("/qp-form/form.bin", { method: "HEAD" })).status).toBe(404);
    expect(await usage("qp-form")).toEqual({ bytes: 0, objects: 0, pending: 0 });
    await expect.poll(async () => (await shardFiles()).size, { timeout: 10_000 }).toBe(before);
  });

  it("CopyObject (in a bucket and from another) over the quota is refused, its shard files removed", async () => {
    await setQuota("qp-copy", { maxBytes: 500_000 });
    await s3ok("/qp-copy/a", { method: "PUT", body: randomBytes(300_000, 8) });
    await s3ok("/qp-source/b", { method: "PUT", body: randomBytes(300_000, 9) });
    const before = (await shardFiles()).size;
    for (const source of ["/qp-copy/a", "/qp-source/b"]) {
      const res = await req("/qp-copy/copy", { method: "PUT", headers: { "x-amz-copy-source": source } });
      expect([res.status, await code(res)], source).toEqual([403, "QuotaExceeded"]);
    }
    expect((await s3("/qp-copy/copy", { method: "HEAD" })).status).toBe(404);
    expect(await usage("qp-copy")).toEqual({ bytes: 300_000, objects: 1, pending: 0 });
    await expect.poll(async () => (await shardFiles()).size, { timeout: 10_000 }).toBe(before);
  });

  it("UploadPart and UploadPartCopy over the quota are refused (the upload goes on), their shard files removed", async () => {
    await setQuota("qp-parts", { maxBytes: 500_000 });
    await s3ok("/qp-source/c", { method: "PUT", body: randomBytes(300_000, 10) });
    const created = await (await req("/qp-parts/big?uploads", { method: "POST" })).text();
    const uploadId = /<UploadId>([^<]+)</.exec(created)?.[1] as string;
    const part = (n: number, init: RequestInit) => req(`/qp-parts/big?partNumber=${n}&uploadId=${uploadId}`, { method: "PUT", ...init });
    const first = await part(1, { body: randomBytes(300_000, 11) });
    expect(first.status).toBe(200);
    const before = (await shardFiles()).size;
    const uploaded = await part(2, { body: randomBytes(300_000, 12) });
    expect([uploaded.status, await code(uploaded)]).toEqual([403, "QuotaExceeded"]);
    const copied = await part(3, { headers: { "x-amz-copy-source": "/qp-source/c" } });
    expect([copied.status, await code(copied)]).toEqual([403, "QuotaExceeded"]);
    expect(await usage("qp-parts")).toEqual({ bytes: 0, objects: 0, pending: 300_000 });
    await expect.poll(async () => (await shardFiles()).size, { timeout: 10_000 }).toBe(before);
    // A completion of the part that fit still goes through.
    const complete = `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${first.headers.get("etag")}</ETag></Part></CompleteMultipartUpload>`;
    expect((await req(`/qp-parts/big?uploadId=${uploadId}`, { method: "POST", body: complete })).status).toBe(200);
    expect(await usage("qp-parts")).toEqual({ bytes: 300_000, objects: 1, pending: 0 });
  });
});
