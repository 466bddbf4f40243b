// Bucket replication inside workerd: Put/Get/DeleteBucketReplication with S3's document and S3's
// refusals (api/s3/bucket-replication.ts), nothing half-stored; replication to a bucket of the same
// gateway (services/replication.ts, from the source index's alarm): the bytes equal, the version's
// x-amz-replication-status PENDING then COMPLETED, metadata and tags carried, a delete marker
// replicated, an SSE-C object FAILED; tag filters (Tag, And) checked, answered back as given, and
// matched against the tags a version was written with; ExistingObjectReplication's walk of the
// objects already there, a bounded batch per alarm run, every one replicated. The remote target of vitest.config.ts ("offsite") points
// where nothing listens; replication to a real remote S3 server: tests/node/replication.test.ts.
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { checkVars, parseReplicationTargets } from "../../worker/src/config-vars";
import type { BucketIndex } from "../../worker/src/meta/bucket-index";
import { holdsQuery, PENDING_OF_QUERY, waitingQuery } from "../../worker/src/meta/outbox";
import { type Replication, WALK_KEYS_QUERY } from "../../worker/src/meta/replication-rules";
import { AwsClient } from "aws4fetch";
import { exports } from "cloudflare:workers";
import { hasDotSegment, multipartSpans } from "../../worker/src/services/replication";
import type { Manifest } from "../../worker/src/shared/core-api";
import { signedPostFields } from "./post-form";
import { CREDENTIALS } from "../shared/credentials";
import { GATEWAY, s3, s3ok } from "./signed";

const errorCode = (xml: string) => xml.match(/<Code>([^<]+)<\/Code>/)?.[1];

async function expectError(res: Response, status: number, code: string): Promise<string> {
  const xml = await res.text();
  expect(res.status, xml).toBe(status);
  expect(errorCode(xml), xml).toBe(code);
  return xml;
}

type Rule = { id?: string; priority?: number; status?: string; prefix?: string; filter?: string; markers?: string; dest: string; extra?: string };

function rule(r: Rule): string {
  const id = r.id === undefined ? "" : `<ID>${r.id}</ID>`;
  const priority = r.priority === undefined ? "" : `<Priority>${r.priority}</Priority>`;
  const filter = `<Filter>${r.filter ?? (r.prefix === undefined ? "" : `<Prefix>${r.prefix}</Prefix>`)}</Filter>`;
  const markers = `<DeleteMarkerReplication><Status>${r.markers ?? "Disabled"}</Status></DeleteMarkerReplication>`;
  return `<Rule>${id}${priority}<Status>${r.status ?? "Enabled"}</Status>${filter}${markers}<Destination><Bucket>${r.dest}</Bucket></Destination>${r.extra ?? ""}</Rule>`;
}

const doc = (rules: Rule[]) =>
  `<ReplicationConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Role>arn:aws:iam::123456789012:role/x</Role>${rules.map(rule).join("")}</ReplicationConfiguration>`;
