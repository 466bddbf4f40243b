// The benchmark's baseline: a pass-through Worker on plain workerd over one writable disk service
// (FILES), with no authentication, no erasure coding, no metadata. PUT /bucket/key stores the body
// as a file, GET (with a single Range) and HEAD serve it, GET /bucket lists the directory. What
// shardgate costs beyond this is its own work; what this costs beyond MinIO is the runtime's.
//
// With the binding SHARDS (the bench's "floor" target), a whole GET moves its bytes the way
// shardgate's read must: SHARDS ranged requests at once (the file cut in SHARDS equal stretches, as
// a part's data is cut over k shard files), each read in 1 MiB pieces through a BYOB reader,
// copied into WebAssembly memory, and written to the response from there in 256 KiB runs, taking
// the stretches in turn (as a 1 MiB block's pieces are). No checksum, no authentication, no
// metadata: the least an erasure-coded GET through JS and WASM can cost on this runtime.
//
// With the binding META (the bench's "lookup" target), every GET and HEAD first checks its SigV4
// signature (header-signed, with the secret SECRET names) and asks a Durable Object (SQLite-backed,
// one per bucket) for the key's record, as a gateway must authenticate a request and look up the
// current version before it may serve any byte; a PUT writes the record. A whole GET of a file
// larger than ENTRY_BYTES then reads it the way a block-cache hit reads its entries: ranges of
// ENTRY_BYTES, all asked at once, piped one after the other into one FixedLengthStream. Nothing
// else changes: a hit of the block cache cannot cost less than this (bench/hot-bench.mjs).
import { DurableObject } from "cloudflare:workers";

const PIECE = 1 << 20;
const RUN = 256 << 10;
const memory = new WebAssembly.Memory({ initial: 1 });
/** Regions of WASM memory free for a GET's pieces (each request its own, as in the gateway). */
const freeRegions = [];
let regions = 0;

/** One bucket's records: a key's size, ETag and a manifest-sized blob, as a gateway's lookup answers. */
export class Meta extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS objects (key TEXT PRIMARY KEY, size INTEGER, etag TEXT, manifest BLOB)");
  }

  put(key, size) {
    this.sql.exec("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?)", key, size, "0".repeat(32), new ArrayBuffer(400));
  }

  head(key) {
    return this.sql.exec("SELECT key, size, etag, manifest FROM objects WHERE key = ?", key).toArray()[0] ?? null;
  }
}

/** The bucket's record store and the key within it, for a path /bucket/key. */
function record(env, path) {
  const [, bucket, ...key] = path.split("/");
  return { index: env.META.get(env.META.idFromName(bucket)), key: key.join("/") };
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const path = url.pathname.replace(/\/+$/, "");
    const file = new URL(path, "http://files");
    if (request.method === "PUT") {
      if (path.split("/").length === 2) return new Response(null, { status: 200 }); // create bucket
      const length = Number(request.headers.get("content-length"));
      const fixed = new FixedLengthStream(length);
      const [res] = await Promise.all([env.FILES.fetch(file, { method: "PUT", body: fixed.readable }), request.body.pipeTo(fixed.writable)]);
      await res.body?.cancel();
      if (env.META && res.ok) {
        const { index, key } = record(env, path);
        await index.put(key, length);
      }
      return new Response(null, { status: res.ok ? 200 : 500 });
    }
    if ((request.method === "GET" || request.method === "HEAD") && env.META && path.split("/").length > 2) {
      if (!(await signedBy(request, url, env.SECRET))) return new Response(null, { status: 403 });
      const { index, key } = record(env, path);
      const found = await index.head(key);
      if (found === null) return new Response(null, { status: 404 });
      const entry = Number(env.ENTRY_BYTES);
      if (request.method === "GET" && !request.headers.has("range") && found.size > entry) return joined(env, file, found.size, entry, ctx);
    }
    if (request.method === "GET" || request.method === "HEAD") {
      const headers = {};
      const range = request.headers.get("range");
      if (range) headers.range = range;
      const res = await env.FILES.fetch(file, { method: request.method, headers });
      if (env.SHARDS && request.method === "GET" && !range && res.ok) return spread(env, file, res, Number(env.SHARDS), ctx);
      return new Response(res.body, { status: res.status, headers: { "content-length": res.headers.get("content-length") ?? "0" } });
    }
    await request.body?.cancel();
    return new Response(null, { status: 405 });
  },
};

