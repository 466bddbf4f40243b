// The direct path end to end on the production runtime, with the client library in Node:
//   - over six separate S3 node processes that clients may reach (`npm run cluster --client-urls`):
//     shard files go straight to the nodes with presigned URLs, never through the gateway, and a
//     download survives a node killed while it runs;
//   - over `npm start`'s disk nodes, which only the gateway reaches: shard files go through its
//     shard endpoint, checked chunk by chunk on the way.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { codePart } from "../../client/src/coding";
import { ShardgateClient } from "../../client/src/index";
import * as bindings from "../../core/pkg/shardgate_core.js";
import { Core } from "../../worker/src/shared/core-api";
import type { DirectUploadSession } from "../../worker/src/shared/direct-protocol";
import { randomBytes } from "../shared/core-suite";
import { Cluster, signal } from "./cluster";
import { CREDENTIALS, Gateway } from "./gateway";

const memory = bindings.initSync({ module: readFileSync(new URL("../../core/pkg/shardgate_core_bg.wasm", import.meta.url)) }).memory;
const core = new Core(bindings, memory);
const MIB = 1 << 20;
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

describe("the direct path over S3 nodes that clients reach (presigned node URLs)", () => {
  const c = new Cluster();
  let client: ShardgateClient;

  beforeAll(async () => {
    await c.start([], { clientUrls: true });
    client = new ShardgateClient({ endpoint: c.info.endpoint, ...CREDENTIALS, core, readStallMs: 2_000 });
    const res = await c.admin.fetch(`${c.info.endpoint}/direct`, { method: "PUT" });
    expect(res.status).toBe(200);
  }, 180_000);
  afterAll(() => c.stop());

  it("64 MiB up and down, the shard files straight to and from the nodes; a node killed mid-download changes no byte", async () => {
    const data = randomBytes(64 * MIB, 61);
    let session: DirectUploadSession | undefined;
    const nodeBytes: Record<string, number> = {};
    const up = await client.upload("direct", "big.bin", data, {
      onSession: (s) => void (session = s),
      onProgress: (p) => Object.assign(nodeBytes, p.nodeBytes),
    });
    expect(up).toMatchObject({ mode: "direct", etag: expect.stringMatching(/^[0-9a-f]{32}-4$/) });
    // Every shard file went to its node's own endpoint: the gateway never saw a data byte.
    const nodes = new Set(c.info.nodes.map((n) => new URL(n.endpoint).host));
    const urls = session?.mode === "direct" ? session.parts.flatMap((p) => p.urls) : [];
    expect(urls).toHaveLength(4 * 6);
    for (const url of urls) expect(nodes.has(new URL(url).host), url).toBe(true);
    expect(Object.values(nodeBytes).reduce((a, b) => a + b, 0)).toBe(
      session?.mode === "direct" ? session.parts.reduce((n, p) => n + 6 * p.shardFileBytes, 0) : -1,
    );

    // GET through the gateway (the classic path) reads what the client coded.
    const got = await c.admin.fetch(`${c.info.endpoint}/direct/big.bin`);
    expect(sha256(new Uint8Array(await got.arrayBuffer()))).toBe(sha256(data));

    // The client's own download, with a node killed once the first bytes are in: one that holds a
    // data shard of the last part, so the download must read around it (a node holding only parity
    // of the parts still to come would not be missed).
    const last = session?.mode === "direct" ? session.parts[session.parts.length - 1] : undefined;
    const victim = c.info.nodes.find((n) => n.id === last?.placement[0]);
    expect(victim, `node of the last part's first data shard (${last?.placement[0]})`).toBeDefined();
    if (!victim) return;
    const down = await client.download("direct", "big.bin");
    const reader = down.body.getReader();
    const pieces: Uint8Array[] = [];
    let received = 0;
    let killed = false;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      pieces.push(value);
      received += value.length;
      if (!killed && received > 8 * MIB) {
        signal(victim, "SIGKILL");
        killed = true;
      }
    }
    expect(killed).toBe(true);
    expect(received).toBe(data.length);
    expect(sha256(Buffer.concat(pieces))).toBe(sha256(data));
    expect(down.readAround.length).toBeGreaterThan(0);
    await c.restart(victim);
  }, 180_000);

  it("a bucket with object lock gets only the gateway's shard URLs; a session with node URLs does not commit once its bucket has lock", async () => {
    const admin = (path: string, init: RequestInit = {}) => c.admin.fetch(`${c.info.endpoint}${path}`, init);
    expect((await admin("/locked", { method: "PUT", headers: { "x-amz-bucket-object-lock-enabled": "true" } })).status).toBe(200);
    let locked: DirectUploadSession | undefined;
    const data = randomBytes(3 * MIB, 62);
    expect((await client.upload("locked", "a.bin", data, { onSession: (s) => void (locked = s) })).mode).toBe("direct");
    const urls = locked?.mode === "direct" ? locked.parts.flatMap((p) => p.urls) : [];
    expect(urls).toHaveLength(6);
    for (const url of urls) expect(url.startsWith("/_shardgate/shards/locked/"), url).toBe(true);

    // Object lock enabled on a versioned bucket while a session with presigned node URLs is open.
    expect((await admin("/later", { method: "PUT" })).status).toBe(200);
    const versioning = "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
    expect((await admin("/later?versioning", { method: "PUT", body: versioning })).status).toBe(200);
    const lock = "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>";
    let opened: DirectUploadSession | undefined;
    const late = new ShardgateClient({
      endpoint: c.info.endpoint,
      ...CREDENTIALS,
      core,
      fetch: async (request) => {
        if (new URL(request.url).searchParams.has("shardgate-commit"))
          expect((await admin("/later?object-lock", { method: "PUT", body: lock })).status).toBe(200);
        return fetch(request);
      },
    });
    await expect(late.upload("later", "b.bin", data, { onSession: (s) => void (opened = s) })).rejects.toMatchObject({ code: "InvalidRequest" });
    const presigned = opened?.mode === "direct" ? opened.parts.flatMap((p) => p.urls) : [];
    expect(presigned.every((url) => url.startsWith("http"))).toBe(true);
    expect((await admin("/later/b.bin")).status).toBe(404);
  }, 120_000);
});

