// Guarantee (docs/security.md): a signed request does what was signed, or nothing. A parameter
// appended to any kind of presigned request (a SigV4 URL, a SigV2 URL, a POST form's URL, a
// direct-path shard URL's ticket) either leaves the answer as it was (the gateway ignores it) or
// gets the request refused; it never makes the request do something else (issue #39, row 4: SigV2
// admin URLs took `now`, `max-objects` and `grace-seconds` unsigned). The one allowance is S3's own:
// SigV2 does not sign a listing's parameters (prefix, markers …), which select within the same
// listing under the same right.
import { exports } from "cloudflare:workers";
import { AwsClient } from "aws4fetch";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { OPERATIONS, SUBRESOURCES } from "../../worker/src/api/operations";
import type { DirectReadPlan } from "../../worker/src/shared/direct-protocol";
import { CREDENTIALS } from "../shared/credentials";
import { signedPostFields } from "./post-form";
import { GATEWAY, s3ok } from "./signed";

const BUCKET = "guarantee-params";
const send = (request: Request) => exports.default.fetch(request);
const v4 = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });

/** A listing's own parameters: SigV2 leaves them unsigned, as S3 does. */
const LISTING = ["prefix", "delimiter", "max-keys", "marker", "list-type", "start-after", "continuation-token", "encoding-type", "fetch-owner"];
/** Every parameter name the gateway reads somewhere, and some it does not. */
/** Every parameter name that picks an operation: the routes' sub-resources and S3's others. */
const SUBRESOURCE_NAMES = [
  ...new Set([
    ...Object.values(OPERATIONS).flatMap((o) => o.routes.map((r) => r.sub).filter((s): s is string => typeof s === "string")),
    ...Object.keys(SUBRESOURCES.bucket ?? {}),
    ...Object.keys(SUBRESOURCES.object ?? {}),
  ]),
];
const NAMES = [
  ...new Set([
    ...SUBRESOURCE_NAMES,
    ...LISTING,
    ...["versionId", "partNumber", "uploadId", "response-content-type", "response-content-disposition", "x-id", "Expires", "Signature"],
    ...["bucket", "key", "now", "max-objects", "grace-seconds", "mode", "heal", "move-mib", "max-ms", "limit"],
    ...["shardgate-plan", "shardgate-upload", "shardgate-commit", "shardgate-abort", "X-Amz-Expires", "X-Amz-Security-Token", "AWSAccessKeyId"],
  ]),
];
const appended = fc.record({
  name: fc.oneof(fc.constantFrom(...NAMES), fc.stringMatching(/^[a-zA-Z][a-zA-Z0-9-]{0,14}$/)),
  value: fc.oneof(fc.constantFrom("", "1", "true", "2100-01-01T00:00:00Z", "1000", BUCKET), fc.string({ maxLength: 12 })),
});
const RUNS = { numRuns: 40 };

async function hmacSha1(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
  return btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text)))));
}

async function presignedV2(method: string, path: string): Promise<string> {
  const expires = Math.floor(Date.now() / 1000) + 300;
  const signature = await hmacSha1(CREDENTIALS.secretAccessKey, `${method}\n\n\n${expires}\n${path}`);
  return `${GATEWAY}${path}?AWSAccessKeyId=${CREDENTIALS.accessKeyId}&Expires=${expires}&Signature=${encodeURIComponent(signature)}`;
}

async function presignedV4(method: string, path: string): Promise<string> {
  return (await v4.sign(`${GATEWAY}${path}?X-Amz-Expires=300`, { method, aws: { signQuery: true } })).url;
}

const withParam = (url: string, p: { name: string; value: string }) =>
  `${url}${url.includes("?") ? "&" : "?"}${encodeURIComponent(p.name)}=${encodeURIComponent(p.value)}`;

/** What an answer says: its status, and its body's SHA-256 where it is not an error (errors carry a request id). */
async function outcome(res: Response): Promise<{ status: number; body: string }> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", await res.arrayBuffer()));
  return { status: res.status, body: res.status < 300 ? btoa(String.fromCharCode(...digest)) : "" };
}

/** A refusal: the request was not carried out (4xx, or 501 for what no operation takes). */
const refused = (status: number) => (status >= 400 && status < 500) || status === 501;

/** The same answer as `expected`, or a refusal. */
function sameOrRefused(got: { status: number; body: string }, expected: { status: number; body: string }, what: string): void {
  if (!refused(got.status)) expect(got, what).toEqual(expected);
}

beforeAll(async () => {
  await s3ok(`/${BUCKET}`, { method: "PUT" });
  await s3ok(`/${BUCKET}/o.bin`, { method: "PUT", body: "x".repeat(300_000) });
  await s3ok(`/${BUCKET}/p/q.txt`, { method: "PUT", body: "q" });
});

