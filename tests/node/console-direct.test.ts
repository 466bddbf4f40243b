// The console's direct path in real Chromium (docs/direct-path.md): a 200 MiB file is erasure-coded
// in the page's Web Worker and its shard files sent one by one; the download fetches shard ranges
// and decodes them there, with a storage node killed while it runs. The gateway is the one of
// `npm run cluster` (six versitygw node processes, which only the gateway reaches: shard files
// pass through its shard endpoint). Bytes are compared by SHA-256 with what went in.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { Cluster, signal } from "./cluster";
import { CREDENTIALS } from "./gateway";

import { SCREENSHOTS } from "./tools";
const CHROMIUM = "/usr/bin/chromium";
const shots = SCREENSHOTS;
const BUCKET = "direct-path";
const MiB = 1024 * 1024;
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

describe.skipIf(!existsSync(CHROMIUM))("the console's direct path in Chromium", () => {
  const c = new Cluster();
  const work = mkdtempSync(join(tmpdir(), "shardgate-console-direct-"));
  const data = randomBytes(200 * MiB, 83);
  const file = join(work, "big-200.bin");
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    writeFileSync(file, data);
    mkdirSync(shots, { recursive: true });
    await c.start();
    expect((await c.admin.fetch(`${c.info.endpoint}/${BUCKET}`, { method: "PUT" })).status).toBe(200);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "light", acceptDownloads: true });
    page = await context.newPage();
    page.on("pageerror", (e) => pageErrors.push(e.message));
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await c.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it("uploads 200 MiB coded in the browser, then downloads it decoded there while a node is killed, byte for byte", async () => {
    await page.goto(`${c.info.console}/`);
    await page.getByLabel("Access key").fill(CREDENTIALS.accessKeyId);
    await page.getByLabel("Secret key").fill(CREDENTIALS.secretAccessKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("link", { name: BUCKET }).click();
    // The setting is on by default, and says what it does.
    expect(await page.getByLabel("Code in this browser").isChecked()).toBe(true);
    expect(await page.locator(".drop-hint").textContent()).toContain("erasure-coded in this browser");

    // Every shard file goes to the gateway's shard endpoint; no S3 PUT of the object itself.
    const shardPuts: string[] = [];
    const objectPuts: string[] = [];
    page.on("request", (r) => {
      if (r.method() !== "PUT") return;
      if (new URL(r.url()).pathname.startsWith("/_shardgate/shards/")) shardPuts.push(r.url());
      else objectPuts.push(r.url());
    });
    const started = Date.now();
    await page.getByLabel("Upload files").setInputFiles(file);
    const row = page.locator("li.upload", { has: page.getByLabel("Progress of big-200.bin", { exact: true }) });
    let midShot = false;
    for (;;) {
      const text = (await row.textContent()) ?? "";
      if (text.includes("Done")) break;
      if (text.includes("Failed")) throw new Error(`the upload failed: ${text}`);
      if (!midShot && /shard files/.test(text) && !/ 0 of \d+ shard files/.test(text)) {
        await page.screenshot({ path: join(shots, "direct-path-upload.png") });
        midShot = true;
      }
      if (Date.now() - started > 300_000) throw new Error(`the upload did not finish: ${text}`);
      await page.waitForTimeout(100);
    }
    const uploadSeconds = (Date.now() - started) / 1000;
    expect(await row.textContent()).toMatch(/coded in this browser into 78 shard files on 6 nodes/);
    expect(shardPuts).toHaveLength(13 * 6); // 200 MiB in parts of 16 MiB: 13 parts of 6 shard files
    expect(objectPuts).toEqual([]);
    const stored = await c.admin.fetch(`${c.info.endpoint}/${BUCKET}/big-200.bin`);
    expect(stored.headers.get("etag")).toMatch(/-13"$/);
    expect(sha256(new Uint8Array(await stored.arrayBuffer()))).toBe(sha256(data));

    // The download: the node holding data shard 0 of the first part is killed once shard ranges flow.
    await page.getByRole("button", { name: "big-200.bin", exact: true }).click();
    const plan = (await (await c.admin.fetch(`${c.info.endpoint}/${BUCKET}/big-200.bin?shardgate-plan`)).json()) as { parts: { placement: string[] }[] };
    const victim = c.info.nodes.find((n) => n.id === plan.parts[0]?.placement[0]);
    if (!victim) throw new Error("no node for data shard 0");
    let shardGets = 0;
    await page.route(
      (url) => url.pathname.startsWith("/_shardgate/shards/"),
      async (route) => {
        if (route.request().method() === "GET" && ++shardGets === 6) signal(victim, "SIGKILL");
        await route.continue();
      },
    );
    const downloadStarted = Date.now();
    const saved = page.waitForEvent("download", { timeout: 300_000 });
    await page.getByRole("link", { name: "Download" }).click();
    const download = await saved;
    const path = join(work, "downloaded.bin");
    await download.saveAs(path);
    const downloadSeconds = (Date.now() - downloadStarted) / 1000;
    expect(shardGets).toBeGreaterThan(6);
    expect(sha256(readFileSync(path))).toBe(sha256(data));
    const note = (await page.locator("#download-status").textContent()) ?? "";
    expect(note).toMatch(/Decoded in this browser: 200 MiB/);
    expect(note).toMatch(/read around/);
    await page.screenshot({ path: join(shots, "direct-path-download.png") });
    console.log(JSON.stringify({ directPath: { uploadSeconds, downloadSeconds, note } }));
    expect(pageErrors).toEqual([]);
    await c.restart(victim);
  }, 600_000);
});
