// A static website served from a bucket (issue #33, docs/self-hosting.md#website-endpoints), as `npm start` serves it,
// in real Chromium: index.html loading a CSS file, a script and an image from the bucket on the
// site's own origin (`<bucket>.website.localhost:PORT`), a sub-directory's index (and its 302 to
// the slash), a 404 answered with the error document; the path form on the gateway's origin runs
// the same page sandboxed (an opaque origin); the AWS CLI configures a site and an object's
// website redirect; the console's Website panel sets one up.
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { deflateSync, crc32 } from "node:zlib";
import { AwsClient } from "aws4fetch";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, Gateway } from "./gateway";
import { clientEnv, pythonTool, ROOT, run, SCREENSHOTS } from "./tools";

const CHROMIUM = "/usr/bin/chromium";
const SITE = "my-site";
const PANEL = "panel-site";

/** A 4×3 red RGB PNG. */
function png(): Buffer {
  const w = 4;
  const h = 3;
  const raw = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) raw[y * (w * 3 + 1) + 1 + x * 3] = 255;
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}

const FILES: Record<string, [string, string | Buffer]> = {
  "index.html": [
    "text/html; charset=utf-8",
    `<!doctype html><html><head><title>My site</title><link rel="stylesheet" href="/assets/site.css"></head>
<body><h1 id="title">Welcome</h1><p id="out">script did not run</p><p id="origin"></p><img id="logo" src="img/logo.png" alt="logo">
<a id="docs" href="/docs">Docs</a><script src="assets/app.js"></script></body></html>`,
  ],
  "assets/site.css": ["text/css", "h1 { color: rgb(0, 128, 0); }"],
  "assets/app.js": [
    "text/javascript",
    `document.getElementById("out").textContent = "script ran";
let storage = "none";
try { localStorage.setItem("k", "v"); storage = "yes"; } catch { storage = "blocked"; }
document.getElementById("origin").textContent = self.origin + " " + storage;`,
  ],
  "img/logo.png": ["image/png", png()],
  "docs/index.html": ["text/html", `<!doctype html><title>Docs</title><h1 id="title">Docs home</h1>`],
  "404.html": ["text/html", `<!doctype html><title>Lost</title><h1 id="title">Nothing here</h1>`],
};

