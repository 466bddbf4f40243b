// Pages of other sites cannot drive a gateway on loopback through a real browser (issue #39, item 2),
// even a page that knows the root secret (these gateways are given known credentials): Debian
// Chromium, driven with playwright-core, loads an attacker's page and sends what such a page can
// send without asking first. The gateway is `npm start`'s (scripts/serve.mjs on 127.0.0.1, which
// sets SHARDGATE_ALLOWED_HOSTS), and each attack is checked against the gateway itself afterwards.
//   - a fetch without a preflight (text/plain POST of a presigned admin URL): no key is made;
//   - an HTML form (enctype=text/plain) to the admin API's nodes: no node is added (a real S3
//     endpoint, versitygw, waits for it, so its probe would pass);
//   - a presigned S3 write a page sends without a preflight (POST ?uploads): no upload is opened;
//   - DNS rebinding: a page at http://evil.example:PORT whose name now resolves to 127.0.0.1
//     fetching a presigned ListBuckets from its own origin: refused, nothing listed.
// Chromium maps evil.example to 127.0.0.1 (--host-resolver-rules); the attacker's pages come from
// a small HTTP server on 127.0.0.1, and the rebound page from Playwright, standing in for the
// attacker's server before the name changed address. Chromium's own Local Network Access checks
// are off: they ask the user (who may allow), other browsers have none, and the gateway must refuse
// by itself.
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AwsClient } from "aws4fetch";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, servingWithVars } from "./gateway";
import { startServe } from "./tools";
import { VersityNode } from "./versity-node";
// @ts-expect-error: plain JavaScript without declarations (its shape is declared below)
import * as workerdConfig from "../../scripts/lib/workerd-config.mjs";

const { workerVars } = workerdConfig as { workerVars(wrangler: object, config: object): Record<string, string> };

const CHROMIUM = "/usr/bin/chromium";
const BUCKET = "cross-site";
const scratch = mkdtempSync(join(tmpdir(), "shardgate-cross-site-"));
const running: ChildProcess[] = [];
const root = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });

let base = "";
let gatewayPort = 0;
let browser: Browser;
let page: Page;
let versity: VersityNode;
/** The attacker's pages, by path (served on 127.0.0.1, which Chromium reaches as evil.example). */
const pages = new Map<string, string>();
let evilServer: Server;
let evil = "";

beforeAll(async () => {
  versity = new VersityNode();
  await versity.start();
  const serve = await servingWithVars({}, scratch);
  base = serve.base;
  gatewayPort = Number(new URL(base).port);
  await startServe(serve.args, serve.env, serve.healthy, running);
  expect((await root.fetch(`${base}/${BUCKET}`, { method: "PUT" })).status).toBe(200);
  evilServer = createServer((req, res) => {
    const html = pages.get(req.url ?? "");
    res.writeHead(html === undefined ? 404 : 200, { "content-type": "text/html" });
    res.end(html ?? "");
  });
  await new Promise<void>((resolve) => evilServer.listen(0, "127.0.0.1", resolve));
  evil = `http://evil.example:${(evilServer.address() as AddressInfo).port}`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--host-resolver-rules=MAP evil.example 127.0.0.1",
      "--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights",
    ],
  });
  page = await browser.newPage();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  evilServer?.close();
  await versity?.stop();
  for (const child of running) if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(-child.pid, "SIGTERM");
  rmSync(scratch, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 }); // a gateway just sent SIGTERM may still be writing there
});

/** A URL presigned with the root key (as a page that knows the secret would sign it). */
async function presigned(url: string, method: string): Promise<string> {
  return (await root.sign(url, { method, aws: { signQuery: true } })).url;
}

/** Opens the attacker's page `html` at evil.example and lets it run until `done` (a global it sets) or a navigation ends. */
async function openEvil(path: string, html: string): Promise<void> {
  pages.set(path, html);
  await page.goto(`${evil}${path}`);
}

async function adminJson<T>(path: string): Promise<T> {
  const res = await root.fetch(`${base}/_shardgate/admin${path}`);
  expect(res.status).toBe(200);
  return (await res.json()) as T;
}

