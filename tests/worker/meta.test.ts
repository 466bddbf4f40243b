// The metadata layer in workerd: real SQLite-backed Durable Objects (BucketIndex per bucket,
// BucketRegistry), listing checked page by page against a plain in-memory reference, and the
// listing XML and query parsing of worker/src/api/list-*.ts.
import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  decodeContinuationToken,
  encodeContinuationToken,
  parseListObjectsParams,
  renderListObjects,
  s3UrlEncode,
  type ListObjectsRequest,
  renderListBuckets,
} from "../../worker/src/api/s3/list.xml";
import type { BucketIndex } from "../../worker/src/meta/bucket-index";
import { commonPrefixOf, compareKeys, prefixEnd } from "../../worker/src/meta/key-order";
import type { BucketRegistry } from "../../worker/src/meta/registry";
import { bucketIndex } from "../../worker/src/meta/stubs";
import { isNoSuchBucket, type ListPage, type ListQuery, type ObjectRecord } from "../../worker/src/meta/types";
import type { Env } from "../../worker/src/config";
import { S3Error } from "../../worker/src/s3-error";

const bindings = env as unknown as {
  BUCKET_INDEX: DurableObjectNamespace<BucketIndex>;
  BUCKET_REGISTRY: DurableObjectNamespace<BucketRegistry>;
};

/** What a bucket's index throws when the bucket does not exist, as it arrives over RPC. */
const NO_SUCH_BUCKET = "BucketIndex: no such bucket";

/** The message a call failed with (null: it did not). An RPC promise is awaited through `then` only:
 *  any other property read off it (as `expect(…).rejects` does) is a call of its own, which fails too. */
function failure(call: Promise<unknown>): Promise<string | null> {
  return call.then(
    () => null,
    (e: unknown) => (e instanceof Error ? e.message : String(e)),
  );
}

let bucketSeq = 0;
/** A fresh bucket's index (tests share storage within this file, so every test gets its own). */
function freshIndex(): DurableObjectStub<BucketIndex> {
  const name = `bucket-${++bucketSeq}-${crypto.randomUUID()}`;
  return bindings.BUCKET_INDEX.get(bindings.BUCKET_INDEX.idFromName(name));
}

async function createdIndex(): Promise<DurableObjectStub<BucketIndex>> {
  const stub = freshIndex();
  expect(await stub.init("b", 1_700_000_000_000)).toBe("created");
  return stub;
}

function record(key: string, etag = "etag-" + key.length, extra: Partial<ObjectRecord> = {}): ObjectRecord {
  return { key, versionId: null, size: key.length * 10, etag, lastModified: 1_700_000_000_123, manifest: new Uint8Array([1, 2, 3]), ...extra };
}

/** Byte-wise UTF-8 comparison: what S3 (and SQLite's BINARY collation) does. */
const utf8Cache = new Map<string, Uint8Array>();
function utf8(s: string): Uint8Array {
  let bytes = utf8Cache.get(s);
  if (!bytes) utf8Cache.set(s, (bytes = new TextEncoder().encode(s)));
  return bytes;
}

