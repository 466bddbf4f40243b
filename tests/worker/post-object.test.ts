// Browser form uploads (api/s3/post-object.ts, api/s3/post-object.form.ts, auth/post-policy.ts): forms signed
// with SigV4 as browsers post them, the policy's conditions, expiration and size range checked
// before anything is stored, the success answers (204, 201 with XML, a 303 redirect), the key's
// rights and bucket policies for unsigned forms, and malformed forms refused with nothing visible.
import { AwsClient } from "aws4fetch";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS } from "../shared/credentials";
import { randomBytes } from "../shared/core-suite";
import { metricTotal, scrapeMetrics } from "./hostile";
import { signedPostFields } from "./post-form";
import { GATEWAY, s3, s3ok } from "./signed";

const errorCode = (xml: string) => xml.match(/<Code>([^<]+)<\/Code>/)?.[1];
const enc = new TextEncoder();

const hexOf = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

type Key = { id: string; secret: string };

/** POSTs a form to `bucket`: `fields` in order, then the file (or, with `after`, more fields after it). */
async function post(
  bucket: string,
  fields: Record<string, string>,
  file: { name: string; type?: string; body: Uint8Array | string },
  after: Record<string, string> = {},
) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append("file", new File([file.body], file.name, { type: file.type ?? "application/octet-stream" }));
  for (const [name, value] of Object.entries(after)) form.append(name, value);
  const serialized = new Response(form);
  // workerd ends a form right after the closing boundary; browsers, curl, requests and Node add a
  // CRLF there, which the gateway expects (api/s3/post-object.form.ts).
  const bytes = new Uint8Array(await serialized.arrayBuffer());
  const body = new Uint8Array(bytes.length + 2);
  body.set(bytes);
  body.set([13, 10], bytes.length);
  const headers = { "content-type": serialized.headers.get("content-type") as string };
  return exports.default.fetch(new Request(`${GATEWAY}/${bucket}`, { method: "POST", body, headers, redirect: "manual" }));
}

/** A V2 form's policy (base64 JSON) with `conditions`, valid for ten minutes. */
const v2Policy = (conditions: unknown[]) => btoa(JSON.stringify({ expiration: new Date(Date.now() + 600_000).toISOString(), conditions }));

/** `fields` without `name`. */
function withoutField(fields: Record<string, string>, name: string): Record<string, string> {
  const { [name]: _, ...rest } = fields;
  return rest;
}

async function md5Hex(bytes: Uint8Array | string): Promise<string> {
  return hexOf(new Uint8Array(await crypto.subtle.digest("MD5", typeof bytes === "string" ? enc.encode(bytes) : bytes)));
}

const BUCKET = "post-forms";

