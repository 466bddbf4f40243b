// Lifecycle rules (api/s3/bucket-lifecycle.ts, meta/lifecycle-rules.ts, services/lifecycle.ts): the configuration
// as S3 checks and answers it, x-amz-expiration on writes and reads, and the pass that applies the
// rules, run through the admin endpoint with the clock moved forward: expiry by days, date, prefix,
// tags and size; delete markers in versioned buckets; noncurrent versions (with
// NewerNoncurrentVersions); lone delete markers; incomplete uploads; shard files freed; a pass that
// resumes across many bounded steps.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Env } from "../../worker/src/config";
import { bucketIndex } from "../../worker/src/meta/stubs";
import { randomBytes } from "../shared/core-suite";
import { shardFiles } from "./nodes";
import { s3, s3ok } from "./signed";

const DAY = 24 * 3600 * 1000;
const errorCode = (xml: string) => xml.match(/<Code>([^<]+)<\/Code>/)?.[1];
const values = (xml: string, name: string) => [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, "g"))].map((m) => m[1]);

const lifecycle = (rules: string) => `<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${rules}</LifecycleConfiguration>`;
const rule = (id: string, filter: string, actions: string, status = "Enabled") => `<Rule><ID>${id}</ID>${filter}<Status>${status}</Status>${actions}</Rule>`;

async function expectError(res: Response, status: number, code: string): Promise<void> {
  const xml = await res.text();
  expect(res.status, xml).toBe(status);
  expect(errorCode(xml)).toBe(code);
}

