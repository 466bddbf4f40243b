// GetObject and HeadObject: one metadata call, then (GET only) one parallel wave of shard
// requests for exactly the bytes asked for, streamed to the client as they are verified.
import { writeBorrowed } from "../../shared/bytes";
import type { Manifest } from "../../shared/core-api";
import { S3Error } from "../../s3-error";
import type { RangeSource } from "../../shared/read-part";
import { checksumHeaders } from "../format/checksums";
import type { RequestContext, ObjectAt } from "../http/context";
import { healAfterRead, type LostShards } from "../../services/heal";
import { type CacheUse, cachedRange, cacheUse } from "../../services/cached-read";
import { existingObject, expiryHeader, openRangeSource, partOffsets, replicationHeader, versionHeader } from "../../services/objects";
import { lockHeaders } from "../format/object-lock-headers";
import { RESPONSE_OVERRIDES } from "../format/object-headers";
import { checkConditions, requestConditions } from "../format/conditions";
import { objectKeyOf } from "../../services/encryption";
import { customerKey, refuseWriteEncryptionHeaders, sseHeaders } from "../format/sse-headers";

interface Selection {
  status: 200 | 206;
  start: number;
  end: number;
  partsCount: number | null;
}

export async function getObject(ctx: RequestContext, { bucket, key, versionId }: ObjectAt, partNumber: number | null, head: boolean): Promise<Response> {
  refuseWriteEncryptionHeaders(ctx.request.headers);
  const found = await existingObject(ctx, bucket, key, versionId);
  const object = found.object;
  const notModified = checkConditions(requestConditions(ctx.request.headers), object);
  const manifest = ctx.core.decodeManifest(object.manifest);
  // An encrypted object's key: SSE-C answers nothing, HEAD included, without the right key.
  const customer = await customerKey(ctx.request.headers);
  if (customer && manifest.encryption?.mode !== "SSE-C") throw new S3Error("InvalidArgument", "The encryption parameters are not applicable to this object.");
  const objectKey = manifest.encryption ? await objectKeyOf(ctx.config.masterKey, manifest.encryption, customer?.key ?? null) : null;
  const headers = objectHeaders(ctx, manifest, partNumber);
  const extra = {
    ...versionHeader(found),
    ...replicationHeader(found),
    ...expiryHeader(found.expiry),
    ...lockHeaders(object.lock),
    ...sseHeaders(manifest.encryption, customer?.keyMd5),
  };
  for (const [name, value] of Object.entries(extra)) headers.set(name, value);
  if (notModified) return new Response(null, { status: 304, headers: notModifiedHeaders(headers) });
  const sel = select(ctx, manifest, partNumber);
  headers.set("Content-Length", String(sel.end - sel.start));
  if (sel.status === 206) headers.set("Content-Range", `bytes ${sel.start}-${sel.end - 1}/${manifest.size}`);
  if (sel.partsCount !== null) headers.set("x-amz-mp-parts-count", String(sel.partsCount));
  if (head || sel.end === sel.start) return new Response(null, { status: sel.status, headers });
  // The block cache: a plain object's bytes piped from it as they are, when it has them all.
  const cache = cacheUse((work) => ctx.waitUntil(work));
  const cached = objectKey ? null : await cachedRange(partOffsets(manifest), sel.start, sel.end, cache);
  if (cached) return new Response(cached, { status: sel.status, headers: cacheHeader(ctx, headers, cache) });
  const lost: LostShards = new Map();
  const source = await openRangeSource(ctx, manifest, sel.start, sel.end, lost, objectKey, cache);
  cacheHeader(ctx, headers, cache);
  const length = sel.end - sel.start;
  // Heal on read: once the response is out, put back what the read had to go around.
  const heal = () => healAfterRead(ctx, bucket, key, object, lost);
  if (length <= (objectKey ? ENCRYPTED_BUFFERED_BYTES : BUFFERED_BYTES)) {
    const body = await gather(source, length, (bytes) => new Response(bytes, { status: sel.status, headers }));
    if (!body.failed) {
      ctx.waitUntil(heal());
      return body.response;
    }
    // The read failed midway: the client gets the bytes read, then a broken transfer, as streamed.
    const fixed = new FixedLengthStream(length);
    ctx.waitUntil(sendBroken(body.bytes, body.error, fixed.writable).then(heal));
    return new Response(fixed.readable, { status: sel.status, headers });
  }
  // The runtime's fixed-length stream, written straight from the read (no stream in JS between):
  // a read that fails midway aborts the connection instead of ending with a truncated 200.
  const fixed = new FixedLengthStream(length);
  const sent = send(source, fixed.writable);
  ctx.waitUntil(sent.then(heal));
  return new Response(fixed.readable, { status: sel.status, headers });
}

