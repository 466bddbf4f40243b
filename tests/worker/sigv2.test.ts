// Signature Version 2 (auth/sigv2.ts): header and query signing as the V2 spec builds the string to
// sign, the sub-resources it includes, expiry and clock skew, a tampered request, and the
// SHARDGATE_SIGV2 switch that turns it off (boto3.test.ts covers what boto3 itself sends).
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleS3 } from "../../worker/src/api/handle";
import type { Env } from "../../worker/src/config";
import { CREDENTIALS } from "../shared/credentials";
import { GATEWAY, s3, s3ok } from "./signed";

const errorCode = (xml: string) => xml.match(/<Code>([^<]+)<\/Code>/)?.[1];

async function hmacSha1(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
  return btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text)))));
}

/** A request signed with V2 in its Authorization header; `resource` is what the client signs. */
async function headerSigned(method: string, path: string, resource: string, init: { body?: string; headers?: Record<string, string>; date?: Date } = {}) {
  const date = (init.date ?? new Date()).toUTCString();
  const headers = new Headers({ date, ...init.headers });
  const amz = [...headers]
    .filter(([n]) => n.startsWith("x-amz-"))
    .sort()
    .map(([n, v]) => `${n}:${v}\n`)
    .join("");
  const toSign = `${method}\n${headers.get("content-md5") ?? ""}\n${headers.get("content-type") ?? ""}\n${date}\n${amz}${resource}`;
  headers.set("authorization", `AWS ${CREDENTIALS.accessKeyId}:${await hmacSha1(CREDENTIALS.secretAccessKey, toSign)}`);
  return new Request(`${GATEWAY}${path}`, { method, headers, body: init.body });
}

/** A V2 presigned URL for `path`, valid until `expires` (s since epoch). */
async function presigned(method: string, path: string, resource: string, expires: number): Promise<string> {
  const signature = await hmacSha1(CREDENTIALS.secretAccessKey, `${method}\n\n\n${expires}\n${resource}`);
  const sep = path.includes("?") ? "&" : "?";
  return `${GATEWAY}${path}${sep}AWSAccessKeyId=${CREDENTIALS.accessKeyId}&Expires=${expires}&Signature=${encodeURIComponent(signature)}`;
}

const fetchWorker = (request: Request) => exports.default.fetch(request);

describe("Signature Version 2", () => {
  it("signs headers: a PUT with metadata and content type, a GET of a sub-resource, a bucket listing", async () => {
    await s3ok("/sigv2-bucket", { method: "PUT" });
    const put = await headerSigned("PUT", "/sigv2-bucket/a%20b.txt", "/sigv2-bucket/a%20b.txt", {
      body: "v2 body",
      headers: { "content-type": "text/plain", "x-amz-meta-note": "signed", "x-amz-tagging": "k=v" },
    });
    expect((await fetchWorker(put)).status).toBe(200);
    const tags = await fetchWorker(await headerSigned("GET", "/sigv2-bucket/a%20b.txt?tagging", "/sigv2-bucket/a%20b.txt?tagging"));
    expect(await tags.text()).toContain("<Key>k</Key>");
    // Query parameters that are not sub-resources are not signed.
    const list = await fetchWorker(await headerSigned("GET", "/sigv2-bucket?list-type=2&prefix=a", "/sigv2-bucket/"));
    expect(await list.text()).toContain("<Key>a b.txt</Key>");
    const got = await fetchWorker(await headerSigned("GET", "/sigv2-bucket/a%20b.txt", "/sigv2-bucket/a%20b.txt"));
    expect(await got.text()).toBe("v2 body");
    expect(got.headers.get("x-amz-meta-note")).toBe("signed");
  });

  it("refuses a tampered request, a skewed clock, and expired or too long presigned URLs", async () => {
    await s3ok("/sigv2-refuse", { method: "PUT" });
    await s3ok("/sigv2-refuse/o.txt", { method: "PUT", body: "o" });
    const signed = await headerSigned("GET", "/sigv2-refuse/o.txt", "/sigv2-refuse/other.txt");
    expect(errorCode(await (await fetchWorker(signed)).text())).toBe("SignatureDoesNotMatch");
    const skewed = await headerSigned("GET", "/sigv2-refuse/o.txt", "/sigv2-refuse/o.txt", { date: new Date(Date.now() - 3600_000) });
    expect(errorCode(await (await fetchWorker(skewed)).text())).toBe("RequestTimeTooSkewed");

    const now = Math.floor(Date.now() / 1000);
    const ok = await presigned("GET", "/sigv2-refuse/o.txt", "/sigv2-refuse/o.txt", now + 60);
    expect(await (await fetchWorker(new Request(ok))).text()).toBe("o");
    const expired = await presigned("GET", "/sigv2-refuse/o.txt", "/sigv2-refuse/o.txt", now - 1);
    const res = await fetchWorker(new Request(expired));
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("Request has expired");
    const tooLong = await presigned("GET", "/sigv2-refuse/o.txt", "/sigv2-refuse/o.txt", now + 8 * 24 * 3600);
    expect((await fetchWorker(new Request(tooLong))).status).toBe(403);
    const unknown = (await presigned("GET", "/sigv2-refuse/o.txt", "/sigv2-refuse/o.txt", now + 60)).replace(CREDENTIALS.accessKeyId, "nobody");
    expect(errorCode(await (await fetchWorker(new Request(unknown))).text())).toBe("InvalidAccessKeyId");
  });

  it("refuses the gateway's own x-shardgate-* headers, which V2 does not sign: 400 InvalidRequest, nothing stored", async () => {
    await s3ok("/sigv2-own", { method: "PUT" });
    const put = await headerSigned("PUT", "/sigv2-own/r.txt", "/sigv2-own/r.txt", {
      body: "x",
      headers: { "content-type": "text/plain", "x-shardgate-replica": "true" },
    });
    const res = await fetchWorker(put);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("<Code>InvalidRequest</Code>");
    expect((await s3("/sigv2-own/r.txt")).status).toBe(404);
    const plain = await fetchWorker(
      await headerSigned("PUT", "/sigv2-own/r.txt", "/sigv2-own/r.txt", { body: "x", headers: { "content-type": "text/plain" } }),
    );
    expect(plain.status, await plain.clone().text()).toBe(200);
  });

  it("SHARDGATE_SIGV2=off refuses V2 as an unsupported mechanism", async () => {
    await s3ok("/sigv2-off", { method: "PUT" });
    await s3ok("/sigv2-off/o.txt", { method: "PUT", body: "o" });
    const off = { ...(env as unknown as Env), SHARDGATE_SIGV2: "off" };
    const exec = { waitUntil: () => {} };
    const url = await presigned("GET", "/sigv2-off/o.txt", "/sigv2-off/o.txt", Math.floor(Date.now() / 1000) + 60);
    const refused = await handleS3(new Request(url), off, exec);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("AWS4-HMAC-SHA256");
    const header = await handleS3(await headerSigned("GET", "/sigv2-off/o.txt", "/sigv2-off/o.txt"), off, exec);
    expect(errorCode(await header.text())).toBe("InvalidRequest");
    expect((await handleS3(new Request(url), env as unknown as Env, exec)).status).toBe(200);
  });
});
