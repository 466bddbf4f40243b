// GetObject and HeadObject: one metadata call, then (GET only) one parallel wave of shard
// requests for exactly the bytes asked for, streamed to the client as they are verified.
import type { Manifest, ManifestPart } from "../core-api";
import type { ObjectRecord } from "../meta/types";
import { S3Error, noSuchBucket, noSuchKey } from "../s3-error";
import { metrics } from "../observability/metrics";
import { openPartSource, sourceStream, type LossReason, type RangeSource, type ReadEvents } from "../storage/read-part";
import { checksumHeaders } from "./checksums";
import { bucketIndex, type RequestContext } from "./context";
import { healAfterRead, type LostShards } from "../services/heal";
import { RESPONSE_OVERRIDES } from "./object-headers";

interface Selection {
  status: 200 | 206;
  start: number;
  end: number;
  partsCount: number | null;
}

/** The object under `key` (one metadata call), or NoSuchBucket / NoSuchKey. */
export async function existingObject(ctx: RequestContext, bucket: string, key: string): Promise<ObjectRecord> {
  const { bucket: exists, object } = await bucketIndex(ctx, bucket).head(key);
  if (!exists) throw noSuchBucket(bucket);
  if (!object) throw noSuchKey();
  return object;
}

export async function getObject(ctx: RequestContext, bucket: string, key: string, head: boolean): Promise<Response> {
  const object = await existingObject(ctx, bucket, key);
  const notModified = checkConditions(requestConditions(ctx.request.headers), object);
  const manifest = ctx.core.decodeManifest(object.manifest);
  const headers = objectHeaders(ctx, manifest);
  if (notModified) return new Response(null, { status: 304, headers: notModifiedHeaders(headers) });
  const sel = select(ctx, manifest);
  headers.set("Content-Length", String(sel.end - sel.start));
  if (sel.status === 206) headers.set("Content-Range", `bytes ${sel.start}-${sel.end - 1}/${manifest.size}`);
  if (sel.partsCount !== null) headers.set("x-amz-mp-parts-count", String(sel.partsCount));
  if (head || sel.end === sel.start) return new Response(null, { status: sel.status, headers });
  const lost: LostShards = new Map();
  const source = await openRangeSource(ctx, manifest, sel.start, sel.end, lost);
  // The runtime's fixed-length stream, written straight from the read (no stream in JS between):
  // a read that fails midway aborts the connection instead of ending with a truncated 200.
  const fixed = new FixedLengthStream(sel.end - sel.start);
  const sent = send(source, fixed.writable);
  // Heal on read: once the response is out, put back what the read had to go around.
  ctx.waitUntil(sent.then(() => healAfterRead(ctx, bucket, key, object.manifest, lost)));
  return new Response(fixed.readable, { status: sel.status, headers });
}

/** The four conditional headers of a GET/HEAD (or, for a copy, of its x-amz-copy-source-if-*). */
export interface Conditions {
  ifMatch: string | null;
  ifNoneMatch: string | null;
  ifModifiedSince: string | null;
  ifUnmodifiedSince: string | null;
}

export function requestConditions(headers: Headers, prefix = "if-"): Conditions {
  return {
    ifMatch: headers.get(`${prefix}match`),
    ifNoneMatch: headers.get(`${prefix}none-match`),
    ifModifiedSince: headers.get(`${prefix}modified-since`),
    ifUnmodifiedSince: headers.get(`${prefix}unmodified-since`),
  };
}

/**
 * S3's precedence: If-Match / If-Unmodified-Since failing → 412 (thrown); If-None-Match /
 * If-Modified-Since failing → true ("not modified": 304 on GET, 412 on a copy).
 */
export function checkConditions(c: Conditions, object: Pick<ObjectRecord, "etag" | "lastModified">): boolean {
  const etag = `"${object.etag}"`;
  const modified = Math.floor(object.lastModified / 1000) * 1000;
  const ifModifiedSince = httpDate(c.ifModifiedSince);
  const ifUnmodifiedSince = httpDate(c.ifUnmodifiedSince);
  if (c.ifMatch !== null) {
    if (!etagMatches(c.ifMatch, etag)) throw preconditionFailed();
  } else if (ifUnmodifiedSince !== null && modified > ifUnmodifiedSince) {
    throw preconditionFailed();
  }
  if (c.ifNoneMatch !== null) return etagMatches(c.ifNoneMatch, etag);
  return ifModifiedSince !== null && modified <= ifModifiedSince;
}

function etagMatches(header: string, etag: string): boolean {
  return header.split(",").some((t) => {
    const v = t.trim();
    return v === "*" || v === etag || `"${v}"` === etag;
  });
}

function httpDate(value: string | null): number | null {
  if (value === null) return null;
  const t = Date.parse(value);
  return Number.isNaN(t) ? null : t;
}

export function preconditionFailed(): S3Error {
  return new S3Error("PreconditionFailed", "At least one of the pre-conditions you specified did not hold.");
}

