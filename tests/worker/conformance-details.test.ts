// S3's exact answers where a conformance run found the gateway off (issue #33): an expired
// presigned URL (X-Amz-Expires=0 in SigV4, a V2 Expires equal to now) is 403 AccessDenied, and a
// lifecycle Transition with an invalid date is 400 InvalidArgument (a valid one stays 501: one
// storage class). (A bucket that never had versioning answers writes without x-amz-version-id:
// conditional-writes.test.ts.)
import { AwsClient } from "aws4fetch";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { authenticateV2 } from "../../worker/src/auth/sigv2";
import { onlyKey } from "../../worker/src/auth/sigv4";
import { S3Error } from "../../worker/src/s3-error";
import { CREDENTIALS } from "../shared/credentials";
import { GATEWAY, s3, s3ok } from "./signed";

const bucket = "conformance";
const code = (xml: string) => /<Code>([^<]*)<\/Code>/.exec(xml)?.[1];

beforeAll(async () => {
  await s3ok(`/${bucket}`, { method: "PUT" });
  await s3ok(`/${bucket}/o.txt`, { method: "PUT", body: "o" });
});

async function hmacSha1(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
  return btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text)))));
}

/** A V2 presigned GET of `path` valid until `expires` (seconds since the epoch). */
async function presignedV2(path: string, expires: number): Promise<string> {
  const signature = await hmacSha1(CREDENTIALS.secretAccessKey, `GET\n\n\n${expires}\n${path}`);
  return `${GATEWAY}${path}?AWSAccessKeyId=${CREDENTIALS.accessKeyId}&Expires=${expires}&Signature=${encodeURIComponent(signature)}`;
}

describe("presigned URLs that have expired", () => {
  it("a SigV4 presigned URL with X-Amz-Expires=0 is refused: 403 AccessDenied (and with X-Amz-Expires=1 it is served)", async () => {
    const presigner = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
    const zero = await presigner.sign(`${GATEWAY}/${bucket}/o.txt?X-Amz-Expires=0`, { method: "GET", aws: { signQuery: true } });
    const res = await exports.default.fetch(new Request(zero.url));
    expect(res.status).toBe(403);
    expect(code(await res.text())).toBe("AccessDenied");
    const live = await presigner.sign(`${GATEWAY}/${bucket}/o.txt?X-Amz-Expires=60`, { method: "GET", aws: { signQuery: true } });
    expect(await (await exports.default.fetch(new Request(live.url))).text()).toBe("o");
  });

  it("a SigV2 presigned URL whose Expires is now is refused: 403 AccessDenied, at the very millisecond of that second too", async () => {
    const now = Math.floor(Date.now() / 1000);
    const res = await exports.default.fetch(new Request(await presignedV2(`/${bucket}/o.txt`, now)));
    expect(res.status).toBe(403);
    expect(code(await res.text())).toBe("AccessDenied");
    // Exactly at Expires (no milliseconds past it): expired all the same.
    const request = new Request(await presignedV2(`/${bucket}/o.txt`, now + 30));
    const at = authenticateV2(request, onlyKey(CREDENTIALS), { now: (now + 30) * 1000, virtualHostSuffix: "" });
    await expect(at).rejects.toBeInstanceOf(S3Error);
    await expect(at).rejects.toMatchObject({ code: "AccessDenied", status: 403 });
    const before = authenticateV2(request, onlyKey(CREDENTIALS), { now: (now + 30) * 1000 - 1, virtualHostSuffix: "" });
    await expect(before).resolves.toBeDefined();
    expect(await (await exports.default.fetch(new Request(await presignedV2(`/${bucket}/o.txt`, now + 60)))).text()).toBe("o");
  });
});

describe("a lifecycle Transition rule", () => {
  const rule = (action: string) =>
    `<LifecycleConfiguration><Rule><ID>r</ID><Filter><Prefix>p/</Prefix></Filter><Status>Enabled</Status>${action}</Rule></LifecycleConfiguration>`;
  const put = (action: string) => s3(`/${bucket}?lifecycle`, { method: "PUT", body: rule(action) });

  it("with an invalid date is refused: 400 InvalidArgument (not a date, not ISO 8601, not midnight), and nothing is stored", async () => {
    for (const date of ["20220927", "Sep 27 2022", "2022-13-01", "2022-09-27T10:00:00Z", "yesterday"]) {
      const res = await put(
        `<Expiration><Date>2023-09-27</Date></Expiration><Transition><Date>${date}</Date><StorageClass>GLACIER</StorageClass></Transition>`,
      );
      expect([res.status, code(await res.text())], date).toEqual([400, "InvalidArgument"]);
    }
    const days = await put(`<Transition><Days>-1</Days><StorageClass>GLACIER</StorageClass></Transition>`);
    expect([days.status, code(await days.text())]).toEqual([400, "InvalidArgument"]);
    const nc = await put(`<NoncurrentVersionTransition><NoncurrentDays>x</NoncurrentDays><StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition>`);
    expect([nc.status, code(await nc.text())]).toEqual([400, "InvalidArgument"]);
    expect(code(await (await s3(`/${bucket}?lifecycle`)).text())).toBe("NoSuchLifecycleConfiguration");
  });

  it("with a valid date is refused as not implemented (501: the gateway has one storage class)", async () => {
    const res = await put(`<Transition><Date>2030-01-01T00:00:00Z</Date><StorageClass>GLACIER</StorageClass></Transition>`);
    expect([res.status, code(await res.text())]).toEqual([501, "NotImplemented"]);
  });
});