/** `x-shardgate-cache: hit|miss` when configured, for a GET that looked in the block cache. */
function cacheHeader(ctx: RequestContext, headers: Headers, cache: CacheUse): Headers {
  if (ctx.config.cacheHeader && cache.hit !== undefined) headers.set("x-shardgate-cache", cache.hit ? "hit" : "miss");
  return headers;
}

/**
 * Bodies up to this size (a 4 KiB range, a small object) are read whole and answered as one
 * buffer: the runtime's stream, writer and writes cost more than such a read itself (CPU per 4 KiB
 * range -6 to -11%), and their bytes arrive together anyway. Larger bodies stream (no gain
 * measured at 1 MiB, and their first bytes leave sooner).
 */
const BUFFERED_BYTES = 256 * 1024;

/**
 * Encrypted bodies are read whole up to 1 MiB: a GET of a 1 MiB SSE-S3 object took 3 to 8% less
 * CPU than streamed in three runs of four, the same in one; a plain one gains nothing at that size
 * (docs/benchmarks.md, "Encryption").
 */
const ENCRYPTED_BUFFERED_BYTES = 1024 * 1024;

/**
 * The answer `respond` makes of all `length` bytes of `source`, or the bytes read before it failed
 * and the error. Bytes that come as one piece go to `respond` as they are, a view of the core's
 * memory (the runtime copies a buffer body as the Response is made): no buffer of our own, no copy.
 */
async function gather(
  source: RangeSource,
  length: number,
  respond: (bytes: Uint8Array) => Response,
): Promise<{ response: Response; failed: false } | { bytes: Uint8Array; failed: true; error: unknown }> {
  let bytes: Uint8Array | null = null;
  let filled = 0;
  try {
    for (;;) {
      const read = await source.next((piece): { response: Response } | { n: number } => {
        if (filled === 0 && piece.length === length) return { response: respond(piece) };
        bytes ??= new Uint8Array(length);
        bytes.set(piece, filled);
        return { n: piece.length };
      }, length);
      if (read === null) return { response: respond(bytes ?? new Uint8Array(0)), failed: false };
      if ("response" in read) {
        source.close(); // every byte was read: frees what the read holds
        return { response: read.response, failed: false };
      }
      filled += read.n;
    }
  } catch (error) {
    source.close();
    return { bytes: (bytes ?? new Uint8Array(0)).subarray(0, filled), failed: true, error };
  }
}

/** Writes `bytes`, then aborts the stream: the broken transfer of a read that failed after them. */
async function sendBroken(bytes: Uint8Array, error: unknown, writable: WritableStream<Uint8Array>): Promise<void> {
  const writer = writable.getWriter();
  if (bytes.length > 0) await writer.write(bytes).catch(() => {}); // the client may have left
  await writer.abort(error).catch(() => {});
}

function objectHeaders(ctx: RequestContext, manifest: Manifest, partNumber: number | null): Headers {
  const headers = new Headers({
    ETag: `"${manifest.etag}"`,
    "Last-Modified": new Date(manifest.lastModifiedMs).toUTCString(),
    "Accept-Ranges": "bytes",
  });
  for (const [name, value] of manifest.headers) headers.set(name, value);
  for (const [name, value] of manifest.userMetadata) headers.set(`x-amz-meta-${name}`, value);
  for (const [param, header] of Object.entries(RESPONSE_OVERRIDES)) {
    const value = ctx.url.searchParams.get(param);
    if (value !== null) headers.set(header, value);
  }
  if (manifest.tags.length > 0) headers.set("x-amz-tagging-count", String(manifest.tags.length));
  // Stored bytes never run as a page of the gateway's origin: no sniffing a type into HTML, and
  // active types (what a browser would run scripts in) only in a sandbox of their own, an opaque
  // origin. (Pages run as pages only on a website endpoint's host of its own: api/website-endpoint.ts.)
  headers.set("X-Content-Type-Options", "nosniff");
  if (isActiveContent(headers.get("Content-Type"))) headers.set("Content-Security-Policy", "sandbox");
  const wantsChecksums = ctx.request.headers.get("x-amz-checksum-mode")?.toUpperCase() === "ENABLED";
  if (wantsChecksums && !ctx.request.headers.has("range")) {
    for (const [name, value] of Object.entries(selectedChecksums(manifest, partNumber))) headers.set(name, value);
  }
  return headers;
}