const putConf = (bucket: string, body: string) => s3(`/${bucket}?replication`, { method: "PUT", body });
const versioned = (bucket: string) =>
  s3ok(`/${bucket}?versioning`, { method: "PUT", body: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>" });

async function makeBuckets(...names: string[]): Promise<void> {
  for (const name of names) {
    await s3ok(`/${name}`, { method: "PUT" });
    await versioned(name);
  }
}

/** The stored rules of `bucket` (none: []), read from its index. */
async function storedRules(bucket: string): Promise<unknown[]> {
  const stub = env.BUCKET_INDEX.get(env.BUCKET_INDEX.idFromName(bucket));
  return runInDurableObject(stub, async (index: BucketIndex) => index.replicationConfiguration());
}

/** Polls HEAD of `path` until its x-amz-replication-status is not PENDING; that status. */
async function settled(path: string, timeoutMs = 20_000): Promise<string | null> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const status = (await s3(path, { method: "HEAD" })).headers.get("x-amz-replication-status");
    if (status !== "PENDING" || Date.now() > until) return status;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("PutBucketReplication / GetBucketReplication / DeleteBucketReplication", () => {
  it("stores S3's document and answers it back; GetBucketReplication without one is 404 ReplicationConfigurationNotFoundError", async () => {
    await makeBuckets("repl-conf", "repl-conf-dest");
    await expectError(await s3("/repl-conf?replication"), 404, "ReplicationConfigurationNotFoundError");
    const body = doc([
      { id: "docs", priority: 2, prefix: "docs/", markers: "Enabled", dest: "arn:aws:s3:::repl-conf-dest" },
      { id: "offsite", priority: 1, status: "Disabled", dest: "arn:shardgate:s3:::offsite/backup-bucket" },
    ]);
    expect((await putConf("repl-conf", body)).status).toBe(200);
    const xml = await (await s3ok("/repl-conf?replication")).text();
    expect(xml).toContain(
      "<Rule><ID>docs</ID><Priority>2</Priority><Status>Enabled</Status><Filter><Prefix>docs/</Prefix></Filter><DeleteMarkerReplication><Status>Enabled</Status></DeleteMarkerReplication><Destination><Bucket>arn:aws:s3:::repl-conf-dest</Bucket></Destination></Rule>",
    );
    expect(xml).toContain("<ID>offsite</ID><Priority>1</Priority><Status>Disabled</Status>");
    // Credentials never come back: the target is named, nothing else.
    expect(xml).not.toContain("remote-secret");
    expect((await s3("/repl-conf?replication", { method: "DELETE" })).status).toBe(204);
    await expectError(await s3("/repl-conf?replication"), 404, "ReplicationConfigurationNotFoundError");
  });

  it("takes the older form: a top-level Prefix, no Priority", async () => {
    await makeBuckets("repl-v1", "repl-v1-dest");
    const v1 = (id: string, prefix: string) =>
      `<Rule><ID>${id}</ID><Prefix>${prefix}</Prefix><Status>Enabled</Status><Destination><Bucket>arn:aws:s3:::repl-v1-dest</Bucket><StorageClass>STANDARD</StorageClass></Destination></Rule>`;
    const body = `<ReplicationConfiguration><Role></Role>${v1("a", "a/")}${v1("b", "b/")}</ReplicationConfiguration>`;
    expect((await putConf("repl-v1", body)).status).toBe(200);
    expect(await (await s3ok("/repl-v1?replication")).text()).toContain("<Filter><Prefix>b/</Prefix></Filter>");
  });

  it("refuses a bucket without versioning Enabled, and suspending versioning while replication is configured", async () => {
    await s3ok("/repl-unversioned", { method: "PUT" });
    await makeBuckets("repl-unversioned-dest");
    const body = doc([{ dest: "arn:aws:s3:::repl-unversioned-dest" }]);
    await expectError(await putConf("repl-unversioned", body), 400, "InvalidRequest");
    await versioned("repl-unversioned");
    expect((await putConf("repl-unversioned", body)).status).toBe(200);
    const suspend = "<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>";
    await expectError(await s3("/repl-unversioned?versioning", { method: "PUT", body: suspend }), 409, "InvalidBucketState");
    expect(await (await s3ok("/repl-unversioned?versioning")).text()).toContain("<Status>Enabled</Status>");
  });

  it("refuses hostile and malformed documents with S3's errors, storing nothing", async () => {
    await makeBuckets("repl-bad", "repl-bad-dest");
    await s3ok("/repl-bad-unversioned-dest", { method: "PUT" });
    const good = { dest: "arn:aws:s3:::repl-bad-dest" };
    const cases: [string, number, string][] = [
      ["<ReplicationConfiguration><Rule>", 400, "MalformedXML"],
      ["<NotReplication/>", 400, "MalformedXML"],
      ["<ReplicationConfiguration><Role/></ReplicationConfiguration>", 400, "MalformedXML"],
      [doc([{ ...good, extra: "<Surprise/>" }]), 400, "MalformedXML"],
      [doc([{ ...good, status: "Maybe" }]), 400, "MalformedXML"],
      [doc([{ dest: "arn:shardgate:s3:::nowhere/bucket" }]), 400, "InvalidArgument"],
      // Another account's bucket, credentials in the ARN, a path: not a destination.
      [doc([{ dest: "arn:aws:s3:us-east-1:123456789012:repl-bad-dest" }]), 400, "InvalidArgument"],
      [doc([{ dest: "arn:shardgate:s3:::user:secret@offsite/bucket" }]), 400, "InvalidArgument"],
      [doc([{ dest: "arn:shardgate:s3:::offsite/bucket/../other" }]), 400, "InvalidArgument"],
      [doc([{ dest: "https://example.com/bucket" }]), 400, "InvalidArgument"],
      [doc([{ dest: "arn:aws:s3:::no-such-bucket-here" }]), 400, "InvalidRequest"],
      [doc([{ dest: "arn:aws:s3:::repl-bad" }]), 400, "InvalidRequest"],
      [doc([{ dest: "arn:aws:s3:::repl-bad-unversioned-dest" }]), 400, "InvalidRequest"],
      [
        doc([
          { ...good, id: "same", priority: 1 },
          { ...good, id: "same", priority: 2 },
        ]),
        400,
        "InvalidArgument",
      ],
      [
        doc([
          { ...good, id: "a", priority: 1 },
          { ...good, id: "b", priority: 1 },
        ]),
        400,
        "InvalidArgument",
      ],
      [doc([{ ...good, id: "x".repeat(256) }]), 400, "InvalidArgument"],
      [doc([{ ...good, extra: "<SourceSelectionCriteria/>" }]), 501, "NotImplemented"],
      [doc(Array.from({ length: 1001 }, (_, i) => ({ ...good, id: `r${i}`, priority: i }))), 400, "InvalidArgument"],
    ];
    for (const [body, status, code] of cases) await expectError(await putConf("repl-bad", body), status, code);
    // A document past the size limit is refused before it is parsed.
    const huge = doc([{ ...good, prefix: "p".repeat(1024 * 1024) }]);
    const res = await putConf("repl-bad", huge);
    expect(res.status).toBeGreaterThanOrEqual(400);
    await res.body?.cancel();
    expect(await storedRules("repl-bad")).toEqual([]);
    await expectError(await s3("/repl-bad?replication"), 404, "ReplicationConfigurationNotFoundError");
  });
});

describe("who may set replication, and where to", () => {
  it("is the root key's: a key that owns the source and may write the destination is refused (replication writes there for good)", async () => {
    await makeBuckets("repl-owned", "repl-owned-dest");
    const admin = (method: string, path: string, body: unknown) =>
      s3(`/_shardgate/admin${path}`, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const key = (await (await admin("POST", "/keys", { name: "replication tenant" })).json()) as { id: string; secret: string };
    for (const b of ["repl-owned", "repl-owned-dest"]) await admin("PUT", `/keys/${key.id}/buckets/${b}`, { read: true, write: true, owner: true });
    const client = new AwsClient({ accessKeyId: key.id, secretAccessKey: key.secret, service: "s3", region: "us-east-1" });
    for (const dest of ["arn:aws:s3:::repl-owned-dest", "arn:shardgate:s3:::offsite/any-bucket"]) {
      const res = await exports.default.fetch(await client.sign(`${GATEWAY}/repl-owned?replication`, { method: "PUT", body: doc([{ dest }]) }));
      await expectError(res, 403, "AccessDenied");
    }
    expect(await storedRules("repl-owned")).toEqual([]);
  });

  it("refuses a remote target that is this gateway (its replicas would come back) and more than 8 destinations", async () => {
    await makeBuckets("repl-limits");
    await expectError(await putConf("repl-limits", doc([{ dest: "arn:shardgate:s3:::self/elsewhere" }])), 400, "InvalidArgument");
    const nine = Array.from({ length: 9 }, (_, i) => ({ id: `r${i}`, priority: i + 1, prefix: `p${i}/`, dest: `arn:shardgate:s3:::offsite/dest-${i}` }));
    await expectError(await putConf("repl-limits", doc(nine)), 400, "InvalidArgument");
    expect((await putConf("repl-limits", doc(nine.slice(0, 8)))).status).toBe(200);
    expect(await storedRules("repl-limits")).toHaveLength(8);
  });

  it("never sends a key whose path a URL would collapse (. and .. segments, %2E too) to a remote endpoint: FAILED at once", async () => {
    for (const key of ["..", "../victim/x", "a/../../victim", ".", "x/.", "%2e%2E/y", ".%2e"]) expect(hasDotSegment(key), key).toBe(true);
    for (const key of ["...", "a..b", ".hidden", "x/.../y", "a.b/c", ""]) expect(hasDotSegment(key), key).toBe(false);
    await makeBuckets("repl-dots");
    expect((await putConf("repl-dots", doc([{ dest: "arn:shardgate:s3:::offsite/dest-bucket" }]))).status).toBe(200);
    // A form upload (presigned POST) names its key in a field, where no URL collapses it.
    const key = "a/../../victim-bucket/escape";
    const form = new FormData();
    for (const [name, value] of Object.entries({ key, ...(await signedPostFields([{ bucket: "repl-dots" }, ["starts-with", "$key", ""]])) }))
      form.append(name, value);
    form.append("file", new File(["x"], "x.txt"));
    const encoded = new Response(form);
    const contentType = encoded.headers.get("content-type") as string;
    const serialized = new Uint8Array(await encoded.arrayBuffer());
    const body = new Uint8Array([...serialized, 13, 10]); // browsers end a form with CRLF (api/s3/post-object.form.ts)
    const posted = await exports.default.fetch(new Request(`${GATEWAY}/repl-dots`, { method: "POST", body, headers: { "content-type": contentType } }));
    expect(posted.status, await posted.text()).toBe(204);
    const listed = await (await s3ok("/repl-dots?list-type=2")).text();
    expect(listed).toContain(`<Key>${key}</Key>`);
    const stub = env.BUCKET_INDEX.get(env.BUCKET_INDEX.idFromName("repl-dots"));
    const failed = async () =>
      runInDurableObject(
        stub,
        async (_i: BucketIndex, state) => state.storage.sql.exec<{ e: string }>("SELECT last_error AS e FROM outbox_dead").toArray()[0]?.e ?? null,
      );
    await expect.poll(failed, { timeout: 20_000 }).toContain('"." or ".." path segment');
  });
});

describe("what goes to a remote endpoint as a multipart upload", () => {
  const MiB = 1024 * 1024;
  const manifest = (etag: string, sizes: number[]) =>
    ({
      size: sizes.reduce((a, b) => a + b, 0),
      etag,
      parts: sizes.map((size) => ({ size, etag: "0".repeat(32), layout: { type: "sharded" } })),
    }) as unknown as Manifest;
  const md5 = "9b2cf535f27731c974343645a3985328";

  it("is a version uploaded in parts (its ETag …-N, N its parts), with the same boundaries, when S3 takes them as they are", () => {
    const spans = multipartSpans(manifest(`${md5}-3`, [5 * MiB, 5 * MiB, 17]));
    expect(spans?.map(({ index, offset, size }) => ({ index, offset, size }))).toEqual([
      { index: 0, offset: 0, size: 5 * MiB },
      { index: 1, offset: 5 * MiB, size: 5 * MiB },
      { index: 2, offset: 10 * MiB, size: 17 },
    ]);
    expect(multipartSpans(manifest(`${md5}-1`, [3]))).toHaveLength(1);
    // Written whole: one PUT.
    expect(multipartSpans(manifest(md5, [5 * MiB]))).toBeNull();
    // An ETag that does not count the manifest's parts, a part but the last under 5 MiB (a
    // direct-path commit with small parts), a part over 5 GiB: not as they are.
    expect(multipartSpans(manifest(`${md5}-2`, [5 * MiB, 5 * MiB, 1]))).toBeNull();
    expect(multipartSpans(manifest(`${md5}-2`, [5 * MiB - 1, 10]))).toBeNull();
    expect(multipartSpans(manifest(`${md5}-2`, [5 * 1024 * MiB + 1, 10]))).toBeNull();
  });
});

describe("replication to a bucket of this gateway", () => {
  it("copies each new version byte-exact with its metadata and tags; status PENDING then COMPLETED", async () => {
    await makeBuckets("repl-src", "repl-dst");
    const body = doc([{ id: "all", priority: 1, prefix: "data/", markers: "Enabled", dest: "arn:aws:s3:::repl-dst" }]);
    expect((await putConf("repl-src", body)).status).toBe(200);
    const bytes = new Uint8Array(3 * 1024 * 1024 + 17);
    for (let at = 0; at < bytes.length; at += 65536) crypto.getRandomValues(bytes.subarray(at, at + 65536));
    const put = await s3ok("/repl-src/data/one.bin", {
      method: "PUT",
      body: bytes,
      headers: { "Content-Type": "application/x-test", "x-amz-meta-color": "blue", "x-amz-tagging": "team=storage" },
    });
    const versionId = put.headers.get("x-amz-version-id");
    const first = await s3(`/repl-src/data/one.bin?versionId=${versionId}`, { method: "HEAD" });
    expect(["PENDING", "COMPLETED"]).toContain(first.headers.get("x-amz-replication-status"));
    expect(await settled("/repl-src/data/one.bin")).toBe("COMPLETED");
    const got = await s3ok("/repl-dst/data/one.bin");
    expect(got.headers.get("content-type")).toBe("application/x-test");
    expect(got.headers.get("x-amz-meta-color")).toBe("blue");
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(bytes);
    expect(await (await s3ok("/repl-dst/data/one.bin?tagging")).text()).toContain("<Key>team</Key><Value>storage</Value>");
    // GET answers the status too; a key outside the rule's prefix is not replicated and has none.
    expect((await s3ok("/repl-src/data/one.bin")).headers.get("x-amz-replication-status")).toBe("COMPLETED");
    const other = await s3ok("/repl-src/other.txt", { method: "PUT", body: "x" });
    expect(other.headers.get("x-amz-replication-status")).toBeNull();
    expect((await s3("/repl-src/other.txt", { method: "HEAD" })).headers.get("x-amz-replication-status")).toBeNull();
  });

  it("keeps the order per key (the last overwrite wins) and replicates a delete marker", async () => {
    await makeBuckets("repl-order", "repl-order-dst");
    expect((await putConf("repl-order", doc([{ markers: "Enabled", dest: "arn:aws:s3:::repl-order-dst" }]))).status).toBe(200);
    for (let i = 0; i < 5; i++) await s3ok("/repl-order/k", { method: "PUT", body: `version ${i}` });
    await s3ok("/repl-order/gone", { method: "PUT", body: "soon deleted" });
    expect(await settled("/repl-order/k")).toBe("COMPLETED");
    expect(await settled("/repl-order/gone")).toBe("COMPLETED");
    expect(await (await s3ok("/repl-order-dst/k")).text()).toBe("version 4");
    const versions = await (await s3ok("/repl-order-dst?versions&prefix=k")).text();
    expect(versions.match(/<Version>/g)?.length).toBe(5);
    await s3ok("/repl-order/gone", { method: "DELETE" }, 204);
    const until = Date.now() + 20_000;
    while ((await s3("/repl-order-dst/gone", { method: "HEAD" })).status === 200 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    const head = await s3("/repl-order-dst/gone", { method: "HEAD" });
    expect(head.status).toBe(404);
    expect(head.headers.get("x-amz-delete-marker")).toBe("true");
  });

  it("never replicates a replica again: two buckets replicating to each other make one version each, the replica REPLICA", async () => {
    await makeBuckets("repl-ping", "repl-pong");
    expect((await putConf("repl-ping", doc([{ markers: "Enabled", dest: "arn:aws:s3:::repl-pong" }]))).status).toBe(200);
    expect((await putConf("repl-pong", doc([{ markers: "Enabled", dest: "arn:aws:s3:::repl-ping" }]))).status).toBe(200);
    await s3ok("/repl-ping/ball", { method: "PUT", body: "served" });
    expect(await settled("/repl-ping/ball")).toBe("COMPLETED");
    expect((await s3ok("/repl-pong/ball")).headers.get("x-amz-replication-status")).toBe("REPLICA");
    await s3ok("/repl-ping/ball", { method: "DELETE" }, 204);
    const until = Date.now() + 20_000;
    while ((await s3("/repl-pong/ball", { method: "HEAD" })).status === 200 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 500)); // what a loop would have sent by now
    const count = async (b: string) => ((await (await s3ok(`/${b}?versions`)).text()).match(/<(Version|DeleteMarker)>/g) ?? []).length;
    expect(await count("repl-ping")).toBe(2);
    expect(await count("repl-pong")).toBe(2);
  });

  it("marks an SSE-C object FAILED: the gateway does not hold its key", async () => {
    await makeBuckets("repl-ssec", "repl-ssec-dst");
    expect((await putConf("repl-ssec", doc([{ dest: "arn:aws:s3:::repl-ssec-dst" }]))).status).toBe(200);
    const key = crypto.getRandomValues(new Uint8Array(32));
    const md5 = new Uint8Array(await crypto.subtle.digest("MD5", key));
    const b64 = (b: Uint8Array) => btoa(String.fromCharCode(...b));
    const sse = {
      "x-amz-server-side-encryption-customer-algorithm": "AES256",
      "x-amz-server-side-encryption-customer-key": b64(key),
      "x-amz-server-side-encryption-customer-key-MD5": b64(md5),
    };
    await s3ok("/repl-ssec/secret", { method: "PUT", body: "hidden", headers: sse });
    const until = Date.now() + 20_000;
    let status: string | null = "PENDING";
    while (status === "PENDING" && Date.now() < until) {
      status = (await s3("/repl-ssec/secret", { method: "HEAD", headers: sse })).headers.get("x-amz-replication-status");
      if (status === "PENDING") await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe("FAILED");
    expect((await s3("/repl-ssec-dst/secret", { method: "HEAD" })).status).toBe(404);
  });
});

describe("replication to a remote target that does not answer", () => {
  it("keeps the version PENDING while its row waits for a retry, FAILED after the last attempt; the admin retry makes it PENDING again", async () => {
    await makeBuckets("repl-offsite");
    expect((await putConf("repl-offsite", doc([{ dest: "arn:shardgate:s3:::offsite/backup-bucket" }]))).status).toBe(200);
    const put = await s3ok("/repl-offsite/k", { method: "PUT", body: "far away" });
    const versionId = put.headers.get("x-amz-version-id") as string;
    const stub = env.BUCKET_INDEX.get(env.BUCKET_INDEX.idFromName("repl-offsite"));
    // The first attempt fails (nothing listens) and the row waits 10 minutes (vitest.config.ts).
    const until = Date.now() + 20_000;
    const attempts = () =>
      runInDurableObject(
        stub,
        async (_i: BucketIndex, state) => state.storage.sql.exec<{ a: number }>("SELECT attempts AS a FROM outbox").toArray()[0]?.a ?? -1,
      );
    while ((await attempts()) < 1 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(await attempts()).toBe(1);
    expect((await s3("/repl-offsite/k", { method: "HEAD" })).headers.get("x-amz-replication-status")).toBe("PENDING");
    const status = await runInDurableObject(stub, (index: BucketIndex) => index.notificationStatus(10));
    expect(status.replication).toEqual({ pending: 1, dead: 0 });
    // Its last attempt, now: a dead letter, and the version FAILED with the reason kept.
    await runInDurableObject(stub, async (_i: BucketIndex, state) => {
      state.storage.sql.exec("UPDATE outbox SET attempts = 29, next_at = 0");
      await state.storage.setAlarm(Date.now());
    });
    const failedBy = Date.now() + 20_000;
    while ((await s3("/repl-offsite/k", { method: "HEAD" })).headers.get("x-amz-replication-status") === "PENDING" && Date.now() < failedBy)
      await new Promise((r) => setTimeout(r, 100));
    expect((await s3(`/repl-offsite/k?versionId=${versionId}`, { method: "HEAD" })).headers.get("x-amz-replication-status")).toBe("FAILED");
    const dead = await runInDurableObject(stub, (index: BucketIndex) => index.notificationStatus(10));
    expect(dead.replication).toEqual({ pending: 0, dead: 1 });
    expect(dead.dead[0]).toMatchObject({ target: "replica:offsite/backup-bucket", key: "k", versionId });
    const retried = await (await s3ok("/_shardgate/admin/buckets/repl-offsite/notifications/retry", { method: "POST" })).json<{ retried: number }>();
    expect(retried.retried).toBe(1);
    expect((await s3("/repl-offsite/k", { method: "HEAD" })).headers.get("x-amz-replication-status")).toBe("PENDING");
  });
});

describe("SHARDGATE_REPLICATION_TARGETS", () => {
  it("is checked with the other variables, never showing its text (it holds credentials)", () => {
    const target = { endpoint: "https://s3.example/", region: "eu-west-1", accessKeyId: "AK", secretAccessKey: "very-secret-value" };
    const ok = JSON.stringify({ offsite: target, other: { ...target, region: undefined } });
    expect(checkVars({ SHARDGATE_REPLICATION_TARGETS: ok }, { partial: true })).toEqual([]);
    expect(parseReplicationTargets(ok)).toEqual({
      offsite: { ...target, endpoint: "https://s3.example" },
      other: { ...target, endpoint: "https://s3.example", region: "us-east-1" },
    });
    expect(parseReplicationTargets(undefined)).toEqual({});
    const bad = [
      "not json",
      "[]",
      JSON.stringify({ "bad name": target }),
      JSON.stringify({ a: { ...target, endpoint: "ftp://h" } }),
      JSON.stringify({ a: { ...target, region: "Not A Region" } }),
      JSON.stringify({ a: { ...target, accessKeyId: "" } }),
      JSON.stringify({ a: { ...target, secretAccessKey: undefined } }),
      JSON.stringify({ a: "https://h" }),
    ];
    for (const value of bad) {
      expect(parseReplicationTargets(value), value).toBeNull();
      const problems = checkVars({ SHARDGATE_REPLICATION_TARGETS: value }, { partial: true });
      expect(problems, value).toHaveLength(1);
      expect(problems[0]).toContain("SHARDGATE_REPLICATION_TARGETS: expected a JSON object");
      expect(problems[0]).not.toContain("very-secret-value");
    }
  });
});

const tag = (k: string, v: string) => `<Tag><Key>${k}</Key><Value>${v}</Value></Tag>`;
const EXISTING = "<ExistingObjectReplication><Status>Enabled</Status></ExistingObjectReplication>";
const indexOf = (bucket: string) => env.BUCKET_INDEX.get(env.BUCKET_INDEX.idFromName(bucket));
const sqlCount = (bucket: string, query: string) =>
  runInDurableObject(indexOf(bucket), async (_i: BucketIndex, state) => state.storage.sql.exec<{ n: number }>(query).one().n);
type WalkState = { generation: number; state: string; visited: number; queued: number; runs: number; largestRun: number; waits: number };
const walkOf = async (bucket: string) =>
  (await runInDurableObject(indexOf(bucket), (index: BucketIndex) => index.notificationStatus(1))).replication as {
    pending: number;
    dead: number;
    existingObjects?: WalkState;
  };

describe("tag filters", () => {
  it("refuses bad tag filters with S3's errors, storing nothing and keeping the configuration there was", async () => {
    await makeBuckets("repl-tagbad", "repl-tagbad-dest");
    const dest = "arn:aws:s3:::repl-tagbad-dest";
    const before = doc([{ id: "kept", prefix: "kept/", dest }]);
    expect((await putConf("repl-tagbad", before)).status).toBe(200);
    const withFilter = (filter: string, more: Partial<Rule> = {}) => doc([{ dest, filter, ...more }]);
    const eleven = Array.from({ length: 11 }, (_, i) => tag(`k${i}`, "v")).join("");
    const cases: [string, number, string][] = [
      [withFilter("<Tag><Key>k</Key></Tag>"), 400, "MalformedXML"],
      [withFilter("<Tag><Value>v</Value></Tag>"), 400, "MalformedXML"],
      [withFilter("<Tag><Key>k</Key><Key>j</Key><Value>v</Value></Tag>"), 400, "MalformedXML"],
      [withFilter("<Tag><Key>k</Key><Value>v</Value><Other/></Tag>"), 400, "MalformedXML"],
      [withFilter("<Tag><Key><b>k</b></Key><Value>v</Value></Tag>"), 400, "MalformedXML"],
      // Two conditions outside an And, an And of fewer than two, two Prefixes, something else.
      [withFilter(`<Prefix>a/</Prefix>${tag("k", "v")}`), 400, "MalformedXML"],
      [withFilter(`${tag("k", "v")}${tag("j", "v")}`), 400, "MalformedXML"],
      [withFilter("<And><Prefix>a/</Prefix></And>"), 400, "MalformedXML"],
      [withFilter(`<And>${tag("k", "v")}</And>`), 400, "MalformedXML"],
      [withFilter("<And></And>"), 400, "MalformedXML"],
      [withFilter(`<And><Prefix>a/</Prefix><Prefix>b/</Prefix>${tag("k", "v")}</And>`), 400, "MalformedXML"],
      [withFilter(`<And><Prefix>a/</Prefix>${tag("k", "v")}<Suffix>x</Suffix></And>`), 400, "MalformedXML"],
      [withFilter(`<And><Prefix>a/</Prefix>${tag("k", "v")}</And><And><Prefix>b/</Prefix>${tag("k", "v")}</And>`), 400, "MalformedXML"],
      [withFilter(`<And>${eleven}</And>`), 400, "InvalidArgument"],
      [withFilter(`<And>${tag("k", "1")}${tag("k", "2")}</And>`), 400, "InvalidRequest"],
      [withFilter(`<And><Prefix>a/</Prefix>${tag("k", "v")}${tag("j", "v")}${tag("k", "v")}</And>`), 400, "InvalidRequest"],
      [withFilter(tag("k".repeat(129), "v")), 400, "InvalidTag"],
      [withFilter(tag("", "v")), 400, "InvalidTag"],
      [withFilter(`<And><Prefix>a/</Prefix>${tag("k", "v".repeat(257))}</And>`), 400, "InvalidTag"],
      // A delete marker has no tags: S3 refuses DeleteMarkerReplication Enabled with a Tag filter.
      [withFilter(tag("k", "v"), { markers: "Enabled" }), 400, "InvalidRequest"],
      [withFilter(`<And><Prefix>a/</Prefix>${tag("k", "v")}</And>`, { markers: "Enabled" }), 400, "InvalidRequest"],
      // ExistingObjectReplication: a Status, Enabled or Disabled, once.
      [doc([{ dest, extra: "<ExistingObjectReplication><Status>Maybe</Status></ExistingObjectReplication>" }]), 400, "MalformedXML"],
      [doc([{ dest, extra: "<ExistingObjectReplication></ExistingObjectReplication>" }]), 400, "MalformedXML"],
      [doc([{ dest, extra: `${EXISTING}${EXISTING}` }]), 400, "MalformedXML"],
      // A valid rule with ExistingObjectReplication beside a bad one: nothing stored, no walk begun.
      [
        doc([
          { id: "a", priority: 1, dest, extra: EXISTING },
          { id: "b", priority: 2, dest, filter: tag("k", "v"), markers: "Enabled" },
        ]),
        400,
        "InvalidRequest",
      ],
    ];
    for (const [body, status, code] of cases) await expectError(await putConf("repl-tagbad", body), status, code);
    const rules = (await storedRules("repl-tagbad")) as { id: string; tags?: unknown }[];
    expect(rules.map((r) => r.id)).toEqual(["kept"]);
    expect(rules[0]?.tags).toBeUndefined();
    expect((await walkOf("repl-tagbad")).existingObjects).toBeUndefined();
    expect(await (await s3ok("/repl-tagbad?replication")).text()).toContain("<Filter><Prefix>kept/</Prefix></Filter>");
  });

  it("answers each filter back as it was given, at the bounds (10 tags, keys of 128 and values of 256 characters)", async () => {
    await makeBuckets("repl-tagconf", "repl-tagconf-dest");
    const dest = "arn:aws:s3:::repl-tagconf-dest";
    const ten = Array.from({ length: 10 }, (_, i) => tag(`k${i}`, `v${i}`)).join("");
    const filters = [
      tag("team", "storage"),
      `<And><Prefix>logs/</Prefix>${tag("a", "1")}</And>`,
      `<And>${tag("a", "1")}${tag("b", "2")}</And>`,
      `<And><Prefix>p/</Prefix>${tag("k".repeat(128), "v".repeat(256))}${tag("z", "")}</And>`,
      `<And>${ten}</And>`,
      "<Prefix>plain/</Prefix>",
    ];
    const rules = filters.map((filter, i) => ({ id: `r${i}`, priority: i + 1, filter, dest, extra: i === 0 ? EXISTING : "" }));
    rules.push({ id: "off", priority: 99, filter: "", dest, extra: "<ExistingObjectReplication><Status>Disabled</Status></ExistingObjectReplication>" });
    const put = await putConf("repl-tagconf", doc(rules));
    expect(put.status, await put.text()).toBe(200);
    const xml = await (await s3ok("/repl-tagconf?replication")).text();
    const marker = "<DeleteMarkerReplication><Status>Disabled</Status></DeleteMarkerReplication>";
    for (const [i, filter] of filters.entries()) {
      const existing = i === 0 ? EXISTING : "";
      expect(xml).toContain(
        `<Rule><ID>r${i}</ID><Priority>${i + 1}</Priority><Status>Enabled</Status><Filter>${filter}</Filter>${marker}${existing}<Destination><Bucket>${dest}</Bucket></Destination></Rule>`,
      );
    }
    expect(xml).toContain(`<Filter><Prefix></Prefix></Filter>${marker}<ExistingObjectReplication><Status>Disabled</Status></ExistingObjectReplication>`);
    // A configuration without ExistingObjectReplication Enabled on an enabled rule starts no walk.
    expect((await putConf("repl-tagconf", doc(rules.slice(1)))).status).toBe(200);
    expect((await walkOf("repl-tagconf")).existingObjects).toBeUndefined();
  });

  it("replicates a version only when it carries every tag of the filter with the same value; later tag changes queue nothing", async () => {
    await makeBuckets("repl-tags", "repl-tags-dst");
    const dest = "arn:aws:s3:::repl-tags-dst";
    const body = doc([
      { id: "team", priority: 1, filter: tag("team", "storage"), dest },
      { id: "logs", priority: 2, filter: `<And><Prefix>logs/</Prefix>${tag("a", "1")}${tag("b", "2")}</And>`, dest },
    ]);
    expect((await putConf("repl-tags", body)).status).toBe(200);
    const write = (key: string, tagging?: string) =>
      s3ok(`/repl-tags/${key}`, { method: "PUT", body: `body of ${key}`, headers: tagging === undefined ? {} : { "x-amz-tagging": tagging } });
    await write("yes", "team=storage&other=x");
    await write("logs/both", "a=1&b=2");
    await write("no-tags");
    await write("other-value", "team=compute");
    await write("logs/half", "a=1");
    await write("logs/wrong", "a=1&b=3");
    await write("elsewhere/both", "a=1&b=2"); // the And's tags outside its prefix
    // A multipart upload takes its tags at CreateMultipartUpload.
    const created = await (await s3ok("/repl-tags/multi?uploads", { method: "POST", headers: { "x-amz-tagging": "team=storage" } })).text();
    const uploadId = created.match(/<UploadId>([^<]+)<\/UploadId>/)?.[1] as string;
    const part = await s3ok(`/repl-tags/multi?partNumber=1&uploadId=${uploadId}`, { method: "PUT", body: "multipart body" });
    const complete = `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${part.headers.get("etag")}</ETag></Part></CompleteMultipartUpload>`;
    await s3ok(`/repl-tags/multi?uploadId=${uploadId}`, { method: "POST", body: complete });
    for (const key of ["yes", "logs/both", "multi"]) expect(await settled(`/repl-tags/${key}`), key).toBe("COMPLETED");
    for (const key of ["yes", "logs/both", "multi"])
      expect(await (await s3ok(`/repl-tags-dst/${key}`)).text()).toBe(key === "multi" ? "multipart body" : `body of ${key}`);
    for (const key of ["no-tags", "other-value", "logs/half", "logs/wrong", "elsewhere/both"]) {
      expect((await s3(`/repl-tags/${key}`, { method: "HEAD" })).headers.get("x-amz-replication-status"), key).toBeNull();
      expect((await s3(`/repl-tags-dst/${key}`, { method: "HEAD" })).status, key).toBe(404);
    }
    // Tags changed after the write (PutObjectTagging) are not replicated: a version that did not
    // match stays unreplicated, one replicated stays COMPLETED, and nothing is queued.
    const tagging = (pairs: [string, string][]) => `<Tagging><TagSet>${pairs.map(([k, v]) => tag(k, v)).join("")}</TagSet></Tagging>`;
    await s3ok("/repl-tags/no-tags?tagging", { method: "PUT", body: tagging([["team", "storage"]]) });
    await s3ok("/repl-tags/yes?tagging", { method: "PUT", body: tagging([["team", "compute"]]) });
    await s3ok("/repl-tags/logs/both?tagging", { method: "DELETE" }, 204);
    expect(await sqlCount("repl-tags", "SELECT COUNT(*) AS n FROM outbox")).toBe(0);
    expect((await s3("/repl-tags/no-tags", { method: "HEAD" })).headers.get("x-amz-replication-status")).toBeNull();
    expect((await s3("/repl-tags/yes", { method: "HEAD" })).headers.get("x-amz-replication-status")).toBe("COMPLETED");
    expect((await s3("/repl-tags/logs/both", { method: "HEAD" })).headers.get("x-amz-replication-status")).toBe("COMPLETED");
    expect((await s3("/repl-tags-dst/no-tags", { method: "HEAD" })).status).toBe(404);
    expect(await (await s3ok("/repl-tags-dst/yes?tagging")).text()).toContain("<Value>storage</Value>");
    // A delete marker is never replicated under a tag filter (DeleteMarkerReplication Disabled).
    await s3ok("/repl-tags/yes", { method: "DELETE" }, 204);
    await new Promise((r) => setTimeout(r, 300));
    expect(await sqlCount("repl-tags", "SELECT COUNT(*) AS n FROM outbox")).toBe(0);
    expect((await s3("/repl-tags-dst/yes", { method: "HEAD" })).status).toBe(200);
  });
});

/** A stored rule, as the index keeps it: every key to the remote "offsite", existing objects too (walks driven by hand). */
const OFFSITE_EXISTING = {
  id: "r",
  priority: 1,
  enabled: true,
  prefix: "",
  deleteMarkers: false,
  destination: "arn:shardgate:s3:::offsite/b",
  target: "replica:offsite/b",
  existing: true,
};

describe("ExistingObjectReplication", () => {
  it("sends a destination what it never got (written before its rule stood) when its filter widens or it asks for existing objects only later; never a second copy to one that had it", async () => {
    const versionsAt = async (b: string) => ((await (await s3ok(`/${b}?versions`)).text()).match(/<Version>/g) ?? []).length;
    for (const [src, widen] of [
      ["repl-wid", true],
      ["repl-late", false],
    ] as const) {
      await makeBuckets(src, `${src}-a`, `${src}-b`);
      const A = `arn:aws:s3:::${src}-a`;
      const B = `arn:aws:s3:::${src}-b`;
      // one reaches A alone: B is not configured yet.
      expect((await putConf(src, doc([{ id: "a", priority: 1, prefix: "", dest: A }]))).status).toBe(200);
      await s3ok(`/${src}/one`, { method: "PUT", body: "one" });
      expect(await settled(`/${src}/one`)).toBe("COMPLETED");
      // B comes (with a narrower prefix, or the same one), without existing objects: one is not sent.
      const b1 = { id: "b", priority: 2, prefix: widen ? "x/" : "", dest: B };
      expect((await putConf(src, doc([{ id: "a", priority: 1, prefix: "", dest: A }, b1]))).status).toBe(200);
      // Then B widened to every key / asking for existing objects now, and A asking too: B gets one, A nothing twice.
      const both = doc([
        { id: "a", priority: 1, prefix: "", dest: A, extra: EXISTING },
        { id: "b", priority: 2, prefix: "", dest: B, extra: EXISTING },
      ]);
      expect((await putConf(src, both)).status).toBe(200);
      await expect.poll(async () => (await walkOf(src)).existingObjects?.state, { timeout: 20_000 }).toBe("done");
      await expect.poll(async () => (await s3(`/${src}-b/one`)).status, { timeout: 20_000 }).toBe(200);
      expect(await settled(`/${src}/one`)).toBe("COMPLETED");
      expect(await versionsAt(`${src}-a`)).toBe(1);
      expect(await versionsAt(`${src}-b`)).toBe(1);
      expect((await walkOf(src)).existingObjects).toMatchObject({ visited: 1, queued: 1 });
    }
  });

  it("replicates the current objects already there that match, never a REPLICA, a noncurrent version or a deleted key; Delete cancels the walk", async () => {
    await makeBuckets("repl-eor-up", "repl-eor", "repl-eor-dst");
    // A replica in the source: written there by another bucket's replication.
    expect((await putConf("repl-eor-up", doc([{ dest: "arn:aws:s3:::repl-eor" }]))).status).toBe(200);
    await s3ok("/repl-eor-up/keep/from-upstream", { method: "PUT", body: "upstream" });
    expect(await settled("/repl-eor-up/keep/from-upstream")).toBe("COMPLETED");
    expect((await s3("/repl-eor/keep/from-upstream", { method: "HEAD" })).headers.get("x-amz-replication-status")).toBe("REPLICA");
    const put = (key: string, body: string, tagging = "class=gold") => s3ok(`/repl-eor/${key}`, { method: "PUT", body, headers: { "x-amz-tagging": tagging } });
    const old = await put("keep/overwritten", "old");
    await put("keep/overwritten", "new");
    await put("keep/plain", "plain");
    await put("keep/silver", "silver", "class=silver");
    await put("other/gold", "outside the prefix");
    await put("keep/deleted", "deleted");
    await s3ok("/repl-eor/keep/deleted", { method: "DELETE" }, 204);
    const rule = {
      id: "existing",
      priority: 1,
      filter: `<And><Prefix>keep/</Prefix>${tag("class", "gold")}</And>`,
      dest: "arn:aws:s3:::repl-eor-dst",
      extra: EXISTING,
    };
    expect((await putConf("repl-eor", doc([rule]))).status).toBe(200);
    await expect.poll(async () => (await walkOf("repl-eor")).existingObjects?.state, { timeout: 20_000 }).toBe("done");
    for (const key of ["keep/overwritten", "keep/plain"]) expect(await settled(`/repl-eor/${key}`), key).toBe("COMPLETED");
    expect(await (await s3ok("/repl-eor-dst/keep/overwritten")).text()).toBe("new");
    const dstVersions = await (await s3ok("/repl-eor-dst?versions")).text();
    expect(dstVersions.match(/<Version>/g)?.length, dstVersions).toBe(2);
    for (const key of ["keep/silver", "other/gold", "keep/deleted", "keep/from-upstream"])
      expect((await s3(`/repl-eor-dst/${key}`, { method: "HEAD" })).status, key).toBe(404);
    const oldId = old.headers.get("x-amz-version-id");
    expect((await s3(`/repl-eor/keep/overwritten?versionId=${oldId}`, { method: "HEAD" })).headers.get("x-amz-replication-status")).toBeNull();
    expect((await s3("/repl-eor/keep/from-upstream", { method: "HEAD" })).headers.get("x-amz-replication-status")).toBe("REPLICA");
    const walk = (await walkOf("repl-eor")).existingObjects as WalkState;
    expect(walk).toMatchObject({ generation: 1, state: "done", visited: 5, queued: 2 });
    // The admin endpoint of the bucket's outbox shows it.
    const admin = await (await s3ok("/_shardgate/admin/buckets/repl-eor/notifications")).json<{ replication: { existingObjects: WalkState } }>();
    expect(admin.replication.existingObjects).toMatchObject({ state: "done", visited: 5, queued: 2 });
    // The same configuration again: a new walk, which finds both COMPLETED and queues nothing.
    expect((await putConf("repl-eor", doc([rule]))).status).toBe(200);
    await expect.poll(async () => (await walkOf("repl-eor")).existingObjects?.state, { timeout: 20_000 }).toBe("done");
    expect((await walkOf("repl-eor")).existingObjects).toMatchObject({ generation: 2, queued: 0 });
    expect((await s3ok("/repl-eor-dst?versions")).status).toBe(200);
    expect((await (await s3ok("/repl-eor-dst?versions")).text()).match(/<Version>/g)?.length).toBe(2);
    // DeleteBucketReplication cancels the walk; a configuration without it too.
    expect((await putConf("repl-eor", doc([{ ...rule, extra: "" }]))).status).toBe(200);
    expect((await walkOf("repl-eor")).existingObjects).toBeUndefined();
    expect((await putConf("repl-eor", doc([rule]))).status).toBe(200);
    expect((await s3("/repl-eor?replication", { method: "DELETE" })).status).toBe(204);
    expect((await walkOf("repl-eor")).existingObjects).toBeUndefined();
  });

  it("walks a bucket a bounded batch per step, resumes from its cursor, and waits rather than fill the outbox past its share of the cap", async () => {
    await makeBuckets("repl-walk");
    await Promise.all(Array.from({ length: 30 }, (_, i) => s3ok(`/repl-walk/k${String(i).padStart(2, "0")}`, { method: "PUT", body: "x" })));
    const rules = [OFFSITE_EXISTING];
    // Driven by hand inside the index (no alarm set): the rows go to a target that never answers.
    type Internals = {
      replication: {
        setConfiguration(r: unknown): boolean;
        walkStep(o: unknown, cap: number, batch: number): { state: string; queued: number; waitMs: number };
      };
      outbox: { count(): number };
    };
    const steps = await runInDurableObject(indexOf("repl-walk"), async (index: BucketIndex, state) => {
      const i = index as unknown as Internals;
      const step = (cap: number, batch: number) =>
        state.storage.transactionSync(() => ({ ...i.replication.walkStep(i.outbox, cap, batch), outbox: i.outbox.count() }));
      expect(i.replication.setConfiguration(rules)).toBe(true);
      const out = [step(1000, 10), step(1000, 10)];
      // A cap of 25: the walk fills at most 22 (90%), then waits (polling after 1 s, then 2 s, …),
      // and goes on once rows leave.
      out.push(step(25, 10), step(25, 10), step(25, 10));
      state.storage.sql.exec("DELETE FROM outbox WHERE seq IN (SELECT seq FROM outbox ORDER BY seq LIMIT 15)");
      i.outbox.count(); // (as delivery would have counted them gone)
      out.push(step(25, 10), step(1000, 10), step(1000, 10));
      return out;
    });
    expect(steps).toEqual([
      { state: "walking", queued: 10, waitMs: 0, outbox: 10 },
      { state: "walking", queued: 10, waitMs: 0, outbox: 20 },
      { state: "waiting", queued: 2, waitMs: 1000, outbox: 22 },
      { state: "waiting", queued: 0, waitMs: 2000, outbox: 22 },
      { state: "waiting", queued: 0, waitMs: 4000, outbox: 22 },
      { state: "done", queued: 8, waitMs: 0, outbox: 15 },
      { state: "done", queued: 0, waitMs: 0, outbox: 15 },
      { state: "done", queued: 0, waitMs: 0, outbox: 15 },
    ]);
    const walk = (await walkOf("repl-walk")).existingObjects as WalkState;
    expect(walk).toMatchObject({ state: "done", visited: 30, queued: 30, largestRun: 10, waits: 3 });
    expect(await sqlCount("repl-walk", "SELECT COUNT(*) AS n FROM replication_status WHERE status = 'PENDING'")).toBe(30);
  });

  it("reads the next keys from its cursor by the primary key, and the outbox by version, with index searches (no SCAN)", async () => {
    await makeBuckets("repl-plan");
    const plans = await runInDurableObject(indexOf("repl-plan"), async (_i: BucketIndex, state) => {
      const plan = (query: string, ...args: unknown[]) =>
        state.storage.sql
          .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${query}`, ...args)
          .toArray()
          .map((r) => r.detail)
          .join("; ");
      return {
        keys: [plan(WALK_KEYS_QUERY, "", 2000), plan(WALK_KEYS_QUERY, "k0100", 2000)],
        waiting: [plan(waitingQuery("outbox"), "k", "v", 8, "replica:"), plan(waitingQuery("outbox_dead"), "k", "v", 8, "replica:")],
        holds: [plan(holdsQuery("outbox"), "k", "v", "replica:/b"), plan(holdsQuery("outbox_dead"), "k", "v", "replica:/b")],
        pending: plan(PENDING_OF_QUERY, "replica:", "replica;"),
      };
    });
    for (const p of [...plans.keys, ...plans.waiting, ...plans.holds, plans.pending]) {
      expect(p).toMatch(/^SEARCH /);
      expect(p).not.toMatch(/SCAN/);
    }
    expect(plans.keys[0]).toContain("PRIMARY KEY (key>?)");
    expect(plans.waiting[0]).toContain("INDEX outbox_by_version");
    expect(plans.waiting[1]).toContain("INDEX outbox_dead_by_version");
  });

  it("reads rows in proportion to a step's keys, not the bucket's: near the end of 5,000 keys, and past 400 FAILED keys among 5,000 outbox rows", async () => {
    await makeBuckets("repl-rows");
    const rules = [OFFSITE_EXISTING];
    type Internals = { replication: Replication; outbox: { count(): number } };
    const figures = await runInDurableObject(indexOf("repl-rows"), async (index: BucketIndex, state) => {
      const i = index as unknown as Internals;
      const sql = state.storage.sql;
      const key = (n: number) => `k${String(n).padStart(5, "0")}`;
      for (let n = 0; n < 5000; n++)
        sql.exec("INSERT INTO objects (key, size, etag, last_modified, manifest, version_id) VALUES (?, 1, 'e', 0, x'00', ?)", key(n), `v${n}`);
      // Rows of other keys: webhooks' in the outbox, old dead letters.
      for (let n = 0; n < 2500; n++) {
        sql.exec(
          "INSERT INTO outbox (target, config_id, event, key, version_id, time, next_at) VALUES ('webhook:w', 'c', 'ObjectCreated:Put', ?, 'x', 0, 9e15)",
          `o${n}`,
        );
        sql.exec(
          "INSERT INTO outbox_dead (seq, target, config_id, event, key, version_id, time, attempts, failed_at) VALUES (?, 'replica:offsite/b', 'c', 'ObjectCreated:Put', ?, 'x', 0, 1, 0)",
          1e6 + n,
          `d${n}`,
        );
      }
      // 400 keys FAILED with their dead letter kept (the admin retry sends them): skipped.
      for (let n = 4000; n < 4400; n++) {
        sql.exec("INSERT INTO replication_status (key, version_id, status) VALUES (?, ?, 'FAILED')", key(n), `v${n}`);
        sql.exec(
          "INSERT INTO outbox_dead (seq, target, config_id, event, key, version_id, time, attempts, failed_at) VALUES (?, 'replica:offsite/b', 'r', 'ObjectCreated:Put', ?, ?, 0, 30, 0)",
          2e6 + n,
          key(n),
          `v${n}`,
        );
      }
      const exec = sql.exec.bind(sql);
      const measure = <T>(run: () => T): { result: T; rowsRead: number } => {
        const cursors: { readonly rowsRead: number }[] = [];
        sql.exec = <R extends Record<string, SqlStorageValue>>(query: string, ...args: unknown[]) => {
          const cursor = exec<R>(query, ...args);
          cursors.push(cursor);
          return cursor;
        };
        try {
          const result = state.storage.transactionSync(run);
          return { result, rowsRead: cursors.reduce((n, c) => n + c.rowsRead, 0) };
        } finally {
          sql.exec = exec;
        }
      };
      i.replication.setConfiguration(rules);
      i.outbox.count();
      // From key 3,999: 400 FAILED keys skipped, then 500 queued (the batch), 1,100 keys in all.
      sql.exec("UPDATE replication_walk SET after = ?", key(3999));
      const failed = measure(() => i.replication.walkStep(i.outbox as never, 100_000));
      // Near the end: the last 100 keys.
      sql.exec("UPDATE replication_walk SET after = ?", key(4899));
      const end = measure(() => i.replication.walkStep(i.outbox as never, 100_000));
      return { failed, end, walk: i.replication.walkStatus() };
    });
    expect(figures.failed.result).toMatchObject({ state: "walking", queued: 500 });
    expect(figures.end.result).toMatchObject({ state: "done", queued: 100 });
    // Before: a scan from the first key (5,000 rows read for 100), and each FAILED key's look-up a
    // scan of the outbox and its dead letters (400 × 7,900 rows).
    expect(figures.end.rowsRead, "near the end").toBeLessThan(1000);
    expect(figures.failed.rowsRead, "past FAILED keys").toBeLessThan(10 * 900);
    expect(figures.walk).toMatchObject({ visited: 1000, queued: 600 });
  });

  it("stops a step at its keys or its manifest bytes, and reads no manifest of a version replicated already", async () => {
    await makeBuckets("repl-bytes");
    for (let n = 0; n < 12; n++)
      await s3ok(`/repl-bytes/t${String(n).padStart(2, "0")}`, {
        method: "PUT",
        body: "x",
        headers: { "x-amz-tagging": n % 3 === 0 ? "class=lead" : "class=gold" },
      });
    const rules = [
      {
        id: "gold",
        priority: 1,
        enabled: true,
        prefix: "t",
        deleteMarkers: false,
        tags: [["class", "gold"]] as [string, string][],
        and: true,
        destination: "arn:shardgate:s3:::offsite/b",
        target: "replica:offsite/b",
        existing: true,
      },
    ];
    type Internals = { replication: Replication; outbox: { count(): number } };
    const out = await runInDurableObject(indexOf("repl-bytes"), async (index: BucketIndex, state) => {
      const i = index as unknown as Internals;
      const sql = state.storage.sql;
      // Half the keys COMPLETED already (to this same target): their manifests are never read.
      sql.exec(
        "INSERT INTO replication_status (key, version_id, status) SELECT key, version_id, 'COMPLETED' FROM objects WHERE CAST(substr(key, 2) AS INTEGER) % 2 = 1",
      );
      const exec = sql.exec.bind(sql);
      let manifests = 0;
      sql.exec = <R extends Record<string, SqlStorageValue>>(query: string, ...args: unknown[]) => {
        if (query.includes("manifest")) manifests++;
        return exec<R>(query, ...args);
      };
      // The target is not new to the configuration (as when only the filter changed).
      const configure = () => {
        i.replication.setConfiguration(rules);
        sql.exec("UPDATE replication_walk SET new_targets = '[]'");
      };
      try {
        configure();
        const first = state.storage.transactionSync(() => i.replication.walkStep(i.outbox as never, 1000));
        const firstReads = manifests;
        // Again from the first key, one manifest byte per run: one manifest decoded per step.
        configure();
        sql.exec("DELETE FROM outbox");
        sql.exec("DELETE FROM replication_status WHERE status = 'PENDING'");
        manifests = 0;
        const steps = [];
        for (let n = 0; n < 8; n++) steps.push(state.storage.transactionSync(() => i.replication.walkStep(i.outbox as never, 1000, 500, Date.now(), 1)).state);
        return { first, firstReads, steps, secondReads: manifests, walk: i.replication.walkStatus() };
      } finally {
        sql.exec = exec;
      }
    });
    // Six keys not replicated: t00, t06 lead; t02, t04, t08, t10 gold.
    expect(out.first).toMatchObject({ state: "done", queued: 4 });
    expect(out.firstReads).toBe(6);
    // Six manifests, one a step (the step stops before the next key); the seventh reaches the end.
    expect(out.steps).toEqual(["walking", "walking", "walking", "walking", "walking", "walking", "done", "done"]);
    expect(out.secondReads).toBe(6);
    expect(out.walk).toMatchObject({ state: "done", visited: 12, queued: 4, runs: 7 });
  });

  it("queues nothing past the cap for webhooks' rows, which do not count against the walk's share", async () => {
    await makeBuckets("repl-share");
    await Promise.all(Array.from({ length: 20 }, (_, i) => s3ok(`/repl-share/k${String(i).padStart(2, "0")}`, { method: "PUT", body: "x" })));
    const rules = [OFFSITE_EXISTING];
    type Internals = { replication: Replication; outbox: { count(): number; forget(): void } };
    const steps = await runInDurableObject(indexOf("repl-share"), async (index: BucketIndex, state) => {
      const i = index as unknown as Internals;
      const sql = state.storage.sql;
      // 95 rows to a webhook that is down, of a cap of 100.
      for (let n = 0; n < 95; n++)
        sql.exec(
          "INSERT INTO outbox (target, config_id, event, key, version_id, time, next_at) VALUES ('webhook:w', 'c', 'ObjectCreated:Put', ?, 'x', 0, 9e15)",
          `o${n}`,
        );
      i.outbox.forget();
      i.replication.setConfiguration(rules);
      const step = () => state.storage.transactionSync(() => ({ ...i.replication.walkStep(i.outbox as never, 100, 10), outbox: i.outbox.count() }));
      const out = [step(), step()];
      sql.exec("DELETE FROM outbox WHERE target = 'webhook:w'");
      i.outbox.forget();
      out.push(step(), step());
      return out;
    });
    expect(steps).toEqual([
      { state: "waiting", queued: 5, waitMs: 1000, outbox: 100 },
      { state: "waiting", queued: 0, waitMs: 2000, outbox: 100 },
      { state: "walking", queued: 10, waitMs: 0, outbox: 15 },
      { state: "done", queued: 5, waitMs: 0, outbox: 20 },
    ]);
    expect(await sqlCount("repl-share", "SELECT COUNT(*) AS n FROM replication_status WHERE status = 'FAILED'")).toBe(0);
  });

  it("backs off its waiting poll from 1 s to a minute (the delay the alarm waits), reset when it walks", async () => {
    await makeBuckets("repl-backoff");
    await s3ok("/repl-backoff/a", { method: "PUT", body: "x" });
    await s3ok("/repl-backoff/b", { method: "PUT", body: "x" });
    const rules = [OFFSITE_EXISTING];
    type Internals = { replication: Replication; outbox: Parameters<Replication["walkStep"]>[0] };
    const waits = await runInDurableObject(indexOf("repl-backoff"), async (index: BucketIndex, state) => {
      const i = index as unknown as Internals;
      i.replication.setConfiguration(rules);
      // A cap of 1: the first version fills it, the walk then waits.
      const out: number[] = [];
      for (let n = 0; n < 9; n++) out.push(state.storage.transactionSync(() => i.replication.walkStep(i.outbox, 1, 10)).waitMs);
      return out;
    });
    expect(waits).toEqual([1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000]);
    expect((await walkOf("repl-backoff")).existingObjects).toMatchObject({ state: "walking", waitMs: 60000, queued: 1 });
  });

  it("sends the versions already replicated elsewhere to a destination the configuration adds, never twice to the old one", async () => {
    await makeBuckets("repl-add", "repl-add-a", "repl-add-b");
    expect((await putConf("repl-add", doc([{ id: "a", priority: 1, dest: "arn:aws:s3:::repl-add-a" }]))).status).toBe(200);
    await s3ok("/repl-add/one", { method: "PUT", body: "one" });
    expect(await settled("/repl-add/one")).toBe("COMPLETED");
    const both = doc([
      { id: "a", priority: 1, dest: "arn:aws:s3:::repl-add-a", extra: EXISTING },
      { id: "b", priority: 2, dest: "arn:aws:s3:::repl-add-b", extra: EXISTING },
    ]);
    expect((await putConf("repl-add", both)).status).toBe(200);
    await expect.poll(async () => (await walkOf("repl-add")).existingObjects?.state, { timeout: 20_000 }).toBe("done");
    expect(await settled("/repl-add/one")).toBe("COMPLETED");
    expect(await (await s3ok("/repl-add-b/one")).text()).toBe("one");
    const versionsAt = async (b: string) => ((await (await s3ok(`/${b}?versions`)).text()).match(/<Version>/g) ?? []).length;
    expect(await versionsAt("repl-add-a")).toBe(1);
    expect(await versionsAt("repl-add-b")).toBe(1);
    // Both ask for existing objects for the first time, but A's rule stood when one was written: it went there then.
    expect((await walkOf("repl-add")).existingObjects).toMatchObject({ visited: 1, queued: 1, newTargets: ["replica:/repl-add-a", "replica:/repl-add-b"] });
    // The same configuration again: neither is new, nothing is sent.
    expect((await putConf("repl-add", both)).status).toBe(200);
    await expect.poll(async () => (await walkOf("repl-add")).existingObjects?.state, { timeout: 20_000 }).toBe("done");
    expect((await walkOf("repl-add")).existingObjects).toMatchObject({ generation: 2, visited: 1, queued: 0, newTargets: [] });
    expect(await versionsAt("repl-add-a")).toBe(1);
    expect(await versionsAt("repl-add-b")).toBe(1);
  });

  it("passes over the null versions of a bucket that has just turned versioning on, and says so", async () => {
    await s3ok("/repl-null", { method: "PUT" });
    await makeBuckets("repl-null-dst");
    for (const k of ["a", "b", "c"]) await s3ok(`/repl-null/${k}`, { method: "PUT", body: k });
    await versioned("repl-null");
    await s3ok("/repl-null/d", { method: "PUT", body: "d" });
    expect((await putConf("repl-null", doc([{ id: "all", priority: 1, dest: "arn:aws:s3:::repl-null-dst", extra: EXISTING }]))).status).toBe(200);
    await expect.poll(async () => (await walkOf("repl-null")).existingObjects?.state, { timeout: 20_000 }).toBe("done");
    expect((await walkOf("repl-null")).existingObjects).toMatchObject({ visited: 4, queued: 1, skippedNullVersions: 3 });
    const admin = await (await s3ok("/_shardgate/admin/buckets/repl-null/notifications")).json<{ replication: { existingObjects: WalkState } }>();
    expect(admin.replication.existingObjects).toMatchObject({ skippedNullVersions: 3 });
  });

  it("replicates every one of 1,200 objects already in a bucket, at most 500 queued per alarm run", { timeout: 180_000 }, async () => {
    await makeBuckets("repl-many", "repl-many-dst");
    const N = 1200;
    const keys = Array.from({ length: N }, (_, i) => `obj/${String(i).padStart(5, "0")}`);
    for (let i = 0; i < N; i += 50) await Promise.all(keys.slice(i, i + 50).map((k) => s3ok(`/repl-many/${k}`, { method: "PUT", body: k })));
    const rule = { id: "all", priority: 1, dest: "arn:aws:s3:::repl-many-dst", extra: EXISTING };
    expect((await putConf("repl-many", doc([rule]))).status).toBe(200);
    const completed = () => sqlCount("repl-many", "SELECT COUNT(*) AS n FROM replication_status WHERE status = 'COMPLETED'");
    await expect.poll(completed, { timeout: 170_000, interval: 500 }).toBe(N);
    const walk = (await walkOf("repl-many")).existingObjects as WalkState;
    expect(walk).toMatchObject({ state: "done", visited: N, queued: N, waits: 0 });
    expect(walk.largestRun).toBeLessThanOrEqual(500);
    expect(walk.runs).toBeGreaterThanOrEqual(3);
    expect(await sqlCount("repl-many-dst", "SELECT COUNT(*) AS n FROM objects")).toBe(N);
    expect(await sqlCount("repl-many", "SELECT COUNT(*) AS n FROM outbox")).toBe(0);
    for (const k of [keys[0], keys[777], keys[N - 1]] as string[]) expect(await (await s3ok(`/repl-many-dst/${k}`)).text()).toBe(k);
  });
});

describe("multipart uploads left behind at a remote", () => {
  it("wake the alarm by themselves, and an abort that fails backs off, until it is given up after 20 and forgotten", async () => {
    const b = "repl-left";
    await s3ok(`/${b}`, { method: "PUT" });
    const stub = env.BUCKET_INDEX.get(env.BUCKET_INDEX.idFromName(b));
    type Left = { upload_id: string; attempts: number; next_at: number };
    const rows = () =>
      runInDurableObject(stub, async (_i: BucketIndex, state) =>
        state.storage.sql.exec<Left>("SELECT upload_id, attempts, next_at FROM replication_uploads ORDER BY upload_id").toArray(),
      );
    // An upload noted at the remote "offsite" (nothing listens there), and no outbox row at all.
    const before = Date.now();
    await runInDurableObject(stub, async (instance: BucketIndex, state) => {
      const replication = (instance as unknown as { replication: Replication }).replication;
      replication.uploadBegun({ target: "replica:offsite/far", key: "k", uploadId: "up-1" }, Date.now());
      await state.storage.setAlarm(Date.now());
    });
    for (let i = 0; i < 200 && (await rows())[0]?.attempts === 0; i++) await new Promise((r) => setTimeout(r, 20));
    const [tried] = await rows();
    // Its abort was tried by the alarm and failed: the next one waits SHARDGATE_NOTIFY_RETRY_MS (10 minutes here).
    expect(tried?.attempts).toBe(1);
    expect(tried?.next_at).toBeGreaterThanOrEqual(before + 600_000);
    const given = await runInDurableObject(stub, async (instance: BucketIndex) => {
      const replication = (instance as unknown as { replication: Replication }).replication;
      const backoff = { firstMs: 1000, maxMs: 4000 };
      const far = Date.now() + 10 * 3_600_000;
      // Not due before its time; the alarm's next wake is that time.
      const early = replication.uploadsLeft(16, Date.now()).length;
      const wake = replication.nextUploadAbort();
      const results: boolean[] = [];
      for (let i = 1; i < 20; i++) results.push(replication.uploadAbortFailed({ target: "replica:offsite/far", uploadId: "up-1" }, far, backoff));
      return { early, wake, results, left: replication.uploadsLeftCount() };
    });
    expect(given.early).toBe(0);
    expect(given.wake).toBe(tried?.next_at);
    // Attempts 2..19 back off (capped at maxMs); the 20th gives it up and forgets it.
    expect(given.results.slice(0, 18).every((r) => r === false)).toBe(true);
    expect(given.results[18]).toBe(true);
    expect(given.left).toBe(0);
  });
});

describe("a write that is another gateway's replica (x-shardgate-replica: true)", () => {
  it("is REPLICA here and never replicated again, from the root key alone (no grant, no policy: an owner could write one); others are refused, and the header must be signed", async () => {
    await makeBuckets("repl-mark", "repl-mark-dst");
    expect((await putConf("repl-mark", doc([{ prefix: "", markers: "Enabled", dest: "arn:aws:s3:::repl-mark-dst" }]))).status).toBe(200);
    const mark = { "x-shardgate-replica": "true" };
    // A PUT, a multipart upload's completion and a delete, each marked: REPLICA, nothing queued.
    const put = await s3ok("/repl-mark/put.txt", { method: "PUT", body: "from elsewhere", headers: mark });
    expect(put.headers.get("x-amz-version-id")).toBeTruthy();
    expect((await s3ok("/repl-mark/put.txt", { method: "HEAD" })).headers.get("x-amz-replication-status")).toBe("REPLICA");
    const created = await (await s3ok("/repl-mark/mp.bin?uploads", { method: "POST" })).text();
    const uploadId = created.match(/<UploadId>([^<]+)<\/UploadId>/)?.[1] as string;
    const part = await s3ok(`/repl-mark/mp.bin?partNumber=1&uploadId=${encodeURIComponent(uploadId)}`, { method: "PUT", body: "one part" });
    const complete = `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${part.headers.get("etag")}</ETag></Part></CompleteMultipartUpload>`;
    await s3ok(`/repl-mark/mp.bin?uploadId=${encodeURIComponent(uploadId)}`, { method: "POST", body: complete, headers: mark });
    expect((await s3ok("/repl-mark/mp.bin", { method: "HEAD" })).headers.get("x-amz-replication-status")).toBe("REPLICA");
    await s3ok("/repl-mark/put.txt", { method: "DELETE", headers: mark }, 204);
    expect(await sqlCount("repl-mark", "SELECT COUNT(*) AS n FROM outbox")).toBe(0);
    // An unmarked write replicates as ever (the rule works).
    await s3ok("/repl-mark/plain.txt", { method: "PUT", body: "here" });
    expect(await settled("/repl-mark/plain.txt")).toBe("COMPLETED");
    expect(await sqlCount("repl-mark-dst", "SELECT COUNT(*) AS n FROM objects")).toBe(1);

    // Another value is InvalidArgument; a key with every right (owner too: it may not opt its writes
    // out of the root key's replication) is AccessDenied, nothing stored.
    await expectError(await s3("/repl-mark/bad.txt", { method: "PUT", body: "x", headers: { "x-shardgate-replica": "yes" } }), 400, "InvalidArgument");
    const res = await s3("/_shardgate/admin/keys", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "owner" }),
    });
    const key = (await res.json()) as { id: string; secret: string };
    const rights = JSON.stringify({ read: true, write: true, owner: true });
    expect(
      (await s3(`/_shardgate/admin/keys/${key.id}/buckets/repl-mark`, { method: "PUT", headers: { "content-type": "application/json" }, body: rights })).status,
    ).toBe(200);
    const client = new AwsClient({ accessKeyId: key.id, secretAccessKey: key.secret, service: "s3", region: "us-east-1" });
    const as = async (path: string, init: RequestInit) => exports.default.fetch(await client.sign(`${GATEWAY}${path}`, init));
    await expectError(await as("/repl-mark/sneak.txt", { method: "PUT", body: "x", headers: mark }), 403, "AccessDenied");
    await expectError(await as("/repl-mark/plain.txt", { method: "DELETE", headers: mark }), 403, "AccessDenied");
    expect((await as("/repl-mark/ok.txt", { method: "PUT", body: "x" })).status).toBe(200);
    await expectError(await s3("/repl-mark/bad.txt"), 404, "NoSuchKey");
    await expectError(await s3("/repl-mark/sneak.txt"), 404, "NoSuchKey");
    // Nor does a policy: the actions are not in its language, and the owner's own Allow of s3:* for
    // itself, or a public s3:* for everyone, gives no mark.
    const policy = (principal: unknown, action: string) => ({
      Version: "2012-10-17",
      Statement: [{ Effect: "Allow", Principal: principal, Action: action, Resource: "arn:aws:s3:::repl-mark/*" }],
    });
    await expectError(
      await as("/repl-mark?policy", { method: "PUT", body: JSON.stringify(policy({ AWS: key.id }, "s3:ReplicateObject")) }),
      400,
      "MalformedPolicy",
    );
    expect((await as("/repl-mark?policy", { method: "PUT", body: JSON.stringify(policy({ AWS: key.id }, "s3:*")) })).status).toBe(204);
    await expectError(await as("/repl-mark/owned.txt", { method: "PUT", body: "x", headers: mark }), 403, "AccessDenied");
    await s3ok("/repl-mark?policy", { method: "PUT", body: JSON.stringify(policy("*", "s3:*")) }, 204);
    const anonymous = (path: string, init: RequestInit) => exports.default.fetch(new Request(`${GATEWAY}${path}`, init));
    await expectError(await anonymous("/repl-mark/anon.txt", { method: "PUT", body: "x", headers: mark }), 403, "AccessDenied");
    await expectError(await anonymous("/repl-mark/plain.txt", { method: "DELETE", headers: mark }), 403, "AccessDenied");
    expect((await anonymous("/repl-mark/anon.txt", { method: "PUT", body: "x" })).status).toBe(200);
    expect((await s3ok("/repl-mark/anon.txt", { method: "HEAD" })).headers.get("x-amz-replication-status")).toBe("PENDING");
    await s3ok("/repl-mark?policy", { method: "DELETE" }, 204);

    // A presigned URL, even the root key's, cannot be given the mark by whoever holds it: unsigned, it is refused.
    const presigner = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
    const url = (await presigner.sign(`${GATEWAY}/repl-mark/presigned.txt?X-Amz-Expires=60`, { method: "PUT", aws: { signQuery: true } })).url;
    const added = await exports.default.fetch(new Request(url, { method: "PUT", body: "x", headers: mark }));
    expect(await expectError(added, 403, "AccessDenied")).toContain("x-shardgate-replica");
    expect((await exports.default.fetch(new Request(url, { method: "PUT", body: "x" }))).status).toBe(200);
    expect((await s3ok("/repl-mark/presigned.txt", { method: "HEAD" })).headers.get("x-amz-replication-status")).toBe("PENDING");
  });
});
