// Server-side encryption (services/encryption.ts, sse/object-keys.ts, sse/segments.ts): SSE-S3 and SSE-C
// objects read back whole and by any range, byte for byte; no node's files (nor the index) hold
// the plaintext; a 4 KiB range reads only the chunks it covers; SSE-C refuses a missing or wrong
// key; a bucket's default encryption; multipart uploads and copies encrypted; heal and scrub work
// without the key.
import { runInDurableObject } from "cloudflare:test";
import { env as workersEnv } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { NODES, node } from "./nodes";
import { s3, s3ok } from "./signed";
import type { Env } from "../../worker/src/config";

const env = workersEnv as unknown as Env;

const BUCKET = "sse";
const MiB = 1024 * 1024;
const errorCode = (xml: string) => xml.match(/<Code>([^<]+)<\/Code>/)?.[1];
const hexOf = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const b64 = (b: Uint8Array) => btoa(String.fromCharCode(...b));

async function md5(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("MD5", bytes));
}

/** SSE-C headers for `key` (the copy source's with `copy`). */
async function customer(key: Uint8Array, copy = false): Promise<Record<string, string>> {
  const p = copy ? "x-amz-copy-source-server-side-encryption-customer-" : "x-amz-server-side-encryption-customer-";
  return { [`${p}algorithm`]: "AES256", [`${p}key`]: b64(key), [`${p}key-MD5`]: b64(await md5(key)) };
}

/** A body made of a marker text repeated, with random bytes between: easy to look for in stored files. */
function marked(size: number, seed: number): Uint8Array {
  const out = randomBytes(size, seed);
  const marker = new TextEncoder().encode("PLAINTEXT-MARKER-0123456789");
  for (let at = 0; at + marker.length <= size; at += 4096) out.set(marker, at);
  return out;
}

/** The gateway's total of bytes read from nodes so far. */
async function nodeBytesRead(): Promise<number> {
  const text = await (await s3ok("/_shardgate/metrics")).text();
  let sum = 0;
  for (const line of text.split("\n")) if (line.startsWith("shardgate_node_bytes_read_total")) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  return sum;
}

