// @shardgate/client as a package (client/build.mjs, client/package.json): `npm pack` builds it and
// packs client/dist; a project outside the repository installs the tarball and uses it as anyone
// would, with nothing of the repository's own: from Node (a process of its own importing the
// package by name: the core loaded by the package itself from the .wasm next to it), type-checked
// against the package's declarations alone, and from a page bundled by Vite and opened in Chromium
// on an origin of its own (the bucket's CORS rules let it in). Against `npm start`'s gateway.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { extname, join } from "node:path";
import { AwsClient } from "aws4fetch";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, Gateway } from "./gateway";
import { ROOT, runOk } from "./tools";

const CHROMIUM = "/usr/bin/chromium";
const BUCKET = "pkg";
const MIB = 1 << 20;

/** The Node side of the project: upload, whole and ranged downloads, and calls aborted mid-way; prints what it saw as JSON. */
const NODE_SCRIPT = `
import { createHash } from "node:crypto";
import { ShardgateClient } from "@shardgate/client";

const MIB = 1 << 20;
const [endpoint, accessKeyId, secretAccessKey, bucket] = process.argv.slice(2);
const sha = (b) => createHash("sha256").update(b).digest("hex");
const bytes = (n, seed) => {
  const out = new Uint8Array(n);
  let x = seed;
  for (let i = 0; i < n; i++) out[i] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
  return out;
};
const read = async (stream) => new Uint8Array(await new Response(stream).arrayBuffer());
// Every request the client sends, with when it was sent.
const sent = [];
const client = new ShardgateClient({
  endpoint, accessKeyId, secretAccessKey,
  fetch: (request) => (sent.push({ at: performance.now(), method: request.method, url: request.url }), fetch(request)),
});
const out = {};

const data = bytes(20 * MIB + 5, 7); // two parts of 16 MiB
out.upload = await client.upload(bucket, "node.bin", data, { contentType: "application/x-test" });
const whole = await client.download(bucket, "node.bin");
out.whole = { mode: whole.mode, size: whole.size, range: whole.range, same: sha(await read(whole.body)) === sha(data) };
const ranges = [[16 * MIB - 1000, 16 * MIB + 5000], [20 * MIB, undefined], [3, 4]];
out.ranges = [];
for (const [start, end] of ranges) {
  const got = await client.download(bucket, "node.bin", { range: { start, end } });
  const bytesGot = await read(got.body);
  out.ranges.push({ range: got.range, length: bytesGot.length, same: sha(bytesGot) === sha(data.subarray(start, end)) });
}

// An upload aborted once its first shard file is stored: it rejects at once and sends nothing more.
{
  const controller = new AbortController();
  let session;
  let abortedAt = 0;
  const big = bytes(40 * MIB, 11);
  const error = await client
    .upload(bucket, "aborted.bin", big, {
      signal: controller.signal,
      onSession: (s) => (session = s),
      onProgress: (p) => {
        if (!abortedAt && p.shards.some((s) => s.state === "sent")) {
          abortedAt = performance.now();
          controller.abort();
        }
      },
    })
    .then(() => null, (e) => e);
  const settledMs = performance.now() - abortedAt;
  await new Promise((r) => setTimeout(r, 1000)); // anything the upload still meant to send
  out.abortedUpload = {
    name: error?.name,
    settledMs,
    sentAfter: sent.filter((r) => r.at > abortedAt).length,
    commits: sent.filter((r) => r.url.includes("aborted.bin?shardgate-commit")).length,
    parts: session?.parts.length,
  };
  // The session's shard files, removed now (or later by the orphan sweep).
  await client.abort(bucket, "aborted.bin", session);
  out.abortedUpload.removed = true;
}

// A download aborted after its first piece: the body errors at once, no shard request follows.
{
  const controller = new AbortController();
  const down = await client.download(bucket, "node.bin", { signal: controller.signal });
  const reader = down.body.getReader();
  const first = await reader.read();
  const abortedAt = performance.now();
  controller.abort();
  const error = await reader.read().then(() => null, (e) => e);
  const settledMs = performance.now() - abortedAt;
  await new Promise((r) => setTimeout(r, 500));
  out.abortedDownload = { first: first.value.length, name: error?.name, settledMs, sentAfter: sent.filter((r) => r.at > abortedAt).length };
}

// Downloads aborted while a read waits on shard streams, three in a row: each read rejects at once,
// nothing is sent after the abort, and the next download reads the nodes as before.
{
  out.abortedReads = [];
  let sentAfter = 0;
  for (let i = 0; i < 3; i++) {
    const controller = new AbortController();
    const down = await client.download(bucket, "node.bin", { signal: controller.signal });
    const reader = down.body.getReader();
    await reader.read();
    const pending = reader.read();
    const before = sent.length;
    controller.abort();
    out.abortedReads.push(await pending.then(() => null, (e) => e.name));
    await new Promise((r) => setTimeout(r, 200));
    sentAfter += sent.length - before;
  }
  const again = await client.download(bucket, "node.bin");
  out.afterAbortedReads = { sentAfter, same: sha(await read(again.body)) === sha(data), readAround: again.readAround };
}

// Already aborted: nothing is sent; a reason given to abort() is what the call rejects with.
{
  const before = sent.length;
  const error = await client.upload(bucket, "never.bin", bytes(MIB, 3), { signal: AbortSignal.abort() }).then(() => null, (e) => e);
  const controller = new AbortController();
  controller.abort(new Error("changed my mind"));
  const reason = await client.download(bucket, "node.bin", { signal: controller.signal }).then(() => null, (e) => e);
  out.alreadyAborted = { name: error?.name, reason: reason?.message, sent: sent.length - before };
}
console.log(JSON.stringify(out));
`;