function compareBytes(a: string, b: string): number {
  const x = utf8(a);
  const y = utf8(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return (x[i] ?? 0) - (y[i] ?? 0);
  return x.length - y.length;
}

/** A tiny deterministic PRNG (mulberry32) so failures reproduce. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABET = ["a", "b", "z", "/", "-", "|", ".", " ", "é", "ü", "\u00ff", "\uE000", "\uFFFD", "😀", "𝄞", "\u{10FFFF}", "0", "9"];

function randomKey(next: () => number, maxLen: number): string {
  const len = 1 + Math.floor(next() * maxLen);
  let s = "";
  for (let i = 0; i < len; i++) s += ALPHABET[Math.floor(next() * ALPHABET.length)];
  return s;
}

function folderKeys(): string[] {
  const keys: string[] = [];
  for (const year of ["2023", "2024"]) {
    for (let month = 1; month <= 12; month++) {
      const mm = String(month).padStart(2, "0");
      for (let i = 1; i <= 60; i++) keys.push(`photos/${year}/${mm}/img${String(i).padStart(4, "0")}.jpg`);
    }
  }
  keys.push("photos", "photos/", "photos/2024", "photos/2024/", "photos/2024/01/", "photos/readme.txt", "docs/a-b-c.txt");
  keys.push("docs/é/1", "docs/😀/2", "docs/\uE000/3", "docs/\uFFFD/4", "music|rock|a.mp3", "music|jazz|b.mp3");
  return keys;
}

/** Fills a fresh bucket directly inside the Durable Object (no RPC per key). */
async function seed(keys: readonly string[]): Promise<DurableObjectStub<BucketIndex>> {
  const stub = await createdIndex();
  await runInDurableObject(stub, async (instance: BucketIndex) => {
    for (const key of keys) {
      const r = await instance.put(record(key));
      if (!r.ok) throw new Error(`seed ${key}: ${r.reason}`);
    }
  });
  return stub;
}

/** Every listing entry (key or common prefix) for the query, in order, ignoring maxKeys. */
function referenceEntries(keys: readonly string[], q: Omit<ListQuery, "maxKeys">): string[] {
  const names = new Set<string>();
  for (const key of keys) {
    if (!key.startsWith(q.prefix)) continue;
    const rest = key.slice(q.prefix.length);
    const at = q.delimiter ? rest.indexOf(q.delimiter) : -1;
    names.add(at < 0 ? key : q.prefix + rest.slice(0, at + (q.delimiter ?? "").length));
  }
  return [...names].filter((n) => q.after === null || compareBytes(n, q.after) > 0).sort(compareBytes);
}

function pageEntries(page: ListPage): string[] {
  return [...page.objects.map((o) => o.key), ...page.commonPrefixes].sort(compareBytes);
}

describe("key order helpers", () => {
  it("compareKeys is UTF-8 byte order, also for astral characters vs U+E000..U+FFFF", () => {
    const next = rng(1);
    for (let i = 0; i < 3000; i++) {
      const a = randomKey(next, 4);
      const b = randomKey(next, 4);
      expect(Math.sign(compareKeys(a, b)), `${a} vs ${b}`).toBe(Math.sign(compareBytes(a, b)));
    }
    expect(compareKeys("😀", "\uFFFD")).toBeGreaterThan(0); // JS's `<` says the opposite
    expect("😀" < "\uFFFD").toBe(true);
  });

  it("prefixEnd bounds exactly the strings with the prefix", () => {
    expect(prefixEnd("")).toBeNull();
    expect(prefixEnd("abc")).toBe("abd");
    expect(prefixEnd("a/")).toBe("a0");
    expect(prefixEnd("a\u{10FFFF}")).toBe("b");
    expect(prefixEnd("\u{10FFFF}\u{10FFFF}")).toBeNull();
    expect(prefixEnd("x\uD7FF")).toBe("x\uE000");
    expect(prefixEnd("x\uFFFF")).toBe("x\u{10000}");
    expect(prefixEnd("x😀")).toBe("x😁");
    const next = rng(2);
    for (let i = 0; i < 2000; i++) {
      const prefix = randomKey(next, 3);
      const key = randomKey(next, 5);
      const end = prefixEnd(prefix);
      const inRange = compareBytes(key, prefix) >= 0 && (end === null || compareBytes(key, end) < 0);
      expect(inRange, `${key} in [${prefix}, ${end})`).toBe(key.startsWith(prefix));
    }
  });

  it("commonPrefixOf rolls up at the first delimiter after the prefix", () => {
    expect(commonPrefixOf("a/b/c", "", "/")).toBe("a/");
    expect(commonPrefixOf("a/b/c", "a/", "/")).toBe("a/b/");
    expect(commonPrefixOf("a/b", "a/b", "/")).toBeNull();
    expect(commonPrefixOf("x--y--z", "x", "--")).toBe("x--");
    expect(commonPrefixOf("a/b", "", null)).toBeNull();
  });
});

describe("BucketIndex: bucket lifecycle", () => {
  it("init is idempotent and info reflects it", async () => {
    const stub = freshIndex();
    expect(await failure(stub.info())).toBe(NO_SUCH_BUCKET);
    expect(await stub.init("photos", 1234)).toBe("created");
    expect(await stub.init("photos", 9999)).toBe("exists");
    expect(await stub.info()).toEqual({ name: "photos", created: 1234 });
  });

  it("a missing bucket answers NoSuchBucket everywhere, one way", async () => {
    const stub = freshIndex();
    // Over Durable Object RPC the error keeps its message, not its class: the message tells it.
    for (const call of [
      () => stub.head("k"),
      () => stub.put(record("k")),
      () => stub.delete("k"),
      () => stub.deleteMany([{ key: "k" }]),
      () => stub.drop(),
      () => stub.list({ prefix: "", delimiter: null, after: null, maxKeys: 10 }),
      () => stub.listVersions({ prefix: "", delimiter: null, keyMarker: null, maxKeys: 10 }),
      () => stub.setting("cors"),
      () => stub.setSetting("tags", null),
      () => stub.versioning(),
      () => stub.setVersioning("Enabled"),
      () => stub.objectLock(),
      () => stub.upload("u", "k"),
      () => stub.abortUpload("u", "k"),
    ]) {
      const error = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(isNoSuchBucket(error), String(call)).toBe(true);
    }
    // Through meta/stubs.ts it arrives as S3's NoSuchBucket for the bucket named.
    const named = `absent-${crypto.randomUUID()}`;
    await expect(bucketIndex(bindings as unknown as Env, named).head("k")).rejects.toMatchObject({ code: "NoSuchBucket", status: 404 });
    await expect(bucketIndex(bindings as unknown as Env, named).head("k")).rejects.toBeInstanceOf(S3Error);
    // What only reads or changes what is stored under the bucket answers as for an empty one.
    expect(await stub.replace(new Uint8Array(), record("k"))).toBe("missing");
    expect(await stub.runLifecycle(Date.now())).toBeNull();
  });

  it("drop: only an empty bucket; afterwards it is gone and can be created again", async () => {
    const stub = await createdIndex();
    await stub.put(record("k"));
    expect(await stub.isEmpty()).toBe(false);
    expect(await stub.drop()).toBe("not-empty");
    expect(await stub.info()).not.toBeNull();
    await stub.delete("k");
    expect(await stub.isEmpty()).toBe(true);
    expect(await stub.drop()).toBe("dropped");
    expect(await failure(stub.info())).toBe(NO_SUCH_BUCKET);
    expect(await failure(stub.drop())).toBe(NO_SUCH_BUCKET);
    expect(await failure(stub.put(record("k")))).toBe(NO_SUCH_BUCKET);
    expect(await failure(stub.head("k"))).toBe(NO_SUCH_BUCKET);
    expect(await stub.init("b", 42)).toBe("created");
    expect(await stub.info()).toEqual({ name: "b", created: 42 });
  });

  it("the schema and data survive the object being evicted and reopened", async () => {
    const stub = await createdIndex();
    await stub.put(record("persisted"));
    await evictDurableObject(stub);
    expect((await stub.head("persisted")).object?.key).toBe("persisted");
    expect(await stub.init("b", 1)).toBe("exists");
  });
});

describe("BucketIndex: objects", () => {
  it("put, head, overwrite (returning the replaced record) and delete", async () => {
    const stub = await createdIndex();
    expect(await stub.head("a/b.txt")).toEqual({ object: null, marker: null, versioned: false, expiry: null });
    // The manifest is a view into a larger buffer: exactly its bytes must be stored.
    const backing = new Uint8Array([9, 9, 1, 2, 3, 4, 9]);
    const first = record("a/b.txt", "e1", { manifest: backing.subarray(2, 6), size: 5 });
    expect(await stub.put(first)).toEqual({ ok: true, freed: [], expiry: null });
    const head = await stub.head("a/b.txt");
    expect(head.object).toEqual({ ...first, manifest: new Uint8Array([1, 2, 3, 4]) });
    expect(head.object?.manifest).toBeInstanceOf(Uint8Array);

    const second = record("a/b.txt", "e2", { size: 7, lastModified: 5 });
    const put2 = await stub.put(second);
    expect(put2).toEqual({ ok: true, freed: [{ ...first, manifest: new Uint8Array([1, 2, 3, 4]) }], expiry: null });
    expect((await stub.head("a/b.txt")).object).toEqual(second);

    expect(await stub.delete("a/b.txt")).toEqual({ freed: [second], marker: false });
    expect(await stub.delete("a/b.txt")).toEqual({ freed: [], marker: false });
    expect(await stub.head("a/b.txt")).toEqual({ object: null, marker: null, versioned: false, expiry: null });
  });

  it("conditional writes: If-Match over no object is NoSuchKey, over another ETag PreconditionFailed; If-None-Match: * over an object PreconditionFailed", async () => {
    const stub = await createdIndex();
    expect(await stub.put(record("k", "e1"), { ifMatch: ["e1"] })).toEqual({ ok: false, reason: "NoSuchKey" });
    expect(await stub.put(record("k", "e1"), { ifMatch: ["*"] })).toEqual({ ok: false, reason: "NoSuchKey" });
    expect((await stub.put(record("k", "e1"), { ifNoneMatch: true })).ok).toBe(true);
    expect(await stub.put(record("k", "e2"), { ifNoneMatch: true })).toEqual({ ok: false, reason: "PreconditionFailed" });
    expect(await stub.put(record("k", "e2"), { ifMatch: ["nope"] })).toEqual({ ok: false, reason: "PreconditionFailed" });
    expect(await stub.put(record("k", "e2"), { ifMatch: [] })).toEqual({ ok: false, reason: "PreconditionFailed" });
    expect(await stub.put(record("k", "e2"), { ifMatch: ["e1"], ifNoneMatch: true })).toEqual({ ok: false, reason: "PreconditionFailed" });
    expect(await stub.put(record("k", "e2"), { ifNoneMatchEtag: ["x", "e1"] })).toEqual({ ok: false, reason: "PreconditionFailed" });
    expect((await stub.head("k")).object?.etag).toBe("e1");
    const ok = await stub.put(record("k", "e2"), { ifMatch: ["other", "e1"] });
    expect(ok.ok && ok.freed[0]?.etag).toBe("e1");
    expect((await stub.head("k")).object?.etag).toBe("e2");
    expect((await stub.put(record("k", "e3"), { ifMatch: ["*"], ifNoneMatchEtag: ["e1"] })).ok).toBe(true);
  });

  it("concurrent If-Match puts on the same ETag: exactly one wins, the others are PreconditionFailed", async () => {
    const stub = await createdIndex();
    for (let round = 0; round < 5; round++) {
      const key = `cas-${round}`;
      expect((await stub.put(record(key, "base"))).ok).toBe(true);
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => stub.put(record(key, `writer-${i}`), { ifMatch: ["base"] })));
      const winners = results.flatMap((r, i) => (r.ok ? [i] : []));
      expect(winners).toHaveLength(1);
      for (const r of results) if (!r.ok) expect(r.reason).toBe("PreconditionFailed");
      expect((await stub.head(key)).object?.etag).toBe(`writer-${winners[0]}`);
    }
  });

  it("concurrent create-only puts: exactly one wins", async () => {
    const stub = await createdIndex();
    for (let round = 0; round < 5; round++) {
      const key = `race-${round}`;
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => stub.put(record(key, `writer-${i}`), { ifNoneMatch: true })));
      const winners = results.flatMap((r, i) => (r.ok ? [i] : []));
      expect(winners).toHaveLength(1);
      for (const r of results) if (!r.ok) expect(r.reason).toBe("PreconditionFailed");
      expect((await stub.head(key)).object?.etag).toBe(`writer-${winners[0]}`);
    }
  });
});