/** A file of `size` bytes as ranges of `entry` bytes, asked at once, piped in turn into one stream. */
async function joined(env, file, size, entry, ctx) {
  const starts = Array.from({ length: Math.ceil(size / entry) }, (_, i) => i * entry);
  const answers = await Promise.all(starts.map((at) => env.FILES.fetch(file, { headers: { range: `bytes=${at}-${Math.min(size, at + entry) - 1}` } })));
  const out = new FixedLengthStream(size);
  ctx.waitUntil(
    (async () => {
      for (const [i, res] of answers.entries()) await res.body.pipeTo(out.writable, { preventClose: i < answers.length - 1 });
    })().catch((e) => out.writable.abort(e).catch(() => {})),
  );
  return new Response(out.readable, { headers: { "content-length": String(size) } });
}

const encoder = new TextEncoder();
const hex = (bytes) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
const importHmac = (raw) => crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
const hmac = async (key, text) => crypto.subtle.sign("HMAC", key, encoder.encode(text));
/** Signing keys by scope, ready to sign with (as a gateway keeps them: four HMACs saved per request). */
const signingKeys = new Map();

/**
 * Whether the request's SigV4 Authorization header is signed with `secret`: its canonical request
 * (path as sent, no query, the signed headers, the payload hash header) hashed, then one HMAC.
 */
async function signedBy(request, url, secret) {
  const auth = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/([^,]+), SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(
    request.headers.get("authorization") ?? "",
  );
  if (!auth) return false;
  const [, , scope, signedHeaders, signature] = auth;
  const headers = signedHeaders
    .split(";")
    .map((n) => `${n}:${(request.headers.get(n) ?? "").trim()}\n`)
    .join("");
  const canonical = [request.method, url.pathname, url.search.slice(1), headers, signedHeaders, request.headers.get("x-amz-content-sha256")].join("\n");
  const toSign = ["AWS4-HMAC-SHA256", request.headers.get("x-amz-date"), scope, hex(await crypto.subtle.digest("SHA-256", encoder.encode(canonical)))].join(
    "\n",
  );
  let key = signingKeys.get(scope);
  if (!key) {
    let raw = encoder.encode(`AWS4${secret}`);
    for (const part of scope.split("/")) raw = await hmac(await importHmac(raw), part);
    key = await importHmac(raw);
    signingKeys.set(scope, key);
  }
  return hex(await hmac(key, toSign)) === signature;
}

/** The floor's GET (see above): `shards` ranged requests, through WASM memory, out in runs. */
async function spread(env, file, first, shards, ctx) {
  const size = Number(first.headers.get("content-length"));
  await first.body?.cancel();
  const stretch = Math.ceil(size / shards / RUN) * RUN;
  const bodies = await Promise.all(
    Array.from({ length: shards }, async (_, i) => {
      const start = Math.min(size, i * stretch);
      const end = Math.min(size, start + stretch);
      if (end === start) return null;
      return (await env.FILES.fetch(file, { headers: { range: `bytes=${start}-${end - 1}` } })).body;
    }),
  );
  const fixed = new FixedLengthStream(size);
  ctx.waitUntil(
    (async () => {
      const writer = fixed.writable.getWriter();
      const readers = bodies.map((b) => b?.getReader({ mode: "byob" }) ?? null);
      const buffers = readers.map(() => new ArrayBuffer(PIECE));
      const region = freeRegions.pop() ?? regions++;
      const base = region * shards * PIECE;
      const need = base + shards * PIECE;
      if (memory.buffer.byteLength < need) memory.grow(Math.ceil((need - memory.buffer.byteLength) / 65536));
      for (let at = 0; at < stretch; at += PIECE) {
        // One piece of each stretch, read at once, each copied into its place in WASM memory.
        const lens = await Promise.all(
          readers.map(async (reader, i) => {
            if (!reader) return 0;
            const { value } = await reader.readAtLeast(PIECE, new Uint8Array(buffers[i], 0, PIECE));
            if (!value) return 0;
            buffers[i] = value.buffer;
            new Uint8Array(memory.buffer, base + i * PIECE, value.length).set(value);
            return value.length;
          }),
        );
        for (let run = 0; run < PIECE; run += RUN)
          for (let i = 0; i < shards; i++)
            if (lens[i] > run) await writer.write(new Uint8Array(memory.buffer, base + i * PIECE + run, Math.min(RUN, lens[i] - run)));
      }
      freeRegions.push(region);
      await writer.close();
    })(),
  );
  return new Response(fixed.readable, { headers: { "content-length": String(size) } });
}