describe("browser form uploads (POST Object)", () => {
  beforeAll(async () => {
    await s3ok(`/${BUCKET}`, { method: "PUT" });
  });

  it("stores a file from a SigV4 form: the file's name in the key, Content-Type and metadata from fields, a 201 with XML", async () => {
    const conditions = [
      { bucket: BUCKET },
      ["starts-with", "$key", "uploads/"],
      ["starts-with", "$Content-Type", "text/"],
      { success_action_status: "201" },
      ["starts-with", "$x-amz-meta-owner", ""],
      ["content-length-range", 1, 1024],
    ];
    const fields = {
      key: `uploads/$${"{filename}"}`,
      "Content-Type": "text/plain",
      success_action_status: "201",
      "x-amz-meta-owner": "form",
      ...(await signedPostFields(conditions)),
    };
    const res = await post(BUCKET, fields, { name: "notes.txt", body: "from a form" });
    const xml = await res.text();
    expect(res.status, xml).toBe(201);
    expect(xml).toContain("<Key>uploads/notes.txt</Key>");
    expect(xml).toMatch(new RegExp(`<ETag>(&quot;|")${await md5Hex("from a form")}(&quot;|")</ETag>`));
    const got = await s3ok(`/${BUCKET}/uploads/notes.txt`);
    expect(await got.text()).toBe("from a form");
    expect(got.headers.get("content-type")).toBe("text/plain");
    expect(got.headers.get("x-amz-meta-owner")).toBe("form");
  });

  it("streams a file of several blocks byte-exact, answering 204 by default", async () => {
    const body = randomBytes(3 * 1024 * 1024 + 17, 41);
    const fields = { key: "big/file.bin", ...(await signedPostFields([{ bucket: BUCKET }, ["starts-with", "$key", "big/"]])) };
    const res = await post(BUCKET, fields, { name: "file.bin", body });
    expect(res.status, await res.clone().text()).toBe(204);
    expect(res.headers.get("etag")).toBe(`"${await md5Hex(body)}"`);
    // A bucket that never had versioning: no version id, as S3 answers.
    expect(res.headers.has("x-amz-version-id")).toBe(false);
    const back = new Uint8Array(await (await s3ok(`/${BUCKET}/big/file.bin`)).arrayBuffer());
    expect(back.length).toBe(body.length);
    expect(await md5Hex(back)).toBe(await md5Hex(body));
  });

  it("redirects to success_action_redirect with bucket, key and ETag", async () => {
    const redirect = "https://app.example/done";
    const fields = {
      key: "r/x.txt",
      success_action_redirect: redirect,
      ...(await signedPostFields([{ bucket: BUCKET }, { key: "r/x.txt" }, { success_action_redirect: redirect }])),
    };
    const res = await post(BUCKET, fields, { name: "x.txt", body: "x" });
    expect(res.status, await res.clone().text()).toBe(303);
    const to = new URL(res.headers.get("location") as string);
    expect(to.origin + to.pathname).toBe(redirect);
    expect(to.searchParams.get("bucket")).toBe(BUCKET);
    expect(to.searchParams.get("key")).toBe("r/x.txt");
    expect(to.searchParams.get("etag")).toBe(`"${await md5Hex("x")}"`);
  });

  it("refuses forms the policy does not allow, before anything is stored", async () => {
    const base = [{ bucket: BUCKET }, ["starts-with", "$key", "ok/"], ["content-length-range", 2, 10]];
    const cases: [string, Record<string, string>, string, number, string][] = [
      ["key outside the prefix", { key: "elsewhere/a.txt", ...(await signedPostFields(base)) }, "abc", 403, "AccessDenied"],
      ["file too large", { key: "ok/large.txt", ...(await signedPostFields(base)) }, "x".repeat(11), 400, "EntityTooLarge"],
      ["file too small", { key: "ok/small.txt", ...(await signedPostFields(base)) }, "x", 400, "EntityTooSmall"],
      ["expired", { key: "ok/late.txt", ...(await signedPostFields(base, { expires: new Date(Date.now() - 1000) })) }, "abc", 403, "AccessDenied"],
      ["a field no condition names", { key: "ok/extra.txt", "x-amz-meta-extra": "1", ...(await signedPostFields(base)) }, "abc", 403, "AccessDenied"],
      [
        "a tampered signature",
        { key: "ok/forged.txt", ...(await signedPostFields(base)), "x-amz-signature": "0".repeat(64) },
        "abc",
        403,
        "SignatureDoesNotMatch",
      ],
      ["no key field", { ...(await signedPostFields(base)) }, "abc", 400, "InvalidArgument"],
      // S3: a form that names its key (x-amz-credential, or V2's AWSAccessKeyId) but has no signature field is a 400.
      [
        "no X-Amz-Signature field",
        { key: "ok/unsigned4.txt", ...withoutField(await signedPostFields(base), "x-amz-signature") },
        "abc",
        400,
        "InvalidArgument",
      ],
      ["no V2 Signature field", { key: "ok/unsigned2.txt", AWSAccessKeyId: CREDENTIALS.accessKeyId, policy: v2Policy(base) }, "abc", 400, "InvalidArgument"],
      // Still a 400 when the policy's conditions fail too (test_post_object_missing_signature): the
      // missing field is found before the conditions are checked.
      [
        "no X-Amz-Signature field, a key outside the prefix",
        { key: "elsewhere/unsigned4.txt", ...withoutField(await signedPostFields(base), "x-amz-signature") },
        "abc",
        400,
        "InvalidArgument",
      ],
      [
        "no V2 Signature field, a key outside the prefix",
        { key: "elsewhere/unsigned2.txt", AWSAccessKeyId: CREDENTIALS.accessKeyId, policy: v2Policy(base) },
        "abc",
        400,
        "InvalidArgument",
      ],
      // A policy, or a signature, without the rest is not an unsigned form either.
      ["a policy alone", { key: "elsewhere/policy-only.txt", policy: v2Policy(base) }, "abc", 400, "InvalidArgument"],
      ["a V2 signature alone", { key: "ok/signature-only.txt", signature: "c2lnbmF0dXJl" }, "abc", 400, "InvalidArgument"],
      [
        "no X-Amz-Credential field",
        { key: "ok/no-credential.txt", ...withoutField(await signedPostFields(base), "x-amz-credential") },
        "abc",
        400,
        "InvalidArgument",
      ],
      ["no policy field", { key: "ok/no-policy.txt", ...withoutField(await signedPostFields(base), "policy") }, "abc", 400, "InvalidArgument"],
      // S3: a signed form whose key id does not exist is a 403 InvalidAccessKeyId.
      [
        "an access key that does not exist",
        { key: "ok/nobody.txt", ...(await signedPostFields(base, { key: { id: `SG${"Z".repeat(18)}`, secret: "x" } })) },
        "abc",
        403,
        "InvalidAccessKeyId",
      ],
    ];
    for (const [what, fields, body, status, code] of cases) {
      const res = await post(BUCKET, fields, { name: "f.txt", body });
      const xml = await res.text();
      expect(res.status, what).toBe(status);
      expect(errorCode(xml), what).toBe(code);
      if (code === "InvalidArgument" && what !== "no key field") expect(xml, what).toMatch(/Bucket POST must contain a field named &apos;[A-Za-z-]+&apos;/);
      if (fields.key) expect((await s3(`/${BUCKET}/${fields.key}`, { method: "HEAD" })).status, what).toBe(404);
    }
  });

  it("checks an expired or unmet policy before looking its key up: a made-up key id costs no KeyStore call", async () => {
    const ghost = { id: `SG${"Q".repeat(18)}`, secret: "not-a-secret" };
    const base = [{ bucket: BUCKET }, ["starts-with", "$key", "ok/"]];
    const before = metricTotal(await scrapeMetrics(), "shardgate_key_lookups_total");
    const expired = { key: "ok/ghost.txt", ...(await signedPostFields(base, { key: ghost, expires: new Date(Date.now() - 1000) })) };
    const outside = { key: "elsewhere/ghost.txt", ...(await signedPostFields(base, { key: ghost })) };
    for (const fields of [expired, outside]) {
      const res = await post(BUCKET, fields, { name: "f.txt", body: "abc" });
      expect(res.status).toBe(403);
      expect(errorCode(await res.text())).toBe("AccessDenied");
    }
    expect(metricTotal(await scrapeMetrics(), "shardgate_key_lookups_total")).toBe(before);
  });

  it("stores a signed form without a Content-Type field (S3: 204)", async () => {
    const fields = { key: "ok/untyped.txt", ...(await signedPostFields([{ bucket: BUCKET }, ["starts-with", "$key", "ok/"]])) };
    const res = await post(BUCKET, fields, { name: "untyped.txt", body: "untyped" });
    expect(res.status).toBe(204);
    const got = await s3ok(`/${BUCKET}/ok/untyped.txt`);
    expect(await got.text()).toBe("untyped");
  });

  it("refuses a form whose file is not the last field, leaving nothing visible", async () => {
    const fields = { key: "ok/not-last.txt", ...(await signedPostFields([{ bucket: BUCKET }, ["starts-with", "$key", "ok/"]])) };
    const res = await post(BUCKET, fields, { name: "f.txt", body: "abc" }, { trailing: "field" });
    expect(res.status).toBe(400);
    expect(errorCode(await res.text())).toBe("MalformedPOSTRequest");
    expect((await s3(`/${BUCKET}/ok/not-last.txt`, { method: "HEAD" })).status).toBe(404);
  });

  it("checks the signing key's right to write, and serves unsigned forms only where a bucket policy allows", async () => {
    const bucket = "post-rights";
    await s3ok(`/${bucket}`, { method: "PUT" });
    const admin = (method: string, path: string, body: unknown) =>
      s3(`/_shardgate/admin${path}`, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const reader = (await (await admin("POST", "/keys", { name: "form reader" })).json()) as Key;
    await admin("PUT", `/keys/${reader.id}/buckets/${bucket}`, { read: true });
    const conditions = [{ bucket }, ["starts-with", "$key", ""]];
    const denied = await post(bucket, { key: "a.txt", ...(await signedPostFields(conditions, { key: reader })) }, { name: "a.txt", body: "a" });
    expect(errorCode(await denied.text())).toBe("AccessDenied");
    await admin("PUT", `/keys/${reader.id}/buckets/${bucket}`, { read: true, write: true });
    const allowed = await post(bucket, { key: "a.txt", ...(await signedPostFields(conditions, { key: reader })) }, { name: "a.txt", body: "a" });
    expect(allowed.status).toBe(204);

    const unsigned = () => post(bucket, { key: "inbox/u.txt" }, { name: "u.txt", body: "u" });
    expect(errorCode(await (await unsigned()).text())).toBe("AccessDenied");
    const policy = { Statement: [{ Effect: "Allow", Principal: "*", Action: "s3:PutObject", Resource: `arn:aws:s3:::${bucket}/inbox/*` }] };
    await s3ok(`/${bucket}?policy`, { method: "PUT", body: JSON.stringify(policy) }, 204);
    expect((await unsigned()).status).toBe(204);
    expect(await (await s3ok(`/${bucket}/inbox/u.txt`)).text()).toBe("u");
  });

  it("a POST that is not a form is not a form upload", async () => {
    const client = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
    const res = await exports.default.fetch(
      await client.sign(`${GATEWAY}/${BUCKET}`, { method: "POST", body: "x", headers: { "content-type": "text/plain" } }),
    );
    expect(res.status).toBe(501);
  });
});