describe.skipIf(!existsSync(CHROMIUM))("a static website in Chromium", () => {
  const gw = new Gateway();
  let s3: AwsClient;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];
  const siteUrl = (bucket: string, path = "/") => `http://${bucket}.website.localhost:${new URL(gw.base).port}${path}`;

  beforeAll(async () => {
    await gw.start();
    s3 = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
    for (const bucket of [SITE, PANEL]) expect((await s3.fetch(`${gw.base}/${bucket}`, { method: "PUT" })).status).toBe(200);
    for (const [key, [type, body]] of Object.entries(FILES)) {
      const res = await s3.fetch(`${gw.base}/${SITE}/${key}`, { method: "PUT", body, headers: { "content-type": type } });
      expect(res.status, key).toBe(200);
    }
    const policy = (b: string) => ({
      Version: "2012-10-17",
      Statement: [{ Effect: "Allow", Principal: "*", Action: "s3:GetObject", Resource: `arn:aws:s3:::${b}/*` }],
    });
    for (const bucket of [SITE, PANEL])
      expect((await s3.fetch(`${gw.base}/${bucket}?policy`, { method: "PUT", body: JSON.stringify(policy(bucket)) })).status).toBe(204);
    const config =
      "<WebsiteConfiguration><IndexDocument><Suffix>index.html</Suffix></IndexDocument><ErrorDocument><Key>404.html</Key></ErrorDocument></WebsiteConfiguration>";
    expect((await s3.fetch(`${gw.base}/${SITE}?website`, { method: "PUT", body: config })).status).toBe(200);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      // *.localhost is loopback (Chromium resolves it so itself); mapped to the IPv4 address the gateway listens on.
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--host-resolver-rules=MAP *.localhost 127.0.0.1"],
    });
    page = await (await browser.newContext({ viewport: { width: 1024, height: 700 } })).newPage();
    page.on("pageerror", (e) => pageErrors.push(e.message));
  });

  afterAll(async () => {
    await browser?.close();
    await gw.dispose();
  });

  it("serves index.html with its CSS, script and image from the bucket, on the site's own origin", async () => {
    const res = await page.goto(siteUrl(SITE));
    expect(res?.status()).toBe(200);
    expect(await page.title()).toBe("My site");
    await expect.poll(() => page.locator("#out").textContent()).toBe("script ran");
    expect(await page.locator("#origin").textContent()).toBe(`${new URL(siteUrl(SITE)).origin} yes`);
    expect(await page.evaluate('getComputedStyle(document.getElementById("title")).color')).toBe("rgb(0, 128, 0)"); // (tests/ has no DOM types)
    await expect.poll(() => page.locator("#logo").evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth)).toBe(4);
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOTS, "website.png") });
    expect(pageErrors).toEqual([]);
  });

  it("follows a link to a sub-directory: 302 to the slash, then its index", async () => {
    await page.locator("#docs").click();
    await page.waitForURL(siteUrl(SITE, "/docs/"));
    expect(await page.locator("#title").textContent()).toBe("Docs home");
  });

  it("answers a missing page with the error document and 404", async () => {
    const res = await page.goto(siteUrl(SITE, "/no/such/page.html"));
    expect(res?.status()).toBe(404);
    expect(await page.locator("#title").textContent()).toBe("Nothing here");
  });

  // (Relative links only: an absolute path leaves the path form's prefix. The host form has neither problem.)
  it("runs the path form's page sandboxed: scripts run, in an opaque origin without storage", async () => {
    const res = await page.goto(`${gw.base}/_shardgate/website/${SITE}/`);
    expect(res?.status()).toBe(200);
    await expect.poll(() => page.locator("#out").textContent()).toBe("script ran");
    expect(await page.locator("#origin").textContent()).toBe("null blocked");
    await expect.poll(() => page.locator("#logo").evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth)).toBe(4);
  });

  it("works with the AWS CLI: s3 website, get/delete-bucket-website, put-object --website-redirect-location", async () => {
    const env = clientEnv({ AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey, AWS_DEFAULT_REGION: "us-east-1" });
    const aws = async (...args: string[]) => run(pythonTool("aws"), ["--endpoint-url", gw.base, ...args], { env, timeoutMs: 60_000 });
    const ok = async (...args: string[]) => {
      const r = await aws(...args);
      expect(r.code, r.stderr).toBe(0);
      return r.stdout;
    };
    await ok("s3", "mb", "s3://cli-site");
    await ok("s3", "website", "s3://cli-site", "--index-document", "index.html", "--error-document", "err.html");
    const got = JSON.parse(await ok("s3api", "get-bucket-website", "--bucket", "cli-site")) as {
      IndexDocument: { Suffix: string };
      ErrorDocument: { Key: string };
    };
    expect(got).toMatchObject({ IndexDocument: { Suffix: "index.html" }, ErrorDocument: { Key: "err.html" } });
    await ok("s3api", "put-object", "--bucket", "cli-site", "--key", "moved.html", "--website-redirect-location", "/new.html");
    await ok("s3api", "put-object", "--bucket", "cli-site", "--key", "new.html", "--content-type", "text/html", "--body", join(ROOT, "README.md"));
    const head = JSON.parse(await ok("s3api", "head-object", "--bucket", "cli-site", "--key", "moved.html")) as { WebsiteRedirectLocation?: string };
    expect(head.WebsiteRedirectLocation).toBe("/new.html");
    const policy = { Statement: [{ Effect: "Allow", Principal: "*", Action: "s3:GetObject", Resource: "arn:aws:s3:::cli-site/*" }] };
    await ok("s3api", "put-bucket-policy", "--bucket", "cli-site", "--policy", JSON.stringify(policy));
    const res = await page.goto(siteUrl("cli-site", "/moved.html"));
    expect(res?.url()).toBe(siteUrl("cli-site", "/new.html"));
    expect(res?.request().redirectedFrom()?.url()).toBe(siteUrl("cli-site", "/moved.html"));
    await ok("s3api", "delete-bucket-website", "--bucket", "cli-site");
    const gone = await aws("s3api", "get-bucket-website", "--bucket", "cli-site");
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toContain("NoSuchWebsiteConfiguration");
  });

  it("sets a bucket's website from the console's Website panel and shows its URL", async () => {
    const index = await s3.fetch(`${gw.base}/${PANEL}/index.html`, {
      method: "PUT",
      body: "<!doctype html><title>Panel</title><h1>made in the console</h1>",
      headers: { "content-type": "text/html" },
    });
    expect(index.status).toBe(200);
    await page.goto(gw.consoleBase);
    await page.getByLabel("Access key").fill(CREDENTIALS.accessKeyId);
    await page.getByLabel("Secret key").fill(CREDENTIALS.secretAccessKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("link", { name: PANEL }).click();
    const panel = page.locator("details.website");
    await expect.poll(() => panel.locator("summary").textContent()).toBe("Website: off");
    await panel.locator("summary").click();
    await page.getByLabel("Index document").fill("index.html");
    await page.getByRole("button", { name: "Save website" }).click();
    // A bucket's setting outlasts the console's session: signed with the secret, asked for.
    const ask = page.getByRole("dialog", { name: "Secret key needed" });
    await ask.getByLabel("Secret key").fill(CREDENTIALS.secretAccessKey);
    await ask.getByRole("button", { name: "Continue" }).click();
    await ask.waitFor({ state: "detached" });
    await expect.poll(() => panel.locator("summary").textContent()).toBe("Website: on (index.html)");
    const link = await page.locator("#website-url").getAttribute("href");
    expect(link).toBe(`http://${PANEL}.website.localhost:${new URL(gw.base).port}/`);
    expect(await (await s3.fetch(`${gw.base}/${PANEL}?website`)).text()).toContain("<Suffix>index.html</Suffix>");
    const site = await page.goto(link ?? "");
    expect(site?.status()).toBe(200);
    expect(await page.title()).toBe("Panel");
  });
});
