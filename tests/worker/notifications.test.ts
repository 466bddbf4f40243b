// Event notifications inside workerd: PutBucketNotificationConfiguration / Get with S3's document and
// S3's refusals (api/s3/bucket-notification.ts), nothing half-applied; the outbox rows commits write
// in their own transaction (meta/outbox.ts): one INSERT per matching rule, none for a bucket without
// a configuration or for a refused conditional write; the admin API's view of the outbox. The
// webhooks of vitest.config.ts point where nothing listens: deliveries fail and wait 10 minutes for
// their retry, so the rows stay to be looked at. Delivery itself: tests/node/notifications.test.ts.
import { env, exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { checkVars, parseWebhooks } from "../../worker/src/config-vars";
import type { BucketIndex } from "../../worker/src/meta/bucket-index";
import type { Outbox } from "../../worker/src/meta/outbox";
import { signedPostFields } from "./post-form";
import { GATEWAY, s3, s3ok } from "./signed";

const errorCode = (xml: string) => xml.match(/<Code>([^<]+)<\/Code>/)?.[1];

async function expectError(res: Response, status: number, code: string): Promise<void> {
  const xml = await res.text();
  expect(res.status, xml).toBe(status);
  expect(errorCode(xml), xml).toBe(code);
}

type Conf = { kind?: "Queue" | "Topic" | "CloudFunction"; id?: string; arn?: string; events: string[]; prefix?: string; suffix?: string };

function doc(confs: Conf[]): string {
  const body = confs
    .map((c) => {
      const kind = c.kind ?? "Queue";
      const rules = [
        ...(c.prefix !== undefined ? [`<FilterRule><Name>prefix</Name><Value>${c.prefix}</Value></FilterRule>`] : []),
        ...(c.suffix !== undefined ? [`<FilterRule><Name>suffix</Name><Value>${c.suffix}</Value></FilterRule>`] : []),
      ].join("");
      return (
        `<${kind}Configuration>${c.id ? `<Id>${c.id}</Id>` : ""}<${kind}>${c.arn ?? "arn:shardgate:webhook::hook"}</${kind}>` +
        c.events.map((e) => `<Event>${e}</Event>`).join("") +
        (rules ? `<Filter><S3Key>${rules}</S3Key></Filter>` : "") +
        `</${kind}Configuration>`
      );
    })
    .join("");
  return `<NotificationConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${body}</NotificationConfiguration>`;
}

const putConf = (bucket: string, body: string) => s3(`/${bucket}?notification`, { method: "PUT", body });
const getConf = async (bucket: string) => (await s3ok(`/${bucket}?notification`)).text();

/** The outbox's rows of `bucket` (and its dead letters), oldest first. */
async function outboxRows(
  bucket: string,
): Promise<{ event: string; key: string; target: string; size: number | null; etag: string | null; version_id: string | null }[]> {
  const stub = env.BUCKET_INDEX.get(env.BUCKET_INDEX.idFromName(bucket));
  return runInDurableObject(stub, async (_i: BucketIndex, state) =>
    state.storage.sql
      .exec<{ event: string; key: string; target: string; size: number | null; etag: string | null; version_id: string | null }>(
        "SELECT event, key, target, size, etag, version_id FROM (SELECT seq, event, key, target, size, etag, version_id FROM outbox UNION ALL SELECT seq, event, key, target, size, etag, version_id FROM outbox_dead) ORDER BY seq",
      )
      .toArray(),
  );
}

describe("PutBucketNotificationConfiguration / GetBucketNotificationConfiguration", () => {
  it("stores S3's document and answers it back; an empty document removes it", async () => {
    await s3ok("/notify-conf", { method: "PUT" });
    expect(await getConf("notify-conf")).toContain("<NotificationConfiguration");
    expect(await getConf("notify-conf")).not.toContain("Configuration><");
    const body = doc([
      { id: "images", events: ["s3:ObjectCreated:*"], prefix: "images/", suffix: ".jpg" },
      { kind: "Topic", id: "gone", arn: "arn:shardgate:webhook::other", events: ["s3:ObjectRemoved:Delete", "s3:ObjectRemoved:DeleteMarkerCreated"] },
      { kind: "CloudFunction", events: ["s3:ObjectCreated:Copy"], prefix: "copies/" },
    ]);
    expect((await putConf("notify-conf", body)).status).toBe(200);
    const xml = await getConf("notify-conf");
    expect(xml).toContain(
      "<QueueConfiguration><Id>images</Id><Queue>arn:shardgate:webhook::hook</Queue><Event>s3:ObjectCreated:*</Event><Filter><S3Key><FilterRule><Name>Prefix</Name><Value>images/</Value></FilterRule><FilterRule><Name>Suffix</Name><Value>.jpg</Value></FilterRule></S3Key></Filter></QueueConfiguration>",
    );
    expect(xml).toContain("<TopicConfiguration><Id>gone</Id><Topic>arn:shardgate:webhook::other</Topic><Event>s3:ObjectRemoved:Delete</Event>");
    // A configuration without an Id gets one.
    expect(xml).toMatch(/<CloudFunctionConfiguration><Id>[0-9a-f-]{36}<\/Id><CloudFunction>arn:shardgate:webhook::hook<\/CloudFunction>/);
    expect((await putConf("notify-conf", doc([]))).status).toBe(200);
    expect(await getConf("notify-conf")).not.toContain("QueueConfiguration");
  });

  it("takes filters with odd values literally (XML entities, wildcards, regex characters, non-ASCII)", async () => {
    await s3ok("/notify-odd", { method: "PUT" });
    const prefix = "a&amp;b/(.*)+[x]?ü😀";
    expect((await putConf("notify-odd", doc([{ id: "odd", events: ["s3:ObjectCreated:Put"], prefix, suffix: "*" }]))).status).toBe(200);
    const xml = await getConf("notify-odd");
    expect(xml).toContain(`<Value>${prefix}</Value>`);
    expect(xml).toContain("<Value>*</Value>");
    const path = (key: string) => `/notify-odd/${key.split("/").map(encodeURIComponent).join("/")}`;
    await s3ok(path("a&b/(.*)+[x]?ü😀-file*"), { method: "PUT", body: "x" });
    await s3ok(path("a&b/other"), { method: "PUT", body: "x" });
    await s3ok(path("axb/(.*)+[x]?ü😀-file*"), { method: "PUT", body: "x" });
    expect((await outboxRows("notify-odd")).map((r) => r.key)).toEqual(["a&b/(.*)+[x]?ü😀-file*"]);
  });

  it("refuses bad documents with S3's errors and keeps the configuration it had", async () => {
    await s3ok("/notify-bad", { method: "PUT" });
    const good = doc([{ id: "keep", events: ["s3:ObjectCreated:Put"] }]);
    expect((await putConf("notify-bad", good)).status).toBe(200);
    const before = await getConf("notify-bad");
    const cases: [string, string][] = [
      ["<NotificationConfiguration><QueueConfiguration>", "MalformedXML"],
      ["<Other/>", "MalformedXML"],
      [doc([]).replace("</NotificationConfiguration>", "<Unknown/></NotificationConfiguration>"), "MalformedXML"],
      [doc([{ events: [] }]), "MalformedXML"],
      ["<NotificationConfiguration><QueueConfiguration><Event>s3:ObjectCreated:Put</Event></QueueConfiguration></NotificationConfiguration>", "MalformedXML"],
      [doc([{ events: ["s3:ObjectCreated:Nope"] }]), "InvalidArgument"],
      [doc([{ events: ["s3:ObjectRestore:Post"] }]), "InvalidArgument"],
      [doc([{ events: ["ObjectCreated:Put"] }]), "InvalidArgument"],
      [doc([{ events: ["s3:ObjectCreated:Put"], arn: "arn:shardgate:webhook::nobody" }]), "InvalidArgument"],
      [doc([{ events: ["s3:ObjectCreated:Put"], arn: "arn:aws:sqs:us-east-1:123456789012:queue" }]), "InvalidArgument"],
      // A URL in the bucket's configuration is never a target (the gateway POSTs only where the operator said).
      [doc([{ events: ["s3:ObjectCreated:Put"], arn: "http://169.254.169.254/latest/meta-data" }]), "InvalidArgument"],
      [doc([{ events: ["s3:ObjectCreated:Put"], arn: "arn:shardgate:webhook::hook/../x" }]), "InvalidArgument"],
      // A Queue target is a binding SHARDGATE_QUEUES lists AND the Worker has: listed but unbound,
      // bound but not listed (another binding, a variable holding a secret), or no name at all.
      [doc([{ events: ["s3:ObjectCreated:Put"], arn: "arn:shardgate:queue::MISSING" }]), "InvalidArgument"],
      [doc([{ events: ["s3:ObjectCreated:Put"], arn: "arn:shardgate:queue::QUEUE_SINK" }]), "InvalidArgument"],
      [doc([{ events: ["s3:ObjectCreated:Put"], arn: "arn:shardgate:queue::BUCKET_INDEX" }]), "InvalidArgument"],
      [doc([{ events: ["s3:ObjectCreated:Put"], arn: "arn:shardgate:queue::SHARDGATE_SECRET_ACCESS_KEY" }]), "InvalidArgument"],
      [doc([{ events: ["s3:ObjectCreated:Put"], arn: "arn:shardgate:queue::" }]), "InvalidArgument"],
      [doc([{ events: ["s3:ObjectCreated:Put"], arn: "arn:shardgate:queue::EVENTS/x" }]), "InvalidArgument"],
      [doc([{ events: ["s3:ObjectCreated:Put"], arn: "arn:shardgate:queue::events" }]), "InvalidArgument"],
      [
        doc([{ events: ["s3:ObjectCreated:Put"] }])
          .replace("<Name>", "<Name>")
          .replace("</Queue>", "</Queue><Filter><S3Key><FilterRule><Name>middle</Name><Value>x</Value></FilterRule></S3Key></Filter>"),
        "InvalidArgument",
      ],
      [
        doc([{ events: ["s3:ObjectCreated:Put"] }]).replace(
          "</Queue>",
          "</Queue><Filter><S3Key><FilterRule><Name>prefix</Name><Value>a</Value></FilterRule><FilterRule><Name>Prefix</Name><Value>b</Value></FilterRule></S3Key></Filter>",
        ),
        "InvalidArgument",
      ],
      [doc([{ events: ["s3:ObjectCreated:Put"], prefix: "p".repeat(1025) }]), "InvalidArgument"],
      [
        doc([
          { id: "x", events: ["s3:ObjectCreated:Put"], prefix: "a/" },
          { id: "x", events: ["s3:ObjectRemoved:*"] },
        ]),
        "InvalidArgument",
      ],
      // Overlapping: a shared event type and filters a key could pass both of.
      [doc([{ events: ["s3:ObjectCreated:*"] }, { events: ["s3:ObjectCreated:Put"], prefix: "a/" }]), "InvalidArgument"],
      [
        doc([
          { events: ["s3:ObjectCreated:Put"], prefix: "a" },
          { events: ["s3:ObjectCreated:Put"], prefix: "ab" },
        ]),
        "InvalidArgument",
      ],
      [
        doc([
          { events: ["s3:ObjectCreated:Put"], suffix: "g.jpg" },
          { events: ["s3:ObjectCreated:Put"], suffix: ".jpg" },
        ]),
        "InvalidArgument",
      ],
      [doc(Array.from({ length: 101 }, (_, i) => ({ events: ["s3:ObjectCreated:Put"], prefix: `p${String(i).padStart(3, "0")}/` }))), "InvalidArgument"],
      [doc([{ events: ["s3:ObjectCreated:Put"], prefix: "x".repeat(70 * 1024) }]), "MalformedXML"],
      [doc([]).replace("</NotificationConfiguration>", "<EventBridgeConfiguration/></NotificationConfiguration>"), "InvalidArgument"],
      ['<!DOCTYPE x [<!ENTITY a "b">]><NotificationConfiguration/>', "MalformedXML"],
    ];
    for (const [body, code] of cases) {
      await expectError(await putConf("notify-bad", body), 400, code);
      expect(await getConf("notify-bad"), body.slice(0, 200)).toBe(before);
    }
  });

  it("takes rules that do not overlap: other events, disjoint prefixes or suffixes", async () => {
    await s3ok("/notify-disjoint", { method: "PUT" });
    const body = doc([
      { events: ["s3:ObjectCreated:Put"], prefix: "a/" },
      { events: ["s3:ObjectCreated:Put"], prefix: "b/" },
      { events: ["s3:ObjectCreated:Copy"], prefix: "a/" },
      { events: ["s3:ObjectRemoved:*"], suffix: ".jpg" },
      { events: ["s3:ObjectRemoved:*"], suffix: ".png" },
    ]);
    const res = await putConf("notify-disjoint", body);
    expect(res.status, await res.text()).toBe(200);
  });

  it("is the bucket owner's: a missing bucket is NoSuchBucket, and DeleteBucket removes it", async () => {
    await expectError(await s3("/notify-none?notification"), 404, "NoSuchBucket");
    await s3ok("/notify-drop", { method: "PUT" });
    expect((await putConf("notify-drop", doc([{ id: "d", events: ["s3:ObjectCreated:*"] }]))).status).toBe(200);
    await s3ok("/notify-drop", { method: "DELETE" }, 204);
    await s3ok("/notify-drop", { method: "PUT" });
    expect(await getConf("notify-drop")).not.toContain("QueueConfiguration");
  });
});

describe("the outbox", () => {
  it("gets nothing, and the write no extra statement, in a bucket without a configuration", async () => {
    await s3ok("/notify-off", { method: "PUT" });
    await s3ok("/notify-off/a", { method: "PUT", body: "hello" });
    await s3ok("/notify-off/a", { method: "DELETE" }, 204);
    expect(await outboxRows("notify-off")).toEqual([]);
  });

  it("gets one row per event a rule matches, in the commit's transaction: put, copy, multipart, deletes", async () => {
    const b = "notify-events";
    await s3ok(`/${b}`, { method: "PUT" });
    const conf = doc([
      { id: "created", events: ["s3:ObjectCreated:*"], prefix: "in/" },
      { id: "removed", arn: "arn:shardgate:webhook::other", events: ["s3:ObjectRemoved:*"] },
    ]);
    expect((await putConf(b, conf)).status).toBe(200);
    await s3ok(`/${b}/in/one`, { method: "PUT", body: "12345" });
    await s3ok(`/${b}/out/skipped`, { method: "PUT", body: "x" });
    await s3ok(`/${b}/in/copy`, { method: "PUT", headers: { "x-amz-copy-source": `/${b}/in/one` } });
    const created = await (await s3ok(`/${b}/in/multi?uploads`, { method: "POST" })).text();
    const uploadId = created.match(/<UploadId>([^<]+)<\/UploadId>/)?.[1] as string;
    const part = await s3ok(`/${b}/in/multi?partNumber=1&uploadId=${uploadId}`, { method: "PUT", body: "part" });
    const etag = part.headers.get("etag") as string;
    const complete = `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${etag}</ETag></Part></CompleteMultipartUpload>`;
    await s3ok(`/${b}/in/multi?uploadId=${uploadId}`, { method: "POST", body: complete });
    // A refused conditional write writes nothing.
    expect((await s3(`/${b}/in/one`, { method: "PUT", body: "no", headers: { "If-None-Match": "*" } })).status).toBe(412);
    expect((await s3(`/${b}/in/one`, { method: "PUT", body: "no", headers: { "If-Match": '"0123"' } })).status).toBe(412);
    await s3ok(`/${b}/in/one`, { method: "DELETE" }, 204);
    await s3ok(`/${b}/never-was`, { method: "DELETE" }, 204);
    // A write a quota refuses (its transaction rolled back after the event was written) leaves none.
    const quota = (body: unknown) =>
      s3ok(`/_shardgate/admin/buckets/${b}/quota`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    await quota({ maxObjects: 2 });
    expect((await s3(`/${b}/in/over`, { method: "PUT", body: "too many" })).status).toBe(403);
    await s3ok(`/_shardgate/admin/buckets/${b}/quota`, { method: "DELETE" }, 204);
    await s3ok(`/${b}?versioning`, { method: "PUT", body: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>" });
    await s3ok(`/${b}/in/copy`, { method: "DELETE" }, 204);
    const rows = await outboxRows(b);
    expect(rows.map((r) => [r.event, r.key, r.target])).toEqual([
      ["ObjectCreated:Put", "in/one", "webhook:hook"],
      ["ObjectCreated:Copy", "in/copy", "webhook:hook"],
      ["ObjectCreated:CompleteMultipartUpload", "in/multi", "webhook:hook"],
      ["ObjectRemoved:Delete", "in/one", "webhook:other"],
      ["ObjectRemoved:DeleteMarkerCreated", "in/copy", "webhook:other"],
    ]);
    expect(rows[0]).toMatchObject({ size: 5, etag: "827ccb0eea8a706c4c34a16891f84e7b", version_id: null });
    expect(rows[3]).toMatchObject({ size: null, etag: null });
    expect(rows[4]?.version_id).toMatch(/./);
  });

  it("names a browser form upload's event ObjectCreated:Post", async () => {
    const b = "notify-post";
    await s3ok(`/${b}`, { method: "PUT" });
    expect((await putConf(b, doc([{ events: ["s3:ObjectCreated:Post"] }]))).status).toBe(200);
    const form = new FormData();
    for (const [name, value] of Object.entries({ key: "posted.txt", ...(await signedPostFields([{ bucket: b }, { key: "posted.txt" }])) }))
      form.append(name, value);
    form.append("file", new File(["from a form"], "posted.txt", { type: "text/plain" }));
    const serialized = new Response(form);
    // The CRLF after the closing boundary that browsers send (post-object.test.ts).
    const body = new Uint8Array([...new Uint8Array(await serialized.arrayBuffer()), 13, 10]);
    const headers = { "content-type": serialized.headers.get("content-type") as string };
    const res = await exports.default.fetch(new Request(`${GATEWAY}/${b}`, { method: "POST", body, headers }));
    expect(res.status, await res.text()).toBe(204);
    await s3ok(`/${b}/put.txt`, { method: "PUT", body: "not a form" });
    expect((await outboxRows(b)).map((r) => [r.event, r.key, r.size])).toEqual([["ObjectCreated:Post", "posted.txt", 11]]);
  });

  it("costs a write one INSERT when a rule matches, and no statement on the outbox when none does", async () => {
    const b = "notify-cost";
    await s3ok(`/${b}`, { method: "PUT" });
    expect((await putConf(b, doc([{ events: ["s3:ObjectCreated:Put"], prefix: "yes/" }]))).status).toBe(200);
    const stub = env.BUCKET_INDEX.get(env.BUCKET_INDEX.idFromName(b));
    const record = (key: string) => ({ key, versionId: null, size: 1, etag: "e", lastModified: Date.now(), manifest: new Uint8Array([1]) });
    const statements = await runInDurableObject(stub, async (instance: BucketIndex, state) => {
      // Warm: the configuration read and the outbox's size counted once per instance.
      await instance.put(record("warm"));
      await instance.put(record("yes/warm"));
      const sql = state.storage.sql;
      const exec = sql.exec.bind(sql);
      const seen: string[] = [];
      sql.exec = <T extends Record<string, SqlStorageValue>>(query: string, ...args: unknown[]) => {
        seen.push(query);
        return exec<T>(query, ...args);
      };
      const counts: Record<string, string[]> = {};
      for (const key of ["no/a", "yes/a"]) {
        seen.length = 0;
        await instance.put(record(key));
        counts[key] = [...seen];
      }
      sql.exec = exec;
      return counts;
    });
    const outboxOf = (qs: string[]) => qs.filter((q) => /outbox/.test(q));
    expect(outboxOf(statements["no/a"] ?? [])).toEqual([]);
    expect(outboxOf(statements["yes/a"] ?? []).map((q) => q.split("(")[0]?.trim())).toEqual(["INSERT INTO outbox"]);
    expect((statements["yes/a"] ?? []).length).toBe((statements["no/a"] ?? []).length + 1);
  });

  it("is shown and retried through the admin API", async () => {
    const b = "notify-admin";
    await s3ok(`/${b}`, { method: "PUT" });
    expect((await putConf(b, doc([{ events: ["s3:ObjectCreated:*"] }]))).status).toBe(200);
    await s3ok(`/${b}/k`, { method: "PUT", body: "x" });
    const status = await (await s3ok(`/_shardgate/admin/buckets/${b}/notifications`)).json<Record<string, unknown>>();
    expect(status).toMatchObject({ bucket: b, pending: 1, deadLetters: 0, dropped: 0, dead: [] });
    const retried = await (await s3ok(`/_shardgate/admin/buckets/${b}/notifications/retry`, { method: "POST" })).json<Record<string, unknown>>();
    expect(retried).toEqual({ bucket: b, retried: 0 });
    await expectError(await s3("/_shardgate/admin/buckets/notify-missing/notifications"), 404, "NoSuchBucket");
  });

  it("moves a row to the dead letters after its last attempt, keeps later rows of its key waiting meanwhile, and retries them on request", async () => {
    const b = "notify-dead";
    await s3ok(`/${b}`, { method: "PUT" });
    expect((await putConf(b, doc([{ events: ["s3:ObjectCreated:*"] }]))).status).toBe(200);
    await s3ok(`/${b}/k`, { method: "PUT", body: "1" });
    await s3ok(`/${b}/k`, { method: "PUT", body: "22" });
    await s3ok(`/${b}/other`, { method: "PUT", body: "333" });
    const stub = env.BUCKET_INDEX.get(env.BUCKET_INDEX.idFromName(b));
    const policy = { firstMs: 1000, maxMs: 1000, attempts: 2, cap: 100, timeoutMs: 1000 };
    const seen = await runInDurableObject(stub, async (instance: BucketIndex) => {
      const outbox = (instance as unknown as { outbox: Outbox }).outbox;
      const far = Date.now() + 3_600_000;
      // One per key, the earlier row of `k` first.
      const first = outbox.due(far, 10).map((r) => [r.key, r.size]);
      const head = outbox.due(far, 10).find((r) => r.key === "k");
      if (!head) throw new Error("no row for k");
      outbox.failed([{ row: { ...head, attempts: 0 }, error: "HTTP 503" }], far, policy);
      // The row waits for its retry, and the later row of its key with it.
      const waiting = outbox.due(far, 10).map((r) => r.key);
      outbox.failed([{ row: { ...head, attempts: 1 }, error: "HTTP 503" }], far, policy);
      const afterDead = outbox.due(far + 10_000, 10).map((r) => [r.key, r.size]);
      return { first, waiting, afterDead };
    });
    expect(seen.first).toEqual([
      ["k", 1],
      ["other", 3],
    ]);
    expect(seen.waiting).toEqual(["other"]);
    // Given up: the next row of its key may go.
    expect(seen.afterDead).toEqual([
      ["k", 2],
      ["other", 3],
    ]);
    const status = await (await s3ok(`/_shardgate/admin/buckets/${b}/notifications`)).json<{
      pending: number;
      deadLetters: number;
      dead: Record<string, unknown>[];
    }>();
    expect(status.pending).toBe(2);
    expect(status.deadLetters).toBe(1);
    expect(status.dead[0]).toMatchObject({ eventName: "ObjectCreated:Put", key: "k", size: 1, attempts: 2, lastError: "HTTP 503", target: "webhook:hook" });
    expect(status.dead[0]?.sequencer).toMatch(/^[0-9A-F]{16}$/);
    const retried = await (await s3ok(`/_shardgate/admin/buckets/${b}/notifications/retry`, { method: "POST" })).json<Record<string, unknown>>();
    expect(retried).toEqual({ bucket: b, retried: 1 });
    const rows = await outboxRows(b);
    expect(rows.map((r) => [r.key, r.size])).toEqual([
      ["k", 1],
      ["k", 2],
      ["other", 3],
    ]);
  });

  it("drops events past its cap and counts them, never refusing the write", async () => {
    const b = "notify-cap";
    await s3ok(`/${b}`, { method: "PUT" });
    expect((await putConf(b, doc([{ events: ["s3:ObjectCreated:*"] }]))).status).toBe(200);
    const stub = env.BUCKET_INDEX.get(env.BUCKET_INDEX.idFromName(b));
    const result = await runInDurableObject(stub, async (instance: BucketIndex) => {
      const outbox = (instance as unknown as { outbox: Outbox }).outbox;
      const e = (key: string) => ({ event: "ObjectCreated:Put" as const, key, versionId: null, size: 1, etag: "e", time: Date.now() });
      return [outbox.record(e("a"), 2), outbox.record(e("b"), 2), outbox.record(e("c"), 2), outbox.record(e("d"), 2)];
    });
    expect(result).toEqual([
      { queued: 1, dropped: 0 },
      { queued: 1, dropped: 0 },
      { queued: 0, dropped: 1 },
      { queued: 0, dropped: 1 },
    ]);
    const status = await (await s3ok(`/_shardgate/admin/buckets/${b}/notifications`)).json<Record<string, unknown>>();
    expect(status).toMatchObject({ pending: 2, dropped: 2 });
  });
});

describe("a Queue binding as the target (SHARDGATE_QUEUES)", () => {
  type Record = {
    eventName: string;
    s3: { configurationId: string; bucket: { name: string }; object: { key: string; size?: number; eTag?: string; sequencer: string } };
  };
  /** The event records the queue's consumer got for `bucket`, once it has at least `n`. */
  async function consumed(bucket: string, n: number): Promise<Record[]> {
    for (let i = 0; i < 200; i++) {
      const bodies = (await (await env.QUEUE_SINK.fetch("http://sink/")).json()) as { Records: Record[] }[];
      const mine = bodies.flatMap((b) => b.Records).filter((r) => r.s3.bucket.name === bucket);
      if (mine.length >= n) return mine;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`the queue's consumer did not get ${n} events of ${bucket}`);
  }

  it("gets S3's event message for each matching event, after the commit, and the outbox is emptied", async () => {
    await s3ok("/notify-queue", { method: "PUT" });
    const body = doc([
      { id: "to-queue", arn: "arn:shardgate:queue::EVENTS", events: ["s3:ObjectCreated:*", "s3:ObjectRemoved:Delete"], prefix: "q/" },
      { id: "to-hook", events: ["s3:ObjectCreated:Put"], prefix: "h/" },
    ]);
    expect((await putConf("notify-queue", body)).status).toBe(200);
    expect(await getConf("notify-queue")).toContain("<Queue>arn:shardgate:queue::EVENTS</Queue>");
    const put = await s3ok("/notify-queue/q/one%20two.txt", { method: "PUT", body: "hello" });
    await s3ok("/notify-queue/q/b.txt", { method: "PUT", body: "0123456789" });
    await s3ok("/notify-queue/skip.txt", { method: "PUT", body: "x" });
    await s3ok("/notify-queue/q/b.txt", { method: "DELETE" }, 204);
    const records = await consumed("notify-queue", 3);
    expect(records.map((r) => [r.eventName, r.s3.object.key, r.s3.configurationId])).toEqual([
      ["ObjectCreated:Put", "q/one+two.txt", "to-queue"],
      ["ObjectCreated:Put", "q/b.txt", "to-queue"],
      ["ObjectRemoved:Delete", "q/b.txt", "to-queue"],
    ]);
    expect(records[0]?.s3.object).toMatchObject({ size: 5, eTag: (put.headers.get("etag") ?? "").replaceAll('"', "") });
    // Sequencers grow per key.
    expect((records[1]?.s3.object.sequencer ?? "") < (records[2]?.s3.object.sequencer ?? "")).toBe(true);
    // Delivered rows leave the outbox; the webhook's (nothing listens there) stays apart.
    for (let i = 0; i < 100 && (await outboxRows("notify-queue")).some((r) => r.target === "queue:EVENTS"); i++) await new Promise((r) => setTimeout(r, 50));
    expect((await outboxRows("notify-queue")).filter((r) => r.target === "queue:EVENTS")).toEqual([]);
  });

  it("sends within Cloudflare's limits: batches cut by bytes, and a message too large for a Queue fails alone", async () => {
    const b = "notify-queue-sizes";
    await s3ok(`/${b}`, { method: "PUT" });
    const stub = env.BUCKET_INDEX.get(env.BUCKET_INDEX.idFromName(b));
    // Rows such as no request makes now (keys are at most 1,024 bytes), as an older outbox may hold:
    // 31 events of ~9 KB (a batch of them is past 256 KB), and one of ~200 KB among them.
    const keys = Array.from({ length: 31 }, (_, i) => `${String(i).padStart(2, "0")}-${"k".repeat(9000)}`);
    const huge = `huge-${"h".repeat(200_000)}`;
    await runInDurableObject(stub, async (instance: BucketIndex, state) => {
      const outbox = (instance as unknown as { outbox: Outbox }).outbox;
      for (const key of [...keys.slice(0, 15), huge, ...keys.slice(15)])
        outbox.enqueue("queue:EVENTS", "sizes", { event: "ObjectCreated:Put", key, versionId: null, size: 1, etag: "e", time: Date.now() }, 1000);
      await state.storage.setAlarm(Date.now());
    });
    const records = await consumed(b, 31);
    expect(records.map((r) => r.s3.object.key).sort()).toEqual(keys);
    const left = () =>
      runInDurableObject(stub, async (_i: BucketIndex, state) =>
        state.storage.sql.exec<{ key: string; attempts: number; last_error: string | null }>("SELECT key, attempts, last_error FROM outbox").toArray(),
      );
    for (let i = 0; i < 100 && (await left()).some((r) => r.attempts === 0); i++) await new Promise((r) => setTimeout(r, 20));
    const rows = await left();
    expect(rows.map((r) => [r.key.slice(0, 5), r.attempts])).toEqual([["huge-", 1]]);
    expect(rows[0]?.last_error).toMatch(/^the event is \d+ bytes, more than a Queue message takes/);
  });

  it("keeps a row whose Queue is gone (its binding removed since) for a retry, with the reason", async () => {
    const b = "notify-queue-gone";
    await s3ok(`/${b}`, { method: "PUT" });
    const stub = env.BUCKET_INDEX.get(env.BUCKET_INDEX.idFromName(b));
    const event = { event: "ObjectCreated:Put" as const, key: "k", versionId: null, size: 1, etag: "e", time: Date.now() };
    await runInDurableObject(stub, async (instance: BucketIndex, state) => {
      (instance as unknown as { outbox: Outbox }).outbox.enqueue("queue:MISSING", "gone", event, 100);
      await state.storage.setAlarm(Date.now());
    });
    const row = () =>
      runInDurableObject(stub, async (_i: BucketIndex, state) =>
        state.storage.sql.exec<{ attempts: number; last_error: string | null }>("SELECT attempts, last_error FROM outbox WHERE target = 'queue:MISSING'").one(),
      );
    for (let i = 0; i < 100 && (await row()).attempts === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await row()).toEqual({ attempts: 1, last_error: "no Queue binding MISSING is configured" });
  });
});

describe("SHARDGATE_WEBHOOKS", () => {
  it("is checked with the other variables, never showing its text (it holds secrets)", () => {
    const ok = JSON.stringify({ "a-b_1": { url: "https://hooks.example/x", secret: "s" } });
    expect(checkVars({ SHARDGATE_WEBHOOKS: ok }, { partial: true })).toEqual([]);
    expect(parseWebhooks(ok)).toEqual({ "a-b_1": { url: "https://hooks.example/x", secret: "s" } });
    expect(parseWebhooks(undefined)).toEqual({});
    const bad = [
      "not json",
      "[]",
      JSON.stringify({ "bad name": { url: "https://h/x", secret: "s" } }),
      JSON.stringify({ a: { url: "ftp://h/x", secret: "s" } }),
      JSON.stringify({ a: { url: "https://h/x", secret: "" } }),
      JSON.stringify({ a: { url: "https://h/x" } }),
      JSON.stringify({ a: "https://h/x" }),
      JSON.stringify({ ["x".repeat(65)]: { url: "https://h/x", secret: "very-secret-value" } }),
    ];
    for (const value of bad) {
      expect(parseWebhooks(value), value).toBeNull();
      const problems = checkVars({ SHARDGATE_WEBHOOKS: value }, { partial: true });
      expect(problems, value).toHaveLength(1);
      expect(problems[0]).toContain("SHARDGATE_WEBHOOKS: expected a JSON object");
      expect(problems[0]).not.toContain("very-secret-value");
    }
    expect(checkVars({ SHARDGATE_WEBHOOK: ok }, { partial: true })[0]).toContain("did you mean SHARDGATE_WEBHOOKS?");
    expect(checkVars({ SHARDGATE_QUEUES: "EVENTS, AUDIT_2" }, { partial: true })).toEqual([]);
    for (const value of ["EVENTS;AUDIT", "2EVENTS", "a-b", "x".repeat(65)])
      expect(checkVars({ SHARDGATE_QUEUES: value }, { partial: true }), value).toEqual([
        `SHARDGATE_QUEUES: expected comma-separated binding names, got ${JSON.stringify(value)}`,
      ]);
    expect(checkVars({ SHARDGATE_NOTIFY_RETRY_MS: "1s" }, { partial: true })[0]).toContain(
      "SHARDGATE_NOTIFY_RETRY_MS: expected a positive integer of milliseconds",
    );
  });
});