describe("the direct path over npm start's disk nodes (through the gateway's shard endpoint)", () => {
  const g = new Gateway({ runtime: "workerd" });
  let client: ShardgateClient;
  const aws = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });

  beforeAll(async () => {
    await g.start();
    client = new ShardgateClient({ endpoint: g.base, ...CREDENTIALS, core });
    expect((await aws.fetch(`${g.base}/disk`, { method: "PUT" })).status).toBe(200);
  }, 120_000);
  afterAll(() => g.stop());

  it("24 MiB up and down byte for byte; a rotten shard file is refused as it comes", async () => {
    const data = randomBytes(24 * MIB + 11, 67);
    let session: DirectUploadSession | undefined;
    const up = await client.upload("disk", "d.bin", data, { onSession: (s) => void (session = s) });
    expect(up.mode).toBe("direct");
    const urls = session?.mode === "direct" ? session.parts.flatMap((p) => p.urls) : [];
    for (const url of urls) expect(url.startsWith("/_shardgate/shards/"), url).toBe(true);
    const down = await client.download("disk", "d.bin");
    expect(sha256(new Uint8Array(await new Response(down.body).arrayBuffer()))).toBe(sha256(data));

    // A shard file with one flipped bit: BadDigest, and the node holds nothing under its key.
    const res = await fetch(`${g.base}/disk/rotten.bin?shardgate-upload`, { method: "POST" });
    expect(res.status).toBe(403); // sessions are signed requests
    const opened = (await (
      await aws.fetch(`${g.base}/disk/rotten.bin?shardgate-upload`, { method: "POST", body: JSON.stringify({ size: MIB }) })
    ).json()) as DirectUploadSession;
    if (opened.mode !== "direct") throw new Error("expected a direct session");
    const coded = codePart(core, opened.geometry, opened.parts[0], randomBytes(MIB, 71));
    const rotten = coded.files[0].slice();
    rotten[100] ^= 4;
    const url = `${g.base}${opened.parts[0].urls[0]}`;
    const refused = await fetch(url, { method: "PUT", body: rotten });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("BadDigest");
    expect((await fetch(url, { method: "HEAD" })).status).toBe(404);
    expect(g.hungRequests).toEqual([]);
  }, 120_000);
});