describe("BucketIndex: listing", () => {
  it("lists keys in UTF-8 byte order (SQLite BINARY collation), not UTF-16 order", async () => {
    const keys = ["z", "é", "\uE000", "\uFFFD", "😀", "𝄞", "A", "a", "a/", "\u00ff", "\u{10FFFF}", "ab", "a b"];
    const stub = await seed(keys);
    const page = await stub.list({ prefix: "", delimiter: null, after: null, maxKeys: 1000 });
    expect(page.objects.map((o) => o.key)).toEqual([...keys].sort(compareBytes));
    expect(page.objects.map((o) => o.key)).not.toEqual([...keys].sort());
    expect(page.objects[0]).toEqual({ key: "A", size: 10, etag: "etag-1", lastModified: 1_700_000_000_123 });
    expect(page.objects[0]).not.toHaveProperty("manifest");
  });

  it("maxKeys 0 is empty and not truncated; above 1000 counts as 1000", async () => {
    const keys = Array.from({ length: 1100 }, (_, i) => `k${String(i).padStart(5, "0")}`);
    const stub = await seed(keys);
    expect(await stub.list({ prefix: "", delimiter: null, after: null, maxKeys: 0 })).toEqual({
      objects: [],
      commonPrefixes: [],
      isTruncated: false,
      last: null,
    });
    const page = await stub.list({ prefix: "", delimiter: null, after: null, maxKeys: 5000 });
    expect(page.objects).toHaveLength(1000);
    expect(page.isTruncated).toBe(true);
    expect(page.last).toBe("k00999");
    const rest = await stub.list({ prefix: "", delimiter: null, after: page.last, maxKeys: 5000 });
    expect(rest.objects.map((o) => o.key)).toEqual(keys.slice(1000));
    expect(rest).toMatchObject({ isTruncated: false, last: null });
  });

  it("walks every page of many queries exactly like the reference", { timeout: 60_000 }, async () => {
    const next = rng(3);
    const keys = [...new Set([...folderKeys(), ...Array.from({ length: 1200 }, () => randomKey(next, 6))])];
    const stub = await seed(keys);
    const prefixes = ["", "photos/", "photos/2024/", "photos/2024/01/img", "p", "docs/", "é", "😀", "a", "a/", "\u{10FFFF}", "none"];
    const delimiters = [null, "/", "-", "|", "2024", "😀", "é", "/0"];
    const afters = [null, "photos/2023/06/img0030.jpg", "photos/", "a", "😀", "\uFFFD"];
    let pagesWalked = 0;
    for (const prefix of prefixes) {
      for (const delimiter of delimiters) {
        for (const startAfter of afters) {
          const expected = referenceEntries(keys, { prefix, delimiter, after: startAfter });
          for (const maxKeys of [1, 3, 50, 1000]) {
            if (expected.length / maxKeys > 12) continue; // keep the page count (and run time) bounded
            const got: string[] = [];
            let after = startAfter;
            for (;;) {
              const page = await stub.list({ prefix, delimiter, after, maxKeys });
              pagesWalked++;
              const entries = pageEntries(page);
              expect(entries.length).toBeLessThanOrEqual(maxKeys);
              got.push(...entries);
              const label = JSON.stringify({ prefix, delimiter, startAfter, maxKeys, after });
              if (!page.isTruncated) {
                expect(page.last, label).toBeNull();
                break;
              }
              expect(entries.length, label).toBe(maxKeys);
              expect(page.last, label).toBe(entries[entries.length - 1]);
              after = page.last;
            }
            expect(got, JSON.stringify({ prefix, delimiter, startAfter, maxKeys })).toEqual(expected);
          }
        }
      }
    }
    expect(pagesWalked).toBeGreaterThan(1500);
  });

  it("skips a common prefix with a seek instead of reading its keys", async () => {
    const keys = [
      "a.txt",
      ...Array.from({ length: 3000 }, (_, i) => `big/${String(i).padStart(5, "0")}`),
      ...Array.from({ length: 3000 }, (_, i) => `huge/${String(i).padStart(5, "0")}/x`),
      "z.txt",
    ];
    const stub = await seed(keys);
    const { page, queries, rowsRead } = await runInDurableObject(stub, async (instance: BucketIndex, state) => {
      const sql = state.storage.sql;
      const exec = sql.exec.bind(sql);
      const cursors: { readonly rowsRead: number }[] = [];
      sql.exec = <T extends Record<string, SqlStorageValue>>(query: string, ...args: unknown[]) => {
        const cursor = exec<T>(query, ...args);
        cursors.push(cursor);
        return cursor;
      };
      try {
        const page = await instance.list({ prefix: "", delimiter: "/", after: null, maxKeys: 1000 });
        return { page, queries: cursors.length, rowsRead: cursors.reduce((n, c) => n + c.rowsRead, 0) };
      } finally {
        sql.exec = exec;
      }
    });
    expect(pageEntries(page)).toEqual(["a.txt", "big/", "huge/", "z.txt"]);
    expect(queries).toBeGreaterThan(0);
    expect(rowsRead).toBeLessThan(20);
  });
});

