// The block cache's store on plain workerd (`npm start`): the cache service the gateway's Cache API
// (caches.default) talks to through workerd's `cacheApiOutbound` (worker/src/storage/block-cache.ts,
// docs/operations.md "The block cache"). Entries are files in a directory of the data directory
// (STORE, a writable disk service, owner-only like the rest), at most MAX_BYTES together; the least
// recently used go first. They survive restarts: the directory is read again at the first request.
//
// workerd's side of the protocol (what it sends, what it expects):
//   - match: GET of the entry's URL, a Range header when the gateway wants part of it; the entry
//     (200, or 206 with Content-Range) with `CF-Cache-Status: HIT`, or `CF-Cache-Status: MISS`;
//   - put: PUT of the entry's URL, the body the response serialized as HTTP/1.1 (status line,
//     headers, a blank line, the body);
//   - delete: PURGE of the entry's URL; 200 when it was there, 404 when not.
// GET /_stats (through the gateway's BLOCK_CACHE binding) answers what it holds, for the metrics.
//
// A file is named by the SHA-256 of its URL's path and its length (`<hash>.<length>`), so reading the
// directory gives the index back (workerd's disk service writes a file whole or not at all); a file
// whose length is not its name's is forgotten when a match finds it so. The gateway checks every
// answer's length and range besides.

/** Entries: file name → length, in use order (a hit moves its entry last). */
const entries = new Map();
/** SHA-256 of an entry's URL → its file name. */
const names = new Map();
let bytes = 0;
let evictions = 0;
/** The directory read at the first request (null until then). */
let loading = null;
/** The largest entry taken (worker/src/storage/block-cache.ts SEGMENT_BYTES), and room for the serialized headers. */
const MAX_ENTRY_BYTES = 16 * 1024 * 1024;
const MAX_HEADER_BYTES = 64 * 1024;

export default {
  async fetch(request, env) {
    loading ??= load(env, Number(env.MAX_BYTES)).catch(() => {
      loading = null; // read the directory again at the next request
    });
    await loading;
    const max = Number(env.MAX_BYTES);
    const url = new URL(request.url);
    if (request.method === "GET" && url.pathname === "/_stats") return Response.json({ bytes, entries: entries.size, evictions, capacity: max });
    // The path only: a request through the home process's socket (--processes N) comes as http://.
    const hash = await sha256(url.pathname);
    if (request.method === "GET") return match(env, hash, request.headers.get("range"));
    if (request.method === "PUT") return new Response(null, { status: (await put(env, hash, request, max)) ? 204 : 413 });
    if (request.method === "PURGE") return new Response(null, { status: (await drop(env, hash)) ? 200 : 404 });
    await request.body?.cancel();
    return new Response(null, { status: 405 });
  },
};

async function match(env, hash, range) {
  const name = names.get(hash);
  if (name) {
    const length = Number(name.slice(name.indexOf(".") + 1));
    const res = await env.STORE.fetch(fileUrl(name), range ? { headers: { range } } : {});
    // The file as its name says: its whole length, or a range of that length. Else it is gone
    // (or was cut short): forgotten, and a miss.
    const total = res.status === 206 ? Number(res.headers.get("content-range")?.split("/")[1]) : Number(res.headers.get("content-length"));
    if (res.ok && total === length) {
      // Only an entry still there is moved last: one dropped while this read waited stays dropped.
      if (entries.delete(name)) entries.set(name, length);
      const headers = { "cf-cache-status": "HIT", "content-length": res.headers.get("content-length") ?? "0" };
      if (res.headers.get("content-range")) headers["content-range"] = res.headers.get("content-range");
      return new Response(res.body, { status: res.status, headers });
    }
    await res.body?.cancel();
    if (res.status === 404 || (res.ok && total !== length)) forget(hash);
  }
  return new Response(null, { status: 504, headers: { "cf-cache-status": "MISS" } });
}

/** Stores one entry; false when it is refused (too large, not a serialized response of its stated length). */
async function put(env, hash, request, max) {
  const declared = Number(request.headers.get("content-length"));
  if (!(declared > 0 && declared <= MAX_ENTRY_BYTES + MAX_HEADER_BYTES)) {
    await request.body?.cancel();
    return false;
  }
  const all = new Uint8Array(await request.arrayBuffer());
  const end = headerEnd(all);
  if (end < 0) return false;
  const body = all.subarray(end);
  const stated = /\r\ncontent-length:\s*(\d+)\r\n/i.exec(new TextDecoder().decode(all.subarray(0, end)))?.[1];
  if (body.length === 0 || body.length > Math.min(max, MAX_ENTRY_BYTES) || (stated !== undefined && Number(stated) !== body.length)) return false;
  await drop(env, hash);
  const name = `${hash}.${body.length}`;
  const res = await env.STORE.fetch(fileUrl(name), { method: "PUT", body });
  await res.body?.cancel();
  if (!res.ok) return false;
  remember(name, hash, body.length);
  await evict(env, max);
  return true;
}

/** Drops the least recently used entries until they hold at most `max` bytes. */
async function evict(env, max) {
  for (const [oldest] of entries) {
    if (bytes <= max) break;
    await drop(env, oldest.slice(0, oldest.indexOf(".")));
    evictions += 1;
  }
}

async function drop(env, hash) {
  const name = forget(hash);
  if (!name) return false;
  const res = await env.STORE.fetch(fileUrl(name), { method: "DELETE" });
  await res.body?.cancel();
  return true;
}

/** Takes an entry out of the index (its file stays); returns its file name, or null. */
function forget(hash) {
  const name = names.get(hash);
  if (!name) return null;
  names.delete(hash);
  bytes -= entries.get(name) ?? 0;
  entries.delete(name);
  return name;
}

function remember(name, hash, length) {
  if (entries.has(name)) bytes -= entries.get(name);
  names.set(hash, name);
  entries.set(name, length);
  bytes += length;
}

/**
 * Reads the directory back: every `<hash>.<length>` file is an entry, as its name says (a match
 * checks the length the file really has), then evicts down to `max` (a smaller cacheMiB).
 */
async function load(env, max) {
  const res = await env.STORE.fetch("http://store/");
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`the cache directory answered ${res.status}`);
  }
  for (const { name, type } of await res.json()) {
    const dot = name.indexOf(".");
    const length = Number(name.slice(dot + 1));
    if (type === "file" && dot === 64 && Number.isSafeInteger(length) && length > 0) remember(name, name.slice(0, dot), length);
  }
  await evict(env, max);
}

/** Where the serialized response's body begins (after the blank line), or -1. */
function headerEnd(all) {
  const limit = Math.min(all.length - 3, 64 * 1024);
  for (let i = 0; i < limit; i++) if (all[i] === 13 && all[i + 1] === 10 && all[i + 2] === 13 && all[i + 3] === 10) return i + 4;
  return -1;
}

async function sha256(text) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

const fileUrl = (name) => `http://store/${name}`;
