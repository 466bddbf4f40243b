// Client-side encryption in the console, in real Chromium (issue #43; client/src/sealed.ts is the
// format, web/src/sealing.ts and direct-worker.ts its use in the page): a text file uploaded with
// "Encrypt with a passphrase" by the direct path (and one by the classic path), then every node
// file, the metadata SQLite, the block cache and the gateway's log searched for its plaintext, the
// passphrase and its data key (opened here from the stored header with the passphrase): nothing.
// The listing marks it; a wrong passphrase is refused; the preview (a ranged read of its start), the
// whole download and a share link opened in a fresh browser are byte-exact; the share link's key
// never reaches any server and leaves the address bar; tampered ciphertext is refused in words.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AwsClient } from "aws4fetch";
import { chromium, type Browser, type Page, type Request as PageRequest } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ShardgateClient } from "../../client/src/index";
import { decodeHeader, openDataKey, SEGMENT_BYTES, storedSize } from "../../client/src/sealed";
import * as bindings from "../../core/pkg/shardgate_core.js";
import { Core } from "../../worker/src/shared/core-api";
import { CREDENTIALS, Gateway } from "./gateway";
import { SCREENSHOTS } from "./tools";

const CHROMIUM = "/usr/bin/chromium";
const BUCKET = "sealed-console";
const MiB = 1024 * 1024;
const MARKER = "ZK-CONSOLE-MARKER:4b1d-never-stored";
const PASSPHRASE = "violet ferry under a quiet moon";
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const memory = bindings.initSync({ module: readFileSync(new URL("../../core/pkg/shardgate_core_bg.wasm", import.meta.url)) }).memory;
const core = new Core(bindings, memory);

/** About `bytes` of text: numbered lines of random hex with MARKER in every one. */
function text(bytes: number, seed: string): Buffer {
  const lines: string[] = [];
  let n = 0;
  for (let i = 0; n < bytes; i++) {
    const line = `${i} ${MARKER} ${createHash("sha256").update(`${seed}${i}`).digest("hex")}\n`;
    lines.push(line);
    n += line.length;
  }
  return Buffer.from(lines.join(""));
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []));
}

