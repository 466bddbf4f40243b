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
// directory gives the index back; a file whose length is not its name's (a write a crash cut
// short) is deleted then. The gateway checks every answer's length besides.

/** Entries: file name → length, in use order (a hit moves its entry last). */
const entries = new Map();
/** SHA-256 of an entry's URL → its file name. */
const names = new Map();
let bytes = 0;
let evictions = 0;
/** The directory read at the first request (null until then). */
let loading = null;
const MAX_ENTRY_BYTES = 64 * 1024 * 1024;

export default {
  async fetch(request, env) {
    loading ??= load(env);
    await loading;
    const max = Number(env.MAX_BYTES);
    const url = new URL(request.url);
    if (request.method === "GET" && url.pathname === "/_stats") return Response.json({ bytes, entries: entries.size, evictions, capacity: max });
    // The path only: a request through the home process's socket (--processes N) comes as http://.
    const hash = await sha256(url.pathname);
    if (request.method === "GET") return match(env, hash, request.headers.get("range"));
    if (request.method === "PUT") {
      await put(env, hash, request, max);
      return new Response(null, { status: 204 });
    }
    if (request.method === "PURGE") return new Response(null, { status: (await drop(env, hash)) ? 200 : 404 });
    await request.body?.cancel();
    return new Response(null, { status: 405 });
  },
};

async function match(env, hash, range) {
  const name = names.get(hash);
  if (name) {
    const res = await env.STORE.fetch(fileUrl(name), range ? { headers: { range } } : {});
    if (res.ok) {
      entries.delete(name);
      entries.set(name, Number(name.slice(name.indexOf(".") + 1)));
      const headers = { "cf-cache-status": "HIT", "content-length": res.headers.get("content-length") ?? "0" };
      if (res.headers.get("content-range")) headers["content-range"] = res.headers.get("content-range");
      return new Response(res.body, { status: res.status, headers });
    }
    await res.body?.cancel();
  }
  return new Response(null, { status: 504, headers: { "cf-cache-status": "MISS" } });
}

async function put(env, hash, request, max) {
  const declared = Number(request.headers.get("content-length"));
  if (!(declared > 0 && declared <= MAX_ENTRY_BYTES + 64 * 1024)) {
    await request.body?.cancel();
    return;
  }
  const all = new Uint8Array(await request.arrayBuffer());
  const end = headerEnd(all);
  if (end < 0) return;
  const body = all.subarray(end);
  if (body.length === 0 || body.length > max) return;
  await drop(env, hash);
  const name = `${hash}.${body.length}`;
  const res = await env.STORE.fetch(fileUrl(name), { method: "PUT", body });
  await res.body?.cancel();
  if (!res.ok) return;
  remember(name, hash, body.length);
  for (const [oldest] of entries) {
    if (bytes <= max) break;
    await drop(env, oldest.slice(0, oldest.indexOf(".")));
    evictions += 1;
  }
}

async function drop(env, hash) {
  const name = names.get(hash);
  if (!name) return false;
  names.delete(hash);
  bytes -= entries.get(name) ?? 0;
  entries.delete(name);
  const res = await env.STORE.fetch(fileUrl(name), { method: "DELETE" });
  await res.body?.cancel();
  return true;
}

function remember(name, hash, length) {
  if (entries.has(name)) bytes -= entries.get(name);
  names.set(hash, name);
  entries.set(name, length);
  bytes += length;
}

/** Reads the directory back: every `<hash>.<length>` file of that length is an entry. */
async function load(env) {
  const res = await env.STORE.fetch("http://store/");
  if (!res.ok) {
    await res.body?.cancel();
    return;
  }
  for (const { name, type } of await res.json()) {
    const dot = name.indexOf(".");
    const length = Number(name.slice(dot + 1));
    if (type !== "file" || dot !== 64 || !Number.isInteger(length)) continue;
    const head = await env.STORE.fetch(fileUrl(name), { method: "HEAD" });
    if (Number(head.headers.get("content-length")) === length) remember(name, name.slice(0, dot), length);
    else await env.STORE.fetch(fileUrl(name), { method: "DELETE" });
  }
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