describe("a parameter appended to a signed request changes nothing it does", () => {
  it("SigV4 URLs: any appended parameter is refused", async () => {
    await fc.assert(
      fc.asyncProperty(
        appended,
        fc.constantFrom(["GET", `/${BUCKET}/o.bin`], ["GET", `/${BUCKET}`], ["POST", "/_shardgate/admin/heal"]),
        async (p, [method, path]) => {
          const url = await presignedV4(method, path);
          const res = await send(new Request(withParam(url, p), { method }));
          await res.body?.cancel();
          expect(refused(res.status), `${method} ${path} + ${p.name}=${p.value}: ${res.status}`).toBe(true);
        },
      ),
      RUNS,
    );
  });

  it("SigV2 URLs: an object's and a bucket's answer stays as signed or is refused; the admin API refuses V2 whatever is appended", async () => {
    const object = await outcome(await send(new Request(await presignedV2("GET", `/${BUCKET}/o.bin`))));
    expect(object.status).toBe(200);
    const listing = await outcome(await send(new Request(await presignedV2("GET", `/${BUCKET}`))));
    expect(listing.status).toBe(200);
    await fc.assert(
      fc.asyncProperty(appended, async (p) => {
        const what = `+ ${p.name}=${p.value}`;
        sameOrRefused(await outcome(await send(new Request(withParam(await presignedV2("GET", `/${BUCKET}/o.bin`), p)))), object, `object ${what}`);
        if (!LISTING.includes(p.name))
          sameOrRefused(await outcome(await send(new Request(withParam(await presignedV2("GET", `/${BUCKET}`), p)))), listing, `listing ${what}`);
        for (const job of ["lifecycle", "heal", "sweep"]) {
          const res = await send(new Request(withParam(await presignedV2("POST", `/_shardgate/admin/${job}`), p), { method: "POST" }));
          await res.body?.cancel();
          expect(res.status, `${job} ${what}`).toBe(400);
        }
      }),
      RUNS,
    );
  });

  it("SigV2 URLs: every parameter that picks an operation, appended to an object's, a bucket's and a bucket creation's URL, changes nothing", async () => {
    // A PUT on the existing bucket: CreateBucket answers 409, and must not become another bucket operation.
    for (const [method, path] of [
      ["GET", `/${BUCKET}/o.bin`],
      ["GET", `/${BUCKET}`],
      ["PUT", `/${BUCKET}`],
    ] as const) {
      const signed = await outcome(await send(new Request(await presignedV2(method, path), { method })));
      for (const name of SUBRESOURCE_NAMES) {
        for (const value of ["", "1"]) {
          const got = await outcome(await send(new Request(withParam(await presignedV2(method, path), { name, value }), { method })));
          sameOrRefused(got, signed, `${method} ${path} + ${name}=${value}`);
        }
      }
    }
  });

  it("POST forms: a parameter on the form's URL stores the same object or nothing", async () => {
    const post = async (query: string, key: string) => {
      const form = new FormData();
      for (const [name, value] of Object.entries(await signedPostFields([{ bucket: BUCKET }, ["starts-with", "$key", "form/"]]))) form.append(name, value);
      form.append("key", key);
      form.append("file", new File(["form body"], "f.txt", { type: "application/octet-stream" }));
      // As browsers send it: workerd's own serialization ends without the CRLF after the last boundary.
      const serialized = new Response(form);
      const body = new Uint8Array([...new Uint8Array(await serialized.arrayBuffer()), 13, 10]);
      const headers = { "content-type": serialized.headers.get("content-type") as string };
      return send(new Request(`${GATEWAY}/${BUCKET}${query}`, { method: "POST", body, headers }));
    };
    const plain = await post("", "form/plain");
    expect(plain.status).toBe(204);
    let n = 0;
    await fc.assert(
      fc.asyncProperty(appended, async (p) => {
        const key = `form/${n++}`;
        const res = await post(withParam("", p), key);
        await res.body?.cancel();
        const stored = await send(await v4.sign(`${GATEWAY}/${BUCKET}/${key}`));
        if (refused(res.status)) {
          expect(stored.status, `${p.name}=${p.value}`).toBe(404);
          await stored.body?.cancel();
        } else {
          expect(res.status, `${p.name}=${p.value}`).toBe(204);
          expect(await stored.text()).toBe("form body");
        }
      }),
      RUNS,
    );
  });

  it("direct-path shard tickets: the shard file's bytes, or a refusal", async () => {
    const plan = (await (await s3ok(`/${BUCKET}/o.bin?shardgate-plan`)).json()) as DirectReadPlan;
    if (plan.mode !== "direct") throw new Error(`no direct plan: ${plan.reason}`);
    const url = `${GATEWAY}${plan.parts[0]?.urls[0]}`;
    const shard = await outcome(await send(new Request(url)));
    expect(shard.status).toBe(200);
    await fc.assert(
      fc.asyncProperty(appended, async (p) => {
        sameOrRefused(await outcome(await send(new Request(withParam(url, p)))), shard, `${p.name}=${p.value}`);
        const put = await send(new Request(withParam(url, p), { method: "PUT", body: "overwrite" }));
        await put.body?.cancel();
        expect(refused(put.status), `PUT ${p.name}=${p.value}: ${put.status}`).toBe(true);
      }),
      RUNS,
    );
    expect(await outcome(await send(new Request(url)))).toEqual(shard);
  });
});