/** Type-checked against the package's declarations only (Node's own ESM resolution, as strict as it gets). */
const TYPES_CHECK = `
import { type Download, loadCore, ShardgateClient, ShardgateError, type UploadProgress } from "@shardgate/client";

export async function use(file: Blob, signal: AbortSignal): Promise<number> {
  const client = new ShardgateClient({ endpoint: "http://127.0.0.1:8787", accessKeyId: "a", secretAccessKey: "b", core: await loadCore() });
  const up = await client.upload("b", "k", file, { signal, onProgress: (p: UploadProgress) => p.sentBytes });
  const down: Download = await client.download("b", "k", { versionId: up.versionId, range: { start: 1, end: 2 }, signal });
  const reader: ReadableStreamDefaultReader<Uint8Array> = down.body.getReader();
  void reader;
  return down.size + (up.mode === "direct" ? 1 : 0) + (new ShardgateError(503, "SlowDown", "m").status === 503 ? 1 : 0);
}
`;

const PAGE_HTML = `<!doctype html><html><head><meta charset="utf-8"><title>app</title></head>
<body><script type="module" src="./main.js"></script></body></html>`;

/** The page: the package as an app's bundle has it (Vite), uploading and downloading from the browser. */
const PAGE_SCRIPT = `
import { ShardgateClient } from "@shardgate/client";

const hex = async (b) => [...new Uint8Array(await crypto.subtle.digest("SHA-256", b))].map((x) => x.toString(16).padStart(2, "0")).join("");
window.run = async ({ endpoint, accessKeyId, secretAccessKey, bucket, size }) => {
  const client = new ShardgateClient({ endpoint, accessKeyId, secretAccessKey });
  const data = new Uint8Array(size);
  for (let i = 0; i < size; i += 65536) crypto.getRandomValues(data.subarray(i, i + 65536));
  const up = await client.upload(bucket, "page.bin", new Blob([data]), { contentType: "application/octet-stream" });
  const down = await client.download(bucket, "page.bin");
  const got = new Uint8Array(await new Response(down.body).arrayBuffer());
  const ranged = await client.download(bucket, "page.bin", { range: { start: 1000, end: 3 * 1048576 } });
  const part = new Uint8Array(await new Response(ranged.body).arrayBuffer());
  return {
    upload: up,
    mode: down.mode,
    same: (await hex(got)) === (await hex(data)),
    rangedSame: (await hex(part)) === (await hex(data.subarray(1000, 3 * 1048576))),
    sha256: await hex(data),
  };
};
window.ready = true;
`;

const CONTENT_TYPES: Record<string, string> = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };

describe("@shardgate/client, packed and installed", () => {
  const g = new Gateway({ runtime: "workerd" });
  const work = mkdtempSync(join(tmpdir(), "shardgate-client-package-"));
  const app = join(work, "app");
  const aws = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
  let tarball = "";
  let server: Server | undefined;

  beforeAll(async () => {
    const started = g.start();
    started.catch(() => {});
    // `npm pack` builds the package first (its prepack script: client/build.mjs).
    mkdirSync(app, { recursive: true });
    await runOk("npm", ["pack", "--pack-destination", work], { env: process.env, cwd: join(ROOT, "client"), timeoutMs: 120_000 });
    tarball = join(work, readdirSync(work).find((f) => f.endsWith(".tgz")) ?? "missing.tgz");
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
    await runOk("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", tarball], { env: process.env, cwd: app, timeoutMs: 120_000 });
    await started;
    expect((await aws.fetch(`${g.base}/${BUCKET}`, { method: "PUT" })).status).toBe(200);
  }, 240_000);

  afterAll(async () => {
    server?.close();
    await g.dispose();
    rmSync(work, { recursive: true, force: true });
  });

  it("packs dist only: ESM, declarations that stay inside the package, the core's .wasm", async () => {
    const listed = await runOk("tar", ["tzf", tarball], { env: process.env });
    const files = listed.stdout.trim().split("\n").sort();
    expect(files).toContain("package/dist/index.js");
    expect(files).toContain("package/dist/shardgate_core_bg.wasm");
    expect(files).toContain("package/dist/types/client/src/index.d.ts");
    expect(files.filter((f) => !f.startsWith("package/dist/"))).toEqual(["package/README.md", "package/package.json"]);
    const installed = join(app, "node_modules/@shardgate/client/dist");
    const js = readFileSync(join(installed, "index.js"), "utf8");
    // No import of anything but aws4fetch (and node:fs, hidden from bundlers, for Node's file: URLs).
    expect([...js.matchAll(/^\s*import\s.*?from\s+"([^"]+)"/gm)].map((m) => m[1])).toEqual(["aws4fetch"]);
    expect(js).toContain('new URL("./shardgate_core_bg.wasm", import.meta.url)');
    expect(js).not.toMatch(/["'`][^"'`\n]*(worker\/src|core\/pkg)/); // the bundle's path comments aside
    expect(readFileSync(join(installed, "shardgate_core_bg.wasm")).equals(readFileSync(join(ROOT, "core/pkg/shardgate_core_bg.wasm")))).toBe(true);

    // A consumer's TypeScript sees the package's types, and nothing outside it.
    writeFileSync(join(app, "check.ts"), TYPES_CHECK);
    const tsconfig = {
      compilerOptions: { target: "ES2022", module: "nodenext", moduleResolution: "nodenext", lib: ["ES2022", "DOM"], types: [], strict: true, noEmit: true },
      files: ["check.ts"],
    };
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify(tsconfig));
    await runOk(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", app, "--listFilesOnly"], { env: process.env, cwd: app }).then((r) => {
      const outside = r.stdout
        .split("\n")
        .filter((f) => f.includes("@shardgate/client") && !f.includes(join(app, "node_modules/@shardgate/client/dist/types/")));
      expect(outside).toEqual([]);
    });
    await runOk(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", app], { env: process.env, cwd: app });
  }, 60_000);

  it("from Node: uploads, downloads whole and in ranges, and aborted calls stop at once", async () => {
    writeFileSync(join(app, "node-check.mjs"), NODE_SCRIPT);
    const res = await runOk(process.execPath, ["node-check.mjs", g.base, CREDENTIALS.accessKeyId, CREDENTIALS.secretAccessKey, BUCKET], {
      env: process.env,
      cwd: app,
      timeoutMs: 110_000,
    });
    const out = JSON.parse(res.stdout.trim().split("\n").at(-1) ?? "{}");
    expect(out.upload).toMatchObject({ mode: "direct", etag: expect.stringMatching(/^[0-9a-f]{32}-2$/) });
    expect(out.whole).toEqual({ mode: "direct", size: 20 * MIB + 5, range: { start: 0, end: 20 * MIB + 5 }, same: true });
    expect(out.ranges).toEqual([
      { range: { start: 16 * MIB - 1000, end: 16 * MIB + 5000 }, length: 6000, same: true },
      { range: { start: 20 * MIB, end: 20 * MIB + 5 }, length: 5, same: true },
      { range: { start: 3, end: 4 }, length: 1, same: true },
    ]);
    // Aborted upload: AbortError within moments, not one request after the abort, no commit, and
    // no object; its session's shard files were removed.
    expect(out.abortedUpload).toMatchObject({ name: "AbortError", sentAfter: 0, commits: 0, parts: 3, removed: true });
    expect(out.abortedUpload.settledMs).toBeLessThan(1000);
    expect((await aws.fetch(`${g.base}/${BUCKET}/aborted.bin`, { method: "HEAD" })).status).toBe(404);
    expect(out.abortedDownload).toMatchObject({ name: "AbortError", sentAfter: 0 });
    expect(out.abortedDownload.first).toBeGreaterThan(0);
    expect(out.abortedDownload.settledMs).toBeLessThan(1000);
    expect(out.abortedReads).toEqual(["AbortError", "AbortError", "AbortError"]);
    expect(out.afterAbortedReads).toEqual({ sentAfter: 0, same: true, readAround: [] });
    expect(out.alreadyAborted).toEqual({ name: "AbortError", reason: "changed my mind", sent: 0 });
    // What the client stored reads back through the gateway byte for byte.
    const got = new Uint8Array(await (await aws.fetch(`${g.base}/${BUCKET}/node.bin`)).arrayBuffer());
    expect(got.length).toBe(20 * MIB + 5);
    expect(g.hungRequests).toEqual([]);
  }, 120_000);

  it.skipIf(!existsSync(CHROMIUM))(
    "from a page bundled with Vite, in Chromium on an origin of its own",
    async () => {
      const page = join(app, "page");
      mkdirSync(page, { recursive: true });
      writeFileSync(join(page, "index.html"), PAGE_HTML);
      writeFileSync(join(page, "main.js"), PAGE_SCRIPT);
      await runOk(process.execPath, [join(ROOT, "node_modules/vite/bin/vite.js"), "build", "--logLevel", "warn", "--outDir", "dist", "--emptyOutDir"], {
        env: process.env,
        cwd: page,
        timeoutMs: 120_000,
      });
      const built = join(page, "dist");
      const assets = readdirSync(join(built, "assets"));
      expect(assets.filter((f) => f.endsWith(".wasm"))).toHaveLength(1); // the core, copied by Vite as an asset
      server = createServer((req, res) => {
        const path = join(built, new URL(req.url ?? "/", "http://x").pathname.replace(/\/$/, "/index.html"));
        if (!path.startsWith(built) || !existsSync(path)) return void res.writeHead(404).end();
        res.writeHead(200, { "content-type": CONTENT_TYPES[extname(path)] ?? "application/octet-stream" }).end(readFileSync(path));
      });
      await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

      // The app's origin may use the bucket: S3 CORS rules, which the gateway's shard endpoint answers too.
      const cors = `<CORSConfiguration><CORSRule><AllowedOrigin>${origin}</AllowedOrigin>${["GET", "PUT", "POST", "HEAD"].map((m) => `<AllowedMethod>${m}</AllowedMethod>`).join("")}<AllowedHeader>*</AllowedHeader>${["ETag", "Content-Length", "Content-Range", "x-amz-version-id"].map((h) => `<ExposeHeader>${h}</ExposeHeader>`).join("")}</CORSRule></CORSConfiguration>`;
      const md5 = createHash("md5").update(cors).digest("base64");
      expect((await aws.fetch(`${g.base}/${BUCKET}?cors`, { method: "PUT", body: cors, headers: { "content-md5": md5 } })).status).toBe(200);

      const browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
      });
      try {
        const tab = await browser.newPage();
        const errors: string[] = [];
        const wasmRequests: string[] = [];
        tab.on("pageerror", (e) => errors.push(e.message));
        tab.on("request", (r) => {
          if (new URL(r.url()).pathname.endsWith(".wasm")) wasmRequests.push(r.url());
        });
        await tab.goto(`${origin}/`);
        await tab.waitForFunction(() => (globalThis as unknown as { ready?: boolean }).ready === true);
        const size = 5 * MIB + 77;
        const result = await tab.evaluate((args) => (globalThis as unknown as { run(a: typeof args): Promise<Record<string, unknown>> }).run(args), {
          endpoint: g.base,
          ...CREDENTIALS,
          bucket: BUCKET,
          size,
        });
        expect(result).toMatchObject({ upload: { mode: "direct" }, mode: "direct", same: true, rangedSame: true });
        // The same bytes through the gateway's classic path.
        const stored = new Uint8Array(await (await aws.fetch(`${g.base}/${BUCKET}/page.bin`)).arrayBuffer());
        expect(createHash("sha256").update(stored).digest("hex")).toBe(result.sha256);
        expect(wasmRequests).toHaveLength(1);
        expect(wasmRequests[0].startsWith(`${origin}/assets/`)).toBe(true);
        expect(errors).toEqual([]);
      } finally {
        await browser.close();
      }
    },
    180_000,
  );
});