describe.skipIf(!existsSync(CHROMIUM))("client-side encryption in the console, in Chromium", () => {
  // Direct-path parts of 1 MiB, so the file makes several parts; the block cache on (npm start's
  // default with disk nodes is off), so that it too is searched.
  const g = new Gateway({ config: { cacheMiB: 64 }, vars: { SHARDGATE_DIRECT_PART_BYTES: String(MiB) } });
  const aws = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
  const s3 = (path: string, init: RequestInit = {}) => aws.fetch(`${g.base}/${BUCKET}/${path}`, init);
  const work = mkdtempSync(join(tmpdir(), "shardgate-console-sealed-"));
  const plain = text(3 * MiB + 777, "direct");
  const small = text(200 * 1024, "classic");
  const file = join(work, "secret.txt");
  const smallFile = join(work, "classic.txt");
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];
  /** Every request any page of the browser sent: URL, headers and body (shard files included). */
  const sent: { url: string; headers: string; body: Buffer | null }[] = [];
  const record = (r: PageRequest) => sent.push({ url: r.url(), headers: JSON.stringify(r.headers()), body: r.postDataBuffer() });

  beforeAll(async () => {
    writeFileSync(file, plain);
    writeFileSync(smallFile, small);
    mkdirSync(SCREENSHOTS, { recursive: true });
    await g.start();
    expect((await aws.fetch(`${g.base}/${BUCKET}`, { method: "PUT" })).status).toBe(200);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
    context.on("request", record);
    page = await context.newPage();
    page.on("pageerror", (e) => pageErrors.push(e.message));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await g.stop();
    rmSync(work, { recursive: true, force: true });
  });

  const row = (key: string) => page.locator("li.upload", { has: page.getByLabel(`Progress of ${key}`, { exact: true }) });
  const waitDone = async (key: string) => {
    await expect.poll(async () => (await row(key).textContent()) ?? "", { timeout: 120_000, interval: 200 }).toMatch(/Done|Failed/);
    const said = (await row(key).textContent()) ?? "";
    expect(said).toContain("Done");
    return said;
  };
  /** The stored object over S3: its bytes, its header and the data key the passphrase opens. */
  const stored = async (key: string) => {
    const res = await s3(key);
    expect(res.status).toBe(200);
    const header = res.headers.get("x-amz-meta-shardgate-sealed") ?? "";
    const bytes = Buffer.from(await res.arrayBuffer());
    const dataKey = Buffer.from(await openDataKey(core, decodeHeader(header), { passphrase: PASSPHRASE }));
    return { bytes, header, dataKey };
  };

  it("uploads with a passphrase (asked twice) by the direct path, marks it in the listing, and stores only ciphertext", async () => {
    await page.goto(`${g.consoleBase}/`);
    await page.getByLabel("Access key").fill(CREDENTIALS.accessKeyId);
    await page.getByLabel("Secret key").fill(CREDENTIALS.secretAccessKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("link", { name: BUCKET }).click();
    expect(await page.getByLabel("Code in this browser").isChecked()).toBe(true);

    // Two passphrases that differ: nothing is uploaded, and the page says why.
    await page.getByLabel("Encrypt with a passphrase").check();
    await page.getByLabel("Passphrase", { exact: true }).fill(PASSPHRASE);
    await page.getByLabel("Confirm passphrase").fill(`${PASSPHRASE}!`);
    await page.getByLabel("Upload files").setInputFiles(file);
    await expect.poll(() => page.locator(".sealing-fields [role=alert]").textContent()).toContain("The two passphrases differ");
    expect(await row("secret.txt").count()).toBe(0);

    await page.getByLabel("Confirm passphrase").fill(PASSPHRASE);
    await page.getByLabel("Upload files").setInputFiles(file);
    await page.screenshot({ path: join(SCREENSHOTS, "sealed-upload.png") });
    expect(await waitDone("secret.txt")).toMatch(/coded in this browser into \d+ shard files .*encrypted in this browser/);

    const { bytes, header, dataKey } = await stored("secret.txt");
    const parsed = decodeHeader(header);
    expect(parsed).toMatchObject({ size: plain.length, segmentBytes: SEGMENT_BYTES, kdf: { type: "argon2id", params: { memoryKiB: 65536, passes: 3 } } });
    expect(bytes.length).toBe(storedSize(plain.length, SEGMENT_BYTES));
    expect(bytes.includes(MARKER)).toBe(false);
    // The shard files went by the direct path (the gateway's shard endpoint); no PutObject of the file.
    expect(sent.filter((r) => r.url.includes("/_shardgate/shards/")).length).toBeGreaterThan(6);
    expect(sent.some((r) => r.url.endsWith(`/${BUCKET}/secret.txt`) && r.body !== null && r.body.length > 1000)).toBe(false);
    expect(dataKey.length).toBe(32);

    // The listing marks it (after a HEAD of each object).
    await page.getByRole("button", { name: "Refresh" }).click();
    await expect.poll(() => page.locator("tr", { hasText: "secret.txt" }).locator(".badge.sealed:visible").count()).toBe(1);
  }, 180_000);

  it("a wrong passphrase is refused; the preview (a ranged read) and the whole download are decrypted in the page, byte-exact", async () => {
    await page.getByRole("button", { name: "secret.txt", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "secret.txt" });
    await expect.poll(() => dialog.locator("#object-encryption").textContent()).toContain("Client-side");
    // Download before the passphrase: asked for first.
    await dialog.getByRole("link", { name: "Download" }).click();
    await expect.poll(() => dialog.locator("#download-status").textContent()).toContain("type its passphrase");

    await dialog.getByLabel("Passphrase").fill("not the passphrase");
    await dialog.getByRole("button", { name: "Unlock" }).click();
    await expect.poll(() => dialog.locator("#sealed-status").textContent(), { timeout: 30_000 }).toContain("Wrong passphrase");
    expect(await dialog.locator("pre.text").count()).toBe(0);

    // The right one: the preview is the first 256 KiB, read as a range: the shard files of the first part only.
    const shardGets = () => sent.filter((r) => r.url.includes("/_shardgate/shards/") && r.body === null).length;
    const before = shardGets();
    await dialog.getByLabel("Passphrase").fill(PASSPHRASE);
    await dialog.getByRole("button", { name: "Unlock" }).click();
    await dialog.locator("pre.text").waitFor({ timeout: 30_000 });
    expect(await dialog.locator("pre.text").textContent()).toBe(plain.subarray(0, 256 * 1024).toString());
    expect(await dialog.textContent()).toContain("Showing the first 256 KiB");
    await page.screenshot({ path: join(SCREENSHOTS, "sealed-object.png") });
    const previewGets = shardGets() - before;
    expect(previewGets).toBeGreaterThan(0);

    const saved = page.waitForEvent("download", { timeout: 60_000 });
    await dialog.getByRole("link", { name: "Download" }).click();
    const path = join(work, "downloaded.txt");
    await (await saved).saveAs(path);
    expect(sha256(readFileSync(path))).toBe(sha256(plain));
    await expect.poll(() => dialog.locator("#download-status").textContent()).toContain("Decrypted in this browser");
    // The whole object's 4 parts read about four times the shard files the preview (one part) read.
    expect(shardGets() - before - previewGets).toBeGreaterThan(2 * previewGets);
  }, 120_000);

  it("a share link carries the key in its fragment only: a fresh browser downloads and decrypts it, and the address loses it", async () => {
    const dialog = page.getByRole("dialog", { name: "secret.txt" });
    await dialog.getByRole("button", { name: "Share" }).click();
    const link = await dialog.getByLabel("Share link").inputValue();
    const { dataKey } = await stored("secret.txt");
    const keyText = dataKey.toString("base64url");
    const [before, fragment] = link.split("#");
    expect(before).toBe(`${g.consoleBase}/`);
    expect(fragment).toContain(keyText);
    expect(await dialog.getByRole("status").filter({ hasText: "carries its key" }).count()).toBe(1);

    const other = await browser.newContext({ acceptDownloads: true });
    const theirs: string[] = [];
    other.on("request", (r) => {
      theirs.push(`${r.url()} ${JSON.stringify(r.headers())} ${r.postData() ?? ""}`);
      record(r);
    });
    const visitor = await other.newPage();
    const errors: string[] = [];
    visitor.on("pageerror", (e) => errors.push(e.message));
    const saved = visitor.waitForEvent("download", { timeout: 60_000 });
    await visitor.goto(link);
    const path = join(work, "shared.txt");
    await (await saved).saveAs(path);
    expect(sha256(readFileSync(path))).toBe(sha256(plain));
    expect(await visitor.locator("#shared-status").textContent()).toContain("Decrypted in this browser");
    // The address no longer holds the fragment (history.replaceState), and no request carried the key.
    expect(visitor.url()).toBe(`${g.consoleBase}/`);
    expect(await visitor.evaluate("location.hash")).toBe("");
    expect(theirs.length).toBeGreaterThan(0);
    for (const r of theirs) {
      expect(r).not.toContain(keyText);
      expect(r).not.toContain("shared?");
    }
    expect(errors).toEqual([]);

    // A link whose key was cut short, or one naming another server, is refused in words.
    const cut = await other.newPage();
    await cut.goto(link.replace(keyText, keyText.slice(0, 20)));
    await expect.poll(() => cut.locator("#shared-status").textContent()).toContain("its key is missing or cut off");
    const elsewhere = await other.newPage();
    await elsewhere.goto(link.replace(/u=[^&]*/, `u=${encodeURIComponent("http://127.0.0.1:9/x")}`));
    await expect.poll(() => elsewhere.locator("#shared-status").textContent()).toContain("another server");
    await other.close();
    await dialog.getByRole("button", { name: "Close" }).click();
  }, 120_000);

  it("the classic path (browser coding off) seals in a worker too, and Node's client opens both objects", async () => {
    await page.getByLabel("Code in this browser").uncheck();
    await page.getByLabel("Upload files").setInputFiles(smallFile);
    expect(await waitDone("classic.txt")).toContain("encrypted in this browser");
    const { bytes } = await stored("classic.txt");
    expect(bytes.length).toBe(storedSize(small.length, SEGMENT_BYTES));
    expect(bytes.includes(MARKER)).toBe(false);

    const client = new ShardgateClient({ endpoint: g.base, ...CREDENTIALS, core });
    for (const [key, want] of [
      ["secret.txt", plain],
      ["classic.txt", small],
    ] as const) {
      const got = await client.download(BUCKET, key, { encryption: { passphrase: PASSPHRASE } });
      expect(sha256(new Uint8Array(await new Response(got.body).arrayBuffer()))).toBe(sha256(want));
    }
    // The classic path's download: a presigned GET decrypted in the page.
    await page.getByRole("button", { name: "classic.txt", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "classic.txt" });
    await dialog.getByLabel("Passphrase").fill(PASSPHRASE);
    await dialog.getByRole("button", { name: "Unlock" }).click();
    await dialog.locator("pre.text").waitFor({ timeout: 30_000 });
    const saved = page.waitForEvent("download", { timeout: 60_000 });
    await dialog.getByRole("link", { name: "Download" }).click();
    const path = join(work, "classic-downloaded.txt");
    await (await saved).saveAs(path);
    expect(sha256(readFileSync(path))).toBe(sha256(small));
    await dialog.getByRole("button", { name: "Close" }).click();
    await page.getByLabel("Code in this browser").check();
  }, 120_000);

  it("no node file, metadata SQLite, block cache file, log line or request holds the plaintext, the passphrase or a data key", async () => {
    // A GET over S3 of each fills the block cache with their (cipher)text.
    for (const key of ["secret.txt", "classic.txt"]) expect((await s3(key)).status).toBe(200);
    const keys = [(await stored("secret.txt")).dataKey, (await stored("classic.txt")).dataKey];
    const needles = [Buffer.from(MARKER), Buffer.from(PASSPHRASE)];
    for (const k of keys) needles.push(k, Buffer.from(k.toString("base64")), Buffer.from(k.toString("base64url")), Buffer.from(k.toString("hex")));
    const files = filesUnder(g.persist);
    expect(files.some((f) => f.endsWith(".sqlite"))).toBe(true);
    await expect.poll(() => filesUnder(join(g.persist, "cache")).length, { timeout: 10_000 }).toBeGreaterThan(0);
    let bytes = 0;
    for (const f of filesUnder(g.persist)) {
      const content = readFileSync(f);
      bytes += content.length;
      for (const needle of needles) expect(content.includes(needle), f).toBe(false);
    }
    expect(bytes).toBeGreaterThan(plain.length);
    const log = Buffer.from(g.log);
    for (const needle of needles) expect(log.includes(needle)).toBe(false);
    // What the browser sent (to the gateway and the console's server): neither, except the marker
    // never and the passphrase never; the data key only ever in no request at all.
    for (const r of sent) {
      const all = Buffer.concat([Buffer.from(r.url), Buffer.from(r.headers), r.body ?? Buffer.alloc(0)]);
      for (const needle of needles) expect(all.includes(needle), r.url).toBe(false);
    }
  }, 60_000);

  it("tampered ciphertext is refused in words, and nothing of it is shown", async () => {
    const { bytes, header } = await stored("classic.txt");
    bytes[100] ^= 1;
    const put = await s3("classic.txt", { method: "PUT", body: bytes, headers: { "x-amz-meta-shardgate-sealed": header, "content-type": "text/plain" } });
    expect(put.status).toBe(200);
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.getByRole("button", { name: "classic.txt", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "classic.txt" });
    await dialog.getByLabel("Passphrase").fill(PASSPHRASE);
    await dialog.getByRole("button", { name: "Unlock" }).click();
    await expect.poll(() => dialog.locator(".preview").textContent(), { timeout: 30_000 }).toContain("cannot be decrypted");
    expect(await dialog.locator("pre.text").count()).toBe(0);
    await dialog.getByRole("link", { name: "Download" }).click();
    await expect.poll(() => dialog.locator("#download-status").textContent(), { timeout: 30_000 }).toContain("cannot be decrypted");
    await dialog.getByRole("button", { name: "Close" }).click();
  }, 60_000);

  it("a share link opened in a console already signed in opens the same way, and ends that session", async () => {
    await page.getByRole("button", { name: "secret.txt", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "secret.txt" });
    await dialog.getByLabel("Passphrase").fill(PASSPHRASE);
    await dialog.getByRole("button", { name: "Unlock" }).click();
    await dialog.locator("pre.text").waitFor({ timeout: 30_000 });
    await dialog.getByRole("button", { name: "Share" }).click();
    const link = await dialog.getByLabel("Share link").inputValue();
    await dialog.getByRole("button", { name: "Close" }).click();
    // Same document, another fragment: a hashchange, not a load.
    const saved = page.waitForEvent("download", { timeout: 60_000 });
    await page.evaluate(`location.hash = ${JSON.stringify(`#${link.split("#")[1]}`)}`);
    const path = join(work, "shared-here.txt");
    await (await saved).saveAs(path);
    expect(sha256(readFileSync(path))).toBe(sha256(plain));
    expect(page.url()).toBe(`${g.consoleBase}/`);
    expect(await page.getByRole("button", { name: "Sign in to the console" }).count()).toBe(1);
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
