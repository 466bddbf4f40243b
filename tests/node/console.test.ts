// The web console end to end: the gateway as `npm start` serves it, driven through real Debian
// Chromium (/usr/bin/chromium, installed by scripts/setup.sh) with playwright-core. Every step is
// checked against the gateway itself over S3 (bytes compared by SHA-256), and the main views are
// written to docs/screenshots/*.png for the README.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { deflateSync, crc32 } from "node:zlib";
import { AwsClient } from "aws4fetch";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, Gateway } from "./gateway";

const CHROMIUM = "/usr/bin/chromium";
const root = fileURLToPath(new URL("../..", import.meta.url));
const shots = join(root, "docs/screenshots");
const BUCKET = "console-e2e";
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

describe.skipIf(!existsSync(CHROMIUM))("web console in Chromium", () => {
  const gw = new Gateway();
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

  const objectUrl = (key: string) => `${gw.base}/${BUCKET}/${key.split("/").map(encodeURIComponent).join("/")}`;
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
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: gw.base });
    page = await context.newPage();
    page.on("pageerror", (e) => pageErrors.push(e.message));
  });

  afterAll(async () => {
    await browser?.close();
    await gw.dispose();
    rmSync(work, { recursive: true, force: true });
  });

  it("serves the console at /_console/ and redirects browsers from /, while S3 stays S3", async () => {
    const html = await fetch(`${gw.base}/`, { headers: { accept: "text/html,application/xhtml+xml" }, redirect: "manual" });
    expect(html.status).toBe(302);
    expect(html.headers.get("location")).toBe("/_console/");
    // Anonymous S3 requests (no text/html) still get S3's AccessDenied.
    const anon = await fetch(`${gw.base}/`);
    expect(anon.status).toBe(403);
    expect(await anon.text()).toContain("<Code>AccessDenied</Code>");
    // A signed ListBuckets from a client that also accepts HTML is not redirected.
    const signed = await s3.fetch(`${gw.base}/`, { headers: { accept: "text/html" } });
    expect(signed.status).toBe(200);
    expect(await signed.text()).toContain("ListAllMyBucketsResult");
    const index = await fetch(`${gw.base}/_console/`);
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toContain("text/html");
    expect(await index.text()).toContain("shardgate console");
    // Deep links fall back to the app's index.html; missing bundle files stay 404.
    expect((await fetch(`${gw.base}/_console/some/deep/link`)).status).toBe(200);
    expect((await fetch(`${gw.base}/_console/assets/missing.js`)).status).toBe(404);
  });

  it("signs in, creates a bucket, uploads a folder (20 MiB multipart) with progress to 100%", async () => {
    await page.goto(`${gw.base}/`);
    expect(new URL(page.url()).pathname).toBe("/_console/");
    await page.getByLabel("Access key").waitFor();
    await shot("sign-in");

    // Wrong secret: a sentence, not XML.
    await page.getByLabel("Access key").fill(CREDENTIALS.accessKeyId);
    await page.getByLabel("Secret key").fill("not-the-secret");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("secret key does not match");

    await page.getByLabel("Secret key").fill(CREDENTIALS.secretAccessKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "Create bucket" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(1);

    await page.getByLabel("New bucket name").fill(BUCKET);
    await page.getByRole("button", { name: "Create bucket" }).click();
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
      const text = (await page.locator("#overall-text").textContent().catch(() => "")) ?? "";
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

    // Share for 1 day: the link works in a fresh browser context (no session, no cookies).
    await page.getByLabel("Link expires after").selectOption({ label: "1 day" });
    await page.getByRole("button", { name: "Share", exact: true }).click();
    const link = page.getByLabel("Share link");
    await expect.poll(() => link.inputValue()).toContain("X-Amz-Signature=");
    const url = await link.inputValue();
    expect(new URL(url).searchParams.get("X-Amz-Expires")).toBe("86400");
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

  it("shows the nodes dashboard, heals the bucket, refuses to delete a non-empty bucket, and signs out", async () => {
    await page.getByRole("link", { name: "Nodes" }).click();
    await page.getByRole("heading", { name: "Storage nodes" }).waitFor();
    await expect.poll(async () => (await page.locator("main").textContent()) ?? "").toMatch(/nodes healthy|Not available/);
    await page.getByLabel("Bucket", { exact: true }).selectOption(BUCKET);
    await page.getByRole("button", { name: "Start heal" }).click();
    await expect.poll(() => page.locator(".heal-out").textContent(), { timeout: 30_000 }).toMatch(/Done 4 objects checked/);
    await page.evaluate("window.scrollTo(0, 0)");
    await shot("nodes");

    await page.getByRole("link", { name: "Buckets" }).click();
    await page.getByRole("button", { name: `Delete bucket ${BUCKET}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete bucket" }).click();
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
