// The direct path (docs/direct-path.md) inside workerd: the client library (client/) codes and
// decodes with the same core, moves shard files through the gateway to the R2 nodes, and commits.
// Forged commits (rotten chunks, parity that does not match the data, a wrong MD5, too few shard
// files, parts or tickets changed) are refused with nothing visible, and abandoned sessions leave
// nothing behind. The nodes here are R2 bindings: only the gateway reaches them, so every shard
// file goes through its shard endpoint.
import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { codePart } from "../../client/src/coding";
import { ShardgateClient, type ShardgateError } from "../../client/src/index";
import { loadConfig, type Env } from "../../worker/src/config";
import { core } from "../../worker/src/core";
import type { DirectUploadSession } from "../../worker/src/shared/direct-protocol";
import { sweepOrphans } from "../../worker/src/services/orphans";
import { CREDENTIALS } from "../shared/credentials";
import { expectSameBytes, randomBytes } from "../shared/core-suite";
import { node, shardFiles } from "./nodes";
import { GATEWAY, s3, s3ok } from "./signed";

const bucket = "direct";
const MIB = 1 << 20;
const gatewayEnv = env as unknown as Env;

const send = (request: Request) => exports.default.fetch(request);
const client = new ShardgateClient({ endpoint: GATEWAY, ...CREDENTIALS, core, fetch: send });

type Direct = Extract<DirectUploadSession, { mode: "direct" }>;

async function session(key: string, size: number): Promise<Direct> {
  const res = await s3ok(`/${bucket}/${key}?shardgate-upload`, { method: "POST", body: JSON.stringify({ size }) });
  const opened = (await res.json()) as DirectUploadSession;
  if (opened.mode !== "direct") throw new Error(`a classic session: ${opened.reason}`);
  return opened;
}

const putShard = (url: string, body: Uint8Array) => send(new Request(`${GATEWAY}${url}`, { method: "PUT", body }));

function commitBody(s: Direct, partMd5s: string[], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ upload: s.upload, parts: s.parts.map(({ storageId, placement }) => ({ storageId, placement })), partMd5s, ...extra });
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function errorOf(res: Response): Promise<string | undefined> {
  return /<Code>([^<]*)<\/Code>/.exec(await res.text())?.[1];
}

/** Every shard file of a session's parts still on its node. */
async function storedFiles(s: Direct): Promise<number> {
  const files = await shardFiles();
  return s.parts.reduce((n, part) => n + part.placement.filter((_, shard) => files.has(`${part.storageId}/${shard}`)).length, 0);
}

beforeAll(async () => {
  await s3ok(`/${bucket}`, { method: "PUT" });
});