describe.skipIf(!existsSync(CHROMIUM))("a page of another site, in Chromium, against a gateway on loopback", () => {
  it("cannot make a key with a presigned admin POST sent without a preflight (fetch, text/plain)", async () => {
    const url = await presigned(`${base}/_shardgate/admin/keys`, "POST");
    await openEvil(
      "/fetch.html",
      `<script>
        window.done = fetch(${JSON.stringify(url)}, { method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body: ${JSON.stringify(JSON.stringify({ name: "planted-by-page" }))} })
          .then(() => "sent", (e) => String(e));
      </script>`,
    );
    expect(await page.evaluate<string>("window.done")).toBe("sent");
    const { keys } = await adminJson<{ keys: { name: string }[] }>("/keys");
    expect(keys.map((k) => k.name)).not.toContain("planted-by-page");
  });

  it("cannot add a storage node with an HTML form (enctype=text/plain) to the admin API", async () => {
    const url = await presigned(`${base}/_shardgate/admin/nodes`, "POST");
    const node = { endpoint: versity.endpoint, bucket: versity.bucket, accessKeyId: versity.key.id, secretAccessKey: versity.key.secret };
    // text/plain sends `name=value`: the name opens the JSON and a string the "=" lands in; the
    // value closes it and gives the id again (JSON keeps a repeated key's last value).
    const name = `${JSON.stringify(node).slice(0, -1)},"id":"pad`;
    await openEvil(
      "/form.html",
      `<form method="POST" enctype="text/plain" action="${url.replaceAll("&", "&amp;")}"><input type="hidden" name='${name}' value='","id":"EVIL_NODE"}'></form>
       <script>document.forms[0].submit()</script>`,
    );
    await page.waitForURL((u) => u.origin === base, { timeout: 30_000 });
    await page.waitForLoadState();
    const { nodes } = await adminJson<{ nodes: { id: string }[] }>("/nodes");
    expect(nodes.map((n) => n.id)).not.toContain("EVIL_NODE");
  });

  it("cannot open an upload with a presigned S3 write sent without a preflight (the bucket has no CORS rule for it)", async () => {
    const url = await presigned(`${base}/${BUCKET}/planted.html?uploads`, "POST");
    await openEvil(
      "/write.html",
      `<script>
        window.done = fetch(${JSON.stringify(url)}, { method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body: "x" })
          .then(() => "sent", (e) => String(e));
      </script>`,
    );
    expect(await page.evaluate<string>("window.done")).toBe("sent");
    const uploads = await (await root.fetch(`${base}/${BUCKET}?uploads`)).text();
    expect(uploads).toContain("<ListMultipartUploadsResult");
    expect(uploads).not.toContain("planted.html");
  });

  it("cannot list the buckets from a rebound name (http://evil.example:PORT now resolving to 127.0.0.1)", async () => {
    const rebound = `http://evil.example:${gatewayPort}`;
    const url = new URL(await presigned(`${rebound}/`, "GET"));
    // The attacker's page, as its server answered before the name changed address; later requests go to 127.0.0.1.
    await page.route(`${rebound}/rebind.html`, (route) =>
      route.fulfill({
        contentType: "text/html",
        body: `<script>
          window.done = fetch(${JSON.stringify(url.pathname + url.search)}).then(async (r) => ({ status: r.status, text: await r.text() }), (e) => ({ status: 0, text: String(e) }));
        </script>`,
      }),
    );
    await page.goto(`${rebound}/rebind.html`);
    const answer = await page.evaluate<{ status: number; text: string }>("window.done");
    expect(answer.text).not.toContain("ListAllMyBucketsResult");
    expect(answer.text).not.toContain(BUCKET);
    expect(answer).toMatchObject({ status: 403 });
    expect(answer.text).toContain("<Code>AccessDenied</Code>");
    // The same presigned request for the gateway's own name is answered (the URL was valid: only the name is refused).
    const own = await root.fetch(`${base}/`);
    expect(await own.text()).toContain(BUCKET);
  });
});

describe("the host names npm start gives the Worker (scripts/lib/workerd-config.mjs)", () => {
  it("are the loopback names on a loopback address, unless shardgate.json's vars name them; none elsewhere", () => {
    const hostsOn = (ip: string, vars: Record<string, string> = {}) =>
      workerVars({ vars: {} }, { ip, vars, nodes: [], dataShards: 1, parityShards: 1, credentials: CREDENTIALS, masterKey: "k" }).SHARDGATE_ALLOWED_HOSTS;
    for (const ip of ["127.0.0.1", "127.0.0.5", "::1", "localhost"]) expect(hostsOn(ip), ip).toBe("localhost");
    for (const ip of ["0.0.0.0", "::", "10.0.0.5", "s3.example.com"]) expect(hostsOn(ip), ip).toBeUndefined();
    expect(hostsOn("127.0.0.1", { SHARDGATE_ALLOWED_HOSTS: "s3.example.com" })).toBe("s3.example.com");
  });
});