describe("BucketRegistry", () => {
  it("adds, lists sorted, gets and removes buckets", async () => {
    const registry = bindings.BUCKET_REGISTRY.get(bindings.BUCKET_REGISTRY.idFromName(`registry-${crypto.randomUUID()}`));
    expect(await registry.list()).toEqual([]);
    expect(await registry.add("zeta", 3)).toBe("created");
    expect(await registry.add("alpha", 1)).toBe("created");
    expect(await registry.add("mid-bucket", 2)).toBe("created");
    expect(await registry.add("alpha", 99)).toBe("exists");
    expect(await registry.get("alpha")).toEqual({ name: "alpha", created: 1 });
    expect(await registry.get("nope")).toBeNull();
    expect((await registry.list()).map((b) => b.name)).toEqual(["alpha", "mid-bucket", "zeta"]);
    await registry.remove("mid-bucket");
    await registry.remove("never-there");
    expect(await registry.list()).toEqual([
      { name: "alpha", created: 1 },
      { name: "zeta", created: 3 },
    ]);
  });
});

// --- list-objects.ts: query parsing -------------------------------------------------------------

function parse(query: string): ListObjectsRequest {
  return parseListObjectsParams(new URLSearchParams(query));
}

function expectInvalid(query: string): void {
  let caught: unknown;
  try {
    parse(query);
  } catch (e) {
    caught = e;
  }
  expect(caught, query).toBeInstanceOf(S3Error);
  expect((caught as S3Error).status, query).toBe(400);
  expect((caught as S3Error).code, query).toBe("InvalidArgument");
}