async function bucketWith(name: string, rules: string, versioned = false): Promise<void> {
  await s3ok(`/${name}`, { method: "PUT" });
  if (versioned) {
    await s3ok(`/${name}?versioning`, { method: "PUT", body: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>" });
  }
  await s3ok(`/${name}?lifecycle`, { method: "PUT", body: lifecycle(rules) });
}

/** Runs the rules as of `now` through the admin API. */
async function runAt(bucket: string, now: number): Promise<{ expired: Record<string, number>; passesFinished: number }> {
  const res = await s3ok(`/_shardgate/admin/lifecycle?bucket=${bucket}&now=${new Date(now).toISOString()}`, { method: "POST" });
  return res.json();
}

async function keys(bucket: string): Promise<string[]> {
  return values(await (await s3ok(`/${bucket}?list-type=2`)).text(), "Key");
}

/** [key, versionId, isLatest, "V" | "M"] of every version. */
async function versionsOf(bucket: string): Promise<[string, string, boolean, string][]> {
  const xml = await (await s3ok(`/${bucket}?versions`)).text();
  return [...xml.matchAll(/<(Version|DeleteMarker)>(.*?)<\/\1>/g)].map((m) => {
    const body = m[2] as string;
    return [values(body, "Key")[0] as string, values(body, "VersionId")[0] as string, values(body, "IsLatest")[0] === "true", m[1] === "Version" ? "V" : "M"];
  });
}

describe("lifecycle configuration", () => {
  it("stores, answers and deletes the rules; NoSuchLifecycleConfiguration without them", async () => {
    await s3ok("/lc-config", { method: "PUT" });
    await expectError(await s3("/lc-config?lifecycle"), 404, "NoSuchLifecycleConfiguration");
    const rules =
      rule("logs", "<Filter><Prefix>logs/</Prefix></Filter>", "<Expiration><Days>30</Days></Expiration>") +
      rule(
        "tmp-big",
        "<Filter><And><Prefix>tmp/</Prefix><Tag><Key>kind</Key><Value>scratch</Value></Tag><ObjectSizeGreaterThan>1024</ObjectSizeGreaterThan></And></Filter>",
        "<Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration>",
      ) +
      rule(
        "old-versions",
        "<Filter></Filter>",
        "<NoncurrentVersionExpiration><NoncurrentDays>7</NoncurrentDays><NewerNoncurrentVersions>3</NewerNoncurrentVersions></NoncurrentVersionExpiration><AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload>",
        "Disabled",
      ) +
      "<Rule><ID>legacy</ID><Prefix>old/</Prefix><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>";
    await s3ok("/lc-config?lifecycle", { method: "PUT", body: lifecycle(rules) });
    const xml = await (await s3ok("/lc-config?lifecycle")).text();
    expect(values(xml, "ID")).toEqual(["logs", "tmp-big", "old-versions", "legacy"]);
    expect(values(xml, "Status")).toEqual(["Enabled", "Enabled", "Disabled", "Enabled"]);
    expect(xml).toContain("<Filter><Prefix>logs/</Prefix></Filter>");
    expect(xml).toContain(
      "<And><Prefix>tmp/</Prefix><Tag><Key>kind</Key><Value>scratch</Value></Tag><ObjectSizeGreaterThan>1024</ObjectSizeGreaterThan></And>",
    );
    expect(xml).toContain("<Date>2030-01-01T00:00:00.000Z</Date>");
    expect(xml).toContain("<NoncurrentDays>7</NoncurrentDays><NewerNoncurrentVersions>3</NewerNoncurrentVersions>");
    expect(xml).toContain("<DaysAfterInitiation>2</DaysAfterInitiation>");
    expect(xml).toContain("<ID>legacy</ID><Prefix>old/</Prefix>");
    expect((await s3ok("/lc-config?lifecycle", { method: "DELETE" }, 204)).status).toBe(204);
    await expectError(await s3("/lc-config?lifecycle"), 404, "NoSuchLifecycleConfiguration");
  });

  it("refuses invalid rules by S3's codes and keeps the rules it had", async () => {
    await bucketWith("lc-invalid", rule("keep", "<Filter><Prefix>a/</Prefix></Filter>", "<Expiration><Days>1</Days></Expiration>"));
    const put = (rules: string) => s3("/lc-invalid?lifecycle", { method: "PUT", body: lifecycle(rules) });
    const days = (n: string) => rule("r", "<Filter></Filter>", `<Expiration><Days>${n}</Days></Expiration>`);
    await expectError(await put(days("0")), 400, "InvalidArgument");
    await expectError(await put(days("-1")), 400, "InvalidArgument");
    await expectError(await put(rule("r", "", "<Expiration><Date>2030-01-01T10:00:00Z</Date></Expiration>")), 400, "InvalidArgument");
    await expectError(await put(days("1") + days("2")), 400, "InvalidArgument");
    await expectError(await put(rule("x".repeat(256), "", "<Expiration><Days>1</Days></Expiration>")), 400, "InvalidArgument");
    await expectError(await put(rule("r", "", "")), 400, "MalformedXML");
    await expectError(await put(rule("r", "", "<Expiration><Days>1</Days>", "Maybe")), 400, "MalformedXML");
    await expectError(await put(rule("r", "", "<Expiration><Days>1</Days><Date>2030-01-01T00:00:00Z</Date></Expiration>")), 400, "MalformedXML");
    await expectError(
      await put(
        rule(
          "r",
          "<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>",
          "<AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload>",
        ),
      ),
      400,
      "InvalidRequest",
    );
    await expectError(
      await put(
        rule(
          "r",
          "<Filter><And><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>5</ObjectSizeLessThan></And></Filter>",
          "<Expiration><Days>1</Days></Expiration>",
        ),
      ),
      400,
      "InvalidArgument",
    );
    await expectError(await put(rule("r", "", "<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition>")), 501, "NotImplemented");
    await expectError(await s3("/lc-invalid?lifecycle", { method: "PUT", body: "<LifecycleConfiguration><Rule>" }), 400, "MalformedXML");
    expect(values(await (await s3ok("/lc-invalid?lifecycle")).text(), "ID")).toEqual(["keep"]);
    await expectError(await s3("/no-such-lc-bucket?lifecycle"), 404, "NoSuchBucket");
    await expectError(await s3("/no-such-lc-bucket?lifecycle", { method: "PUT", body: lifecycle(days("1")) }), 404, "NoSuchBucket");
  });
});

describe("x-amz-expiration", () => {
  it("names the expiry date (rounded up to midnight UTC) and the rule on PUT, HEAD and GET of matching objects only", async () => {
    await bucketWith(
      "lc-header",
      rule("short", "<Filter><Prefix>tmp/</Prefix></Filter>", "<Expiration><Days>1</Days></Expiration>") +
        rule("long", "<Filter></Filter>", "<Expiration><Days>10</Days></Expiration>") +
        rule("off", "<Filter></Filter>", "<Expiration><Days>1</Days></Expiration>", "Disabled"),
    );
    const put = await s3ok("/lc-header/tmp/a", { method: "PUT", body: "a" });
    const written = Date.parse(put.headers.get("date") ?? new Date().toUTCString());
    const expected = new Date(Math.ceil((written + DAY) / DAY) * DAY).toUTCString();
    expect(put.headers.get("x-amz-expiration")).toBe(`expiry-date="${expected}", rule-id="short"`);
    expect((await s3ok("/lc-header/tmp/a", { method: "HEAD" })).headers.get("x-amz-expiration")).toBe(`expiry-date="${expected}", rule-id="short"`);
    const other = await s3ok("/lc-header/keep/b", { method: "PUT", body: "b" });
    expect(other.headers.get("x-amz-expiration")).toMatch(/rule-id="long"$/);
    expect((await s3ok("/lc-header/keep/b")).headers.get("x-amz-expiration")).toMatch(/rule-id="long"$/);
    await s3ok("/lc-header?lifecycle", { method: "DELETE" }, 204);
    expect((await s3ok("/lc-header/tmp/a", { method: "HEAD" })).headers.get("x-amz-expiration")).toBeNull();
  });
});

describe("applying the rules", () => {
  it("expires current objects by days, date, prefix, tags and size, and frees their shard files", async () => {
    await bucketWith(
      "lc-expire",
      rule("logs", "<Filter><Prefix>logs/</Prefix></Filter>", "<Expiration><Days>2</Days></Expiration>") +
        rule("scratch", "<Filter><Tag><Key>kind</Key><Value>scratch</Value></Tag></Filter>", "<Expiration><Days>1</Days></Expiration>") +
        rule(
          "big",
          "<Filter><And><Prefix>data/</Prefix><ObjectSizeGreaterThan>1000</ObjectSizeGreaterThan></And></Filter>",
          "<Expiration><Days>1</Days></Expiration>",
        ) +
        rule("dated", "<Filter><Prefix>until-2030/</Prefix></Filter>", "<Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration>"),
    );
    const before = new Set((await shardFiles()).keys());
    const big = randomBytes(300_000, 7);
    await s3ok("/lc-expire/logs/1.log", { method: "PUT", body: big });
    await s3ok("/lc-expire/logsnot/1.log", { method: "PUT", body: "x" });
    await s3ok("/lc-expire/a.tmp", { method: "PUT", body: "x", headers: { "x-amz-tagging": "kind=scratch" } });
    await s3ok("/lc-expire/b.tmp", { method: "PUT", body: "x", headers: { "x-amz-tagging": "kind=keep" } });
    await s3ok("/lc-expire/data/big", { method: "PUT", body: big });
    await s3ok("/lc-expire/data/small", { method: "PUT", body: "x" });
    await s3ok("/lc-expire/until-2030/x", { method: "PUT", body: "x" });
    const added = [...(await shardFiles()).keys()].filter((k) => !before.has(k));
    expect(added.length).toBeGreaterThan(0);

    const now = Date.now();
    expect((await runAt("lc-expire", now)).expired.current).toBe(0);
    expect((await runAt("lc-expire", now + DAY + DAY)).expired.current).toBe(2);
    expect(await keys("lc-expire")).toEqual(["b.tmp", "data/small", "logs/1.log", "logsnot/1.log", "until-2030/x"]);
    expect((await runAt("lc-expire", now + 3 * DAY)).expired.current).toBe(1);
    expect(await keys("lc-expire")).toEqual(["b.tmp", "data/small", "logsnot/1.log", "until-2030/x"]);
    expect((await runAt("lc-expire", Date.parse("2030-01-01T00:00:00Z"))).expired.current).toBe(1);
    expect(await keys("lc-expire")).toEqual(["b.tmp", "data/small", "logsnot/1.log"]);
    // The expired objects' shard files are gone from every node.
    const left = new Set((await shardFiles()).keys());
    expect(added.filter((k) => left.has(k))).toEqual([]);
  });

  it("in a versioned bucket: a delete marker for the current version, noncurrent versions after their days beyond the newest N, lone markers removed", async () => {
    await bucketWith(
      "lc-versions",
      rule("current", "<Filter><Prefix>doc</Prefix></Filter>", "<Expiration><Days>5</Days></Expiration>") +
        rule(
          "old",
          "<Filter><Prefix>doc</Prefix></Filter>",
          "<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>1</NewerNoncurrentVersions></NoncurrentVersionExpiration>",
        ) +
        rule(
          "markers",
          "<Filter><Prefix>gone</Prefix></Filter>",
          "<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration>",
        ),
      true,
    );
    for (const body of ["1", "2", "3", "4"]) await s3ok("/lc-versions/doc", { method: "PUT", body });
    await s3ok("/lc-versions/gone", { method: "PUT", body: "g" });
    await s3ok("/lc-versions/gone", { method: "DELETE" }, 204);
    const now = Date.now();
    // Day 2: of the three noncurrent versions of doc, the newest is kept (NewerNoncurrentVersions 1);
    // gone's one noncurrent version goes too (its rule keeps none), which leaves its delete marker alone.
    const day2 = await runAt("lc-versions", now + 2 * DAY);
    expect(day2.expired.noncurrent).toBe(3);
    let listed = await versionsOf("lc-versions");
    expect(listed.filter(([k]) => k === "doc").map(([, , latest, kind]) => [latest, kind])).toEqual([
      [true, "V"],
      [false, "V"],
    ]);
    expect(listed.filter(([k]) => k === "gone").map(([, , latest, kind]) => [latest, kind])).toEqual([[true, "M"]]);
    // The next pass removes the lone marker.
    expect((await runAt("lc-versions", now + 2 * DAY)).expired.deleteMarkers).toBe(1);
    expect((await versionsOf("lc-versions")).filter(([k]) => k === "gone")).toEqual([]);
    // Day 6: doc's current version expires into a delete marker; its data stays as a version.
    expect((await runAt("lc-versions", now + 6 * DAY)).expired.current).toBe(1);
    await expectError(await s3("/lc-versions/doc"), 404, "NoSuchKey");
    listed = await versionsOf("lc-versions");
    expect(listed.map(([, , latest, kind]) => [latest, kind])).toEqual([
      [true, "M"],
      [false, "V"],
      [false, "V"],
    ]);
    expect(await (await s3ok(`/lc-versions/doc?versionId=${listed[1]?.[1]}`)).text()).toBe("4");
  });

  it("aborts multipart uploads initiated more than DaysAfterInitiation ago under the rule's prefix", async () => {
    await bucketWith(
      "lc-uploads",
      rule(
        "abort",
        "<Filter><Prefix>big/</Prefix></Filter>",
        "<AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload>",
      ),
    );
    const create = async (key: string) => values(await (await s3ok(`/lc-uploads/${key}?uploads`, { method: "POST" })).text(), "UploadId")[0];
    const doomed = await create("big/a");
    await s3ok(`/lc-uploads/big/a?partNumber=1&uploadId=${doomed}`, { method: "PUT", body: randomBytes(200_000, 3) });
    await create("small/b");
    expect((await runAt("lc-uploads", Date.now())).expired.uploads).toBe(0);
    expect((await runAt("lc-uploads", Date.now() + 2 * DAY)).expired.uploads).toBe(1);
    const listed = await (await s3ok("/lc-uploads?uploads")).text();
    expect(values(listed, "Key")).toEqual(["small/b"]);
    await expectError(await s3(`/lc-uploads/big/a?uploadId=${doomed}`), 404, "NoSuchUpload");
  });

  it("goes through a bucket in bounded steps that resume where they stopped", async () => {
    await bucketWith("lc-steps", rule("all", "<Filter></Filter>", "<Expiration><Days>1</Days></Expiration>"));
    await Promise.all(Array.from({ length: 25 }, (_, i) => s3ok(`/lc-steps/k${String(i).padStart(2, "0")}`, { method: "PUT", body: "x" })));
    const index = bucketIndex(env as unknown as Env, "lc-steps");
    const later = Date.now() + 3 * DAY;
    let steps = 0;
    let expired = 0;
    for (;;) {
      const step = await index.runLifecycle(later, 4);
      if (step === null) throw new Error("no rules");
      steps++;
      expired += step.counts.current;
      if (step.done) break;
    }
    expect(expired).toBe(25);
    expect(steps).toBeGreaterThanOrEqual(7);
    expect(await keys("lc-steps")).toEqual([]);
    // The job counts what it expired.
    await s3ok("/lc-steps/last", { method: "PUT", body: "x" });
    expect((await runAt("lc-steps", later)).expired.current).toBe(1);
    const metrics = await (await s3ok("/_shardgate/metrics")).text();
    expect(metrics).toMatch(/shardgate_lifecycle_expired_total\{action="current"\} \d+/);
  });
});
