// End to end with the real boto3 (from PyPI, pinned in tests/python/requirements.txt and installed
// by scripts/setup.sh into .tools/python) against the gateway as `npm start` serves it. Each test runs
// one command of tests/python/boto3_e2e.py, which does the S3 calls with boto3's default settings
// (a CRC32 checksum on every PutObject, checksum mode on GetObject) and reports what it saw as
// JSON: digests, lengths, headers and error codes. The expectations are all here.
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, Gateway } from "./gateway";
import { clientEnv, pythonTool, ROOT, runOk } from "./tools";

const MIB = 1 << 20;
const gateway = new Gateway();
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "shardgate-boto3-"));
  await gateway.start();
  expect(await boto3("create-bucket", { bucket: "boto3" })).toEqual({ status: 200 });
}, 120_000);
afterAll(async () => {
  await gateway.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `python tests/python/boto3_e2e.py COMMAND` with `args` as JSON on stdin; its JSON result. */
// biome-ignore lint/suspicious/noExplicitAny: each command answers its own JSON shape, read field by field by the tests
async function boto3(command: string, args: Record<string, unknown>, timeoutMs = 55_000): Promise<any> {
  const env = clientEnv({
    SHARDGATE_ENDPOINT: gateway.base,
    AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
    AWS_DEFAULT_REGION: "us-east-1",
    AWS_CONFIG_FILE: join(dir, "no-config-file"),
    AWS_SHARED_CREDENTIALS_FILE: join(dir, "no-credentials-file"),
  });
  const script = join(ROOT, "tests/python/boto3_e2e.py");
  const res = await runOk(pythonTool("python"), [script, command], { env, input: JSON.stringify(args), timeoutMs });
  return JSON.parse(res.stdout);
}

const md5 = (s: string) => createHash("md5").update(s).digest("hex");

/** S3's order: by the UTF-8 bytes of the key. */
const byUtf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * What a listing of `keys` must return: the keys without the delimiter after the prefix, the rest
 * rolled up into common prefixes; with startAfter, only the entries (keys and common prefixes)
 * after it. (A startAfter strictly inside a common prefix is not tested: there the gateway leaves
 * out that common prefix, and it is not settled here whether S3 does too.)
 */
function expectedListing(keys: string[], prefix: string, delimiter?: string, startAfter?: string) {
  const contents: string[] = [];
  const prefixes = new Set<string>();
  for (const key of [...keys].sort(byUtf8)) {
    if (!key.startsWith(prefix)) continue;
    const cut = delimiter ? key.indexOf(delimiter, prefix.length) : -1;
    if (cut >= 0) prefixes.add(key.slice(0, cut + delimiter!.length));
    else contents.push(key);
  }
  const after = (name: string) => startAfter === undefined || byUtf8(name, startAfter) > 0;
  return { contents: contents.filter(after), prefixes: [...prefixes].filter(after).sort(byUtf8) };
}

/** The Content-Range S3 answers to `header` on an object of `size` bytes. */
function contentRange(header: string, size: number): { range: string; length: number } {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header);
  if (!m) throw new Error(`bad range ${header}`);
  const [from, to] = m[1] === "" ? [Math.max(0, size - Number(m[2])), size - 1] : [Number(m[1]), m[2] === "" ? size - 1 : Math.min(size - 1, Number(m[2]))];
  return { range: `bytes ${from}-${to}/${size}`, length: to - from + 1 };
}

describe("boto3 against the gateway", () => {
  // Around the inline threshold (4 KiB), the chunk (16 KiB), the piece (256 KiB) and the block (1 MiB).
  const sizes = [0, 1, 4095, 4096, 4097, 16384, 16385, 262143, 1048575, MIB, MIB + 1, 3 * MIB + 7, 40 * MIB];

  it.each(sizes)(
    "put_object/get_object round-trip %i bytes, with random ranges, byte for byte",
    async (size) => {
      const r = await boto3("roundtrip", { bucket: "boto3", key: `sizes/${size}.bin`, size, ranges: 8 }, 110_000);
      expect(r.length_got).toBe(size);
      expect(r.sha256_got).toBe(r.sha256_sent);
      expect(r.equal).toBe(true);
      expect(r.put_status).toBe(200);
      expect(r.put_etag).toBe(`"${r.md5}"`);
      expect(r.get_etag).toBe(`"${r.md5}"`);
      expect(r.get_content_length).toBe(size);
      // boto3's default: a CRC32 of the body in x-amz-checksum-crc32; the gateway checked, kept and
      // echoes it, and returns it on a whole-object GET (which botocore then validated).
      expect(r.put_request_checksum_headers).toContain("x-amz-checksum-crc32");
      expect(r.put_request_crc32).toBe(r.crc32);
      expect(r.put_crc32).toBe(r.crc32);
      expect(r.get_crc32).toBe(r.crc32);

      expect(r.ranges).toHaveLength(size > 0 ? 8 : 0);
      for (const g of r.ranges) {
        const want = contentRange(g.range, size);
        expect(g, g.range).toMatchObject({ status: 206, content_range: want.range, content_length: want.length, length_got: want.length, equal: true });
      }
      expect(r.unsatisfiable).toEqual({ code: "InvalidRange", status: 416 });
      if (size > 8 * MIB) expect(r.sha256_download_fileobj).toBe(r.sha256_sent);
    },
    120_000,
  );

  it("head_object returns the content headers, user metadata and ETag = quoted MD5", async () => {
    const put = {
      ContentType: "application/vnd.shardgate+json; charset=utf-8",
      ContentDisposition: 'attachment; filename="report.json"',
      ContentLanguage: "de-CH",
      CacheControl: "no-cache, max-age=0",
      Metadata: { colour: "blue", "Mixed-Case": "Some Value", empty: "" },
    };
    const r = await boto3("head", { bucket: "boto3", key: "meta/report.json", size: 20_000, put });
    expect(r.put_etag).toBe(`"${r.md5}"`);
    expect(r.head).toMatchObject({
      ContentLength: 20_000,
      ContentType: put.ContentType,
      ContentDisposition: put.ContentDisposition,
      ContentLanguage: put.ContentLanguage,
      CacheControl: put.CacheControl,
      ETag: `"${r.md5}"`,
      AcceptRanges: "bytes",
      Metadata: { colour: "blue", "mixed-case": "Some Value", empty: "" }, // names come back lower-cased, as from S3
    });
    expect(Math.abs(Date.parse(r.head.LastModified) - Date.now())).toBeLessThan(5 * 60_000);
    expect(r.head_missing).toEqual({ code: "404", status: 404 });
  });

  it("overwrites, deletes, and deletes a missing key without error", async () => {
    const r = await boto3("overwrite-delete", {
      bucket: "boto3",
      key: "ow/object.bin",
      missing_key: "ow/never-was",
      first_size: 2 * MIB + 1,
      second_size: 777_777,
    });
    expect(r.after_overwrite).toMatchObject({ equal_second: true, length: 777_777, head_length: 777_777 });
    expect(r.after_overwrite.put_etag).toBe(`"${r.after_overwrite.md5_second}"`);
    expect(r.after_overwrite.get_etag).toBe(r.after_overwrite.put_etag);
    expect(r.delete_status).toBe(204);
    expect(r.get_after_delete).toEqual({ code: "NoSuchKey", status: 404 });
    expect(r.head_after_delete).toEqual({ code: "404", status: 404 });
    expect(r.delete_again_status).toBe(204);
    expect(r.delete_never_existed_status).toBe(204);
    expect(r.listed_after_delete).toEqual([]);
  });

  it("upload_file and download_file: a 30 MiB file as a multipart upload (8 MiB parts, CRC32) and back", async () => {
    const r = await boto3("transfer", { bucket: "boto3", key: "transfer/thirty.bin", size: 30 * MIB + 5, dir }, 110_000);
    expect(r.sha256_got).toBe(r.sha256_sent);
    expect(r.content_length).toBe(30 * MIB + 5);
    const md5s = Buffer.concat(r.part_md5s.map((h: string) => Buffer.from(h, "hex")));
    expect(r.etag).toBe(`"${createHash("md5").update(md5s).digest("hex")}-${r.part_md5s.length}"`);
    // s3transfer creates the upload with ChecksumAlgorithm=CRC32 and sends each part's CRC32.
    expect(r.checksum_crc32).toMatch(/^[A-Za-z0-9+/]{6}==(-4)?$/);
    expect(r.checksum_type).toMatch(/^(COMPOSITE|FULL_OBJECT)$/);
  }, 120_000);

  it("put_object with each ChecksumAlgorithm; get_object with ChecksumMode validates it; a wrong one stores nothing", async () => {
    const r = await boto3("checksums", { bucket: "boto3", size: 300_000 });
    for (const algorithm of ["CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"]) {
      expect(r[algorithm].equal, algorithm).toBe(true);
      expect(r[algorithm].put, algorithm).toEqual(expect.any(String));
      expect(r[algorithm].get, algorithm).toBe(r[algorithm].put);
    }
    expect(r.SHA256.put).toBe(r.sha256);
    expect(r.SHA1.put).toBe(r.sha1);
    expect(r.CRC32.put).toBe(r.crc32);
    expect(r.wrong).toEqual({ code: "BadDigest", status: 400 });
    expect(r.wrong_stored).toEqual({ code: "404", status: 404 });
  });

  it("versioning: versions by id, delete markers, DeleteObjects by VersionId, copies of a version, concurrent writers, suspension", async () => {
    const r = await boto3("versioning", { bucket: "boto3-versions" });
    const [v1, v2] = r.ids as string[];
    expect(r.before).toBeNull();
    expect(r.status).toBe("Suspended");
    expect(v1).not.toBe(v2);
    expect(r.by_id).toEqual({ body: "one", version: v1 });
    expect(r.marker.delete_marker).toBe(true);
    expect(r.listed).toEqual({
      versions: [
        [v2, false],
        [v1, false],
      ],
      markers: [[r.marker.version, true]],
    });
    expect(r.after_marker).toEqual({ code: "NoSuchKey", status: 404 });
    expect(r.restored).toBe("two");
    expect(r.after_delete_v2).toEqual({ body: "one", version: v1 });
    expect(r.copy.source_version).toBe(v1);
    expect(r.copy.version).toMatch(/^[0-9a-f]{32}$/);
    expect(r.batch.errors).toEqual([]);
    expect(r.batch.deleted).toEqual([
      ["doc", v1, false],
      ["copy", null, true],
    ]);
    expect(r.race.ids).toBe(16);
    expect(r.race.listed).toBe(16);
    expect(r.race.latest).toEqual([r.race.current]);
    expect(r.suspended.put_versions).toEqual(["null", "null"]);
    expect(r.suspended.body).toBe("suspended 2");
    expect(r.suspended.versions).toHaveLength(17);
    expect(r.suspended.versions[0]).toEqual(["null", true]);
  });

  it("pages list_object_versions over 2,500 versions of 25 keys, each key newest first", async () => {
    const r = await boto3("many-versions", { bucket: "boto3-many-versions", keys: 25, versions: 2500 }, 170_000);
    expect(r).toEqual({ written: 2500, listed: 2500, pages: 3, order_ok: true, latest_ok: true });
  }, 180_000);

  it("bucket tagging, ACLs, If-None-Match with an ETag, sorted and bare tags, StartAfter with a token, ObjectParts paging", async () => {
    const r = await boto3("bucket-settings", { bucket: "boto3-settings" });
    expect(r.no_tags).toEqual({ code: "NoSuchTagSet", status: 404 });
    expect(r.tags).toEqual([
      ["app", "gw"],
      ["team", "edge"],
    ]);
    expect(r.deleted_tags).toEqual({ code: "NoSuchTagSet", status: 404 });
    expect(r.bucket_grants).toEqual([[r.owner, "FULL_CONTROL"]]);
    expect(r.object_grants).toEqual([[r.owner, "FULL_CONTROL"]]);
    expect(r.public).toEqual({ code: "AccessControlListNotSupported", status: 400 });
    expect(r.object_tags).toEqual([
      ["alpha", ""],
      ["mid", "2"],
      ["zeta", "1"],
    ]);
    expect(r.if_none_match).toEqual({ code: "PreconditionFailed", status: 412 });
    expect(r.body).toBe("x");
    expect(r.start_after).toEqual(["list/0", "list/0"]);
    expect(r.listed).toEqual(["list/1", "list/2", "list/3", "list/4"]);
    expect(r.parts).toEqual({ count: 3, first: [1, 2], truncated: true, next: [3] });
  });

  it("lifecycle: rules set and read back, x-amz-expiration, and expiry with the clock moved 3 days on (delete markers, noncurrent versions, uploads)", async () => {
    const r = await boto3("lifecycle", { bucket: "boto3-lifecycle", days: 3 });
    expect(r.missing).toEqual({ code: "NoSuchLifecycleConfiguration", status: 404 });
    expect(r.rules).toEqual([
      { ID: "logs", Filter: { Prefix: "logs/" }, Status: "Enabled", Expiration: { Days: 1 } },
      { ID: "scratch", Filter: { Tag: { Key: "kind", Value: "scratch" } }, Status: "Enabled", Expiration: { Days: 2 } },
      {
        ID: "history",
        Filter: { Prefix: "" },
        Status: "Enabled",
        NoncurrentVersionExpiration: { NoncurrentDays: 1, NewerNoncurrentVersions: 1 },
        AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
      },
    ]);
    expect(r.bad).toEqual({ code: "InvalidArgument", status: 400 });
    expect(r.put_expiration).toMatch(/^expiry-date="[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} 00:00:00 GMT", rule-id="logs"$/);
    expect(r.head_expiration).toBe(r.put_expiration);
    expect(r.expired).toEqual({ current: 2, noncurrent: 1, deleteMarkers: 0, uploads: 1 });
    // logs/a.log and notes/n.txt are delete markers over their data; doc.txt keeps v3 and one noncurrent version.
    expect(r.versions).toEqual([
      ["doc.txt", false],
      ["doc.txt", true],
      ["logs/a.log", false],
      ["notes/n.txt", false],
    ]);
    expect(r.markers).toEqual([
      ["logs/a.log", true],
      ["notes/n.txt", true],
    ]);
    expect(r.uploads).toEqual([]);
    expect(r.deleted).toEqual({ code: "NoSuchLifecycleConfiguration", status: 404 });
  });

  it("object lock: default GOVERNANCE retention, COMPLIANCE and legal hold refuse concurrent deletes; the bypass and a lifted hold allow them", async () => {
    const r = await boto3("object-lock", { bucket: "boto3-lock", parallel: 12 });
    expect(r.versioning).toBe("Enabled");
    expect(r.config).toEqual({ ObjectLockEnabled: "Enabled", Rule: { DefaultRetention: { Mode: "GOVERNANCE", Days: 1 } } });
    expect(r.suspend).toEqual({ code: "InvalidBucketState", status: 409 });
    expect(r.head).toEqual(["GOVERNANCE", true]);
    expect(r.refused).toEqual(Array(12).fill({ code: "AccessDenied", status: 403 }));
    expect(r.batch_errors).toEqual([
      ["held", "AccessDenied"],
      ["sealed", "AccessDenied"],
    ]);
    expect(r.shorten).toEqual({ code: "AccessDenied", status: 403 });
    expect(r.retention).toEqual(["COMPLIANCE", true]);
    expect(r.hold).toBe("ON");
    expect(r.bypassed).toBeNull();
    expect(r.unheld).toBeNull();
    expect(r.still_sealed).toBe("s");
    expect(r.left).toEqual(["sealed"]);
  });

  it("access keys made through the admin API: each does what its rights on the bucket allow, and a disabled key nothing", async () => {
    const admin = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await admin.fetch(`${gateway.base}/_shardgate/admin${path}`, {
        method,
        headers: { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      expect(res.status, await res.clone().text()).toBeLessThan(300);
      return res.status === 204 ? null : ((await res.json()) as { id: string; secret: string });
    };
    await admin.fetch(`${gateway.base}/boto3-keys`, { method: "PUT" });
    await admin.fetch(`${gateway.base}/boto3-keys/shared.txt`, { method: "PUT", body: "shared" });
    const keys: Record<string, { id: string; secret: string }> = {};
    for (const [name, rights] of [
      ["reader", { read: true }],
      ["writer", { write: true }],
      ["owner", { read: true, write: true, owner: true }],
      ["stranger", null],
    ] as const) {
      const key = (await call("POST", "/keys", { name })) as { id: string; secret: string };
      if (rights) await call("PUT", `/keys/${key.id}/buckets/boto3-keys`, rights);
      keys[name] = { id: key.id, secret: key.secret };
    }
    const denied = { code: "AccessDenied", status: 403 };
    const r = await boto3("access-keys", { bucket: "boto3-keys", keys });
    expect(r.reader).toEqual({ buckets: ["boto3-keys"], put: denied, get: null, list: null, delete: denied, versioning: denied, presigned: "shared" });
    expect(r.writer).toEqual({ buckets: ["boto3-keys"], put: null, get: denied, list: denied, delete: null, versioning: denied, presigned: 403 });
    expect(r.owner).toEqual({ buckets: ["boto3-keys"], put: null, get: null, list: null, delete: null, versioning: null, presigned: "shared" });
    expect(r.stranger).toEqual({ buckets: [], put: denied, get: denied, list: denied, delete: denied, versioning: denied, presigned: 403 });

    // Disabled: refused at once (the admin call and the requests reach the same Worker).
    await call("PATCH", `/keys/${keys.reader.id}`, { enabled: false });
    const off = await boto3("access-keys", { bucket: "boto3-keys", keys: { reader: keys.reader } });
    const invalid = { code: "InvalidAccessKeyId", status: 403 };
    expect(off.reader).toEqual({
      buckets: "InvalidAccessKeyId",
      put: invalid,
      get: invalid,
      list: invalid,
      delete: invalid,
      versioning: invalid,
      presigned: 403,
    });
  });

  it("bucket policy: a public-read prefix served to an unsigned client, nothing else; MalformedPolicy; deleted", async () => {
    const r = await boto3("bucket-policy", { bucket: "boto3-policy" });
    const denied = { code: "AccessDenied", status: 403 };
    expect(r).toEqual({
      malformed: { code: "MalformedPolicy", status: 400 },
      stored: true,
      public: true,
      anonymous_get: "hello",
      anonymous_private: denied,
      anonymous_put: denied,
      anonymous_list: denied,
      after_delete: denied,
      no_policy: { code: "NoSuchBucketPolicy", status: 404 },
    });
  });

  it("temporary credentials: sts.get_session_token, then S3 with aws_session_token (and presigned URLs); a key's session has its rights", async () => {
    const admin = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
    expect((await admin.fetch(`${gateway.base}/boto3-sts`, { method: "PUT" })).status).toBe(200);
    expect((await admin.fetch(`${gateway.base}/boto3-sts/hello.txt`, { method: "PUT", body: "hello session" })).status).toBe(200);
    const denied = { code: "AccessDenied", status: 403 };
    const r = await boto3("session-token", { bucket: "boto3-sts", read: "hello.txt" });
    expect(r.key_id).toMatch(/^ASIA[A-Z2-7]{16}$/);
    expect(r.expires_in).toBeGreaterThan(880);
    expect(r.expires_in).toBeLessThanOrEqual(900);
    expect(r).toMatchObject({
      put: null,
      get: "hello session",
      listed: ["hello.txt", "session.txt"],
      presigned_token: true,
      presigned: "hello session",
      presigned_v2: "hello session",
      without_token: { code: "InvalidAccessKeyId", status: 403 },
      too_long: { code: "ValidationError", status: 400 },
      from_session: denied,
      assume_role_list: null,
    });

    const made = await admin.fetch(`${gateway.base}/_shardgate/admin/keys`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "sts reader" }),
    });
    const reader = (await made.json()) as { id: string; secret: string };
    const grant = { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ read: true }) };
    expect((await admin.fetch(`${gateway.base}/_shardgate/admin/keys/${reader.id}/buckets/boto3-sts`, grant)).status).toBe(200);
    const k = await boto3("session-token", { bucket: "boto3-sts", read: "hello.txt", key: reader });
    expect(k).toMatchObject({ put: denied, get: "hello session", presigned: "hello session", from_session: denied });
  });

  it("Signature Version 2: boto3's default presigned URLs (GET, PUT), expiry (ExpiresIn=0 refused with 403, V2 and V4), tampering, permissions, and V2 header signing", async () => {
    const admin = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
    const made = await admin.fetch(`${gateway.base}/_shardgate/admin/keys`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "v2 stranger" }),
    });
    const stranger = (await made.json()) as { id: string; secret: string };
    const r = await boto3("sigv2", { bucket: "boto3-v2", stranger: { id: stranger.id, secret: stranger.secret } });
    expect(r).toEqual({
      v2_url: true,
      get: "hello v2",
      put: "",
      stranger_get: 403,
      stranger_v4: { code: "AccessDenied", status: 403 },
      uploaded: "put with v2",
      zero_v2: 403, // ExpiresIn=0: a V2 Expires of now has expired (S3's 403)
      zero_v4: 403, // and X-Amz-Expires=0
      expired: 403,
      tampered: 403,
      header_get: ["header v2", { note: "v2" }],
      header_list: ["header/a+b.txt"],
      header_tagging: null,
      header_deleted: { code: "404", status: 404 },
    });
  });

  it("generate_presigned_post: a form upload with conditions stored byte-exact; too large and changed fields refused", async () => {
    const r = await boto3("presigned-post", { bucket: "boto3-post" });
    expect(r.fields).toEqual([
      "Content-Type",
      "key",
      "policy",
      "success_action_status",
      "x-amz-algorithm",
      "x-amz-credential",
      "x-amz-date",
      "x-amz-meta-by",
      "x-amz-signature",
    ]);
    expect(r.stored.status).toBe(201);
    expect(r.stored.body).toContain("<Key>forms/photo.png</Key>");
    expect(r.same).toBe(true);
    expect(r.type).toBe("image/png");
    expect(r.metadata).toEqual({ by: "boto3" });
    expect(r.too_large).toEqual({ status: 400, code: "EntityTooLarge" });
    expect(r.big_stored).toEqual({ code: "404", status: 404 });
    expect(r.changed_type).toEqual({ status: 403, code: "AccessDenied" });
  });

  it("server-side encryption: SSE-S3 (per object and as the bucket default), SSE-C (put, get, head, multipart upload_file, copy), wrong and missing keys", async () => {
    const r = await boto3("encryption", { bucket: "boto3-sse", size: 3 * MIB + 17, dir });
    expect(r).toEqual({
      s3_put: ["AES256", true],
      s3_range: ["AES256", true],
      c_get: true,
      c_head: "AES256",
      c_without: { code: "InvalidRequest", status: 400 },
      c_wrong: { code: "AccessDenied", status: 403 },
      multi: [true, true],
      copied: ["AES256", true],
      default: "AES256",
      by_default: "AES256",
      no_default: { code: "ServerSideEncryptionConfigurationNotFoundError", status: 404 },
    });
  });

  it("copy_object (COPY and REPLACE metadata) and delete_objects", async () => {
    const r = await boto3("copy-delete", { bucket: "boto3", size: 2 * MIB + 3 });
    expect(r.copy_etag).toBe(`"${r.md5}"`);
    expect(r.replaced_etag).toBe(`"${r.md5}"`);
    expect(r.copy_equal).toBe(true);
    expect(r.copy_head).toEqual({ metadata: { kept: "yes" }, content_type: "text/x-source" });
    expect(r.replaced_head).toEqual({ metadata: { new: "1" }, content_type: "text/x-new" });
    expect(r.deleted).toEqual(["cd/copy.bin", "cd/never.bin", "cd/replaced.bin", "cd/source.bin"]);
    expect(r.errors).toEqual([]);
    expect(r.left).toEqual([]);
  });

  it("conditional writes (IfMatch=, IfNoneMatch=): 404 NoSuchKey over no object, 412 otherwise, on put_object, copy_object and complete_multipart_upload; eight racing writers, one winner", async () => {
    const r = await boto3("conditional-writes", { bucket: "boto3" });
    const noSuchKey = { code: "NoSuchKey", status: 404 };
    const failed = { code: "PreconditionFailed", status: 412 };
    expect(r.put_if_match_star_missing).toEqual(noSuchKey);
    expect(r.put_if_match_etag_missing).toEqual(noSuchKey);
    expect(r.put_if_none_match_existing).toEqual(failed);
    expect(r.put_if_match_wrong).toEqual(failed);
    expect(r.put_if_match_unquoted).toBe(200);
    expect(r.copy_if_match_missing).toEqual(noSuchKey);
    expect(r.copy_if_none_match_new).toBe(200);
    expect(r.copy_if_none_match_existing).toEqual(failed);
    expect(r.copy_if_match_wrong).toEqual(failed);
    expect(r.complete_if_match_missing).toEqual(noSuchKey);
    expect(r.complete_upload_left).toBe(1);
    // A bucket that never had versioning: no VersionId in the answer.
    expect(r.complete_if_none_match_new).toEqual({ status: 200, version_id: null });
    expect(r.complete_if_none_match_existing).toEqual(failed);
    expect(r.complete_if_match_wrong).toEqual(failed);
    expect(r.complete_if_match_current).toBe(200);
    for (const race of [r.race_put, r.race_complete_create, r.race_complete_cas]) {
      expect(race.errors.filter((e: unknown) => e === null)).toHaveLength(1);
      expect(race.errors.filter((e: unknown) => e !== null)).toEqual(Array(7).fill(failed));
      expect(race.winner_stored).toEqual([race.errors.indexOf(null)]);
    }
  });

  describe("listing 2,500 keys", () => {
    const keys: string[] = [];
    for (let d = 0; d < 24; d++) for (let f = 0; f < 100; f++) keys.push(`list/d${String(d).padStart(2, "0")}/f-${String(f).padStart(4, "0")}.bin`);
    for (let i = 0; i < 50; i++) keys.push(`list/top-${String(i).padStart(2, "0")}.txt`);
    // Escaping on the wire and in the XML: space, UTF-8, +, &, <, >, a literal %2F, ? and =.
    for (let i = 0; i < 50; i++) keys.push(`list/spé cial+&<dir>/k ${i} %2F?=.txt`);

    beforeAll(async () => {
      const r = await boto3("put-many", { bucket: "boto3", keys, workers: 32 }, 110_000);
      expect(r.count).toBe(keys.length);
    }, 120_000);

    type Listing = { contents: [string, number, string][]; prefixes: string[]; pages: { entries: number; truncated: boolean; key_count: number | null }[] };

    function expectPages(r: Listing, pageSize: number, v1 = false) {
      const total = r.contents.length + r.prefixes.length;
      expect(r.pages.length).toBe(Math.max(1, Math.ceil(total / pageSize)));
      r.pages.forEach((p, i) => {
        const last = i === r.pages.length - 1;
        expect(p.truncated).toBe(!last);
        expect(p.entries).toBe(last ? total - pageSize * i : pageSize);
        if (!v1) expect(p.key_count).toBe(p.entries);
      });
    }

    it("with Delimiter=/ under Prefix=list/: the 25 directories as CommonPrefixes and the 50 top-level keys", async () => {
      const r: Listing = await boto3("list", { bucket: "boto3", prefix: "list/", delimiter: "/" });
      const want = expectedListing(keys, "list/", "/");
      expect(want.prefixes).toHaveLength(25);
      expect(r.prefixes).toEqual(want.prefixes);
      expect(r.contents.map((c) => c[0])).toEqual(want.contents);
      expectPages(r, 1000);
    });

    it("without a delimiter: every key, in UTF-8 order, with its size and ETag, in pages of 1,000", async () => {
      const r: Listing = await boto3("list", { bucket: "boto3", prefix: "list/" });
      expect(r.prefixes).toEqual([]);
      expect(r.contents.map((c) => c[0])).toEqual([...keys].sort(byUtf8));
      for (const [key, size, etag] of r.contents) {
        expect(size, key).toBe(Buffer.byteLength(key));
        expect(etag, key).toBe(`"${md5(key)}"`);
      }
      expectPages(r, 1000);
    });

    it("with Delimiter=/ in pages of 7: continuation tokens step over whole CommonPrefixes", async () => {
      const r: Listing = await boto3("list", { bucket: "boto3", prefix: "list/", delimiter: "/", page_size: 7 });
      const want = expectedListing(keys, "list/", "/");
      expect(r.prefixes).toEqual(want.prefixes);
      expect(r.contents.map((c) => c[0])).toEqual(want.contents);
      expectPages(r, 7);
    });

    it("with Delimiter=/ under Prefix=list/d1 and under Prefix=list/d07/ (pages of 33)", async () => {
      const d1: Listing = await boto3("list", { bucket: "boto3", prefix: "list/d1", delimiter: "/" });
      expect(d1.prefixes).toEqual(Array.from({ length: 10 }, (_, i) => `list/d1${i}/`));
      expect(d1.contents).toEqual([]);
      const d07: Listing = await boto3("list", { bucket: "boto3", prefix: "list/d07/", delimiter: "/", page_size: 33 });
      expect(d07.prefixes).toEqual([]);
      expect(d07.contents.map((c) => c[0])).toEqual(expectedListing(keys, "list/d07/", "/").contents);
      expect(d07.contents).toHaveLength(100);
      expectPages(d07, 33);
    });

    it("with StartAfter (at a directory, and between keys), and with list_objects (v1, NextMarker) in pages of 6", async () => {
      for (const startAfter of ["list/d05", "list/d22/", "list/top-24.txt"]) {
        const r: Listing = await boto3("list", { bucket: "boto3", prefix: "list/", delimiter: "/", start_after: startAfter });
        const want = expectedListing(keys, "list/", "/", startAfter);
        expect(r.prefixes, startAfter).toEqual(want.prefixes);
        expect(
          r.contents.map((c) => c[0]),
          startAfter,
        ).toEqual(want.contents);
      }

      const v1: Listing = await boto3("list", { bucket: "boto3", prefix: "list/", delimiter: "/", page_size: 6, v1: true });
      const all = expectedListing(keys, "list/", "/");
      expect(v1.prefixes).toEqual(all.prefixes);
      expect(v1.contents.map((c) => c[0])).toEqual(all.contents);
      expectPages(v1, 6, true);
    });
  });
});