describe("ListObjects query parsing", () => {
  it("V2 defaults and parameters", () => {
    expect(parse("list-type=2")).toEqual({
      version: 2,
      query: { prefix: "", delimiter: null, after: null, maxKeys: 1000 },
      encodeUrl: false,
      fetchOwner: false,
      startAfter: null,
      continuationToken: null,
      marker: "",
    });
    const r = parse("list-type=2&prefix=a%2Fb&delimiter=%2F&max-keys=7&start-after=x&encoding-type=url&fetch-owner=true");
    expect(r.query).toEqual({ prefix: "a/b", delimiter: "/", after: "x", maxKeys: 7 });
    expect(r).toMatchObject({ version: 2, encodeUrl: true, fetchOwner: true, startAfter: "x" });
    expect(parse("list-type=2&delimiter=").query.delimiter).toBeNull();
    expect(parse("list-type=2&max-keys=0").query.maxKeys).toBe(0);
    expect(parse("list-type=2&max-keys=5000").query.maxKeys).toBe(1000);
    expect(parse("list-type=2&max-keys=2147483647").query.maxKeys).toBe(1000);
    expect(parse("list-type=2&fetch-owner=false").fetchOwner).toBe(false);
  });

  it("V2 continuation tokens are opaque, round-trip any key and take over from start-after (still echoed)", () => {
    for (const last of ["photos/2024/", "é 😀 \uFFFD+/=?&", "a"]) {
      const token = encodeContinuationToken(last);
      expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeContinuationToken(token)).toBe(last);
    }
    const token = encodeContinuationToken("k-7");
    const r = parse(`list-type=2&start-after=a&continuation-token=${token}`);
    expect(r.query.after).toBe("k-7");
    expect(r.startAfter).toBe("a");
    expect(r.continuationToken).toBe(token);
  });

  it("V1 defaults and marker", () => {
    expect(parse("")).toEqual({
      version: 1,
      query: { prefix: "", delimiter: null, after: null, maxKeys: 1000 },
      encodeUrl: false,
      fetchOwner: true,
      startAfter: null,
      continuationToken: null,
      marker: "",
    });
    const r = parse("prefix=p&marker=p%2Fm&max-keys=3&delimiter=%7C");
    expect(r.query).toEqual({ prefix: "p", delimiter: "|", after: "p/m", maxKeys: 3 });
    expect(r.marker).toBe("p/m");
    expect(parse("list-type=1").version).toBe(1);
    expect(parse("list-type=bogus").version).toBe(1);
  });

  it("rejects bad max-keys, encoding-type and continuation tokens with InvalidArgument", () => {
    for (const v of ["abc", "-1", "1.5", "", " 1", "2147483648", "99999999999", "1e3"]) {
      expectInvalid(`list-type=2&max-keys=${encodeURIComponent(v)}`);
      expectInvalid(`max-keys=${encodeURIComponent(v)}`);
    }
    for (const v of ["URL", "base64", ""]) {
      expectInvalid(`list-type=2&encoding-type=${v}`);
      expectInvalid(`encoding-type=${v}`);
    }
    // Not base64url; an impossible length; valid base64url of bytes that are not UTF-8.
    for (const v of ["!!!!", "abcde", "_w", "", "a b"]) expectInvalid(`list-type=2&continuation-token=${encodeURIComponent(v)}`);
  });
});

