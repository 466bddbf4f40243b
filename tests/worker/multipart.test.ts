// Multipart uploads in workerd with real R2 nodes and the bucket's Durable Object: S3's rules
// (part numbers, sizes, order, ETags), the "<md5 of md5s>-N" ETag, reads by range and by part,
// checksums (COMPOSITE and FULL_OBJECT), UploadPartCopy, listing, abort and what each leaves on
// the nodes.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { expectSameBytes, randomBytes } from "../shared/core-suite";
import { core } from "../../worker/src/core";
import { loadConfig, type Env } from "../../worker/src/config";
import { STALE_UPLOAD_MS } from "../../worker/src/meta/uploads";
import { drainGarbage } from "../../worker/src/services/garbage";
import type { StorageNode } from "../../worker/src/shared/nodes";
import { s3, s3ok } from "./signed";

const MIB = 1 << 20;
const NODES = ["NODE_0", "NODE_1", "NODE_2", "NODE_3", "NODE_4", "NODE_5"];
const node = (id: string) => (env as unknown as Record<string, R2Bucket>)[id] as R2Bucket;
const bucket = "multipart";
const gatewayEnv = env as unknown as Env;

beforeAll(async () => {
  await s3ok(`/${bucket}`, { method: "PUT" });
});

async function shardFileCount(): Promise<number> {
  let n = 0;
  for (const id of NODES) n += (await node(id).list({ limit: 1000 })).objects.length;
  return n;
}

const tag = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];
const errorCode = (xml: string) => tag(xml, "Code");