describe("the direct path", () => {
  it("an object coded by the client reads back byte for byte, through GET and through its read plan", async () => {
    // 5.5 MiB in parts of 2 MiB (SHARDGATE_DIRECT_PART_BYTES in vitest.config.ts): three parts.
    const data = randomBytes(5.5 * MIB, 19);
    let sessions = 0;
    const progress: number[] = [];
    const up = await client.upload(bucket, "big.bin", data, {
      contentType: "application/x-test",
      metadata: { origin: "direct-path" },
      onSession: () => void sessions++,
      onProgress: (p) => progress.push(p.sentBytes),
    });
    expect(up.mode).toBe("direct");
    expect(up.etag).toMatch(/^[0-9a-f]{32}-3$/);
    expect(sessions).toBe(1);
    expect(progress.at(-1)).toBe(data.length);

    const got = await s3ok(`/${bucket}/big.bin`);
    expect(got.headers.get("etag")).toBe(`"${up.etag}"`);
    expect(got.headers.get("content-type")).toBe("application/x-test");
    expect(got.headers.get("x-amz-meta-origin")).toBe("direct-path");
    expectSameBytes(new Uint8Array(await got.arrayBuffer()), data);
    const range = await s3ok(`/${bucket}/big.bin`, { headers: { range: "bytes=2097000-2098000" } }, 206);
    expectSameBytes(new Uint8Array(await range.arrayBuffer()), data.subarray(2097000, 2098001));

    const down = await client.download(bucket, "big.bin");
    expect(down).toMatchObject({ mode: "direct", size: data.length, etag: up.etag, contentType: "application/x-test" });
    expectSameBytes(await readAll(down.body), data);
    expect(down.readAround).toEqual([]);
  });

  it("a download reads parity around shard files that are gone, and still gets every byte", async () => {
    const data = randomBytes(3 * MIB + 777, 23);
    await client.upload(bucket, "degraded.bin", data);
    const plan = (await (await s3ok(`/${bucket}/degraded.bin?shardgate-plan`)).json()) as { parts: { storageId: string; placement: string[] }[] };
    // Data shard 1 of every part gone from its node.
    for (const part of plan.parts) await node(part.placement[1]).delete(`${part.storageId}/1`);
    const down = await client.download(bucket, "degraded.bin");
    expectSameBytes(await readAll(down.body), data);
    expect(down.readAround.map((r) => [r.shard, r.why])).toContainEqual([1, "missing"]);
  });

  it("refuses a shard file with a rotten chunk or the wrong length as it comes, storing nothing", async () => {
    const data = randomBytes(600_000, 29);
    const s = await session("rotten.bin", data.length);
    const coded = codePart(core, s.geometry, s.parts[0], data);
    const rotten = coded.files[2].slice();
    rotten[40_000] ^= 1;
    const refused = await putShard(s.parts[0].urls[2], rotten);
    expect(refused.status).toBe(400);
    expect(await errorOf(refused)).toBe("BadDigest");
    const short = await putShard(s.parts[0].urls[3], coded.files[3].subarray(1));
    expect(short.status).toBe(400);
    expect(await storedFiles(s)).toBe(0);
    // A ticket whose signature is changed opens nothing, nor does one under another bucket's path.
    const forged = await putShard(`${s.parts[0].urls[0].slice(0, -3)}AAA`, coded.files[0]);
    expect(forged.status).toBe(403);
    const elsewhere = await putShard(s.parts[0].urls[0].replace(`/${bucket}/`, "/direct-sse/"), coded.files[0]);
    expect(elsewhere.status).toBe(403);
    expect(await storedFiles(s)).toBe(0);
  });

  it("refuses a commit whose parity does not match its data (every chunk checksum valid), and nothing becomes visible", async () => {
    const data = randomBytes(2 * MIB, 31);
    const s = await session("forged.bin", data.length);
    const honest = codePart(core, s.geometry, s.parts[0], data);
    const other = codePart(core, s.geometry, s.parts[0], randomBytes(2 * MIB, 32));
    const k = s.geometry.dataShards;
    for (const [shard, url] of s.parts[0].urls.entries()) {
      expect((await putShard(url, (shard < k ? honest : other).files[shard])).status).toBe(200);
    }
    const res = await s3(`/${bucket}/forged.bin?shardgate-commit`, { method: "POST", body: commitBody(s, [honest.md5]) });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/BadDigest.*parity/s);
    expect((await s3(`/${bucket}/forged.bin`)).status).toBe(404);
    // A refused commit ends its session: its shard files are removed after the answer, and
    // neither a commit nor an abort of it is taken afterwards.
    await expect.poll(() => storedFiles(s)).toBe(0);
    expect(await errorOf(await s3(`/${bucket}/forged.bin?shardgate-commit`, { method: "POST", body: commitBody(s, [honest.md5]) }))).toBe("InvalidRequest");
    await expect(client.abort(bucket, "forged.bin", s)).rejects.toMatchObject({ code: "NoSuchUpload" });
  });

  it("refuses a commit whose MD5 is not the part's when the sample covers the part", async () => {
    const data = randomBytes(900_000, 37); // one block: the sample reads all of it
    const s = await session("md5.bin", data.length);
    const coded = codePart(core, s.geometry, s.parts[0], data);
    for (const [shard, url] of s.parts[0].urls.entries()) await putShard(url, coded.files[shard]);
    const wrong = coded.md5.replace(/^./, (c) => (c === "0" ? "1" : "0"));
    const res = await s3(`/${bucket}/md5.bin?shardgate-commit`, { method: "POST", body: commitBody(s, [wrong]) });
    expect(await errorOf(res)).toBe("BadDigest");
    expect((await s3(`/${bucket}/md5.bin`)).status).toBe(404);
  });

  it("commits with one shard file missing (the write quorum), never with two, and heals the object later", async () => {
    const data = randomBytes(1.5 * MIB, 41);
    const few = await session("few.bin", data.length);
    const coded = codePart(core, few.geometry, few.parts[0], data);
    for (const [shard, url] of few.parts[0].urls.entries()) if (shard < 4) await putShard(url, coded.files[shard]);
    const refused = await s3(`/${bucket}/few.bin?shardgate-commit`, { method: "POST", body: commitBody(few, [coded.md5]) });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/Only 4 shard files of part 1 are stored; 5 are needed/);

    const enough = await session("few.bin", data.length);
    const again = codePart(core, enough.geometry, enough.parts[0], data);
    for (const [shard, url] of enough.parts[0].urls.entries()) if (shard !== 5) await putShard(url, again.files[shard]);
    await s3ok(`/${bucket}/few.bin?shardgate-commit`, { method: "POST", body: commitBody(enough, [again.md5]) });
    expectSameBytes(new Uint8Array(await (await s3ok(`/${bucket}/few.bin`)).arrayBuffer()), data);
  });

  it("a commit must echo the session's parts, for the session's object, before it expires", async () => {
    const data = randomBytes(700_000, 43);
    const s = await session("echo.bin", data.length);
    const coded = codePart(core, s.geometry, s.parts[0], data);
    for (const [shard, url] of s.parts[0].urls.entries()) await putShard(url, coded.files[shard]);
    const moved = { ...s, parts: s.parts.map((p) => ({ ...p, placement: [...p.placement].reverse() })) };
    expect(await errorOf(await s3(`/${bucket}/echo.bin?shardgate-commit`, { method: "POST", body: commitBody(moved, [coded.md5]) }))).toBe("InvalidRequest");
    expect(await errorOf(await s3(`/${bucket}/elsewhere.bin?shardgate-commit`, { method: "POST", body: commitBody(s, [coded.md5]) }))).toBe("AccessDenied");
    // A commit body is JSON of at most 1 MiB.
    const huge = await s3(`/${bucket}/echo.bin?shardgate-commit`, { method: "POST", body: commitBody(s, [coded.md5], { pad: "x".repeat(1024 * 1024) }) });
    expect(await errorOf(huge)).toBe("EntityTooLarge");
    const forged = { ...s, upload: `${s.upload.slice(0, -2)}xx` };
    expect(await errorOf(await s3(`/${bucket}/echo.bin?shardgate-commit`, { method: "POST", body: commitBody(forged, [coded.md5]) }))).toBe("AccessDenied");
    // Conditional like a PUT: the key exists now, so If-None-Match: * refuses a new session's commit.
    await s3ok(`/${bucket}/echo.bin?shardgate-commit`, { method: "POST", body: commitBody(s, [coded.md5]) });
    const next = await session("echo.bin", data.length);
    const again = codePart(core, next.geometry, next.parts[0], data);
    for (const [shard, url] of next.parts[0].urls.entries()) await putShard(url, again.files[shard]);
    const conditional = await s3(`/${bucket}/echo.bin?shardgate-commit`, {
      method: "POST",
      body: commitBody(next, [coded.md5]),
      headers: { "if-none-match": "*" },
    });
    expect(conditional.status).toBe(412);
    // A session commits once: a replay (with or without conditions) is refused, an abort after
    // the commit too, and neither touches the committed object's shard files.
    for (const headers of [{}, { "if-none-match": "*" }] as Record<string, string>[]) {
      const replay = await s3(`/${bucket}/echo.bin?shardgate-commit`, { method: "POST", body: commitBody(s, [coded.md5]), headers });
      expect(replay.status).toBe(400);
      expect(await replay.text()).toContain("was committed, aborted or has expired");
    }
    await expect(client.abort(bucket, "echo.bin", s)).rejects.toMatchObject({ code: "NoSuchUpload" });
    // Nor does a committed session's shard URL write any more (it would change the object under its readers).
    const overwrite = await putShard(s.parts[0].urls[0], codePart(core, s.geometry, s.parts[0], randomBytes(data.length, 44)).files[0]);
    expect(overwrite.status).toBe(403);
    expectSameBytes(new Uint8Array(await (await s3ok(`/${bucket}/echo.bin`)).arrayBuffer()), data);
    expect(await storedFiles(s)).toBe(6);
  });

  it("an aborted session's shard files are removed at once; an abandoned one's by the orphan sweep", async () => {
    const data = randomBytes(1 * MIB + 5, 47);
    const aborted = await session("abandoned.bin", data.length);
    const coded = codePart(core, aborted.geometry, aborted.parts[0], data);
    for (const [shard, url] of aborted.parts[0].urls.entries()) await putShard(url, coded.files[shard]);
    expect(await storedFiles(aborted)).toBe(6);
    await client.abort(bucket, "abandoned.bin", aborted);
    expect(await storedFiles(aborted)).toBe(0);
    // An aborted session does not commit afterwards.
    const late = await s3(`/${bucket}/abandoned.bin?shardgate-commit`, { method: "POST", body: commitBody(aborted, [coded.md5]) });
    expect(late.status).toBe(400);

    const abandoned = await session("abandoned.bin", data.length);
    for (const [shard, url] of abandoned.parts[0].urls.entries())
      await putShard(url, codePart(core, abandoned.geometry, abandoned.parts[0], data).files[shard]);
    expect(await storedFiles(abandoned)).toBe(6);
    await sweepOrphans(gatewayEnv, loadConfig(gatewayEnv), core, { graceMs: 0, now: Date.now() + 60_000 });
    expect(await storedFiles(abandoned)).toBe(0);
    expect((await s3(`/${bucket}/abandoned.bin`)).status).toBe(404);
  });

  it("a resumed upload sends only the shard files that are not stored yet", async () => {
    const data = randomBytes(4 * MIB + 3, 53);
    let kept: DirectUploadSession | undefined;
    const first = new ShardgateClient({
      endpoint: GATEWAY,
      ...CREDENTIALS,
      core,
      // The connection drops after the first part's shard files went out.
      fetch: (request) => (new URL(request.url).searchParams.has("shardgate-commit") ? Promise.reject(new Error("offline")) : send(request)),
    });
    await expect(first.upload(bucket, "resumed.bin", data, { onSession: (s) => void (kept = s) })).rejects.toThrow("offline");
    const sent: string[] = [];
    const states: string[] = [];
    const second = new ShardgateClient({
      endpoint: GATEWAY,
      ...CREDENTIALS,
      core,
      fetch: (request) => (request.method === "PUT" && sent.push(request.url), send(request)),
    });
    const up = await second.upload(bucket, "resumed.bin", data, { session: kept, onProgress: (p) => void states.push(...p.shards.map((s) => s.state)) });
    expect(up.mode).toBe("direct");
    expect(sent).toEqual([]);
    expect(states).toContain("stored before");
    expectSameBytes(new Uint8Array(await (await s3ok(`/${bucket}/resumed.bin`)).arrayBuffer()), data);
  });

  it("shard URLs answer with their bucket's CORS rules, so apps on other origins can use them", async () => {
    const rules =
      "<CORSConfiguration><CORSRule><AllowedOrigin>https://app.example</AllowedOrigin><AllowedMethod>PUT</AllowedMethod><AllowedMethod>GET</AllowedMethod>" +
      "<AllowedHeader>*</AllowedHeader><ExposeHeader>Content-Range</ExposeHeader></CORSRule></CORSConfiguration>";
    await s3ok(`/${bucket}?cors`, {
      method: "PUT",
      body: rules,
      headers: { "content-md5": btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("MD5", new TextEncoder().encode(rules))))) },
    });
    const data = randomBytes(300_000, 61);
    const s = await session("cors.bin", data.length);
    const url = `${GATEWAY}${s.parts[0].urls[0]}`;
    const preflight = await send(new Request(url, { method: "OPTIONS", headers: { origin: "https://app.example", "access-control-request-method": "PUT" } }));
    expect(preflight.status).toBe(200);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("https://app.example");
    const coded = codePart(core, s.geometry, s.parts[0], data);
    const put = await send(new Request(url, { method: "PUT", body: coded.files[0], headers: { origin: "https://app.example" } }));
    expect(put.status).toBe(200);
    expect(put.headers.get("access-control-allow-origin")).toBe("https://app.example");
    await s3ok(`/${bucket}?cors`, { method: "DELETE" }, 204);
  });

  it("small objects and buckets that encrypt go the classic way", async () => {
    const small = await client.upload(bucket, "small.txt", new TextEncoder().encode("tiny"));
    expect(small.mode).toBe("classic");
    expect(await (await s3ok(`/${bucket}/small.txt`)).text()).toBe("tiny");
    expect((await client.download(bucket, "small.txt")).mode).toBe("classic");

    await s3ok("/direct-sse", { method: "PUT" });
    await s3ok("/direct-sse?encryption", {
      method: "PUT",
      body: "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>",
    });
    const data = randomBytes(300_000, 59);
    expect((await client.upload("direct-sse", "e.bin", data)).mode).toBe("classic");
    const down = await client.download("direct-sse", "e.bin");
    expect(down.mode).toBe("classic");
    expectSameBytes(await readAll(down.body), data);
    await expect(client.upload("no-such-bucket", "x.bin", data)).rejects.toMatchObject({ code: "NoSuchBucket" } satisfies Partial<ShardgateError>);
  });
});
