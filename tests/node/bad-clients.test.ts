// The misbehaving clients an ordinary S3 conformance run sends, against a real gateway (plain
// workerd in the "node" project, wrangler dev in "node-dev"): an upload cut off mid-body, a wrong
// Content-Length either way, early errors answered while a large body is still coming, a reader
// that stops halfway through a large GET. After each the gateway keeps serving byte-exact, shows
// no partial object, and neither restarts nor cancels a request as hung.
import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import { connect, type Socket } from "node:net";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, Gateway } from "./gateway";

const gateway = new Gateway();
const s3 = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
const bucket = "bad-clients";
const MiB = 1 << 20;
const url = (key = "") => `${gateway.base}/${bucket}${key ? `/${key}` : ""}`;

beforeAll(async () => {
  await gateway.start();
  expect((await s3.fetch(url(), { method: "PUT" })).status).toBe(200);
}, 120_000);
afterAll(() => gateway.dispose());

/** The signed head of a request, as raw HTTP/1.1 text, for a socket to send as it likes. */
async function signedHead(method: string, path: string, headers: Record<string, string>): Promise<string> {
  const signed = await s3.sign(`${gateway.base}${path}`, { method, headers: { "x-amz-content-sha256": "UNSIGNED-PAYLOAD", ...headers } });
  const target = new URL(signed.url);
  return [`${method} ${target.pathname}${target.search} HTTP/1.1`, `host: ${target.host}`, ...[...signed.headers].map(([k, v]) => `${k}: ${v}`), "", ""].join("\r\n");
}

function openSocket(): Promise<Socket> {
  const { hostname, port } = new URL(gateway.base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Everything the server sends until it closes the connection or `ms` pass (then we close it). */
function collect(socket: Socket, ms: number): Promise<string> {
  return new Promise((resolve) => {
    let received = "";
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(received);
    };
    const timer = setTimeout(done, ms);
    socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
    socket.on("close", done);
    socket.on("error", done);
  });
}

/** A normal round trip still works, byte for byte. */
async function stillServes(): Promise<void> {
  const body = randomBytes(3 * MiB + 5);
  const put = await s3.fetch(url("probe"), { method: "PUT", body, headers: { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } });
  expect(put.status).toBe(200);
  const got = new Uint8Array(await (await s3.fetch(url("probe"))).arrayBuffer());
  expect(createHash("sha256").update(got).digest("hex")).toBe(createHash("sha256").update(body).digest("hex"));
}

async function absent(key: string): Promise<void> {
  expect((await s3.fetch(url(key), { method: "HEAD" })).status, `${key} must not exist`).toBe(404);
}

/** Sends a body with node:http, answering whatever comes, even before the body is all sent. */
function streamingPut(path: string, headers: Record<string, string>, size: number): Promise<{ status: number; body: string }> {
  const target = new URL(`${gateway.base}${path}`);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: target.hostname, port: target.port, method: "PUT", path: `${target.pathname}${target.search}`, headers: { ...headers, "content-length": String(size) } }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    // The server may answer and close before the body is all sent: that is its right.
    req.on("error", (e: NodeJS.ErrnoException) => (e.code === "EPIPE" || e.code === "ECONNRESET" ? resolve({ status: -1, body: "" }) : reject(e)));
    const piece = Buffer.alloc(256 * 1024, 1);
    let sent = 0;
    const pump = () => {
      while (sent < size) {
        const n = Math.min(piece.length, size - sent);
        sent += n;
        if (!req.write(piece.subarray(0, n))) return void req.once("drain", pump);
      }
      req.end();
    };
    pump();
  });
}

