// Client-side encryption end to end (issue #43; client/src/sealed.ts, docs/storage-format.md
// "Client-side encryption"): @shardgate/client in Node seals objects before they leave it, over
// `npm start`'s gateway and disk nodes, by the direct path and by PutObject. The data directory
// (node files and the metadata SQLite) and the gateway's log hold neither the plaintext nor the data
// key; downloads whole and ranged are byte-exact and fetch only the segments they need; a wrong
// passphrase and every kind of tampering the operator could do through S3 are refused.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CorruptObjectError, type Encryption, ShardgateClient, WrongPassphraseError } from "../../client/src/index";
import { decodeHeader, encodeHeader, openDataKey, SEGMENT_BYTES, storedSize } from "../../client/src/sealed";
import * as bindings from "../../core/pkg/shardgate_core.js";
import { Core } from "../../worker/src/shared/core-api";
import { randomBytes } from "../shared/core-suite";
import { CREDENTIALS, Gateway } from "./gateway";

const memory = bindings.initSync({ module: readFileSync(new URL("../../core/pkg/shardgate_core_bg.wasm", import.meta.url)) }).memory;
const core = new Core(bindings, memory);
const FRAMED = SEGMENT_BYTES + 16;
const MARKER = new TextEncoder().encode("ZK-PLAINTEXT-MARKER:7f3a9c1e-do-not-store");
/** A cheap Argon2id cost for most uploads; the first upload uses the default (64 MiB, t = 3). */
const FAST = { memoryKiB: 256, passes: 1, lanes: 1 };
const PASS: Encryption = { passphrase: "hunter2 but longer", kdf: FAST };

/** `n` random bytes with MARKER written every 100 KiB (and at the very start and end). */
function marked(n: number, seed: number): Uint8Array {
  const data = randomBytes(n, seed);
  for (let at = 0; at + MARKER.length <= n; at += 100 * 1024) data.set(MARKER, at);
  if (n >= MARKER.length) data.set(MARKER, n - MARKER.length);
  return data;
}

/** Every byte of a stream; rejects with the stream's own error. */
async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const reader = stream.getReader();
  const pieces: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    pieces.push(value);
  }
  return new Uint8Array(Buffer.concat(pieces));
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []));
}