function md5Hex(bytes: Uint8Array): Promise<string> {
  return crypto.subtle.digest("MD5", bytes).then((d) => [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join(""));
}

async function multipartEtag(parts: Uint8Array[]): Promise<string> {
  const md5s = new Uint8Array(parts.length * 16);
  for (const [i, p] of parts.entries()) md5s.set(new Uint8Array(await crypto.subtle.digest("MD5", p)), i * 16);
  return `${await md5Hex(md5s)}-${parts.length}`;
}

async function create(key: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await s3ok(`/${bucket}/${key}?uploads`, { method: "POST", headers });
  return tag(await res.text(), "UploadId") as string;
}

async function uploadPart(key: string, uploadId: string, n: number, body: Uint8Array, headers: Record<string, string> = {}): Promise<Response> {
  return s3(`/${bucket}/${key}?partNumber=${n}&uploadId=${uploadId}`, { method: "PUT", body, headers });
}

function completeXml(parts: [number, string][], extra: (n: number) => string = () => ""): string {
  return `<CompleteMultipartUpload>${parts.map(([n, etag]) => `<Part><PartNumber>${n}</PartNumber><ETag>${etag}</ETag>${extra(n)}</Part>`).join("")}</CompleteMultipartUpload>`;
}

async function complete(
  key: string,
  uploadId: string,
  parts: [number, string][],
  headers: Record<string, string> = {},
  extra?: (n: number) => string,
): Promise<Response> {
  return s3(`/${bucket}/${key}?uploadId=${uploadId}`, { method: "POST", body: completeXml(parts, extra), headers });
}

describe("a multipart upload", () => {
  const parts = [randomBytes(5 * MIB, 1), randomBytes(5 * MIB + 3, 2), randomBytes(700_001, 3)];
  const whole = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (whole.set(p, at), at + p.length), 0);

  it("uploads parts out of order, re-uploads one, completes with the md5-of-md5s ETag, and reads back by range and by part", async () => {
    const key = "big/object.bin";
    const uploadId = await create(key, { "content-type": "application/x-test", "x-amz-meta-colour": "blue" });
    const etags: string[] = [];
    for (const i of [2, 0, 1]) {
      const res = await uploadPart(key, uploadId, i + 1, parts[i]);
      expect(res.status).toBe(200);
      etags[i] = res.headers.get("etag") as string;
      expect(etags[i]).toBe(`"${await md5Hex(parts[i])}"`);
    }
    // Part 2 again with other bytes, then with the right ones: only the last counts, and the
    // replaced parts' shard files go.
    expect((await uploadPart(key, uploadId, 2, randomBytes(5 * MIB + 3, 99))).status).toBe(200);
    expect((await uploadPart(key, uploadId, 2, parts[1])).status).toBe(200);

    const listed = await (await s3ok(`/${bucket}/${key}?uploadId=${uploadId}`)).text();
    expect([...listed.matchAll(/<PartNumber>(\d+)<\/PartNumber>/g)].map((m) => m[1])).toEqual(["1", "2", "3"]);
    expect([...listed.matchAll(/<Size>(\d+)<\/Size>/g)].map((m) => Number(m[1]))).toEqual(parts.map((p) => p.length));

    const res = await complete(
      key,
      uploadId,
      [1, 2, 3].map((n, i) => [n, etags[i]]),
    );
    const xml = await res.text();
    expect(res.status, xml).toBe(200);
    const etag = await multipartEtag(parts);
    expect(tag(xml, "ETag")).toBe(`"${etag}"`);
    expect(tag(xml, "Key")).toBe(key);

    const head = await s3ok(`/${bucket}/${key}`, { method: "HEAD" });
    expect(head.headers.get("etag")).toBe(`"${etag}"`);
    expect(head.headers.get("content-length")).toBe(String(whole.length));
    expect(head.headers.get("content-type")).toBe("application/x-test");
    expect(head.headers.get("x-amz-meta-colour")).toBe("blue");

    expectSameBytes(new Uint8Array(await (await s3ok(`/${bucket}/${key}`)).arrayBuffer()), whole);
    // A range across the first part boundary, and one across the second.
    for (const [a, b] of [
      [5 * MIB - 1000, 5 * MIB + 1000],
      [10 * MIB, 10 * MIB + 200_000],
    ]) {
      const r = await s3(`/${bucket}/${key}`, { headers: { range: `bytes=${a}-${b - 1}` } });
      expect(r.status).toBe(206);
      expectSameBytes(new Uint8Array(await r.arrayBuffer()), whole.subarray(a, b));
    }
    const second = await s3(`/${bucket}/${key}?partNumber=2`);
    expect(second.status).toBe(206);
    expect(second.headers.get("x-amz-mp-parts-count")).toBe("3");
    expect(second.headers.get("content-range")).toBe(`bytes ${5 * MIB}-${10 * MIB + 2}/${whole.length}`);
    expectSameBytes(new Uint8Array(await second.arrayBuffer()), parts[1]);

    // GetObjectAttributes describes the parts, a page at a time (x-amz-max-parts, x-amz-part-number-marker).
    const attributes = async (headers: Record<string, string>) =>
      (await s3ok(`/${bucket}/${key}?attributes`, { headers: { "x-amz-object-attributes": "ObjectParts", ...headers } })).text();
    const page1 = await attributes({ "x-amz-max-parts": "2" });
    expect(tag(page1, "PartsCount")).toBe("3");
    expect(tag(page1, "IsTruncated")).toBe("true");
    expect(tag(page1, "NextPartNumberMarker")).toBe("2");
    expect([...page1.matchAll(/<Part><PartNumber>(\d+)<\/PartNumber><Size>(\d+)<\/Size>/g)].map((m) => [Number(m[1]), Number(m[2])])).toEqual([
      [1, parts[0].length],
      [2, parts[1].length],
    ]);
    const page2 = await attributes({ "x-amz-max-parts": "2", "x-amz-part-number-marker": "2" });
    expect(tag(page2, "IsTruncated")).toBe("false");
    expect([...page2.matchAll(/<PartNumber>(\d+)<\/PartNumber>/g)].map((m) => m[1])).toEqual(["3"]);

    // The upload is gone; only the object's parts are left on the nodes (3 parts × 6 shard files).
    expect(errorCode(await (await s3(`/${bucket}/${key}?uploadId=${uploadId}`)).text())).toBe("NoSuchUpload");
    await expect.poll(shardFileCount, { timeout: 5000 }).toBe(18);
  });

  it("refuses what S3 refuses: unknown upload, bad part number, wrong ETag, descending order, small parts", async () => {
    const key = "rules.bin";
    expect(errorCode(await (await uploadPart(key, "no-such-upload", 1, randomBytes(10, 1))).text())).toBe("NoSuchUpload");
    const uploadId = await create(key);
    for (const n of [0, 10001]) {
      const res = await uploadPart(key, uploadId, n, randomBytes(10, 1));
      expect(res.status).toBe(400);
      expect(errorCode(await res.text())).toBe("InvalidArgument");
    }
    const small = randomBytes(1000, 4);
    const etag1 = (await uploadPart(key, uploadId, 1, small)).headers.get("etag") as string;
    const etag2 = (await uploadPart(key, uploadId, 2, small)).headers.get("etag") as string;
    const cases: [[number, string][], string][] = [
      [[[1, `"${"0".repeat(32)}"`]], "InvalidPart"],
      [[[3, etag1]], "InvalidPart"],
      [
        [
          [2, etag2],
          [1, etag1],
        ],
        "InvalidPartOrder",
      ],
      [
        [
          [1, etag1],
          [2, etag2],
        ],
        "EntityTooSmall",
      ],
    ];
    for (const [list, code] of cases) {
      const res = await complete(key, uploadId, list);
      expect(res.status).toBe(400);
      expect(errorCode(await res.text()), code).toBe(code);
    }
    const malformed = await s3(`/${bucket}/${key}?uploadId=${uploadId}`, { method: "POST", body: "<CompleteMultipartUpload><Part>" });
    expect(errorCode(await malformed.text())).toBe("MalformedXML");
    // Nothing became visible; a single small part is a valid (last) part.
    expect((await s3(`/${bucket}/${key}`, { method: "HEAD" })).status).toBe(404);
    const done = await complete(key, uploadId, [[1, etag1]]);
    expect(done.status).toBe(200);
    expectSameBytes(new Uint8Array(await (await s3ok(`/${bucket}/${key}`)).arrayBuffer()), small);
  });

  it("takes If-None-Match / If-Match on completion: a refused one leaves the upload open", async () => {
    const key = "conditional.bin";
    await s3ok(`/${bucket}/${key}`, { method: "PUT", body: "already here" });
    const uploadId = await create(key);
    const etag = (await uploadPart(key, uploadId, 1, randomBytes(1000, 7))).headers.get("etag") as string;
    const refused = await complete(key, uploadId, [[1, etag]], { "if-none-match": "*" });
    expect(refused.status).toBe(412);
    expect(errorCode(await refused.text())).toBe("PreconditionFailed");
    expect(await (await s3ok(`/${bucket}/${key}`)).text()).toBe("already here");
    const current = (await s3ok(`/${bucket}/${key}`, { method: "HEAD" })).headers.get("etag") as string;
    expect((await complete(key, uploadId, [[1, etag]], { "if-match": current })).status).toBe(200);
  });

  it("aborts: the parts' shard files are removed and the upload is gone", async () => {
    const before = await shardFileCount();
    const key = "aborted.bin";
    const uploadId = await create(key);
    expect((await uploadPart(key, uploadId, 1, randomBytes(2 * MIB, 5))).status).toBe(200);
    expect(await shardFileCount()).toBe(before + 6);
    expect((await s3(`/${bucket}/${key}?uploadId=${uploadId}`, { method: "DELETE" })).status).toBe(204);
    await expect.poll(shardFileCount, { timeout: 5000 }).toBe(before);
    expect(errorCode(await (await s3(`/${bucket}/${key}?uploadId=${uploadId}`, { method: "DELETE" })).text())).toBe("NoSuchUpload");
    expect(errorCode(await (await uploadPart(key, uploadId, 2, randomBytes(10, 5))).text())).toBe("NoSuchUpload");
  });

  it("expires uploads left unfinished: the bucket's alarm aborts them and removes their parts", async () => {
    const before = await shardFileCount();
    const stale = await create("stale.bin");
    const fresh = await create("fresh.bin");
    expect((await uploadPart("stale.bin", stale, 1, randomBytes(MIB, 6))).status).toBe(200);
    const index = gatewayEnv.BUCKET_INDEX;
    const stub = index.get(index.idFromName(bucket));
    // Age the first upload past the limit, then run the alarm that creating it scheduled.
    await runInDurableObject(stub, async (_instance: unknown, state: DurableObjectState) => {
      state.storage.sql.exec("UPDATE uploads SET initiated = ? WHERE upload_id = ?", Date.now() - STALE_UPLOAD_MS - 1000, stale);
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(errorCode(await (await s3(`/${bucket}/stale.bin?uploadId=${stale}`)).text())).toBe("NoSuchUpload");
    expect((await s3(`/${bucket}/fresh.bin?uploadId=${fresh}`)).status).toBe(200);
    // The Durable Object only recorded the part's shard files as garbage; the job deletes them.
    expect(await shardFileCount()).toBe(before + 6);
    expect(await drainGarbage(gatewayEnv, loadConfig(gatewayEnv), 100)).toEqual({ partsRemoved: 1, partsFailed: 0, pending: 0 });
    expect(await shardFileCount()).toBe(before);
    await s3ok(`/${bucket}/fresh.bin?uploadId=${fresh}`, { method: "DELETE" }, 204);
  });

  it("keeps garbage whose files a node would not delete, and deletes it on a later run", async () => {
    const before = await shardFileCount();
    const stale = await create("stale-2.bin");
    expect((await uploadPart("stale-2.bin", stale, 1, randomBytes(MIB, 7))).status).toBe(200);
    const index = gatewayEnv.BUCKET_INDEX;
    const stub = index.get(index.idFromName(bucket));
    await runInDurableObject(stub, async (_instance: unknown, state: DurableObjectState) => {
      state.storage.sql.exec("UPDATE uploads SET initiated = ? WHERE upload_id = ?", Date.now() - STALE_UPLOAD_MS - 1000, stale);
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const config = loadConfig(gatewayEnv);
    // One node refuses deletes: the entry stays, with the attempt counted.
    const refusing = config.nodes.map((n, i) =>
      i === 2 ? Object.assign(Object.create(n) as StorageNode, { delete: () => Promise.reject(new Error("node down")) }) : n,
    );
    expect(await drainGarbage(gatewayEnv, { ...config, nodes: refusing }, 100)).toEqual({ partsRemoved: 0, partsFailed: 1, pending: 1 });
    expect(await shardFileCount()).toBe(before + 1); // the refusing node's file is left
    expect((await stub.garbage(10)).entries).toHaveLength(1);
    expect(await drainGarbage(gatewayEnv, config, 100)).toEqual({ partsRemoved: 1, partsFailed: 0, pending: 0 });
    expect(await shardFileCount()).toBe(before);
  });

  it("deletes the shard files of uploads in progress when their bucket is deleted", async () => {
    const other = "multipart-dropped";
    await s3ok(`/${other}`, { method: "PUT" });
    const before = await shardFileCount();
    const xml = await (await s3ok(`/${other}/left.bin?uploads`, { method: "POST" })).text();
    const uploadId = tag(xml, "UploadId") as string;
    expect((await s3(`/${other}/left.bin?partNumber=1&uploadId=${uploadId}`, { method: "PUT", body: randomBytes(MIB, 8) })).status).toBe(200);
    expect(await shardFileCount()).toBe(before + 6);
    await s3ok(`/${other}`, { method: "DELETE" }, 204);
    await expect.poll(shardFileCount, { timeout: 5000 }).toBe(before);
    const index = gatewayEnv.BUCKET_INDEX;
    expect((await index.get(index.idFromName(other)).garbage(10)).pending).toBe(0);
  });

  it("lists uploads in progress with prefix, delimiter and pagination", async () => {
    const keys = ["list/a/1", "list/a/2", "list/b", "list/c", "list/c"];
    const ids = [];
    for (const k of keys) ids.push(await create(k));
    const all = await (await s3ok(`/${bucket}?uploads&prefix=list/`)).text();
    expect([...all.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1])).toEqual(keys);
    const grouped = await (await s3ok(`/${bucket}?uploads&prefix=list/&delimiter=/`)).text();
    expect([...grouped.matchAll(/<Prefix>(list\/a\/)<\/Prefix>/g)]).toHaveLength(1);
    expect([...grouped.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1])).toEqual(["list/b", "list/c", "list/c"]);
    // Pages of two, following NextKeyMarker / NextUploadIdMarker.
    const seen: string[] = [];
    let markers = "";
    for (let page = 0; page < 5; page++) {
      const xml = await (await s3ok(`/${bucket}?uploads&prefix=list/&max-uploads=2${markers}`)).text();
      seen.push(...[...xml.matchAll(/<UploadId>([^<]*)<\/UploadId>/g)].map((m) => m[1]));
      if (tag(xml, "IsTruncated") !== "true") break;
      markers = `&key-marker=${encodeURIComponent(tag(xml, "NextKeyMarker") as string)}&upload-id-marker=${tag(xml, "NextUploadIdMarker")}`;
    }
    expect(seen).toEqual(ids);
    for (const [i, id] of ids.entries()) await s3ok(`/${bucket}/${keys[i]}?uploadId=${id}`, { method: "DELETE" }, 204);
  });
});

describe("multipart checksums", () => {
  const parts = [randomBytes(5 * MIB, 11), randomBytes(12_345, 12)];

  /** The core's CRCs (checked against the published check values in its own tests), base64. */
  async function crc(algorithm: string, bytes: Uint8Array): Promise<string> {
    const c = core.checksum(algorithm);
    c.update(bytes);
    return btoa(String.fromCharCode(...c.digest()));
  }

  it("COMPOSITE (CRC32): the checksum of the parts' checksums, shown with -N; parts are verified", async () => {
    const key = "sum/composite.bin";
    const uploadId = await create(key, { "x-amz-checksum-algorithm": "CRC32" });
    const bad = await uploadPart(key, uploadId, 1, parts[0], { "x-amz-checksum-crc32": "AAAAAA==" });
    expect(bad.status).toBe(400);
    expect(errorCode(await bad.text())).toBe("BadDigest");
    // Sent without a checksum, the gateway computes the upload's algorithm itself.
    const r1 = await uploadPart(key, uploadId, 1, parts[0]);
    const r2 = await uploadPart(key, uploadId, 2, parts[1]);
    const sums = [r1.headers.get("x-amz-checksum-crc32") as string, r2.headers.get("x-amz-checksum-crc32") as string];
    expect(sums.every(Boolean)).toBe(true);
    const res = await complete(
      key,
      uploadId,
      [
        [1, r1.headers.get("etag") as string],
        [2, r2.headers.get("etag") as string],
      ],
      {},
      (n) => `<ChecksumCRC32>${sums[n - 1]}</ChecksumCRC32>`,
    );
    const xml = await res.text();
    expect(res.status, xml).toBe(200);
    expect(tag(xml, "ChecksumType")).toBe("COMPOSITE");
    const raw = new Uint8Array([...atob(sums[0]), ...atob(sums[1])].map((c) => c.charCodeAt(0)));
    expect(tag(xml, "ChecksumCRC32")).toBe(`${await crc("CRC32", raw)}-2`);
    const head = await s3ok(`/${bucket}/${key}`, { method: "HEAD", headers: { "x-amz-checksum-mode": "ENABLED" } });
    expect(head.headers.get("x-amz-checksum-crc32")).toBe(`${await crc("CRC32", raw)}-2`);
    expect(head.headers.get("x-amz-checksum-type")).toBe("COMPOSITE");
  });

  it("FULL_OBJECT (CRC64NVME, CRC32C): the CRC of the whole object, combined from the parts' CRCs", async () => {
    const whole = new Uint8Array(parts[0].length + parts[1].length);
    whole.set(parts[0]);
    whole.set(parts[1], parts[0].length);
    for (const algorithm of ["CRC64NVME", "CRC32C"]) {
      const key = `sum/full-${algorithm}.bin`;
      const uploadId = await create(key, { "x-amz-checksum-algorithm": algorithm, "x-amz-checksum-type": "FULL_OBJECT" });
      const etags = [];
      for (const [i, p] of parts.entries()) etags.push([i + 1, (await uploadPart(key, uploadId, i + 1, p)).headers.get("etag") as string] as [number, string]);
      const expected = await crc(algorithm, whole);
      const wrong = await complete(key, uploadId, etags, {
        [`x-amz-checksum-${algorithm.toLowerCase()}`]: algorithm === "CRC32C" ? "AAAAAA==" : "AAAAAAAAAAA=",
      });
      expect(errorCode(await wrong.text())).toBe("BadDigest");
      const res = await complete(key, uploadId, etags, { [`x-amz-checksum-${algorithm.toLowerCase()}`]: expected });
      const xml = await res.text();
      expect(res.status, xml).toBe(200);
      expect(tag(xml, `Checksum${algorithm}`)).toBe(expected);
      expect(tag(xml, "ChecksumType")).toBe("FULL_OBJECT");
    }
    const refused = await s3(`/${bucket}/x?uploads`, {
      method: "POST",
      headers: { "x-amz-checksum-algorithm": "SHA256", "x-amz-checksum-type": "FULL_OBJECT" },
    });
    expect(errorCode(await refused.text())).toBe("InvalidRequest");
  });
});

describe("UploadPartCopy", () => {
  it("copies byte ranges of existing objects into parts", async () => {
    const source = randomBytes(6 * MIB + 100, 21);
    await s3ok(`/${bucket}/copy-source.bin`, { method: "PUT", body: source });
    const key = "copied-parts.bin";
    const uploadId = await create(key);
    const copy = (n: number, range?: string) =>
      s3(`/${bucket}/${key}?partNumber=${n}&uploadId=${uploadId}`, {
        method: "PUT",
        headers: { "x-amz-copy-source": `/${bucket}/copy-source.bin`, ...(range ? { "x-amz-copy-source-range": range } : {}) },
      });
    const p1 = await copy(1, `bytes=0-${5 * MIB - 1}`);
    const p2 = await copy(2, `bytes=${6 * MIB}-${6 * MIB + 99}`);
    expect(p1.status).toBe(200);
    const e1 = tag(await p1.text(), "ETag") as string;
    const e2 = tag(await p2.text(), "ETag") as string;
    expect(e1).toBe(`"${await md5Hex(source.subarray(0, 5 * MIB))}"`);
    const outside = await copy(3, `bytes=0-${6 * MIB + 100}`);
    expect(errorCode(await outside.text())).toBe("InvalidArgument");
    await s3ok(`/${bucket}/${key}?uploadId=${uploadId}`, {
      method: "POST",
      body: completeXml([
        [1, e1],
        [2, e2],
      ]),
    });
    const got = new Uint8Array(await (await s3ok(`/${bucket}/${key}`)).arrayBuffer());
    const expected = new Uint8Array(5 * MIB + 100);
    expected.set(source.subarray(0, 5 * MIB));
    expected.set(source.subarray(6 * MIB), 5 * MIB);
    expectSameBytes(got, expected);
  });
});