function objectHeaders(ctx: RequestContext, manifest: Manifest): Headers {
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
  const wantsChecksums = ctx.request.headers.get("x-amz-checksum-mode")?.toUpperCase() === "ENABLED";
  if (wantsChecksums && !ctx.request.headers.has("range")) {
    for (const [name, value] of Object.entries(selectedChecksums(ctx, manifest))) headers.set(name, value);
  }
  return headers;
}

/** The object's checksums, or with ?partNumber on a multipart object that part's own. */
function selectedChecksums(ctx: RequestContext, manifest: Manifest): Record<string, string> {
  const n = Number(ctx.url.searchParams.get("partNumber") ?? 0);
  if (manifest.parts.length > 1 && Number.isInteger(n) && n >= 1 && n <= manifest.parts.length) {
    const layout = manifest.parts[n - 1].layout;
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
function select(ctx: RequestContext, manifest: Manifest): Selection {
  const all = partOffsets(manifest);
  const multipart = manifest.parts.length > 1 || /-\d+$/.test(manifest.etag);
  const partNumber = ctx.url.searchParams.get("partNumber");
  const range = ctx.request.headers.get("range");
  if (partNumber !== null) {
    if (range !== null) throw new S3Error("InvalidRequest", "Cannot specify both Range header and partNumber query parameter.");
    const n = Number(partNumber);
    if (!Number.isInteger(n) || n < 1 || n > 10000) throw new S3Error("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive.");
    if (n > manifest.parts.length) throw new S3Error("InvalidPartNumber", "The requested partnumber is not satisfiable.");
    const { part, offset } = all[n - 1];
    const whole = !multipart;
    return {
      status: whole ? 200 : 206,
      start: offset,
      end: offset + part.size,
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

function covering(all: { part: ManifestPart; offset: number }[], start: number, end: number) {
  return all.filter(({ part, offset }) => offset < end && offset + part.size > start);
}

/** 416 with the Content-Range S3 sends (bytes *\/size). */
export class RangeNotSatisfiable extends S3Error {
  constructor(readonly size: number) {
    super("InvalidRange", "The requested range is not satisfiable.");
  }
}

/**
 * Object bytes [start, end) as one source: the first part covered opens now (so errors become
 * statuses), later parts open when the read reaches them.
 */
export async function openRangeSource(
  ctx: Pick<RequestContext, "config" | "core">,
  manifest: Manifest,
  start: number,
  end: number,
  lost: LostShards = new Map(),
): Promise<RangeSource> {
  const ranges = covering(partOffsets(manifest), start, end).map(({ part, offset }) => ({
    part,
    start: Math.max(start, offset) - offset,
    end: Math.min(end, offset + part.size) - offset,
  }));
  const events = readEvents(lost);
  const open = (i: number) => openPartSource(ctx.config, ctx.core, ranges[i].part, ranges[i].start, ranges[i].end, events);
  let index = 0;
  let current: RangeSource | null = ranges.length > 0 ? await open(0) : null;
  return {
    async next() {
      while (current) {
        const piece = await current.next();
        if (piece) return piece;
        index += 1;
        current = index < ranges.length ? await open(index) : null;
      }
      return null;
    },
    close: () => current?.close(),
  };
}

/** openRangeSource as a stream (a copy's source, an UploadPartCopy's). */
export async function openRange(...args: Parameters<typeof openRangeSource>): Promise<ReadableStream<Uint8Array>> {
  return sourceStream(await openRangeSource(...args));
}

/**
 * Sends `source` into `writable`, piece by piece as the client takes them; resolves once sent
 * (or the client left: the source is closed, nothing more is read). A read that fails midway
 * aborts the response, so the client sees a broken transfer, never a short 200.
 */
async function send(source: RangeSource, writable: WritableStream<Uint8Array>): Promise<void> {
  const writer = writable.getWriter();
  try {
    for (let piece = await source.next(); piece; piece = await source.next()) await writer.write(piece);
    await writer.close();
  } catch (e) {
    source.close();
    await writer.abort(e).catch(() => {});
  }
}

/** Each part with the object offset of its first byte. */
function partOffsets(manifest: Manifest): { part: ManifestPart; offset: number }[] {
  let at = 0;
  return manifest.parts.map((part) => {
    const offset = at;
    at += part.size;
    return { part, offset };
  });
}

/** A shard's worst reason wins: once it is known missing, failed or rotten, it stays so. */
const HEAL_WORTHY: ReadonlySet<LossReason> = new Set(["missing", "error", "checksum"]);

/** Counts one degraded read per request and every checksum failure; notes the shards lost. */
function readEvents(lost: LostShards): ReadEvents {
  let degraded = false;
  return {
    shardLost(storageId, shard, why) {
      if (!degraded) metrics.add("shardgate_degraded_reads_total");
      degraded = true;
      if (why === "checksum") metrics.add("shardgate_checksum_failures_total");
      if (why === "slow") metrics.add("shardgate_hedged_reads_total");
      const shards = lost.get(storageId) ?? new Map<number, LossReason>();
      if (!HEAL_WORTHY.has(shards.get(shard) ?? "slow")) shards.set(shard, why);
      lost.set(storageId, shards);
    },
  };
}