describe("sealed objects over npm start's gateway and disk nodes", () => {
  // Direct-path parts of one block (1 MiB), so a few MiB make several parts and segments straddle them.
  const g = new Gateway({ runtime: "workerd", vars: { SHARDGATE_DIRECT_PART_BYTES: String(1024 * 1024) } });
  const aws = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
  /** Response bytes of every request the client makes that is not to the gateway's S3 API (shard files), and the S3 GETs' Range headers. */
  const traffic = { shardBytes: 0, ranges: [] as string[] };
  let client: ShardgateClient;
  const s3 = (path: string, init: RequestInit = {}) => aws.fetch(`${g.base}${path}`, init);

  beforeAll(async () => {
    await g.start();
    client = new ShardgateClient({
      endpoint: g.base,
      ...CREDENTIALS,
      core,
      fetch: async (request) => {
        const res = await fetch(request);
        const url = new URL(request.url);
        if (request.method === "GET" && !url.pathname.startsWith("/_shardgate/") && !url.search.includes("shardgate-"))
          traffic.ranges.push(request.headers.get("range") ?? "");
        if (!url.pathname.startsWith("/_shardgate/shards/") || !res.body) return res;
        const counted = res.body.pipeThrough(
          new TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, controller) {
              traffic.shardBytes += chunk.length;
              controller.enqueue(chunk);
            },
          }),
        );
        return new Response(counted, { status: res.status, headers: res.headers });
      },
    });
    expect((await s3("/sealed", { method: "PUT" })).status).toBe(200);
  }, 120_000);
  afterAll(() => g.stop());

  const big = marked(3 * 1024 * 1024 + 12_345, 43);
  const passphrase: Encryption = { passphrase: "correct horse battery staple" }; // the default Argon2id cost

  it("a sealed upload by the direct path leaves neither plaintext nor data key in any node file, the SQLite metadata or the log", async () => {
    const up = await client.upload("sealed", "big.bin", big, { encryption: passphrase, contentType: "application/x-secret", metadata: { note: "kept" } });
    expect(up.mode).toBe("direct");
    // What an S3 client sees: the ciphertext, its length, and the marker metadata.
    const got = await s3("/sealed/big.bin");
    expect(got.status).toBe(200);
    const header = got.headers.get("x-amz-meta-shardgate-sealed") ?? "";
    expect(header).toMatch(/^[A-Za-z0-9_-]{100,200}$/);
    expect(got.headers.get("x-amz-meta-note")).toBe("kept");
    expect(got.headers.get("content-type")).toBe("application/x-secret");
    const cipher = new Uint8Array(await got.arrayBuffer());
    expect(cipher.length).toBe(storedSize(big.length, SEGMENT_BYTES));
    expect(Buffer.from(cipher).includes(Buffer.from(MARKER))).toBe(false);
    const parsed = decodeHeader(header);
    expect(parsed).toMatchObject({
      size: big.length,
      segmentBytes: SEGMENT_BYTES,
      kdf: { type: "argon2id", params: { memoryKiB: 65536, passes: 3, lanes: 1 } },
    });
    const dataKey = Buffer.from(await openDataKey(core, parsed, passphrase));

    const files = filesUnder(g.persist);
    expect(files.some((f) => f.endsWith(".sqlite"))).toBe(true); // the metadata is among them
    let bytes = 0;
    for (const file of files) {
      const content = readFileSync(file);
      bytes += content.length;
      expect(content.includes(Buffer.from(MARKER)), file).toBe(false);
      expect(content.includes(dataKey), file).toBe(false);
      expect(content.includes(dataKey.toString("base64")), file).toBe(false);
      expect(content.includes(dataKey.toString("hex")), file).toBe(false);
      expect(content.includes(Buffer.from("correct horse battery staple")), file).toBe(false);
    }
    expect(bytes).toBeGreaterThan(cipher.length); // the shard files are there (k + m of them)
    const log = Buffer.from(g.log);
    expect(log.includes(Buffer.from(MARKER))).toBe(false);
    expect(log.includes(dataKey.toString("base64"))).toBe(false);
    expect(log.includes(dataKey.toString("hex"))).toBe(false);
  }, 120_000);

  it("whole and ranged downloads are byte-exact, and a range fetches only the segments it covers", async () => {
    const whole = await client.download("sealed", "big.bin", { encryption: passphrase });
    expect(whole).toMatchObject({ mode: "direct", size: big.length, range: { start: 0, end: big.length }, contentType: "application/x-secret" });
    expect(Buffer.compare(await readAll(whole.body), big)).toBe(0);

    const spy = vi.spyOn(client, "download");
    const S = SEGMENT_BYTES;
    const cases: [number, number, number][] = [
      // [start, end, segments it must fetch]
      [0, 1, 1], // the first byte
      [big.length - 1, big.length, 1], // the last byte
      [S - 1, S + 1, 2], // across a segment boundary
      [5 * S + 10, 5 * S + 500, 1], // inside one segment
      [3 * S, 4 * S, 1], // exactly one segment
      [1024 * 1024 - 7, 2 * 1024 * 1024 + 9, Math.floor((2 * 1024 * 1024 + 8) / S) - Math.floor((1024 * 1024 - 7) / S) + 1], // across parts
    ];
    for (const [start, end, segments] of cases) {
      spy.mockClear();
      traffic.shardBytes = 0;
      const down = await client.download("sealed", "big.bin", { encryption: passphrase, range: { start, end } });
      expect(down.range).toEqual({ start, end });
      expect(Buffer.compare(await readAll(down.body), big.subarray(start, end)), `[${start}, ${end})`).toBe(0);
      // The stored bytes asked for: exactly the covering segments.
      const first = Math.floor(start / S);
      const inner = spy.mock.calls.filter((c) => c[2]?.encryption === undefined).map((c) => c[2]?.range);
      expect(inner).toEqual([{ start: first * FRAMED, end: Math.min((first + segments) * FRAMED, storedSize(big.length, S)) }]);
      // And what came from the nodes is about that much (whole shard chunks, with their checksums), far from the object.
      expect(traffic.shardBytes).toBeGreaterThan(0);
      expect(traffic.shardBytes, `[${start}, ${end})`).toBeLessThan(segments * FRAMED + 2 * 64 * 1024);
    }
    spy.mockRestore();
  }, 120_000);

  it("small objects go by PutObject sealed too: the empty object, a few bytes, a ranged GET of only the covering segments", async () => {
    for (const [key, data] of [
      ["empty.bin", new Uint8Array(0)],
      ["small.bin", marked(3000, 7)],
    ] as const) {
      const up = await client.upload("sealed", key, data, { encryption: PASS });
      expect(up.mode, key).toBe("classic");
      const raw = new Uint8Array(await (await s3(`/sealed/${key}`)).arrayBuffer());
      expect(raw.length).toBe(storedSize(data.length, SEGMENT_BYTES));
      expect(Buffer.from(raw).includes(Buffer.from(MARKER))).toBe(false);
      const down = await client.download("sealed", key, { encryption: PASS });
      expect(down.size).toBe(data.length);
      expect(Buffer.compare(await readAll(down.body), data), key).toBe(0);
    }
    traffic.ranges.length = 0;
    const down = await client.download("sealed", "small.bin", { encryption: PASS, range: { start: 100, end: 200 } });
    expect(Buffer.from(await readAll(down.body))).toEqual(Buffer.from(marked(3000, 7).subarray(100, 200)));
    expect(traffic.ranges).toEqual([`bytes=0-${3000 + 16 - 1}`]);
  }, 60_000);

  it("an exact multiple of the segment size by the direct path, and with a key file", async () => {
    const data = marked(3 * SEGMENT_BYTES, 11);
    const keyFile: Encryption = { key: randomBytes(32, 12) };
    expect((await client.upload("sealed", "exact.bin", data, { encryption: keyFile })).mode).toBe("direct");
    expect((await s3("/sealed/exact.bin", { method: "HEAD" })).headers.get("content-length")).toBe(String(3 * FRAMED));
    const down = await client.download("sealed", "exact.bin", { encryption: keyFile });
    expect(Buffer.compare(await readAll(down.body), data)).toBe(0);
    const tail = await client.download("sealed", "exact.bin", { encryption: keyFile, range: { start: 3 * SEGMENT_BYTES - 5 } });
    expect(Buffer.compare(await readAll(tail.body), data.subarray(-5))).toBe(0);
    await expect(client.download("sealed", "exact.bin", { encryption: { key: randomBytes(32, 13) } })).rejects.toBeInstanceOf(WrongPassphraseError);
    await expect(client.download("sealed", "exact.bin", { encryption: PASS })).rejects.toBeInstanceOf(WrongPassphraseError);
  }, 60_000);

  it("a wrong passphrase is refused before any object byte is fetched; an unsealed object is not opened", async () => {
    traffic.shardBytes = 0;
    const err = await client.download("sealed", "big.bin", { encryption: { passphrase: "correct horse battery stapler" } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WrongPassphraseError);
    expect((err as Error).name).toBe("WrongPassphrase");
    expect(traffic.shardBytes).toBe(0);
    expect((await s3("/sealed/plain.bin", { method: "PUT", body: "not sealed" })).status).toBe(200);
    await expect(client.download("sealed", "plain.bin", { encryption: PASS })).rejects.toBeInstanceOf(CorruptObjectError);
  }, 60_000);

  describe("what an operator (or anyone with S3 access) does to the stored bytes is refused", () => {
    const data = marked(6 * SEGMENT_BYTES + 777, 21);
    let header = "";
    let cipher = new Uint8Array(0);

    beforeAll(async () => {
      await client.upload("sealed", "victim.bin", data, { encryption: PASS });
      const got = await s3("/sealed/victim.bin");
      header = got.headers.get("x-amz-meta-shardgate-sealed") ?? "";
      cipher = new Uint8Array(await got.arrayBuffer());
    }, 60_000);

    /** Stores `bytes` with sealed header `value` as sealed/`key` through S3 (the direct path for these sizes is not needed: PutObject). */
    const store = async (key: string, bytes: Uint8Array, value = header) => {
      const res = await s3(`/sealed/${key}`, { method: "PUT", body: bytes as Uint8Array<ArrayBuffer>, headers: { "x-amz-meta-shardgate-sealed": value } });
      expect(res.status).toBe(200);
    };
    /** The download of sealed/`key` fails with CorruptObjectError: at once, or in its body before a byte of a bad segment. */
    const refused = async (key: string, range?: { start: number; end?: number }) => {
      const outcome = await client
        .download("sealed", key, { encryption: PASS, ...(range ? { range } : {}) })
        .then((d) => readAll(d.body))
        .catch((e: unknown) => e);
      expect(outcome, key).toBeInstanceOf(CorruptObjectError);
    };

    it("the untouched copy opens (a control)", async () => {
      await store("control.bin", cipher);
      const down = await client.download("sealed", "control.bin", { encryption: PASS });
      expect(Buffer.compare(await readAll(down.body), data)).toBe(0);
    });

    it("a flipped byte in one stored segment", async () => {
      const flipped = cipher.slice();
      flipped[4 * FRAMED + 1000] ^= 0x20;
      await store("flipped.bin", flipped);
      await refused("flipped.bin");
      await refused("flipped.bin", { start: 4 * SEGMENT_BYTES + 5, end: 4 * SEGMENT_BYTES + 6 });
      // The segments before it are intact and open: the damage is found where it is.
      const before = await client.download("sealed", "flipped.bin", { encryption: PASS, range: { start: 0, end: 4 * SEGMENT_BYTES } });
      expect(Buffer.compare(await readAll(before.body), data.subarray(0, 4 * SEGMENT_BYTES))).toBe(0);
    });

    it("two segments swapped", async () => {
      const swapped = cipher.slice();
      swapped.set(cipher.subarray(1 * FRAMED, 2 * FRAMED), 2 * FRAMED);
      swapped.set(cipher.subarray(2 * FRAMED, 3 * FRAMED), 1 * FRAMED);
      await store("swapped.bin", swapped);
      await refused("swapped.bin");
      await refused("swapped.bin", { start: SEGMENT_BYTES + 1, end: SEGMENT_BYTES + 2 });
    });

    it("truncation: the last segment dropped (a shorter object), and with the header's length cut to match", async () => {
      const shorter = cipher.slice(0, 6 * FRAMED);
      await store("short.bin", shorter);
      await refused("short.bin");
      await refused("short.bin", { start: 0, end: 10 });
      const lie = encodeHeader({ ...decodeHeader(header), size: 6 * SEGMENT_BYTES });
      await store("lie.bin", shorter, lie);
      await refused("lie.bin");
      // A length lie within the last segment.
      await store("lie2.bin", cipher.slice(0, cipher.length - 10), encodeHeader({ ...decodeHeader(header), size: data.length - 10 }));
      await refused("lie2.bin", { start: data.length - 20, end: data.length - 10 });
    });

    it("a segment spliced in from another object sealed with the same passphrase, at the same index", async () => {
      await client.upload("sealed", "other.bin", marked(data.length, 22), { encryption: PASS });
      const other = new Uint8Array(await (await s3("/sealed/other.bin")).arrayBuffer());
      const spliced = cipher.slice();
      spliced.set(other.subarray(2 * FRAMED, 3 * FRAMED), 2 * FRAMED);
      await store("spliced.bin", spliced);
      await refused("spliced.bin");
      await refused("spliced.bin", { start: 2 * SEGMENT_BYTES, end: 2 * SEGMENT_BYTES + 1 });
      // The other object's bytes whole under this object's header.
      await store("swapped-whole.bin", other);
      await refused("swapped-whole.bin");
    });

    it("a header that is not the format's, or asks for a hostile KDF cost", async () => {
      await store("garbage.bin", cipher, "bm90IGEgaGVhZGVy");
      await refused("garbage.bin");
      const hostile = encodeHeader({
        ...decodeHeader(header),
        kdf: { type: "argon2id", salt: new Uint8Array(16), params: { memoryKiB: 0xffffffff, passes: 1, lanes: 1 } },
      });
      await store("hostile.bin", cipher, hostile);
      await refused("hostile.bin");
    });
  });

  it("re-wrapping under a new passphrase rewrites only the metadata", async () => {
    const data = marked(200_000, 31);
    await client.upload("sealed", "rewrap.bin", data, { encryption: PASS, contentType: "text/x-kept", metadata: { owner: "me" } });
    const before = await s3("/sealed/rewrap.bin");
    const stored = new Uint8Array(await before.arrayBuffer());
    const next: Encryption = { passphrase: "a whole new passphrase", kdf: FAST };
    await client.rewrap("sealed", "rewrap.bin", PASS, next);
    const after = await s3("/sealed/rewrap.bin");
    expect(Buffer.compare(new Uint8Array(await after.arrayBuffer()), stored)).toBe(0);
    expect(after.headers.get("x-amz-meta-shardgate-sealed")).not.toBe(before.headers.get("x-amz-meta-shardgate-sealed"));
    expect(after.headers.get("x-amz-meta-owner")).toBe("me");
    expect(after.headers.get("content-type")).toBe("text/x-kept");
    const down = await client.download("sealed", "rewrap.bin", { encryption: next });
    expect(Buffer.compare(await readAll(down.body), data)).toBe(0);
    await expect(client.download("sealed", "rewrap.bin", { encryption: PASS })).rejects.toBeInstanceOf(WrongPassphraseError);
    await expect(client.rewrap("sealed", "rewrap.bin", PASS, next)).rejects.toBeInstanceOf(WrongPassphraseError);
    expect(g.hungRequests).toEqual([]);
  }, 60_000);
});
