// Object lock (api/s3/object-lock.ts, api/format/object-lock-headers.ts, meta/object-lock.ts): a bucket
// created with lock is versioned for good; the lock configuration and its default retention;
// retention and legal hold set on PUT, CopyObject, multipart uploads and afterwards; S3's rules
// (lock only on lock buckets, Content-MD5 or a checksum required, GOVERNANCE bypassable,
// COMPLIANCE never shortened, a legal hold stops every delete); and a locked version that survives
// concurrent deletes, DeleteObjects and the lifecycle pass, because the bucket's Durable Object
// checks the lock in the same transaction as the delete.
import { describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { s3, s3ok } from "./signed";

const DAY = 24 * 3600 * 1000;
const errorCode = (xml: string) => xml.match(/<Code>([^<]+)<\/Code>/)?.[1];
const values = (xml: string, name: string) => [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, "g"))].map((m) => m[1]);
const iso = (ms: number) => new Date(ms).toISOString();

async function expectError(res: Response, status: number, code: string): Promise<void> {
  const xml = await res.text();
  expect(res.status, xml).toBe(status);
  expect(errorCode(xml)).toBe(code);
}

/** x-amz-checksum-sha256 of `body`: the integrity proof object lock asks for. */
async function sha256Header(body: Uint8Array | string): Promise<Record<string, string>> {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return { "x-amz-checksum-sha256": btoa(String.fromCharCode(...digest)) };
}

async function lockBucket(name: string): Promise<void> {
  await s3ok(`/${name}`, { method: "PUT", headers: { "x-amz-bucket-object-lock-enabled": "true" } });
}

/** PUTs `body` with its checksum and `headers`; the new version's id. */
async function put(path: string, body: string | Uint8Array, headers: Record<string, string> = {}): Promise<string> {
  const res = await s3ok(path, { method: "PUT", body, headers: { ...(await sha256Header(body)), ...headers } });
  return res.headers.get("x-amz-version-id") as string;
}

const retentionXml = (mode: string, until: number) => `<Retention><Mode>${mode}</Mode><RetainUntilDate>${iso(until)}</RetainUntilDate></Retention>`;
const BYPASS = { "x-amz-bypass-governance-retention": "true" };