// --- api/s3/list.xml.ts: XML -----------------------------------------------------

const OWNER = { id: "75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a", displayName: "shardgate" };
const NS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"';

/** The element names in document order (opening tags only). */
function tags(xml: string): string[] {
  return [...xml.matchAll(/<([A-Za-z]+)[ >]/g)].map((m) => m[1] ?? "");
}

function texts(xml: string, tag: string): string[] {
  return [...xml.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, "g"))].map((m) => m[1] ?? "");
}

function unescapeXml(s: string): string {
  return s.replace(/&(lt|gt|quot|apos|amp);/g, (_, e: string) => ({ lt: "<", gt: ">", quot: '"', apos: "'", amp: "&" })[e] ?? "");
}

const PAGE: ListPage = {
  objects: [
    { key: "dir/a b&<c>.txt", size: 11, etag: "9b2cf535f27731c974343645a3985328", lastModified: Date.UTC(2009, 9, 12, 17, 50, 30) },
    { key: "dir/é+😀~*'()!.bin", size: 0, etag: "d41d8cd98f00b204e9800998ecf8427e-2", lastModified: 1 },
  ],
  commonPrefixes: ["dir/sub dir/", "dir/ü/"],
  isTruncated: true,
  last: "dir/ü/",
};

describe("ListBucketResult XML", () => {
  it("V2: element order, escaping, dates, ETag quotes, tokens; no Owner by default", () => {
    const req = parse("list-type=2&prefix=dir%2F&delimiter=%2F&max-keys=4&start-after=dir%2F0");
    const xml = renderListObjects("my-bucket", req, PAGE, OWNER);
    expect(xml.startsWith(`<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult ${NS}>`)).toBe(true);
    expect(xml.endsWith("</ListBucketResult>")).toBe(true);
    expect(tags(xml)).toEqual([
      "ListBucketResult",
      "Name",
      "Prefix",
      "StartAfter",
      "NextContinuationToken",
      "KeyCount",
      "MaxKeys",
      "Delimiter",
      "IsTruncated",
      "Contents",
      "Key",
      "LastModified",
      "ETag",
      "Size",
      "StorageClass",
      "Contents",
      "Key",
      "LastModified",
      "ETag",
      "Size",
      "StorageClass",
      "CommonPrefixes",
      "Prefix",
      "CommonPrefixes",
      "Prefix",
    ]);
    expect(texts(xml, "Name")).toEqual(["my-bucket"]);
    expect(texts(xml, "Prefix")).toEqual(["dir/", "dir/sub dir/", "dir/ü/"]);
    expect(texts(xml, "StartAfter")).toEqual(["dir/0"]);
    expect(texts(xml, "KeyCount")).toEqual(["4"]);
    expect(texts(xml, "MaxKeys")).toEqual(["4"]);
    expect(texts(xml, "IsTruncated")).toEqual(["true"]);
    expect(texts(xml, "Key").map(unescapeXml)).toEqual(PAGE.objects.map((o) => o.key));
    expect(xml).toContain("<Key>dir/a b&amp;&lt;c&gt;.txt</Key>");
    expect(texts(xml, "LastModified")).toEqual(["2009-10-12T17:50:30.000Z", "1970-01-01T00:00:00.001Z"]);
    expect(xml).toContain("<ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag>");
    expect(texts(xml, "Size")).toEqual(["11", "0"]);
    expect(texts(xml, "StorageClass")).toEqual(["STANDARD", "STANDARD"]);
    expect(decodeContinuationToken(texts(xml, "NextContinuationToken")[0] ?? "")).toBe("dir/ü/");
    expect(xml).not.toContain("<Owner>");
    expect(xml).not.toContain("EncodingType");
  });

  it("V2: fetch-owner, continuation token echo, not truncated, no delimiter", () => {
    const token = encodeContinuationToken("dir/0");
    const req = parse(`list-type=2&fetch-owner=true&continuation-token=${token}&start-after=zzz`);
    const page: ListPage = { objects: PAGE.objects.slice(0, 1), commonPrefixes: [], isTruncated: false, last: null };
    const xml = renderListObjects("b", req, page, OWNER);
    expect(tags(xml)).toEqual([
      "ListBucketResult",
      "Name",
      "Prefix",
      "StartAfter",
      "ContinuationToken",
      "KeyCount",
      "MaxKeys",
      "IsTruncated",
      "Contents",
      "Key",
      "LastModified",
      "ETag",
      "Size",
      "Owner",
      "ID",
      "DisplayName",
      "StorageClass",
    ]);
    expect(texts(xml, "ContinuationToken")).toEqual([token]);
    expect(texts(xml, "ID")).toEqual([OWNER.id]);
    expect(texts(xml, "DisplayName")).toEqual(["shardgate"]);
    expect(xml).toContain("<Prefix></Prefix>");
    expect(texts(xml, "IsTruncated")).toEqual(["false"]);
    expect(renderListObjects("b", req, page, { id: "abc" })).toContain("<Owner><ID>abc</ID></Owner>");
  });

  it("encoding-type=url encodes keys, prefixes, delimiter and start-after like S3", () => {
    expect(s3UrlEncode("a b.txt")).toBe("a+b.txt");
    expect(s3UrlEncode("a+b.txt")).toBe("a%2Bb.txt");
    expect(s3UrlEncode("100%.csv")).toBe("100%25.csv");
    expect(s3UrlEncode("한글/x.txt")).toBe("%ED%95%9C%EA%B8%80/x.txt");
    expect(s3UrlEncode("a-_.*~'()!|\n")).toBe("a-_.*%7E%27%28%29%21%7C%0A");
    const req = parse("list-type=2&prefix=dir%2F&delimiter=%7C&start-after=a%20b&encoding-type=url");
    const xml = renderListObjects("b", req, PAGE, OWNER);
    expect(tags(xml).slice(0, 10)).toEqual([
      "ListBucketResult",
      "Name",
      "Prefix",
      "StartAfter",
      "NextContinuationToken",
      "KeyCount",
      "MaxKeys",
      "Delimiter",
      "EncodingType",
      "IsTruncated",
    ]);
    expect(texts(xml, "EncodingType")).toEqual(["url"]);
    expect(texts(xml, "Delimiter")).toEqual(["%7C"]);
    expect(texts(xml, "StartAfter")).toEqual(["a+b"]);
    expect(texts(xml, "Key")).toEqual(["dir/a+b%26%3Cc%3E.txt", "dir/%C3%A9%2B%F0%9F%98%80%7E*%27%28%29%21.bin"]);
    expect(texts(xml, "Prefix")).toEqual(["dir/", "dir/sub+dir/", "dir/%C3%BC/"]);
    // The token is opaque: not URL-encoded, and it still carries the raw key.
    expect(decodeContinuationToken(texts(xml, "NextContinuationToken")[0] ?? "")).toBe("dir/ü/");
    // What clients do (botocore: unquote_plus) gives the keys back.
    const unquotePlus = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
    expect(texts(xml, "Key").map(unquotePlus)).toEqual(PAGE.objects.map((o) => o.key));
  });

  it("V1: Marker always, NextMarker only when a delimiter is given and the page is truncated, Owner always", () => {
    const withDelimiter = renderListObjects("b", parse("prefix=dir%2F&delimiter=%2F&max-keys=4&marker=dir%2F0"), PAGE, OWNER);
    expect(tags(withDelimiter).slice(0, 8)).toEqual(["ListBucketResult", "Name", "Prefix", "Marker", "NextMarker", "MaxKeys", "Delimiter", "IsTruncated"]);
    expect(texts(withDelimiter, "Marker")).toEqual(["dir/0"]);
    expect(texts(withDelimiter, "NextMarker").map(unescapeXml)).toEqual(["dir/ü/"]);
    expect(texts(withDelimiter, "ID")).toEqual([OWNER.id, OWNER.id]);
    expect(withDelimiter).not.toContain("KeyCount");
    expect(withDelimiter).not.toContain("ContinuationToken");

    const noDelimiter = renderListObjects("b", parse("max-keys=2"), { ...PAGE, commonPrefixes: [], last: "dir/é+😀~*'()!.bin" }, OWNER);
    expect(tags(noDelimiter).slice(0, 6)).toEqual(["ListBucketResult", "Name", "Prefix", "Marker", "MaxKeys", "IsTruncated"]);
    expect(noDelimiter).toContain("<Marker></Marker>");
    expect(noDelimiter).not.toContain("NextMarker");

    const notTruncated = renderListObjects("b", parse("delimiter=%2F"), { ...PAGE, isTruncated: false, last: null }, OWNER);
    expect(notTruncated).not.toContain("NextMarker");

    const encoded = renderListObjects("b", parse("delimiter=%2F&marker=a%20b&encoding-type=url&prefix=dir%2F"), PAGE, OWNER);
    expect(texts(encoded, "Marker")).toEqual(["a+b"]);
    expect(texts(encoded, "NextMarker")).toEqual(["dir/%C3%BC/"]);
    expect(tags(encoded).slice(5, 9)).toEqual(["MaxKeys", "Delimiter", "EncodingType", "IsTruncated"]);
  });

  it("a listing walked through parse -> BucketIndex -> XML continuation tokens reaches every key once", async () => {
    const keys = folderKeys();
    const stub = await seed(keys);
    const seen: string[] = [];
    const query = "list-type=2&prefix=photos%2F2024%2F&delimiter=%2F&max-keys=5&encoding-type=url";
    let token: string | undefined = "";
    while (token !== undefined) {
      const req = parse(token === "" ? query : `${query}&continuation-token=${token}`);
      const xml = renderListObjects("b", req, await stub.list(req.query), OWNER);
      seen.push(...texts(xml, "Key"), ...texts(xml, "Prefix").slice(1));
      token = texts(xml, "NextContinuationToken")[0];
    }
    const expected = referenceEntries(keys, { prefix: "photos/2024/", delimiter: "/", after: null });
    expect(seen.map((s) => decodeURIComponent(s.replace(/\+/g, " "))).sort(compareBytes)).toEqual(expected);
  });
});

describe("ListAllMyBucketsResult XML", () => {
  it("renders the owner and the buckets with creation dates", () => {
    const xml = renderListBuckets(
      [
        { name: "alpha", created: Date.UTC(2024, 0, 2, 3, 4, 5, 6) },
        { name: "beta", created: 0 },
      ],
      OWNER,
    );
    expect(xml.startsWith(`<?xml version="1.0" encoding="UTF-8"?>\n<ListAllMyBucketsResult ${NS}>`)).toBe(true);
    expect(tags(xml)).toEqual([
      "ListAllMyBucketsResult",
      "Owner",
      "ID",
      "DisplayName",
      "Buckets",
      "Bucket",
      "Name",
      "CreationDate",
      "Bucket",
      "Name",
      "CreationDate",
    ]);
    expect(texts(xml, "Name")).toEqual(["alpha", "beta"]);
    expect(texts(xml, "CreationDate")).toEqual(["2024-01-02T03:04:05.006Z", "1970-01-01T00:00:00.000Z"]);
    expect(renderListBuckets([], OWNER)).toContain("<Buckets></Buckets>");
  });
});
