// Nodes added, drained and removed while the gateway runs (services/node-overlay.ts, config.ts's
// overlay; docs/operations.md): an S3 node is probed and added, new objects place shard files on
// it, a new configuration (what a restart makes) still has it, it is drained (objects readable, the
// node empty) and removed. And next to each step, what must be refused: bad ids, duplicates,
// endpoints that do not answer or carry credentials, secrets shown anywhere, drains below k + m,
// removing a node that is not drained, other keys than the admin's, nodes that do not exist.
// The S3 node here is a small S3 server over a Map that the Worker's outgoing fetch reaches (the
// CLI's end-to-end test in tests/node/cli.test.ts adds a real versitygw node).
import { env } from "cloudflare:workers";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { handleS3 } from "../../worker/src/api/handle";
import { type Env, OVERLAY_MAX_AGE_MS, overlayReads } from "../../worker/src/config";
import { DRAIN_SETTLE_MS } from "../../worker/src/services/node-overlay";
import { CREDENTIALS } from "../shared/credentials";
import { expectSameBytes, randomBytes } from "../shared/core-suite";
import { GATEWAY } from "./signed";

const base = env as unknown as Env;
const signer = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
const exec = { waitUntil: (p: Promise<unknown>) => void p.catch(() => {}) };

async function s3(on: Env, path: string, init: RequestInit = {}, as = signer): Promise<Response> {
  const headers = new Headers(init.headers);
  if (init.body instanceof Uint8Array) headers.set("content-length", String(init.body.length));
  if (typeof init.body === "string") headers.set("content-length", String(new TextEncoder().encode(init.body).length));
  return handleS3(await as.sign(`${GATEWAY}${path}`, { ...init, headers }), on, exec);
}
async function ok(on: Env, path: string, init: RequestInit = {}): Promise<Response> {
  const res = await s3(on, path, init);
  if (!res.ok) throw new Error(`${init.method ?? "GET"} ${path}: ${res.status} ${await res.text()}`);
  return res;
}
const admin = (on: Env, method: string, path: string, body?: unknown) =>
  s3(on, `/_shardgate/admin${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
  });
async function errorOf(res: Response): Promise<{ status: number; code?: string; message?: string; text: string }> {
  const text = await res.text();
  return { status: res.status, code: /<Code>([^<]*)<\/Code>/.exec(text)?.[1], message: /<Message>([^<]*)<\/Message>/.exec(text)?.[1], text };
}
type NodeRow = { id: string; kind: string; draining: boolean; source: string; endpoint?: string; drainedAt: string | null };
async function nodes(on: Env): Promise<{ writableNodes: number; nodes: NodeRow[]; text: string }> {
  const res = await admin(on, "GET", "/nodes");
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return { ...(JSON.parse(text) as { writableNodes: number; nodes: NodeRow[] }), text };
}

// --- a small S3 server the Worker's fetch reaches -----------------------------------------------
const FAKE = "http://s3-node.test:9000";
/** An endpoint that takes requests and never answers. */
const HANGING = "http://s3-hanging.test:9000";
const SECRET = "node-secret-Zq8v1Lw3Kx";
const KEY_ID = "AKNODEKEY1";
const store = new Map<string, Uint8Array>();
const realFetch = globalThis.fetch;

async function fakeS3(request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (!(request.headers.get("authorization") ?? "").includes(`Credential=${KEY_ID}/`))
    return new Response("<Error><Code>InvalidAccessKeyId</Code></Error>", { status: 403 });
  const [, bucket, ...rest] = url.pathname.split("/");
  if (bucket !== "shards") return new Response("<Error><Code>NoSuchBucket</Code></Error>", { status: 404 });
  const key = rest.map(decodeURIComponent).join("/");
  if (request.method === "GET" && key === "") {
    const contents = [...store.keys()].map((k) => `<Contents><Key>${k}</Key><LastModified>2020-01-01T00:00:00.000Z</LastModified></Contents>`).join("");
    return new Response(`<ListBucketResult>${contents}<IsTruncated>false</IsTruncated></ListBucketResult>`);
  }
  if (request.method === "PUT") {
    store.set(key, new Uint8Array(await request.arrayBuffer()));
    return new Response(null, { status: 200 });
  }
  if (request.method === "DELETE") {
    store.delete(key);
    return new Response(null, { status: 204 });
  }
  const bytes = store.get(key);
  if (!bytes) return new Response(null, { status: 404 });
  if (request.method === "HEAD") return new Response(null, { headers: { "content-length": String(bytes.length) } });
  const range = /^bytes=(\d+)-(\d+)$/.exec(request.headers.get("range") ?? "");
  if (!range) return new Response(bytes);
  const slice = bytes.slice(Number(range[1]), Number(range[2]) + 1);
  return new Response(slice, { status: 206, headers: { "content-range": `bytes ${range[1]}-${range[2]}/${bytes.length}` } });
}

const logged: string[] = [];
beforeAll(() => {
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    if (request.url.startsWith(HANGING)) return new Promise<Response>(() => {});
    return request.url.startsWith(FAKE) ? fakeS3(request) : realFetch(input, init);
  }) as typeof fetch;
  for (const level of ["log", "error", "warn", "info"] as const) {
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(" ")));
  }
});
afterAll(() => {
  globalThis.fetch = realFetch;
  vi.restoreAllMocks();
});

const s3Node = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  kind: "s3",
  endpoint: FAKE,
  bucket: "shards",
  region: "us-east-1",
  accessKeyId: KEY_ID,
  secretAccessKey: SECRET,
  ...extra,
});

const bucket = "overlay";
const written = new Map<string, Uint8Array>();

describe("nodes added and drained at runtime", () => {
  const gw = { ...base } as Env;

  it("adds an S3 node after a probe; new objects place shard files on it; the secret is never shown", async () => {
    const before = await nodes(gw);
    expect(before.nodes.map((n) => n.id)).not.toContain("S3_A");
    const res = await admin(gw, "POST", "/nodes", s3Node("S3_A"));
    const text = await res.text();
    expect(res.status, text).toBe(201);
    expect(text).not.toContain(SECRET);
    expect(store.size).toBe(0); // the probe's object is gone
    const after = await nodes(gw);
    expect(after.nodes.find((n) => n.id === "S3_A")).toMatchObject({ kind: "s3", source: "added", draining: false, endpoint: FAKE });
    expect(after.writableNodes).toBe(7);
    expect(after.text).not.toContain(SECRET);
    expect(after.text).not.toContain(KEY_ID);

    await ok(gw, `/${bucket}`, { method: "PUT" });
    for (let i = 0; i < 12; i++) {
      const bytes = randomBytes(20_000 + i * 1013, i + 77);
      await ok(gw, `/${bucket}/k${i}`, { method: "PUT", body: bytes });
      written.set(`k${i}`, bytes);
    }
    expect(store.size).toBeGreaterThan(0); // 6 of 7 nodes per object: none on S3_A has odds (1/7)^12
  });

  it("is still there in a new configuration (what a restart makes), with its secret opened from the sealed copy", async () => {
    const restarted = { ...base } as Env;
    expect((await nodes(restarted)).nodes.find((n) => n.id === "S3_A")).toMatchObject({ source: "added" });
    for (const [key, bytes] of written) expectSameBytes(new Uint8Array(await (await ok(restarted, `/${bucket}/${key}`)).arrayBuffer()), bytes);
    // What the registry keeps is sealed: the secret is not in it.
    const stub = base.BUCKET_REGISTRY.get(base.BUCKET_REGISTRY.idFromName("registry"));
    const overlay = JSON.stringify(await stub.nodeOverlay());
    expect(overlay).toContain("S3_A");
    expect(overlay).not.toContain(SECRET);
  });

  it("refuses bad ids, duplicates, unknown fields, disk nodes, endpoints with credentials and nodes that fail the probe; nothing is kept", async () => {
    const cases: [unknown, number, string, RegExp][] = [
      [s3Node("1bad"), 400, "InvalidArgument", /^id must be/],
      [s3Node("a/b"), 400, "InvalidArgument", /^id must be/],
      [s3Node("x".repeat(64)), 400, "InvalidArgument", /^id must be/],
      [s3Node("NODE_0"), 409, "NodeAlreadyExists", /NODE_0/],
      [s3Node("S3_A"), 409, "NodeAlreadyExists", /S3_A/],
      [s3Node("S3_B", { endpoint: "http://user:pw-Secret9@s3-node.test:9000" }), 400, "InvalidArgument", /must not hold credentials/],
      [s3Node("S3_B", { endpoint: "ftp://s3-node.test" }), 400, "InvalidArgument", /http/],
      [s3Node("S3_B", { endpoint: `${FAKE}/#frag` }), 400, "InvalidArgument", /fragment/],
      [s3Node("S3_B", { bucket: "No_Such" }), 400, "InvalidArgument", /^bucket must be/],
      [s3Node("S3_B", { secretAccessKey: "" }), 400, "InvalidArgument", /^secretAccessKey/],
      [s3Node("S3_B", { endpont: FAKE }), 400, "InvalidArgument", /Unknown field endpont/],
      [s3Node("S3_B", { kind: "disk" }), 400, "InvalidRequest", /restart/],
      [s3Node("S3_B", { endpoint: GATEWAY }), 400, "InvalidArgument", /this gateway/],
      [s3Node("S3_B", { endpoint: "http://127.0.0.1:9" }), 400, "NodeProbeFailed", /S3_B failed its probe \(PUT/],
      [s3Node("S3_B", { bucket: "other" }), 400, "NodeProbeFailed", /PUT/],
      [s3Node("S3_B", { accessKeyId: "AKWRONG" }), 400, "NodeProbeFailed", /403/],
    ];
    for (const [body, status, code, message] of cases) {
      const e = await errorOf(await admin(gw, "POST", "/nodes", body));
      expect(e, JSON.stringify(body)).toMatchObject({ status, code });
      expect(e.message, JSON.stringify(body)).toMatch(message);
      expect(e.text).not.toContain(SECRET);
      expect(e.text).not.toContain("pw-Secret9");
    }
    expect(await errorOf(await admin(gw, "POST", "/nodes", "not json"))).toMatchObject({ status: 400, code: "InvalidArgument" });
    expect((await nodes(gw)).nodes.map((n) => n.id).filter((id) => !id.startsWith("NODE_"))).toEqual(["S3_A"]);
  });

  it("gives up on a node that never answers (the probe is timed: here SHARDGATE_NODE_STALL_MS, at most 10 s)", async () => {
    const impatient = { ...base, SHARDGATE_NODE_STALL_MS: "500" } as Env;
    const started = Date.now();
    const e = await errorOf(await admin(impatient, "POST", "/nodes", s3Node("S3_H", { endpoint: HANGING })));
    expect(e).toMatchObject({ status: 400, code: "NodeProbeFailed" });
    expect(e.message).toMatch(/no answer within 500 ms|did not answer within 500 ms/);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await nodes(gw)).nodes.map((n) => n.id)).not.toContain("S3_H");
  });

  it("refuses other keys than the admin's", async () => {
    const res = await admin(gw, "POST", "/keys", { name: "not-admin" });
    const key = (await res.json()) as { id: string; secret: string };
    const other = new AwsClient({ accessKeyId: key.id, secretAccessKey: key.secret, service: "s3", region: "us-east-1" });
    for (const [method, path] of [
      ["POST", "/nodes"],
      ["PATCH", "/nodes/S3_A"],
      ["DELETE", "/nodes/S3_A"],
      ["GET", "/nodes"],
    ]) {
      const body = method === "GET" || method === "DELETE" ? undefined : JSON.stringify(method === "PATCH" ? { state: "draining" } : s3Node("S3_C"));
      const e = await errorOf(await s3(gw, `/_shardgate/admin${path}`, { method, body }, other));
      expect(e, `${method} ${path}`).toMatchObject({ status: 403, code: "AccessDenied" });
    }
    expect((await nodes(gw)).nodes.find((n) => n.id === "S3_A")?.draining).toBe(false);
  });

  it("refuses a drain that leaves fewer than k + m writable nodes, unknown nodes, and removing what is not drained", async () => {
    // 4 + 2 over 7 writable nodes: one may drain, not two.
    expect(await errorOf(await admin(gw, "PATCH", "/nodes/NOPE", { state: "draining" }))).toMatchObject({ status: 404, code: "NoSuchNode" });
    expect(await errorOf(await admin(gw, "DELETE", "/nodes/NOPE"))).toMatchObject({ status: 404, code: "NoSuchNode" });
    expect(await errorOf(await admin(gw, "PATCH", "/nodes/S3_A", { state: "gone" }))).toMatchObject({ status: 400, code: "InvalidArgument" });
    expect(await errorOf(await admin(gw, "DELETE", "/nodes/S3_A"))).toMatchObject({ status: 409, code: "NodeNotDraining" });
    expect(await errorOf(await admin(gw, "DELETE", "/nodes/NODE_1"))).toMatchObject({
      status: 400,
      code: "InvalidRequest",
      message: expect.stringMatching(/configured/),
    });
    expect(await errorOf(await s3(gw, "/_shardgate/admin/nodes/S3_A/drain", { method: "POST" }))).toMatchObject({ status: 409, code: "NodeNotDraining" });
    expect((await admin(gw, "PATCH", "/nodes/NODE_1", { state: "draining" })).status).toBe(200);
    const e = await errorOf(await admin(gw, "PATCH", "/nodes/S3_A", { state: "draining" }));
    expect(e).toMatchObject({ status: 409, code: "TooFewNodes" });
    expect(e.message).toMatch(/leave 5 writable nodes; 4\+2 needs at least 6/);
    expect((await admin(gw, "PATCH", "/nodes/NODE_1", { state: "active" })).status).toBe(200);
    expect((await nodes(gw)).writableNodes).toBe(7);
  });

  it("drains the node (objects readable, the node empty) and removes it; a GET makes no metadata call for the overlay while it is fresh", async () => {
    const changed = await admin(gw, "PATCH", "/nodes/S3_A", { state: "draining" });
    expect(await changed.json()).toMatchObject({ id: "S3_A", state: "draining", writableNodes: 6 });
    // Not drained yet: removing is refused.
    expect(await errorOf(await admin(gw, "DELETE", "/nodes/S3_A"))).toMatchObject({ status: 409, code: "NodeNotEmpty" });
    // New objects do not go to it.
    const filesBefore = store.size;
    await ok(gw, `/${bucket}/new-one`, { method: "PUT", body: randomBytes(30_000, 5) });
    written.set("new-one", randomBytes(30_000, 5));
    expect(store.size).toBe(filesBefore);

    const walk = await ok(gw, "/_shardgate/admin/nodes/S3_A/drain?max-objects=1000", { method: "POST" });
    const report = (await walk.json()) as { shardsMoved: number; next: unknown; drained: boolean; partsLeft: number };
    expect(report).toMatchObject({ next: null, drained: true, partsLeft: 0 });
    expect(report.shardsMoved).toBeGreaterThan(0);
    expect(store.size).toBe(0);
    for (const [key, bytes] of written) expectSameBytes(new Uint8Array(await (await ok(gw, `/${bucket}/${key}`)).arrayBuffer()), bytes);
    expect((await nodes(gw)).nodes.find((n) => n.id === "S3_A")?.drainedAt).toMatch(/^\d{4}-/);

    // Reads pay no overlay round trip while the overlay is fresh (2 s): 40 GETs and HEADs, at most one read.
    const reads = overlayReads();
    for (let i = 0; i < 20; i++) {
      await ok(gw, `/${bucket}/k${i % 12}`);
      await ok(gw, `/${bucket}/k${i % 12}`, { method: "HEAD" });
    }
    expect(overlayReads() - reads).toBeLessThanOrEqual(1);

    const removed = await admin(gw, "DELETE", "/nodes/S3_A");
    expect(await removed.json()).toMatchObject({ id: "S3_A", removed: true, nodes: 6 });
    expect((await nodes(gw)).nodes.map((n) => n.id)).not.toContain("S3_A");
    expect((await nodes({ ...base } as Env)).nodes.map((n) => n.id)).not.toContain("S3_A");
    for (const [key, bytes] of written) expectSameBytes(new Uint8Array(await (await ok(gw, `/${bucket}/${key}`)).arrayBuffer()), bytes);
  });

  it("proves a node empty only with walks that begin after every isolate has seen it draining", () => {
    // services/ cannot import config.ts's value: the two are kept apart, and in this order.
    expect(DRAIN_SETTLE_MS).toBeGreaterThan(OVERLAY_MAX_AGE_MS);
  });

  it("never logs a node's secret", () => {
    expect(logged.join("\n")).not.toContain(SECRET);
  });
});