describe("object lock configuration", () => {
  it("a bucket created with object lock is versioned and stays so", async () => {
    await lockBucket("ol-create");
    expect(await (await s3ok("/ol-create?versioning")).text()).toContain("<Status>Enabled</Status>");
    const config = await (await s3ok("/ol-create?object-lock")).text();
    expect(config).toContain("<ObjectLockEnabled>Enabled</ObjectLockEnabled>");
    expect(config).not.toContain("<Rule>");
    const suspend = "<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>";
    await expectError(await s3("/ol-create?versioning", { method: "PUT", body: suspend }), 409, "InvalidBucketState");
    expect(await (await s3ok("/ol-create?versioning")).text()).toContain("<Status>Enabled</Status>");
  });

  it("answers ObjectLockConfigurationNotFoundError without lock; enables it on a versioned bucket only", async () => {
    await s3ok("/ol-later", { method: "PUT" });
    await expectError(await s3("/ol-later?object-lock"), 404, "ObjectLockConfigurationNotFoundError");
    const enable = "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>";
    await expectError(await s3("/ol-later?object-lock", { method: "PUT", body: enable }), 409, "InvalidBucketState");
    await s3ok("/ol-later?versioning", { method: "PUT", body: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>" });
    await s3ok("/ol-later?object-lock", { method: "PUT", body: enable });
    expect(await (await s3ok("/ol-later?object-lock")).text()).toContain("<ObjectLockEnabled>Enabled</ObjectLockEnabled>");
    await expectError(await s3("/ol-missing?object-lock"), 404, "NoSuchBucket");
  });

  it("stores a default retention and refuses malformed ones", async () => {
    await lockBucket("ol-default-config");
    const rule = (inner: string) =>
      `<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>${inner}</DefaultRetention></Rule></ObjectLockConfiguration>`;
    await s3ok("/ol-default-config?object-lock", { method: "PUT", body: rule("<Mode>COMPLIANCE</Mode><Years>2</Years>") });
    const xml = await (await s3ok("/ol-default-config?object-lock")).text();
    expect(xml).toContain("<Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Years>2</Years></DefaultRetention></Rule>");
    await expectError(
      await s3("/ol-default-config?object-lock", { method: "PUT", body: rule("<Mode>SOMETIMES</Mode><Days>1</Days>") }),
      400,
      "InvalidArgument",
    );
    await expectError(
      await s3("/ol-default-config?object-lock", { method: "PUT", body: rule("<Mode>GOVERNANCE</Mode><Days>0</Days>") }),
      400,
      "InvalidArgument",
    );
    await expectError(
      await s3("/ol-default-config?object-lock", { method: "PUT", body: rule("<Mode>GOVERNANCE</Mode><Days>1</Days><Years>1</Years>") }),
      400,
      "MalformedXML",
    );
    // The refused configurations left the stored one alone.
    expect(await (await s3ok("/ol-default-config?object-lock")).text()).toContain("<Years>2</Years>");
  });
});

describe("retention on writes", () => {
  it("applies the bucket's default retention to new versions, with a checksum or Content-MD5 required", async () => {
    await lockBucket("ol-default");
    const config =
      "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days></DefaultRetention></Rule></ObjectLockConfiguration>";
    await s3ok("/ol-default?object-lock", { method: "PUT", body: config });
    await expectError(await s3("/ol-default/plain", { method: "PUT", body: "no proof" }), 400, "InvalidRequest");
    expect(values(await (await s3ok("/ol-default?versions")).text(), "Key")).toEqual([]);

    const before = Date.now();
    const versionId = await put("/ol-default/plain", "with proof");
    const head = await s3ok("/ol-default/plain", { method: "HEAD" });
    expect(head.headers.get("x-amz-object-lock-mode")).toBe("GOVERNANCE");
    const until = Date.parse(head.headers.get("x-amz-object-lock-retain-until-date") as string);
    expect(until).toBeGreaterThanOrEqual(before + DAY);
    expect(until).toBeLessThanOrEqual(Date.now() + DAY);
    const retention = await (await s3ok(`/ol-default/plain?retention&versionId=${versionId}`)).text();
    expect(values(retention, "Mode")).toEqual(["GOVERNANCE"]);
    expect(values(retention, "RetainUntilDate")).toEqual([iso(until)]);
    // Without a legal hold ever set, there is none to show.
    await expectError(await s3("/ol-default/plain?legal-hold"), 404, "NoSuchObjectLockConfiguration");
  });

  it("takes retention and legal hold from PUT headers, checked before anything is stored", async () => {
    await lockBucket("ol-headers");
    const until = Date.now() + 3 * DAY;
    const lock = { "x-amz-object-lock-mode": "COMPLIANCE", "x-amz-object-lock-retain-until-date": iso(until) };
    await expectError(await s3("/ol-headers/k", { method: "PUT", body: "x", headers: lock }), 400, "InvalidRequest");
    await expectError(
      await s3("/ol-headers/k", { method: "PUT", body: "x", headers: { ...(await sha256Header("x")), "x-amz-object-lock-mode": "COMPLIANCE" } }),
      400,
      "InvalidArgument",
    );
    await expectError(
      await s3("/ol-headers/k", { method: "PUT", body: "x", headers: { ...(await sha256Header("x")), ...lock, "x-amz-object-lock-mode": "FOREVER" } }),
      400,
      "InvalidArgument",
    );
    await expectError(
      await s3("/ol-headers/k", {
        method: "PUT",
        body: "x",
        headers: { ...(await sha256Header("x")), ...lock, "x-amz-object-lock-retain-until-date": iso(Date.now() - DAY) },
      }),
      400,
      "InvalidArgument",
    );
    expect(values(await (await s3ok("/ol-headers?versions")).text(), "Key")).toEqual([]);

    await put("/ol-headers/k", "x", { ...lock, "x-amz-object-lock-legal-hold": "ON" });
    const get = await s3ok("/ol-headers/k");
    expect(await get.text()).toBe("x");
    expect(get.headers.get("x-amz-object-lock-mode")).toBe("COMPLIANCE");
    expect(get.headers.get("x-amz-object-lock-retain-until-date")).toBe(iso(until));
    expect(get.headers.get("x-amz-object-lock-legal-hold")).toBe("ON");
    expect(await (await s3ok("/ol-headers/k?legal-hold")).text()).toContain("<Status>ON</Status>");
  });

  it("refuses lock headers and lock calls on a bucket without object lock", async () => {
    await s3ok("/ol-none", { method: "PUT" });
    const lock = { "x-amz-object-lock-mode": "GOVERNANCE", "x-amz-object-lock-retain-until-date": iso(Date.now() + DAY) };
    await expectError(await s3("/ol-none/k", { method: "PUT", body: "x", headers: { ...(await sha256Header("x")), ...lock } }), 400, "InvalidRequest");
    await expectError(await s3("/ol-none/k?uploads", { method: "POST", headers: lock }), 400, "InvalidRequest");
    expect(values(await (await s3ok("/ol-none?list-type=2")).text(), "Key")).toEqual([]);
    await put("/ol-none/k", "x");
    await expectError(await s3("/ol-none/k?retention"), 400, "InvalidRequest");
    await expectError(await s3("/ol-none/k?retention", { method: "PUT", body: retentionXml("GOVERNANCE", Date.now() + DAY) }), 400, "InvalidRequest");
    await expectError(await s3("/ol-none/k?legal-hold", { method: "PUT", body: "<LegalHold><Status>ON</Status></LegalHold>" }), 400, "InvalidRequest");
  });

  it("locks the result of CopyObject and of a multipart upload as their headers ask", async () => {
    await lockBucket("ol-copy");
    await put("/ol-copy/source", "copy me");
    const until = Date.now() + 2 * DAY;
    const copy = await s3ok("/ol-copy/copied", {
      method: "PUT",
      headers: { "x-amz-copy-source": "/ol-copy/source", "x-amz-object-lock-mode": "GOVERNANCE", "x-amz-object-lock-retain-until-date": iso(until) },
    });
    const copyVersion = copy.headers.get("x-amz-version-id") as string;
    await expectError(await s3(`/ol-copy/copied?versionId=${copyVersion}`, { method: "DELETE" }), 403, "AccessDenied");
    // The source itself carries no lock.
    expect((await s3ok("/ol-copy/source", { method: "HEAD" })).headers.get("x-amz-object-lock-mode")).toBeNull();

    const created = await s3ok("/ol-copy/big?uploads", { method: "POST", headers: { "x-amz-object-lock-legal-hold": "ON" } });
    const uploadId = values(await created.text(), "UploadId")[0] as string;
    const data = randomBytes(6 * 1024 * 1024, 11);
    const part = await s3ok(`/ol-copy/big?partNumber=1&uploadId=${uploadId}`, { method: "PUT", body: data });
    const etag = part.headers.get("etag") as string;
    const done = await s3ok(`/ol-copy/big?uploadId=${uploadId}`, {
      method: "POST",
      body: `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${etag}</ETag></Part></CompleteMultipartUpload>`,
    });
    const versionId = done.headers.get("x-amz-version-id") as string;
    expect((await s3ok("/ol-copy/big", { method: "HEAD" })).headers.get("x-amz-object-lock-legal-hold")).toBe("ON");
    await expectError(await s3(`/ol-copy/big?versionId=${versionId}`, { method: "DELETE", headers: BYPASS }), 403, "AccessDenied");
  });
});

describe("what a lock forbids", () => {
  it("GOVERNANCE: a version is deleted or its retention shortened only with the bypass; a plain DELETE adds a marker", async () => {
    await lockBucket("ol-governance");
    const until = Date.now() + 10 * DAY;
    const versionId = await put("/ol-governance/k", "kept", {
      "x-amz-object-lock-mode": "GOVERNANCE",
      "x-amz-object-lock-retain-until-date": iso(until),
    });
    await expectError(await s3(`/ol-governance/k?versionId=${versionId}`, { method: "DELETE" }), 403, "AccessDenied");
    const marker = await s3ok("/ol-governance/k", { method: "DELETE" }, 204);
    expect(marker.headers.get("x-amz-delete-marker")).toBe("true");
    expect(await (await s3ok(`/ol-governance/k?versionId=${versionId}`)).text()).toBe("kept");

    const shorter = retentionXml("GOVERNANCE", until - DAY);
    await expectError(await s3(`/ol-governance/k?retention&versionId=${versionId}`, { method: "PUT", body: shorter }), 403, "AccessDenied");
    await s3ok(`/ol-governance/k?retention&versionId=${versionId}`, { method: "PUT", body: retentionXml("GOVERNANCE", until + DAY) });
    await s3ok(`/ol-governance/k?retention&versionId=${versionId}`, { method: "PUT", body: shorter, headers: BYPASS });
    expect(values(await (await s3ok(`/ol-governance/k?retention&versionId=${versionId}`)).text(), "RetainUntilDate")).toEqual([iso(until - DAY)]);

    await s3ok(`/ol-governance/k?versionId=${versionId}`, { method: "DELETE", headers: BYPASS }, 204);
    await expectError(await s3(`/ol-governance/k?versionId=${versionId}`), 404, "NoSuchVersion");
  });

  it("COMPLIANCE: never deleted, shortened or weakened before it ends, bypass or not; extending is allowed", async () => {
    await lockBucket("ol-compliance");
    const until = Date.now() + 10 * DAY;
    const versionId = await put("/ol-compliance/k", "sealed", {
      "x-amz-object-lock-mode": "COMPLIANCE",
      "x-amz-object-lock-retain-until-date": iso(until),
    });
    const path = `/ol-compliance/k?versionId=${versionId}`;
    await expectError(await s3(path, { method: "DELETE", headers: BYPASS }), 403, "AccessDenied");
    const retention = `/ol-compliance/k?retention&versionId=${versionId}`;
    for (const body of [retentionXml("COMPLIANCE", until - DAY), retentionXml("GOVERNANCE", until + DAY), "<Retention/>"]) {
      await expectError(await s3(retention, { method: "PUT", body, headers: BYPASS }), 403, "AccessDenied");
    }
    await s3ok(retention, { method: "PUT", body: retentionXml("COMPLIANCE", until + 5 * DAY) });
    expect(values(await (await s3ok(retention)).text(), "RetainUntilDate")).toEqual([iso(until + 5 * DAY)]);
    const body = `<Delete><Object><Key>k</Key><VersionId>${versionId}</VersionId></Object></Delete>`;
    const del = await s3("/ol-compliance?delete", { method: "POST", headers: { ...BYPASS, ...(await sha256Header(body)) }, body });
    const xml = await del.text();
    expect(del.status).toBe(200);
    expect(values(xml, "Code")).toEqual(["AccessDenied"]);
    expect(await (await s3ok(path)).text()).toBe("sealed");
  });

  it("a legal hold stops every delete until it is lifted", async () => {
    await lockBucket("ol-hold");
    const versionId = await put("/ol-hold/k", "held");
    const hold = `/ol-hold/k?legal-hold&versionId=${versionId}`;
    await expectError(await s3(hold, { method: "PUT", body: "<LegalHold><Status>MAYBE</Status></LegalHold>" }), 400, "MalformedXML");
    await s3ok(hold, { method: "PUT", body: "<LegalHold><Status>ON</Status></LegalHold>" });
    expect(await (await s3ok(hold)).text()).toContain("<Status>ON</Status>");
    await expectError(await s3(`/ol-hold/k?versionId=${versionId}`, { method: "DELETE", headers: BYPASS }), 403, "AccessDenied");
    await s3ok(hold, { method: "PUT", body: "<LegalHold><Status>OFF</Status></LegalHold>" });
    expect(await (await s3ok(hold)).text()).toContain("<Status>OFF</Status>");
    await s3ok(`/ol-hold/k?versionId=${versionId}`, { method: "DELETE" }, 204);
    await expectError(await s3(hold, { method: "PUT", body: "<LegalHold><Status>ON</Status></LegalHold>" }), 404, "NoSuchVersion");
  });

  it("a locked version survives concurrent deletes, DeleteObjects, overwrites and the lifecycle pass", async () => {
    await lockBucket("ol-race");
    const rules =
      "<LifecycleConfiguration><Rule><ID>all</ID><Filter></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule></LifecycleConfiguration>";
    await s3ok("/ol-race?lifecycle", { method: "PUT", body: rules });
    const data = randomBytes(200_000, 5);
    const until = Date.now() + 365 * DAY;
    const locked = await put("/ol-race/k", data, { "x-amz-object-lock-mode": "GOVERNANCE", "x-amz-object-lock-retain-until-date": iso(until) });
    const free = await put("/ol-race/other", "unlocked");

    const deleteLocked = `<Delete><Object><Key>k</Key><VersionId>${locked}</VersionId></Object><Object><Key>other</Key><VersionId>${free}</VersionId></Object></Delete>`;
    const deleteProof = await sha256Header(deleteLocked);
    const later = iso(Date.now() + 30 * DAY);
    const answers = await Promise.all([
      ...Array.from({ length: 20 }, () => s3(`/ol-race/k?versionId=${locked}`, { method: "DELETE" })),
      ...Array.from({ length: 5 }, () => s3("/ol-race?delete", { method: "POST", body: deleteLocked, headers: deleteProof })),
      ...Array.from({ length: 5 }, async () => s3("/ol-race/k", { method: "PUT", body: "newer", headers: await sha256Header("newer") })),
      s3(`/_shardgate/admin/lifecycle?bucket=ol-race&now=${later}`, { method: "POST" }),
      s3(`/_shardgate/admin/lifecycle?bucket=ol-race&now=${later}`, { method: "POST" }),
    ]);
    const statuses = answers.map((r) => r.status);
    expect(statuses.slice(0, 20)).toEqual(Array(20).fill(403));
    for (const r of answers.slice(20, 25)) {
      const xml = await r.text();
      expect(r.status).toBe(200);
      expect(xml).toMatch(/<Error><Key>k<\/Key><VersionId>[^<]+<\/VersionId><Code>AccessDenied<\/Code>/);
    }
    expect(statuses.slice(25)).toEqual(Array(7).fill(200));
    await Promise.all(answers.map((r) => (r.bodyUsed ? undefined : r.body?.cancel())));

    // The locked version is there, byte for byte; the unlocked one went.
    const got = new Uint8Array(await (await s3ok(`/ol-race/k?versionId=${locked}`)).arrayBuffer());
    expect(got).toEqual(data);
    await expectError(await s3(`/ol-race/other?versionId=${free}`), 404, "NoSuchVersion");

    // A lifecycle pass as of a time past the retention does not end it: retention is judged by the
    // real clock (tests/worker/guarantee-worm.test.ts expires a version whose retention really ended).
    for (let pass = 0; pass < 2; pass++) {
      await s3ok(`/_shardgate/admin/lifecycle?bucket=ol-race&now=${iso(until + 2 * DAY)}`, { method: "POST" });
    }
    expect(new Uint8Array(await (await s3ok(`/ol-race/k?versionId=${locked}`)).arrayBuffer())).toEqual(data);
  });
});
