// A browser form upload from a real Chromium: an HTML form with the fields of a SigV4 POST policy
// (signed here as an app's server would) and a file input, submitted to the gateway as `npm start`
// serves it; the browser follows success_action_redirect and the object reads back byte for byte.
import { createHash, createHmac, randomBytes } from "node:crypto";
import { AwsClient } from "aws4fetch";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, Gateway } from "./gateway";

const CHROMIUM = "/usr/bin/chromium";
const BUCKET = "browser-forms";

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const hmac = (key: Buffer | string, text: string) => createHmac("sha256", key).update(text).digest();

/** The hidden fields of a form that may upload under `prefix` (up to `max` bytes) and redirect to `redirect`. */
function formFields(prefix: string, max: number, redirect: string): Record<string, string> {
  const now = new Date();
  const date = now.toISOString().slice(0, 10).replaceAll("-", "");
  const credential = `${CREDENTIALS.accessKeyId}/${date}/us-east-1/s3/aws4_request`;
  const amzDate = `${date}T000000Z`;
  const policy = Buffer.from(
    JSON.stringify({
      expiration: new Date(now.getTime() + 600_000).toISOString(),
      conditions: [
        { bucket: BUCKET },
        ["starts-with", "$key", prefix],
        ["content-length-range", 1, max],
        { success_action_redirect: redirect },
        ["starts-with", "$Content-Type", ""],
        { "x-amz-algorithm": "AWS4-HMAC-SHA256" },
        { "x-amz-credential": credential },
        { "x-amz-date": amzDate },
      ],
    }),
  ).toString("base64");
  let key = hmac(`AWS4${CREDENTIALS.secretAccessKey}`, date);
  for (const part of ["us-east-1", "s3", "aws4_request"]) key = hmac(key, part);
  return {
    key: `${prefix}\${filename}`,
    success_action_redirect: redirect,
    "Content-Type": "application/octet-stream",
    "x-amz-algorithm": "AWS4-HMAC-SHA256",
    "x-amz-credential": credential,
    "x-amz-date": amzDate,
    policy,
    "x-amz-signature": createHmac("sha256", key).update(policy).digest("hex"),
  };
}

const attr = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

describe("a browser form upload (presigned POST) from Chromium", () => {
  const gw = new Gateway();
  let browser: Browser;
  let s3: AwsClient;

  beforeAll(async () => {
    await gw.start();
    s3 = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
    expect((await s3.fetch(`${gw.base}/${BUCKET}`, { method: "PUT" })).status).toBe(200);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await gw.dispose();
  });

  it("posts a 5 MiB file from an HTML form, follows the redirect, and the object reads back byte for byte", async () => {
    const file = randomBytes(5 * 1024 * 1024 + 123);
    const redirect = `${gw.base}/_shardgate/health`;
    const fields = formFields("inbox/", 10 * 1024 * 1024, redirect);
    const inputs = Object.entries(fields)
      .map(([name, value]) => `<input type="hidden" name="${attr(name)}" value="${attr(value)}">`)
      .join("\n");
    const page = await browser.newPage();
    await page.setContent(
      `<form id="upload" action="${gw.base}/${BUCKET}" method="post" enctype="multipart/form-data">${inputs}<input type="file" name="file"><button>Upload</button></form>`,
    );
    await page.setInputFiles("input[type=file]", { name: "report.bin", mimeType: "application/octet-stream", buffer: file });
    await Promise.all([page.waitForURL(/\/_shardgate\/health\?/), page.click("button")]);
    const landed = new URL(page.url());
    expect(landed.searchParams.get("bucket")).toBe(BUCKET);
    expect(landed.searchParams.get("key")).toBe("inbox/report.bin");
    expect(landed.searchParams.get("etag")).toBe(`"${createHash("md5").update(file).digest("hex")}"`);
    const stored = new Uint8Array(await (await s3.fetch(`${gw.base}/${BUCKET}/inbox/report.bin`)).arrayBuffer());
    expect(stored.length).toBe(file.length);
    expect(sha256(stored)).toBe(sha256(file));

    // The same form with a file over the policy's limit: refused, nothing stored.
    const small = formFields("inbox/", 1024, redirect);
    await page.setContent(
      `<form action="${gw.base}/${BUCKET}" method="post" enctype="multipart/form-data">${Object.entries(small)
        .map(([n, v]) => `<input type="hidden" name="${attr(n)}" value="${attr(v)}">`)
        .join("")}<input type="file" name="file"><button>Upload</button></form>`,
    );
    await page.setInputFiles("input[type=file]", { name: "too-big.bin", mimeType: "application/octet-stream", buffer: randomBytes(4096) });
    const [answer] = await Promise.all([page.waitForResponse((r) => r.request().method() === "POST"), page.click("button")]);
    expect(answer.status()).toBe(400);
    expect(await answer.text()).toContain("<Code>EntityTooLarge</Code>");
    expect((await s3.fetch(`${gw.base}/${BUCKET}/inbox/too-big.bin`, { method: "HEAD" })).status).toBe(404);
    await page.close();
  });
});