/** Words in a media type that a browser may render as a document or run as script. */
const ACTIVE_WORDS = ["html", "xml", "xsl", "javascript", "ecmascript", "multipart/"];

/**
 * Whether a Content-Type names content a browser may run: HTML, XHTML, SVG, XML (and XSL),
 * JavaScript, multipart (x-mixed-replace), whatever the case and parameters; and anything that is
 * no `type/subtype` at all, which a browser may sniff. Decided on the whole value so that
 * `text/html;x=y`, `TEXT/HTML ` or `image/svg+xml; charset=utf-8` cannot slip through.
 */
export function isActiveContent(contentType: string | null): boolean {
  const value = (contentType ?? "").toLowerCase();
  const essence = (value.split(";")[0] ?? "").trim();
  const slash = essence.indexOf("/");
  if (slash <= 0 || slash === essence.length - 1) return true;
  return ACTIVE_WORDS.some((word) => value.includes(word));
}

/** The object's checksums, or with ?partNumber on a multipart object that part's own. */
function selectedChecksums(manifest: Manifest, partNumber: number | null): Record<string, string> {
  if (manifest.parts.length > 1 && partNumber !== null && partNumber <= manifest.parts.length) {
    const layout = manifest.parts[partNumber - 1].layout;
    return layout.type === "sharded" ? checksumHeaders(layout.partChecksums) : {};
  }
  return checksumHeaders(manifest.checksums, manifest.parts.length);
}

/** A 304 carries the validators and caching headers, never content headers. */
function notModifiedHeaders(headers: Headers): Headers {
  const out = new Headers();
  for (const name of ["ETag", "Last-Modified", "Cache-Control", "Expires"]) {
    const v = headers.get(name);
    if (v !== null) out.set(name, v);
  }
  return out;
}

/** Which bytes to send: a Range, a partNumber, or everything. */
function select(ctx: RequestContext, manifest: Manifest, partNumber: number | null): Selection {
  const all = partOffsets(manifest);
  const multipart = manifest.parts.length > 1 || /-\d+$/.test(manifest.etag);
  const range = ctx.request.headers.get("range");
  if (partNumber !== null) {
    if (range !== null) throw new S3Error("InvalidRequest", "Cannot specify both Range header and partNumber query parameter.");
    const n = partNumber;
    if (n > manifest.parts.length) throw new S3Error("InvalidPartNumber", "The requested partnumber is not satisfiable.");
    const { offset, size } = all[n - 1];
    const whole = !multipart;
    return {
      status: whole ? 200 : 206,
      start: offset,
      end: offset + size,
      partsCount: multipart ? manifest.parts.length : null,
    };
  }
  if (range !== null) {
    const r = ctx.core.resolveRange(range, manifest.size);
    if (r === "unsatisfiable") throw new RangeNotSatisfiable(manifest.size);
    if (r !== null && r.end > r.start) return { status: 206, start: r.start, end: r.end, partsCount: null };
    if (r !== null) return { status: 200, start: 0, end: 0, partsCount: null };
  }
  return { status: 200, start: 0, end: manifest.size, partsCount: null };
}

/** 416 with the Content-Range S3 sends (bytes *\/size). */
export class RangeNotSatisfiable extends S3Error {
  constructor(readonly size: number) {
    super("InvalidRange", "The requested range is not satisfiable.");
  }
}

/**
 * Sends `source` into `writable`, piece by piece as the client takes them; resolves once sent
 * (or the client left: the source is closed, nothing more is read). A read that fails midway
 * aborts the response, so the client sees a broken transfer, never a short 200.
 */
async function send(source: RangeSource, writable: WritableStream<Uint8Array>): Promise<void> {
  const writer = writable.getWriter();
  try {
    for (;;) {
      const written = await source.next((piece) => writeBorrowed(writer, piece));
      if (written === null) break;
      await written;
    }
    await writer.close();
  } catch (e) {
    source.close();
    await writer.abort(e).catch(() => {});
  }
}