describe(`bad clients (${gateway.runtime})`, () => {
  it("an upload cut off mid-body stores nothing", async () => {
    const socket = await openSocket();
    socket.write(await signedHead("PUT", `/${bucket}/cut-off`, { "content-length": String(8 * MiB) }));
    socket.write(randomBytes(MiB));
    await new Promise((r) => setTimeout(r, 200));
    socket.destroy();
    await new Promise((r) => setTimeout(r, 500));
    await absent("cut-off");
    await stillServes();
  });

  it("a body shorter than its Content-Length (the client half-closes) stores nothing", async () => {
    const socket = await openSocket();
    const answer = collect(socket, 10_000);
    socket.write(await signedHead("PUT", `/${bucket}/short`, { "content-length": String(2 * MiB) }));
    socket.end(randomBytes(MiB));
    const text = await answer;
    // Either an S3 error answer or a closed connection; never a 200. (Under wrangler dev its own
    // proxy answers first, with a 500 of its own when the connection to the client breaks.)
    expect(text).not.toMatch(/^HTTP\/1\.1 200/);
    if (text && gateway.runtime === "workerd") expect(text).toMatch(/^HTTP\/1\.1 400 [^]*<Code>IncompleteBody<\/Code>/);
    await absent("short");
    await stillServes();
  });

  it("bytes beyond the Content-Length are not part of the object", async () => {
    const socket = await openSocket();
    const answer = collect(socket, 5_000);
    const body = randomBytes(64 * 1024);
    socket.write(await signedHead("PUT", `/${bucket}/long`, { "content-length": String(body.length), connection: "close" }));
    socket.write(Buffer.concat([body, Buffer.from("GARBAGE THAT IS NO REQUEST\r\n\r\n")]));
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 200/);
    const stored = new Uint8Array(await (await s3.fetch(url("long"))).arrayBuffer());
    expect(Buffer.from(stored).equals(body)).toBe(true);
    await stillServes();
  });

  it("answers early errors with their S3 codes while a large body is still coming", async () => {
    const big = 16 * MiB;
    const signedFor = async (path: string, extra: Record<string, string> = {}): Promise<Record<string, string>> => {
      const signed = await s3.sign(`${gateway.base}${path}`, { method: "PUT", headers: { "x-amz-content-sha256": "UNSIGNED-PAYLOAD", ...extra } });
      return Object.fromEntries(signed.headers);
    };
    const noBucket = await streamingPut("/no-such-bucket-here/key", await signedFor("/no-such-bucket-here/key"), big);
    if (noBucket.status !== -1) {
      expect(noBucket.status, noBucket.body).toBe(404);
      expect(noBucket.body).toContain("<Code>NoSuchBucket</Code>");
    }
    const badSignature = await signedFor(`/${bucket}/forged`);
    badSignature.authorization = (badSignature.authorization ?? "").replace(/Signature=[0-9a-f]+/, `Signature=${"0".repeat(64)}`);
    const forged = await streamingPut(`/${bucket}/forged`, badSignature, big);
    if (forged.status !== -1) {
      expect(forged.status, forged.body).toBe(403);
      expect(forged.body).toContain("<Code>SignatureDoesNotMatch</Code>");
    }
    const unsigned = await streamingPut(`/${bucket}/anonymous`, {}, big);
    if (unsigned.status !== -1) expect(unsigned.status, unsigned.body).toBe(403);
    const notImplemented = await streamingPut(`/${bucket}/key?acl`, await signedFor(`/${bucket}/key?acl`), big);
    if (notImplemented.status !== -1) {
      expect(notImplemented.status, notImplemented.body).toBe(501);
      expect(notImplemented.body).toContain("<Code>NotImplemented</Code>");
    }
    // A precondition that fails only once the body is stored: 412, and the old object stays.
    await stillServes();
    const precondition = await streamingPut(`/${bucket}/probe`, await signedFor(`/${bucket}/probe`, { "if-none-match": "*" }), 4 * MiB);
    if (precondition.status !== -1) expect(precondition.status, precondition.body).toBe(412);
    await absent("forged");
    await absent("anonymous");
    await stillServes();
  });

  it("a reader that stops halfway through a large GET does not disturb the next", async () => {
    const body = randomBytes(24 * MiB);
    expect((await s3.fetch(url("large"), { method: "PUT", body, headers: { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } })).status).toBe(200);
    for (let i = 0; i < 3; i++) {
      const res = await s3.fetch(url("large"));
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      let got = 0;
      while (got < 2 * MiB) got += (await reader.read()).value?.length ?? 0;
      await reader.cancel();
    }
    const whole = new Uint8Array(await (await s3.fetch(url("large"))).arrayBuffer());
    expect(Buffer.from(whole).equals(body)).toBe(true);
    await stillServes();
  });

  it("kept serving throughout: no restart, no request cancelled as hung", () => {
    expect(gateway.running).toBe(true);
    expect(gateway.log).not.toMatch(/had hung|exited \(/);
  });
});