function contains(hay: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = hay.indexOf(needle[0] as number); i >= 0 && i + needle.length <= hay.length; i = hay.indexOf(needle[0] as number, i + 1)) {
    for (let j = 1; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

/** Every shard file of every node, as bytes. */
async function storedFiles(): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for (const id of NODES) {
    const list = await node(id).list();
    for (const o of list.objects) out.push(new Uint8Array(await ((await node(id).get(o.key)) as R2ObjectBody).arrayBuffer()));
  }
  return out;
}

async function get(path: string, headers: Record<string, string> = {}): Promise<Uint8Array> {
  const res = await s3(path, { headers });
  expect(res.status, path).toBe(headers.range ? 206 : 200);
  return new Uint8Array(await res.arrayBuffer());
}

function expectSame(got: Uint8Array, want: Uint8Array, what: string): void {
  expect(got.length, what).toBe(want.length);
  expect(hexOf(got.subarray(0, 64)), what).toBe(hexOf(want.subarray(0, 64)));
  let diff = -1;
  for (let i = 0; i < want.length; i++)
    if (got[i] !== want[i]) {
      diff = i;
      break;
    }
  expect(diff, what).toBe(-1);
}

describe("server-side encryption", () => {
  beforeAll(async () => {
    await s3ok(`/${BUCKET}`, { method: "PUT" });
  });

  it("SSE-S3: reads back whole and by ranges across segments and blocks; the ETag is the plaintext's MD5; nothing stored in clear", async () => {
    const body = marked(3 * MiB + 12_345, 1);
    const put = await s3ok(`/${BUCKET}/s3.bin`, { method: "PUT", body, headers: { "x-amz-server-side-encryption": "AES256" } });
    expect(put.headers.get("x-amz-server-side-encryption")).toBe("AES256");
    expect(put.headers.get("etag")).toBe(`"${hexOf(await md5(body))}"`);
    expectSame(await get(`/${BUCKET}/s3.bin`), body, "whole");
    const head = await s3ok(`/${BUCKET}/s3.bin`, { method: "HEAD" });
    expect(head.headers.get("x-amz-server-side-encryption")).toBe("AES256");
    expect(head.headers.get("content-length")).toBe(String(body.length));
    const seg = 16_384 - 16;
    for (const [a, b] of [
      [0, 0],
      [0, 4095],
      [seg - 10, seg + 10],
      [5 * seg, 5 * seg + 4095],
      [MiB - 100, MiB + 100],
      [3 * MiB, 3 * MiB + 12_344],
      [1234, 2 * MiB + 77],
    ] as const) {
      const part = await get(`/${BUCKET}/s3.bin`, { range: `bytes=${a}-${b}` });
      expectSame(part, body.subarray(a, b + 1), `bytes=${a}-${b}`);
    }
    const marker = new TextEncoder().encode("PLAINTEXT-MARKER-0123456789");
    for (const file of await storedFiles()) expect(contains(file, marker)).toBe(false);
  });

  it("reads reuse one buffer for their batches of segments: streamed and read whole, across batches, a last batch of one segment, and a copy, byte for byte", async () => {
    // Five batches of 16 segments and one of a single byte: the buffer is refilled, then a
    // one-segment batch (lent as WebCrypto returned it) follows. Above 1 MiB a GET streams; up to
    // it, an encrypted body is read whole first (api/s3/get.ts).
    const seg = 16_384 - 16;
    const body = randomBytes(80 * seg + 1, 21);
    await s3ok(`/${BUCKET}/batches.bin`, { method: "PUT", body, headers: { "x-amz-server-side-encryption": "AES256" } });
    expectSame(await get(`/${BUCKET}/batches.bin`), body, "whole (streamed)");
    for (const [a, b] of [
      [1, 80 * seg - 1], // streamed: everything but the first and the last byte
      [3 * seg + 5, 3 * seg + 1_100_004], // streamed, starting and ending inside segments
      [16 * seg - 1, 80 * seg], // read whole: from the last segment of a batch to the one-byte segment
      [20 * seg, 32 * seg], // read whole: a short first batch, then one segment more
    ] as const) {
      expectSame(await get(`/${BUCKET}/batches.bin`, { range: `bytes=${a}-${b}` }), body.subarray(a, b + 1), `bytes=${a}-${b}`);
    }
    // A copy reads the source as a stream (each lent piece copied before the next is decrypted).
    await s3ok(`/${BUCKET}/batches-copy.bin`, { method: "PUT", headers: { "x-amz-copy-source": `/${BUCKET}/batches.bin` } });
    expect((await s3ok(`/${BUCKET}/batches-copy.bin`, { method: "HEAD" })).headers.get("x-amz-server-side-encryption")).toBeNull();
    expectSame(await get(`/${BUCKET}/batches-copy.bin`), body, "plain copy");
  });

  it("a small SSE-S3 object (stored in its manifest) is encrypted too", async () => {
    const body = new TextEncoder().encode("a small secret PLAINTEXT-MARKER-0123456789");
    await s3ok(`/${BUCKET}/small.txt`, { method: "PUT", body, headers: { "x-amz-server-side-encryption": "AES256" } });
    expect(new TextDecoder().decode(await get(`/${BUCKET}/small.txt`))).toBe("a small secret PLAINTEXT-MARKER-0123456789");
    const stub = env.BUCKET_INDEX.get(env.BUCKET_INDEX.idFromName(BUCKET));
    const manifest = await runInDurableObject(
      stub,
      async (_i: unknown, state: DurableObjectState) =>
        new Uint8Array(state.storage.sql.exec<{ manifest: ArrayBuffer }>("SELECT manifest FROM objects WHERE key = ?", "small.txt").one().manifest),
    );
    expect(contains(manifest, new TextEncoder().encode("PLAINTEXT-MARKER"))).toBe(false);
  });

  it("SSE-C: needs the key to read (HEAD too), refuses a wrong one, and never stores it", async () => {
    const key = randomBytes(32, 7);
    const body = marked(MiB + 5, 2);
    const put = await s3ok(`/${BUCKET}/c.bin`, { method: "PUT", body, headers: await customer(key) });
    expect(put.headers.get("x-amz-server-side-encryption-customer-algorithm")).toBe("AES256");
    expectSame(await get(`/${BUCKET}/c.bin`, await customer(key)), body, "with the key");
    expectSame(await get(`/${BUCKET}/c.bin`, { ...(await customer(key)), range: "bytes=1000-70000" }), body.subarray(1000, 70001), "a range");
    const without = await s3(`/${BUCKET}/c.bin`);
    expect(without.status).toBe(400);
    expect(errorCode(await without.text())).toBe("InvalidRequest");
    expect((await s3(`/${BUCKET}/c.bin`, { method: "HEAD" })).status).toBe(400);
    const wrong = await s3(`/${BUCKET}/c.bin`, { headers: await customer(randomBytes(32, 8)) });
    expect(wrong.status).toBe(403);
    expect(errorCode(await wrong.text())).toBe("AccessDenied");
    const badMd5 = await s3(`/${BUCKET}/c.bin`, {
      headers: { ...(await customer(key)), "x-amz-server-side-encryption-customer-key-MD5": b64(new Uint8Array(16)) },
    });
    expect(errorCode(await badMd5.text())).toBe("InvalidArgument");
    const keyText = b64(key);
    for (const file of await storedFiles()) expect(contains(file, new TextEncoder().encode(keyText))).toBe(false);
    // The customer key on an object that is not SSE-C is refused.
    await s3ok(`/${BUCKET}/plain.txt`, { method: "PUT", body: "plain" });
    expect(errorCode(await (await s3(`/${BUCKET}/plain.txt`, { headers: await customer(key) })).text())).toBe("InvalidArgument");
  });

  it("a 4 KiB range of an SSE-S3 object reads no more node bytes than the same range of a plain one", async () => {
    const body = randomBytes(4 * MiB, 3);
    await s3ok(`/${BUCKET}/plain-4m.bin`, { method: "PUT", body });
    await s3ok(`/${BUCKET}/sse-4m.bin`, { method: "PUT", body, headers: { "x-amz-server-side-encryption": "AES256" } });
    const nodeBytes = async (key: string): Promise<number> => {
      const before = await nodeBytesRead();
      let x = 99;
      for (let i = 0; i < 32; i++) {
        x = (x * 1103515245 + 12345) % 2 ** 31;
        const start = x % (body.length - 4096);
        expectSame(await get(`/${BUCKET}/${key}`, { range: `bytes=${start}-${start + 4095}` }), body.subarray(start, start + 4096), `${key} @${start}`);
      }
      return (await nodeBytesRead()) - before;
    };
    const plain = await nodeBytes("plain-4m.bin");
    const encrypted = await nodeBytes("sse-4m.bin");
    expect(encrypted).toBeLessThanOrEqual(plain);
  });

  it("a bucket's default encryption encrypts every new object that does not ask for SSE-C", async () => {
    const bucket = "sse-default";
    await s3ok(`/${bucket}`, { method: "PUT" });
    expect(errorCode(await (await s3(`/${bucket}?encryption`)).text())).toBe("ServerSideEncryptionConfigurationNotFoundError");
    const config =
      "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>";
    await s3ok(`/${bucket}?encryption`, { method: "PUT", body: config });
    expect(await (await s3ok(`/${bucket}?encryption`)).text()).toContain("<SSEAlgorithm>AES256</SSEAlgorithm>");
    const put = await s3ok(`/${bucket}/by-default.txt`, { method: "PUT", body: "PLAINTEXT-MARKER-0123456789 by default" });
    expect(put.headers.get("x-amz-server-side-encryption")).toBe("AES256");
    expect((await s3ok(`/${bucket}/by-default.txt`, { method: "HEAD" })).headers.get("x-amz-server-side-encryption")).toBe("AES256");
    const key = randomBytes(32, 9);
    const c = await s3ok(`/${bucket}/customer.txt`, { method: "PUT", body: "mine", headers: await customer(key) });
    expect(c.headers.get("x-amz-server-side-encryption-customer-algorithm")).toBe("AES256");
    const kms =
      "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>aws:kms</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>";
    expect((await s3(`/${bucket}?encryption`, { method: "PUT", body: kms })).status).toBe(501);
    await s3ok(`/${bucket}?encryption`, { method: "DELETE" }, 204);
    const plain = await s3ok(`/${bucket}/plain.txt`, { method: "PUT", body: "plain" });
    expect(plain.headers.get("x-amz-server-side-encryption")).toBeNull();
  });

  it("multipart uploads: SSE-S3 and SSE-C parts (the key with every part), read back whole and across part boundaries", async () => {
    const part1 = marked(5 * MiB, 4);
    const part2 = marked(5 * MiB, 5);
    const part3 = marked(123_457, 6);
    const whole = new Uint8Array([...part1, ...part2, ...part3]);
    const key = randomBytes(32, 10);
    for (const [name, headers] of [
      ["mp-s3.bin", { "x-amz-server-side-encryption": "AES256" }],
      ["mp-c.bin", await customer(key)],
    ] as const) {
      const created = await s3ok(`/${BUCKET}/${name}?uploads`, { method: "POST", headers });
      const uploadId = (await created.text()).match(/<UploadId>([^<]+)<\/UploadId>/)?.[1] as string;
      const partHeaders = name === "mp-c.bin" ? await customer(key) : {};
      if (name === "mp-c.bin") {
        const without = await s3(`/${BUCKET}/${name}?partNumber=1&uploadId=${uploadId}`, { method: "PUT", body: part1 });
        expect(without.status).toBe(400);
      }
      const etags: string[] = [];
      for (const [i, bytes] of [part1, part2, part3].entries()) {
        const res = await s3ok(`/${BUCKET}/${name}?partNumber=${i + 1}&uploadId=${uploadId}`, { method: "PUT", body: bytes, headers: partHeaders });
        etags.push(res.headers.get("etag") as string);
      }
      const listed = await (await s3ok(`/${BUCKET}/${name}?uploadId=${uploadId}`, { headers: partHeaders })).text();
      expect(listed).toContain(`<Size>${5 * MiB}</Size>`);
      const complete = `<CompleteMultipartUpload>${etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`).join("")}</CompleteMultipartUpload>`;
      await s3ok(`/${BUCKET}/${name}?uploadId=${uploadId}`, { method: "POST", body: complete });
      const readHeaders = name === "mp-c.bin" ? await customer(key) : {};
      const head = await s3ok(`/${BUCKET}/${name}`, { method: "HEAD", headers: readHeaders });
      expect(head.headers.get("content-length")).toBe(String(whole.length));
      expectSame(await get(`/${BUCKET}/${name}`, readHeaders), whole, name);
      const a = 5 * MiB - 1000;
      expectSame(
        await get(`/${BUCKET}/${name}`, { ...readHeaders, range: `bytes=${a}-${a + 5 * MiB + 2000}` }),
        whole.subarray(a, a + 5 * MiB + 2001),
        `${name} range`,
      );
      const second = await s3(`/${BUCKET}/${name}?partNumber=2`, { headers: readHeaders });
      expect(second.status).toBe(206);
      expectSame(new Uint8Array(await second.arrayBuffer()), part2, `${name} part 2`);
    }
    const marker = new TextEncoder().encode("PLAINTEXT-MARKER-0123456789");
    for (const file of await storedFiles()) expect(contains(file, marker)).toBe(false);
  });

  it("copies decrypt the source with its key and encrypt the copy as the copy asks", async () => {
    const key = randomBytes(32, 11);
    const other = randomBytes(32, 12);
    const body = marked(2 * MiB + 3, 13);
    await s3ok(`/${BUCKET}/src-c.bin`, { method: "PUT", body, headers: await customer(key) });
    // SSE-C source to an SSE-S3 copy: the source's key in the copy-source headers.
    const refused = await s3(`/${BUCKET}/copy-s3.bin`, {
      method: "PUT",
      headers: { "x-amz-copy-source": `/${BUCKET}/src-c.bin`, "x-amz-server-side-encryption": "AES256" },
    });
    expect(refused.status).toBe(400);
    const copied = await s3ok(`/${BUCKET}/copy-s3.bin`, {
      method: "PUT",
      headers: { "x-amz-copy-source": `/${BUCKET}/src-c.bin`, "x-amz-server-side-encryption": "AES256", ...(await customer(key, true)) },
    });
    expect(copied.headers.get("x-amz-server-side-encryption")).toBe("AES256");
    expectSame(await get(`/${BUCKET}/copy-s3.bin`), body, "copy as SSE-S3");
    // SSE-S3 to SSE-C under another key, and to a plain copy.
    await s3ok(`/${BUCKET}/copy-c.bin`, { method: "PUT", headers: { "x-amz-copy-source": `/${BUCKET}/copy-s3.bin`, ...(await customer(other)) } });
    expectSame(await get(`/${BUCKET}/copy-c.bin`, await customer(other)), body, "copy as SSE-C");
    await s3ok(`/${BUCKET}/copy-plain.bin`, { method: "PUT", headers: { "x-amz-copy-source": `/${BUCKET}/copy-s3.bin` } });
    const plain = await s3ok(`/${BUCKET}/copy-plain.bin`, { method: "HEAD" });
    expect(plain.headers.get("x-amz-server-side-encryption")).toBeNull();
    expectSame(await get(`/${BUCKET}/copy-plain.bin`), body, "plain copy");
    // In place: a plain object encrypted by copying it onto itself.
    await s3ok(`/${BUCKET}/copy-plain.bin`, {
      method: "PUT",
      headers: { "x-amz-copy-source": `/${BUCKET}/copy-plain.bin`, "x-amz-server-side-encryption": "AES256" },
    });
    expect((await s3ok(`/${BUCKET}/copy-plain.bin`, { method: "HEAD" })).headers.get("x-amz-server-side-encryption")).toBe("AES256");
    expectSame(await get(`/${BUCKET}/copy-plain.bin`), body, "encrypted in place");
  });

  it("heal rebuilds a lost shard file of an encrypted object without its key, and reads stay byte-exact", async () => {
    const key = randomBytes(32, 14);
    const body = marked(3 * MiB, 15);
    await s3ok(`/${BUCKET}/heal-c.bin`, { method: "PUT", body, headers: await customer(key) });
    const layout = (await (await s3ok(`/_shardgate/admin/object?bucket=${BUCKET}&key=heal-c.bin`)).json()) as {
      parts: { storageId: string; shards: { node: string }[] }[];
    };
    const part = layout.parts[0] as { storageId: string; shards: { node: string }[] };
    await node(part.shards[0]?.node as string).delete(`${part.storageId}/0`);
    expectSame(await get(`/${BUCKET}/heal-c.bin`, await customer(key)), body, "read around the lost file");
    // Healed on read (after the answer), or by the heal walk: either way without the customer's key.
    await s3ok(`/_shardgate/admin/heal?bucket=${BUCKET}`, { method: "POST" });
    await expect.poll(() => node(part.shards[0]?.node as string).head(`${part.storageId}/0`)).not.toBeNull();
    const scrub = (await (await s3ok("/_shardgate/admin/scrub?mode=deep&heal=false", { method: "POST" })).json()) as {
      run: { counters: { badShards: number; badChunks: number; chunksChecked: number } };
    };
    expect(scrub.run.counters.chunksChecked).toBeGreaterThan(0);
    expect(scrub.run.counters.badShards + scrub.run.counters.badChunks).toBe(0);
    expectSame(await get(`/${BUCKET}/heal-c.bin`, await customer(key)), body, "after heal");
  });

  it("refuses SSE-KMS by name and a bad algorithm", async () => {
    const kms = await s3(`/${BUCKET}/kms.bin`, { method: "PUT", body: "x", headers: { "x-amz-server-side-encryption": "aws:kms" } });
    expect(kms.status).toBe(501);
    const bad = await s3(`/${BUCKET}/bad.bin`, { method: "PUT", body: "x", headers: { "x-amz-server-side-encryption": "DES" } });
    expect(errorCode(await bad.text())).toBe("InvalidArgument");
    expect((await s3(`/${BUCKET}/kms.bin`, { method: "HEAD" })).status).toBe(404);
  });

  it("S3's 400 for SSE-KMS's headers without aws:kms (a key id, a context): InvalidArgument, nothing stored", async () => {
    const cases: Record<string, string>[] = [
      { "x-amz-server-side-encryption-aws-kms-key-id": "alias/mine" },
      { "x-amz-server-side-encryption": "AES256", "x-amz-server-side-encryption-aws-kms-key-id": "alias/mine" },
      { "x-amz-server-side-encryption-context": btoa("{}") },
    ];
    for (const [i, headers] of cases.entries()) {
      const res = await s3(`/${BUCKET}/kms-${i}.bin`, { method: "PUT", body: "x", headers });
      expect(res.status, JSON.stringify(headers)).toBe(400);
      expect(errorCode(await res.text())).toBe("InvalidArgument");
      expect((await s3(`/${BUCKET}/kms-${i}.bin`, { method: "HEAD" })).status).toBe(404);
    }
  });

  it("S3's 400 for a write's encryption headers on a read: GET and HEAD with x-amz-server-side-encryption are InvalidArgument", async () => {
    await s3ok(`/${BUCKET}/read-sse.bin`, { method: "PUT", body: "r", headers: { "x-amz-server-side-encryption": "AES256" } });
    for (const method of ["GET", "HEAD"]) {
      const cases: Record<string, string>[] = [{ "x-amz-server-side-encryption": "AES256" }, { "x-amz-server-side-encryption-aws-kms-key-id": "k" }];
      for (const headers of cases) {
        const res = await s3(`/${BUCKET}/read-sse.bin`, { method, headers });
        expect(res.status, `${method} ${JSON.stringify(headers)}`).toBe(400);
        if (method === "GET") expect(errorCode(await res.text())).toBe("InvalidArgument");
        else await res.body?.cancel();
      }
    }
    expect(await (await s3ok(`/${BUCKET}/read-sse.bin`)).text()).toBe("r");
  });

  it("S3's 400s for an SSE-C multipart upload's parts: another key is InvalidArgument, no key InvalidRequest, a key on a plain upload InvalidArgument; the upload goes on", async () => {
    const key = randomBytes(32, 21);
    const other = randomBytes(32, 22);
    const created = await s3ok(`/${BUCKET}/mp-keys.bin?uploads`, { method: "POST", headers: await customer(key) });
    const uploadId = (await created.text()).match(/<UploadId>([^<]+)<\/UploadId>/)?.[1] as string;
    const part = (headers: Record<string, string>, body: Uint8Array | string = "p") =>
      s3(`/${BUCKET}/mp-keys.bin?partNumber=1&uploadId=${uploadId}`, { method: "PUT", body, headers });
    for (const [what, headers, code] of [
      ["another key", await customer(other), "InvalidArgument"],
      ["no key", {}, "InvalidRequest"],
    ] as const) {
      const res = await part(headers);
      expect(res.status, what).toBe(400);
      expect(errorCode(await res.text()), what).toBe(code);
    }
    const good = await part(await customer(key), "part one");
    expect(good.status).toBe(200);
    const complete = `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${good.headers.get("etag")}</ETag></Part></CompleteMultipartUpload>`;
    await s3ok(`/${BUCKET}/mp-keys.bin?uploadId=${uploadId}`, { method: "POST", body: complete });
    expect(await (await s3ok(`/${BUCKET}/mp-keys.bin`, { headers: await customer(key) })).text()).toBe("part one");

    const plain = await s3ok(`/${BUCKET}/mp-plain.bin?uploads`, { method: "POST" });
    const plainId = (await plain.text()).match(/<UploadId>([^<]+)<\/UploadId>/)?.[1] as string;
    const keyed = await s3(`/${BUCKET}/mp-plain.bin?partNumber=1&uploadId=${plainId}`, { method: "PUT", body: "p", headers: await customer(key) });
    expect(keyed.status).toBe(400);
    expect(errorCode(await keyed.text())).toBe("InvalidArgument");
    await s3ok(`/${BUCKET}/mp-plain.bin?uploadId=${plainId}`, { method: "DELETE" }, 204);
  });
});
