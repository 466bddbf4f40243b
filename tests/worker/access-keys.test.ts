// Access keys and per-bucket permissions (services/access-keys.ts, meta/key-store.ts,
// api/http/permissions.ts, api/admin/keys.ts): keys made through the admin API sign like the root key;
// their secrets are stored sealed under the master key; a disabled or deleted key is refused at
// once; ListBuckets shows a key only its buckets; and every S3 operation is walked with a key
// holding no right, read, write or owner on the bucket, checking that exactly the right the table
// names lets it through.
import { AwsClient } from "aws4fetch";
import { listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { env as workersEnv, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Env } from "../../worker/src/config";
import { type Operation, OPERATIONS, type OperationName } from "../../worker/src/api/operations";
import { COPY_SOURCE, OBJECT, requestOf } from "./operation-requests";
import { GATEWAY, s3, s3ok } from "./signed";

type Key = { id: string; secret: string; name: string; created: number; enabled: boolean; createBucket: boolean };

const env = workersEnv as unknown as Env;
const errorCode = (xml: string) => xml.match(/<Code>([^<]+)<\/Code>/)?.[1];

async function admin(method: string, path: string, body?: unknown): Promise<Response> {
  return s3(`/_shardgate/admin${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
  });
}

async function newKey(name: string, createBucket = false): Promise<Key> {
  const res = await admin("POST", "/keys", { name, createBucket });
  expect(res.status).toBe(201);
  return (await res.json()) as Key;
}

async function grant(key: Key, bucket: string, rights: { read?: boolean; write?: boolean; owner?: boolean }): Promise<void> {
  const res = await admin("PUT", `/keys/${key.id}/buckets/${bucket}`, rights);
  expect(res.status, await res.clone().text()).toBe(200);
}

/** Requests signed with `key` instead of the root key. */
function as(key: Pick<Key, "id" | "secret">) {
  const client = new AwsClient({ accessKeyId: key.id, secretAccessKey: key.secret, service: "s3", region: "us-east-1" });
  return async (path: string, init: RequestInit = {}): Promise<Response> => exports.default.fetch(await client.sign(`${GATEWAY}${path}`, init));
}

const bucketsOf = (xml: string) => [...xml.matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1]);

describe("access keys", () => {
  it("creates a key whose secret is shown once and stored only sealed; it signs like the root key", async () => {
    const key = await newKey("backup job");
    expect(key.id).toMatch(/^SG[A-Z0-9]{18}$/);
    expect(key.secret).toMatch(/^[A-Za-z0-9]{40}$/);
    expect(key).toMatchObject({ name: "backup job", enabled: true, createBucket: false });

    const listed = await (await admin("GET", "/keys")).text();
    expect(listed).toContain(key.id);
    expect(listed).not.toContain(key.secret);
    const stub = env.KEY_STORE.get(env.KEY_STORE.idFromName("keys"));
    const rows = await runInDurableObject(stub, async (_i: unknown, state: DurableObjectState) =>
      state.storage.sql
        .exec("SELECT * FROM keys")
        .toArray()
        .map((r) => JSON.stringify(r)),
    );
    expect(rows.some((r) => r.includes(key.id))).toBe(true);
    expect(rows.some((r) => r.includes(key.secret))).toBe(false);

    // A new key may list buckets (it sees none) but not read one it has no right on.
    const req = as(key);
    const list = await req("/");
    expect(list.status).toBe(200);
    expect(bucketsOf(await list.text())).toEqual([]);
    await s3ok("/keys-private", { method: "PUT" });
    const head = await req("/keys-private/x", { method: "GET" });
    expect(head.status).toBe(403);
    expect(errorCode(await head.text())).toBe("AccessDenied");
    // A wrong secret for a real key is a signature mismatch, as S3 answers.
    const wrong = await as({ id: key.id, secret: "x".repeat(40) })("/");
    expect(errorCode(await wrong.text())).toBe("SignatureDoesNotMatch");
  });

  it("refuses a disabled key at once, takes it back when enabled, and forgets a deleted one", async () => {
    await s3ok("/keys-toggle", { method: "PUT" });
    const key = await newKey("toggled");
    await grant(key, "keys-toggle", { read: true });
    const req = as(key);
    expect((await req("/keys-toggle")).status).toBe(200);

    expect((await admin("PATCH", `/keys/${key.id}`, { enabled: false })).status).toBe(200);
    const off = await req("/keys-toggle");
    expect(off.status).toBe(403);
    expect(errorCode(await off.text())).toBe("InvalidAccessKeyId");

    expect((await admin("PATCH", `/keys/${key.id}`, { enabled: true })).status).toBe(200);
    expect((await req("/keys-toggle")).status).toBe(200);

    expect((await admin("DELETE", `/keys/${key.id}`)).status).toBe(204);
    expect(errorCode(await (await req("/keys-toggle")).text())).toBe("InvalidAccessKeyId");
    expect((await admin("DELETE", `/keys/${key.id}`)).status).toBe(400);
    expect(await (await admin("GET", "/keys")).text()).not.toContain(key.id);
  });

  it("a sealed secret opens only for its own key: copied onto another key's row, that key is refused", async () => {
    const a = await newKey("a");
    const b = await newKey("b");
    const stub = env.KEY_STORE.get(env.KEY_STORE.idFromName("keys"));
    await runInDurableObject(stub, async (_i: unknown, state: DurableObjectState) => {
      const sealed = state.storage.sql.exec<{ sealed_secret: string }>("SELECT sealed_secret FROM keys WHERE id = ?", a.id).one().sealed_secret;
      state.storage.sql.exec("UPDATE keys SET sealed_secret = ? WHERE id = ?", sealed, b.id);
    });
    expect(errorCode(await (await as({ id: b.id, secret: a.secret })("/")).text())).toBe("InvalidAccessKeyId");
    expect((await as(a)("/")).status).toBe(200);
  });

  it("a key allowed to create buckets owns those it creates; others do not see them; the grants go with the bucket", async () => {
    const maker = await newKey("maker", true);
    const other = await newKey("other");
    expect((await as(other)("/keys-made-by-other", { method: "PUT" })).status).toBe(403);
    expect((await as(maker)("/keys-made", { method: "PUT" })).status).toBe(200);
    const req = as(maker);
    expect((await req("/keys-made/a.txt", { method: "PUT", body: "a" })).status).toBe(200);
    expect(await (await req("/keys-made/a.txt")).text()).toBe("a");
    expect(
      (await req("/keys-made?versioning", { method: "PUT", body: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>" })).status,
    ).toBe(200);
    expect(bucketsOf(await (await req("/")).text())).toEqual(["keys-made"]);
    expect(bucketsOf(await (await as(other)("/")).text())).toEqual([]);
    expect(bucketsOf(await (await s3("/")).text())).toContain("keys-made");
    const grants = (await (await admin("GET", "/buckets/keys-made/keys")).json()) as { keys: { keyId: string }[] };
    expect(grants.keys.map((k) => k.keyId)).toEqual([maker.id]);

    // Deleted and made again by the root key: the maker's rights did not survive the bucket.
    expect((await s3("/keys-made/a.txt?versions")).status).toBe(200);
    const versions = [...(await (await s3("/keys-made?versions")).text()).matchAll(/<VersionId>([^<]+)<\/VersionId>/g)].map((m) => m[1]);
    for (const v of versions) await s3ok(`/keys-made/a.txt?versionId=${v}`, { method: "DELETE" }, 204);
    expect((await req("/keys-made", { method: "DELETE" })).status).toBe(204);
    await s3ok("/keys-made", { method: "PUT" });
    expect((await req("/keys-made/a.txt", { method: "PUT", body: "a" })).status).toBe(403);
  });

  it("a copy needs read on the source's bucket as well as write on the target's", async () => {
    await s3ok("/keys-source", { method: "PUT" });
    await s3ok("/keys-target", { method: "PUT" });
    await s3ok("/keys-source/s.txt", { method: "PUT", body: "source" });
    const key = await newKey("copier");
    await grant(key, "keys-target", { write: true });
    const copy = () => as(key)("/keys-target/c.txt", { method: "PUT", headers: { "x-amz-copy-source": "/keys-source/s.txt" } });
    expect((await copy()).status).toBe(403);
    await grant(key, "keys-source", { read: true });
    expect((await copy()).status).toBe(200);
    expect(await (await s3("/keys-target/c.txt")).text()).toBe("source");
  });

  it("bypassing GOVERNANCE retention takes the owner right on the bucket", async () => {
    const bucket = "keys-locked";
    await s3ok(`/${bucket}`, { method: "PUT", headers: { "x-amz-bucket-object-lock-enabled": "true" } });
    const body = "kept";
    const sum = btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(body)))));
    const until = new Date(Date.now() + 86_400_000).toISOString();
    const put = await s3ok(`/${bucket}/k.txt`, {
      method: "PUT",
      body,
      headers: { "x-amz-checksum-sha256": sum, "x-amz-object-lock-mode": "GOVERNANCE", "x-amz-object-lock-retain-until-date": until },
    });
    const version = put.headers.get("x-amz-version-id") as string;
    const writer = await newKey("lock writer");
    await grant(writer, bucket, { read: true, write: true });
    const owner = await newKey("lock owner");
    await grant(owner, bucket, { read: true, write: true, owner: true });
    const bypass = { method: "DELETE", headers: { "x-amz-bypass-governance-retention": "true" } };
    const refused = await as(writer)(`/${bucket}/k.txt?versionId=${version}`, bypass);
    expect(refused.status).toBe(403);
    expect(errorCode(await refused.text())).toBe("AccessDenied");
    expect((await as(owner)(`/${bucket}/k.txt?versionId=${version}`, bypass)).status).toBe(204);
  });

  it("the admin API is the root key's alone, and checks what it is given", async () => {
    const key = await newKey("not root");
    await grant(key, "keys-private", { read: true, write: true, owner: true });
    for (const [method, path] of [
      ["GET", "/_shardgate/admin/keys"],
      ["POST", "/_shardgate/admin/keys"],
      ["GET", "/_shardgate/admin/nodes"],
    ] as const) {
      const res = await as(key)(path, { method, ...(method === "POST" ? { body: "{}" } : {}) });
      expect(res.status, path).toBe(403);
    }
    expect((await admin("POST", "/keys", { name: "" })).status).toBe(400);
    expect((await admin("POST", "/keys", { name: "x", createBucket: "yes" })).status).toBe(400);
    expect((await s3("/_shardgate/admin/keys", { method: "POST", headers: { "content-type": "application/json" }, body: "not json" })).status).toBe(400);
    expect((await admin("PATCH", "/keys/SGNOSUCHKEY", { enabled: false })).status).toBe(400);
    expect((await admin("PUT", "/keys/SGNOSUCHKEY/buckets/keys-private", { read: true })).status).toBe(400);
  });
});

// --- the permission matrix ------------------------------------------------------------------------

const B = "perm-matrix";

/**
 * Whether an operation is judged by a key's grants on a bucket: signed, and acting on a bucket or an
 * object in it. (A POST form and a shard URL carry their own credentials: post-object.test.ts and
 * direct.test.ts check them with keys; ListBuckets, STS, the metrics and the admin API act on no bucket.)
 */
const onBucket = (o: Operation) => o.authentication === "signature" && o.routes.every((r) => r.on === "bucket" || r.on === "object");

describe("the permission matrix", () => {
  it("every operation on a bucket passes with exactly the right the table names, and is AccessDenied without it", async () => {
    await s3ok(`/${B}`, { method: "PUT" });
    for (const key of [OBJECT, COPY_SOURCE]) await s3ok(`/${B}/${key}`, { method: "PUT", body: "object" });
    const rights = ["none", "read", "write", "owner"] as const;
    const keys = new Map<(typeof rights)[number], Key>();
    for (const right of rights) {
      const key = await newKey(`matrix ${right}`);
      if (right !== "none") await grant(key, B, { [right]: true });
      keys.set(right, key);
    }
    const cells: string[] = [];
    const walked = (Object.keys(OPERATIONS) as OperationName[]).filter((op) => onBucket(OPERATIONS[op]));
    for (const op of walked) {
      const { permission } = OPERATIONS[op];
      for (const right of rights) {
        const { path, init } = await requestOf(op, { bucket: B });
        const res = await as(keys.get(right) as Key)(path, init);
        const body = await res.text();
        // A copy also reads its source, here in the same bucket: no single right is enough (the
        // copier test above gives write and read).
        const allowed = permission.need === right && permission.source === undefined;
        const denied = res.status === 403 && (init.method === "HEAD" || errorCode(body) === "AccessDenied");
        if (allowed === denied) cells.push(`${op} with ${right}: ${res.status} ${errorCode(body) ?? ""} (needs ${permission.need})`);
      }
    }
    expect(cells).toEqual([]);
    expect(walked.length).toBeGreaterThan(60);
    // And the root key still does all of it.
    expect((await s3(`/${B}/o.txt`)).status).toBe(200);
  });
});

// --- bucket policies -------------------------------------------------------------------------------

/** Requests without credentials. */
const anonymous = (path: string, init: RequestInit = {}) => exports.default.fetch(new Request(`${GATEWAY}${path}`, init));

const policy = (...statements: Record<string, unknown>[]) => JSON.stringify({ Version: "2012-10-17", Statement: statements });

describe("bucket policies", () => {
  it("a public-read prefix: anonymous GETs under it succeed, everything else stays AccessDenied", async () => {
    const b = "policy-public";
    await s3ok(`/${b}`, { method: "PUT" });
    await s3ok(`/${b}/public/a.txt`, { method: "PUT", body: "public a" });
    await s3ok(`/${b}/private/b.txt`, { method: "PUT", body: "private b" });
    expect((await anonymous(`/${b}/public/a.txt`)).status).toBe(403);
    expect(errorCode(await (await s3(`/${b}?policy`)).text())).toBe("NoSuchBucketPolicy");
    // Without a policy GetBucketPolicyStatus is S3's 404 NoSuchBucketPolicy too (not IsPublic false).
    const noStatus = await s3(`/${b}?policyStatus`);
    expect([noStatus.status, errorCode(await noStatus.text())]).toEqual([404, "NoSuchBucketPolicy"]);

    const doc = policy({ Sid: "PublicRead", Effect: "Allow", Principal: "*", Action: ["s3:GetObject"], Resource: [`arn:aws:s3:::${b}/public/*`] });
    await s3ok(`/${b}?policy`, { method: "PUT", body: doc }, 204);
    expect(await (await s3ok(`/${b}?policy`)).text()).toBe(doc);
    expect(await (await s3ok(`/${b}?policyStatus`)).text()).toContain("<IsPublic>true</IsPublic>");

    const got = await anonymous(`/${b}/public/a.txt`);
    expect(got.status).toBe(200);
    expect(await got.text()).toBe("public a");
    expect((await anonymous(`/${b}/public/a.txt`, { method: "HEAD" })).status).toBe(200);
    for (const [path, init] of [
      [`/${b}/private/b.txt`, {}],
      [`/${b}`, {}],
      [`/${b}/public/new.txt`, { method: "PUT", body: "x" }],
      [`/${b}/public/a.txt`, { method: "DELETE" }],
      [`/${b}?policy`, {}],
      ["/", {}],
    ] as const) {
      const res = await anonymous(path, init);
      expect(res.status, `${init.method ?? "GET"} ${path}`).toBe(403);
      expect(errorCode(await res.text())).toBe("AccessDenied");
    }

    await s3ok(`/${b}?policy`, { method: "DELETE" }, 204);
    expect((await anonymous(`/${b}/public/a.txt`)).status).toBe(403);
  });

  it("Allow gives a key more than its grants, Deny takes away what they give; the root key is not bound", async () => {
    const b = "policy-keys";
    await s3ok(`/${b}`, { method: "PUT" });
    await s3ok(`/${b}/keep.txt`, { method: "PUT", body: "keep" });
    const uploader = await newKey("uploader");
    const editor = await newKey("editor");
    await grant(editor, b, { read: true, write: true });
    const doc = policy(
      { Effect: "Allow", Principal: { AWS: [uploader.id] }, Action: "s3:PutObject", Resource: `arn:aws:s3:::${b}/inbox/*` },
      { Effect: "Deny", Principal: { AWS: editor.id }, Action: ["s3:DeleteObject"], Resource: `arn:aws:s3:::${b}/*` },
    );
    await s3ok(`/${b}?policy`, { method: "PUT", body: doc }, 204);
    expect(await (await s3ok(`/${b}?policyStatus`)).text()).toContain("<IsPublic>false</IsPublic>");

    expect((await as(uploader)(`/${b}/inbox/a.txt`, { method: "PUT", body: "a" })).status).toBe(200);
    expect((await as(uploader)(`/${b}/elsewhere.txt`, { method: "PUT", body: "a" })).status).toBe(403);
    expect((await as(uploader)(`/${b}/inbox/a.txt`)).status).toBe(403); // PutObject only

    expect((await as(editor)(`/${b}/new.txt`, { method: "PUT", body: "n" })).status).toBe(200);
    const denied = await as(editor)(`/${b}/keep.txt`, { method: "DELETE" });
    expect(denied.status).toBe(403);
    expect(errorCode(await denied.text())).toBe("AccessDenied");
    expect((await s3(`/${b}/keep.txt`, { method: "DELETE" })).status).toBe(204);
  });

  it("anonymous requests and CORS preflights naming a bucket that does not exist are refused without creating its index", async () => {
    const names = Array.from({ length: 5 }, (_, i) => `no-such-bucket-${i}-${Date.now()}`);
    for (const name of names) {
      const res = await anonymous(`/${name}/some/key`, { headers: { origin: "https://elsewhere.example" } });
      expect(res.status).toBe(403);
      expect(errorCode(await res.text())).toBe("AccessDenied");
      const preflight = await anonymous(`/${name}/some/key`, {
        method: "OPTIONS",
        headers: { origin: "https://elsewhere.example", "access-control-request-method": "GET" },
      });
      expect(preflight.status).toBe(403);
    }
    const existing = new Set((await listDurableObjectIds(env.BUCKET_INDEX)).map((id) => id.toString()));
    for (const name of names) expect(existing.has(env.BUCKET_INDEX.idFromName(name).toString()), name).toBe(false);
  });

  it("anonymous uploads into a drop box prefix, when a policy allows them", async () => {
    const b = "policy-dropbox";
    await s3ok(`/${b}`, { method: "PUT" });
    await s3ok(
      `/${b}?policy`,
      { method: "PUT", body: policy({ Effect: "Allow", Principal: "*", Action: "s3:PutObject", Resource: `arn:aws:s3:::${b}/drop/*` }) },
      204,
    );
    const put = await anonymous(`/${b}/drop/file.txt`, { method: "PUT", body: "dropped" });
    expect(put.status, await put.clone().text()).toBe(200);
    expect(await (await s3ok(`/${b}/drop/file.txt`)).text()).toBe("dropped");
    expect((await anonymous(`/${b}/drop/file.txt`)).status).toBe(403);
  });

  it("takes resources naming every bucket (arn:aws:s3:::*) and applies them to the policy's own bucket only", async () => {
    // The conformance suite's test_bucket_policy_another_bucket: one document put on two buckets.
    const [a, b, other] = ["policy-star-a", "policy-star-b", "policy-star-other"];
    for (const name of [a, b, other]) {
      await s3ok(`/${name}`, { method: "PUT" });
      await s3ok(`/${name}/k.txt`, { method: "PUT", body: name });
    }
    const doc = policy({
      Effect: "Allow",
      Principal: { AWS: "*" },
      Action: ["s3:ListBucket", "s3:GetObject"],
      Resource: ["arn:aws:s3:::*", "arn:aws:s3:::*/*"],
    });
    await s3ok(`/${a}?policy`, { method: "PUT", body: doc }, 204);
    await s3ok(`/${b}?policy`, { method: "PUT", body: await (await s3ok(`/${a}?policy`)).text() }, 204);
    for (const name of [a, b]) {
      expect(await (await anonymous(`/${name}?list-type=2`)).text()).toContain("<Key>k.txt</Key>");
      expect(await (await anonymous(`/${name}/k.txt`)).text()).toBe(name);
    }
    // Neither policy makes a bucket without one readable, however its resources read.
    for (const path of [`/${other}?list-type=2`, `/${other}/k.txt`]) {
      const res = await anonymous(path);
      expect([res.status, errorCode(await res.text())], path).toEqual([403, "AccessDenied"]);
    }
    // A pattern that covers the bucket by wildcards is one too; a Deny through one refuses.
    const allow = { Effect: "Allow", Principal: "*", Action: "s3:GetObject", Resource: "arn:aws:s3:::*/*" };
    const deny = { Effect: "Deny", Principal: "*", Action: "s3:GetObject", Resource: "arn:aws:s3:::policy-star-?/k.*" };
    await s3ok(`/${a}?policy`, { method: "PUT", body: policy(allow, deny) }, 204);
    expect((await anonymous(`/${a}/k.txt`)).status).toBe(403);
    expect(await (await anonymous(`/${b}/k.txt`)).text()).toBe(b);
  });

  it("refuses policies it cannot enforce with MalformedPolicy and the reason, storing nothing", async () => {
    const b = "policy-bad";
    await s3ok(`/${b}`, { method: "PUT" });
    const stmt = { Effect: "Allow", Principal: "*", Action: "s3:GetObject", Resource: `arn:aws:s3:::${b}/*` };
    for (const [doc, reason] of [
      ["{not json", /invalid Json/],
      [JSON.stringify({ Version: "2012-10-17" }), /Statement/],
      [policy({ ...stmt, Condition: { IpAddress: { "aws:SourceIp": "10.0.0.0/8" } } }), /Conditions are not supported/],
      [policy({ ...stmt, Resource: "arn:aws:s3:::another-bucket/*" }), /invalid resource/],
      [policy({ ...stmt, Resource: "arn:aws:s3:::policy-bad?/*" }), /invalid resource/],
      // S3 refuses a bare "*" as a bucket policy's resource: it is not an S3 ARN.
      [policy({ ...stmt, Resource: "*" }), /invalid resource/],
      [policy({ ...stmt, Action: "s3:MakeCoffee" }), /invalid action/],
      [policy({ ...stmt, Effect: "Maybe" }), /Invalid effect/],
      [policy({ Effect: "Allow", Action: "s3:GetObject", Resource: `arn:aws:s3:::${b}/*` }), /Principal/],
      [policy({ ...stmt, Principal: { Service: "s3.amazonaws.com" } }), /principal/],
    ] as const) {
      const res = await s3(`/${b}?policy`, { method: "PUT", body: doc });
      const xml = await res.text();
      expect(res.status, doc).toBe(400);
      expect(errorCode(xml)).toBe("MalformedPolicy");
      expect(xml).toMatch(reason);
    }
    expect(errorCode(await (await s3(`/${b}?policy`)).text())).toBe("NoSuchBucketPolicy");
    expect(errorCode(await (await s3("/policy-nowhere?policy", { method: "PUT", body: policy(stmt) })).text())).toBe("MalformedPolicy");
  });
});
