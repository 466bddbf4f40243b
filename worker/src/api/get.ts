// GetObject and HeadObject: one metadata call, then (GET only) one parallel wave of shard
// requests for exactly the bytes asked for, streamed to the client as they are verified.
import type { Manifest, ManifestPart } from "../core-api";
import type { ObjectRecord } from "../meta/types";
import { S3Error } from "../s3-error";
import { metrics } from "../observability/metrics";
import { openPartRange, type ReadEvents } from "../storage/read-part";
import { noSuchBucket } from "./bucket";
import { checksumHeaders } from "./checksums";
import { bucketIndex, type RequestContext } from "./context";
import { RESPONSE_OVERRIDES } from "./object-headers";

interface Selection {
  status: 200 | 206;
  start: number;
  end: number;
  /** The parts the selection covers, with each part's first byte in the object. */
  parts: { part: ManifestPart; offset: number }[];
  partsCount: number | null;
}

export async function getObject(ctx: RequestContext, bucket: string, key: string, head: boolean): Promise<Response> {
  const { bucket: exists, object } = await bucketIndex(ctx, bucket).head(key);
  if (!exists) throw noSuchBucket(bucket);
  if (!object) throw new S3Error(404, "NoSuchKey", "The specified key does not exist.");
  const notModified = checkConditions(ctx.request.headers, object);
  const manifest = ctx.core.decodeManifest(object.manifest);
  const headers = objectHeaders(ctx, manifest);
  if (notModified) return new Response(null, { status: 304, headers: notModifiedHeaders(headers) });
  const sel = select(ctx, manifest);
  headers.set("Content-Length", String(sel.end - sel.start));
  if (sel.status === 206) headers.set("Content-Range", `bytes ${sel.start}-${sel.end - 1}/${manifest.size}`);
  if (sel.partsCount !== null) headers.set("x-amz-mp-parts-count", String(sel.partsCount));
  if (head || sel.end === sel.start) return new Response(null, { status: sel.status, headers });
  const body = await openSelection(ctx, sel);
  // A fixed-length body makes a read that fails midway abort the connection instead of ending
  // early with a truncated 200.
  const fixed = new FixedLengthStream(sel.end - sel.start);
  body.pipeTo(fixed.writable).catch(() => {});
  return new Response(fixed.readable, { status: sel.status, headers });
}

/** S3's precedence: If-Match / If-Unmodified-Since → 412; If-None-Match / If-Modified-Since → 304. */
function checkConditions(headers: Headers, object: ObjectRecord): boolean {
  const etag = `"${object.etag}"`;
  const modified = Math.floor(object.lastModified / 1000) * 1000;
  const ifMatch = headers.get("if-match");
  const ifNoneMatch = headers.get("if-none-match");
  const ifModifiedSince = httpDate(headers.get("if-modified-since"));
  const ifUnmodifiedSince = httpDate(headers.get("if-unmodified-since"));
  if (ifMatch !== null) {
    if (!etagMatches(ifMatch, etag)) throw preconditionFailed();
  } else if (ifUnmodifiedSince !== null && modified > ifUnmodifiedSince) {
    throw preconditionFailed();
  }
  if (ifNoneMatch !== null) return etagMatches(ifNoneMatch, etag);
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

function preconditionFailed(): S3Error {
  return new S3Error(412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold.");
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
  const wantsChecksums = ctx.request.headers.get("x-amz-checksum-mode")?.toUpperCase() === "ENABLED";
  if (wantsChecksums && !ctx.request.headers.has("range")) {
    for (const [name, value] of Object.entries(checksumHeaders(manifest.checksums))) headers.set(name, value);
  }
  return headers;
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
  const offsets: number[] = [];
  let at = 0;
  for (const p of manifest.parts) {
    offsets.push(at);
    at += p.size;
  }
  const all = manifest.parts.map((part, i) => ({ part, offset: offsets[i] }));
  const multipart = manifest.parts.length > 1 || /-\d+$/.test(manifest.etag);
  const partNumber = ctx.url.searchParams.get("partNumber");
  const range = ctx.request.headers.get("range");
  if (partNumber !== null) {
    if (range !== null) throw new S3Error(400, "InvalidRequest", "Cannot specify both Range header and partNumber query parameter.");
    const n = Number(partNumber);
    if (!Number.isInteger(n) || n < 1 || n > 10000) throw new S3Error(400, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive.");
    if (n > manifest.parts.length) throw new S3Error(416, "InvalidPartNumber", "The requested partnumber is not satisfiable.");
    const { part, offset } = all[n - 1];
    const whole = !multipart;
    return {
      status: whole ? 200 : 206,
      start: offset,
      end: offset + part.size,
      parts: [{ part, offset }],
      partsCount: multipart ? manifest.parts.length : null,
    };
  }
  if (range !== null) {
    const r = ctx.core.resolveRange(range, manifest.size);
    if (r === "unsatisfiable") throw new RangeNotSatisfiable(manifest.size);
    if (r !== null && r.end > r.start) return { status: 206, start: r.start, end: r.end, parts: covering(all, r.start, r.end), partsCount: null };
    if (r !== null) return { status: 200, start: 0, end: 0, parts: [], partsCount: null };
  }
  return { status: 200, start: 0, end: manifest.size, parts: all, partsCount: null };
}

function covering(all: { part: ManifestPart; offset: number }[], start: number, end: number) {
  return all.filter(({ part, offset }) => offset < end && offset + part.size > start);
}

/** 416 with the Content-Range S3 sends (bytes *\/size). */
export class RangeNotSatisfiable extends S3Error {
  constructor(readonly size: number) {
    super(416, "InvalidRange", "The requested range is not satisfiable.");
  }
}

/** The selection as one stream: the first part opens now (errors become statuses), later parts
 *  open when the stream reaches them. */
async function openSelection(ctx: RequestContext, sel: Selection): Promise<ReadableStream<Uint8Array>> {
  const ranges = sel.parts.map(({ part, offset }) => ({
    part,
    start: Math.max(sel.start, offset) - offset,
    end: Math.min(sel.end, offset + part.size) - offset,
  }));
  const events = readEvents();
  const first = await openPartRange(ctx.config, ctx.core, ranges[0].part, ranges[0].start, ranges[0].end, events);
  if (ranges.length === 1) return first;
  let index = 0;
  let current: ReadableStreamDefaultReader<Uint8Array> = first.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const { done, value } = await current.read();
        if (!done) return controller.enqueue(value);
        index += 1;
        if (index === ranges.length) return controller.close();
        const r = ranges[index];
        current = (await openPartRange(ctx.config, ctx.core, r.part, r.start, r.end, events)).getReader();
      }
    },
    cancel: (reason) => current.cancel(reason),
  });
}

/** Counts one degraded read per request, and every checksum failure. */
function readEvents(): ReadEvents {
  let degraded = false;
  return {
    shardLost(_storageId, _shard, why) {
      if (!degraded) metrics.add("shardgate_degraded_reads_total");
      degraded = true;
      if (why === "checksum") metrics.add("shardgate_checksum_failures_total");
    },
  };
}
