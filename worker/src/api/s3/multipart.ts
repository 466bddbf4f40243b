// Multipart uploads: CreateMultipartUpload, UploadPart, UploadPartCopy, CompleteMultipartUpload,
// AbortMultipartUpload, ListParts, ListMultipartUploads. Each part is erasure-coded on its own as
// it streams in (its own shard files); completing writes only the manifest, which lists the
// parts' layouts in order, so no byte is copied. Abort, completion (for parts left out) and the
// stale-upload alarm delete the shard files of parts no object references.
import type { ChecksumKind, ObjectChecksum } from "../../shared/core-api";
import { newUploadId } from "../../meta/uploads";
import type { PartRecord, UploadInfo } from "../../meta/types";
import { S3Error } from "../../s3-error";
import { removeParts, storageIds } from "../../storage/remove";
import { type Cipher, cipherOf, newCipher, objectEtag, objectKeyOf, type WrittenObjectPart, writeObjectPart } from "../../services/encryption";
import { customerKey, sseHeaders, sseRequest } from "../format/sse-headers";
import {
  checksumElements,
  checksumHeaders,
  checksumValue,
  multipartChecksum,
  parseAlgorithm,
  RequestChecksums,
  uploadChecksumType,
  type Algorithm,
} from "../format/checksums";
import { checkAclHeaders } from "../format/acls";
import { owner, bucketIndex, type RequestContext, type BucketAt, type ObjectAt } from "../http/context";
import { parseCopySource, readCopySource } from "../format/copy-source";
import { storedHeaders, userMetadata } from "../format/object-headers";
import { element, s3Date, xmlResponse, xmlDocument } from "../format/xml";
import { childrenNamed, childText, malformedXml, readXml } from "../format/xml-parse";
import { multipartEtag, openRange, partOf, UNDER_REPLICATED, writeRefused, writtenHeaders } from "../../services/objects";
import { lockFromHeaders } from "../format/object-lock-headers";
import { checkKey, parseContentMd5, replicaRequest, requestSize, verifyWritten, type PartParams, type UploadParams } from "../format/object-request";
import { writeCondition } from "../format/conditions";
import { MAX_PART_NUMBER, MAX_PUT_BYTES } from "../../s3-limits";
import { parseTaggingHeader } from "../format/tags";

/** S3's smallest part, except the last. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;
const MAX_LIST = 1000;

const noSuchUpload = () =>
  new S3Error("NoSuchUpload", "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.");

export async function createMultipartUpload(ctx: RequestContext, { bucket, key }: ObjectAt): Promise<Response> {
  const headers = ctx.request.headers;
  checkKey(key);
  checkAclHeaders(headers, owner(ctx).id);
  const algorithm = parseAlgorithm(headers.get("x-amz-checksum-algorithm"));
  const checksumType = uploadChecksumType(algorithm, headers.get("x-amz-checksum-type"));
  const now = Date.now();
  const upload: UploadInfo = {
    uploadId: newUploadId(now),
    key,
    initiated: now,
    headers: storedHeaders(headers),
    metadata: userMetadata(headers),
    tags: parseTaggingHeader(headers.get("x-amz-tagging")),
    checksumAlgorithm: algorithm,
    checksumType,
  };
  const lock = lockFromHeaders(headers, now);
  if (lock) upload.lock = lock;
  const sse = await sseRequest(headers);
  const cipher = await newCipher(ctx.env, ctx.config, bucket, sse);
  if (cipher) upload.encryption = cipher.encryption;
  const created = await bucketIndex(ctx, bucket).createUpload(upload);
  if (created !== "ok") throw writeRefused(created);
  const response = new Headers(sseHeaders(cipher?.encryption, sse?.keyMd5));
  if (algorithm !== null && checksumType !== null) {
    response.set("x-amz-checksum-algorithm", algorithm);
    response.set("x-amz-checksum-type", checksumType);
  }
  const body = `${element("Bucket", bucket)}${element("Key", key)}${element("UploadId", upload.uploadId)}`;
  return xmlResponse(xmlDocument("InitiateMultipartUploadResult", body), 200, response);
}

/** The upload a part belongs to (one metadata call: its checksum settings decide how the part is checked). */
async function openUpload(ctx: RequestContext, bucket: string, key: string, uploadId: string): Promise<UploadInfo> {
  const upload = await bucketIndex(ctx, bucket).upload(uploadId, key);
  if (!upload) throw noSuchUpload();
  return upload as UploadInfo; // RPC typing widens its [name, value] tuples
}

export async function uploadPart(ctx: RequestContext, { bucket, key }: ObjectAt, { uploadId, partNumber }: PartParams): Promise<Response> {
  const headers = ctx.request.headers;
  const size = requestSize(ctx);
  const contentMd5 = parseContentMd5(headers.get("content-md5"));
  const upload = await openUpload(ctx, bucket, key, uploadId);
  const customer = await customerKey(headers);
  const cipher = await uploadCipher(ctx, upload, customer?.key ?? null);
  const checksums = RequestChecksums.fromRequest(ctx.core, headers, upload.checksumAlgorithm as Algorithm | null);
  const part = await writeObjectPart(ctx.config, ctx.core, ctx.auth.body, size, (b) => checksums.update(b), cipher, "request", contentMd5 !== null);
  const verified = await verifyWritten(ctx, { ...part.written, md5: part.md5 ?? part.written.md5 }, contentMd5, checksums);
  const record = await commitPart(ctx, bucket, upload, partNumber, part, size, objectEtag(cipher, part), verified);
  const answer = { ETag: `"${record.etag}"`, ...checksumHeaders(verified), ...sseHeaders(upload.encryption, customer?.keyMd5) };
  return new Response(null, { status: 200, headers: answer });
}

export async function uploadPartCopy(ctx: RequestContext, { bucket, key }: ObjectAt, { uploadId, partNumber }: PartParams): Promise<Response> {
  const headers = ctx.request.headers;
  const source = parseCopySource(headers.get("x-amz-copy-source") ?? "");
  const upload = await openUpload(ctx, bucket, key, uploadId);
  const { manifest } = await readCopySource(ctx, source);
  const { start, end } = copySourceRange(headers.get("x-amz-copy-source-range"), manifest.size);
  if (end - start > MAX_PUT_BYTES)
    throw new S3Error("InvalidRequest", "The specified copy range is larger than the maximum allowable size for a part: 5368709120");
  const sourceKey = manifest.encryption ? await objectKeyOf(ctx.config.masterKey, manifest.encryption, (await customerKey(headers, true))?.key ?? null) : null;
  const cipher = await uploadCipher(ctx, upload, (await customerKey(headers))?.key ?? null);
  const checksums = RequestChecksums.computing(ctx.core, upload.checksumAlgorithm as Algorithm | null);
  const body = await openRange(ctx, manifest, start, end, undefined, sourceKey);
  const part = await writeObjectPart(ctx.config, ctx.core, body, end - start, (b) => checksums.update(b), cipher, "copy");
  const verified = await checksums.verify(Promise.resolve(new Headers()));
  const record = await commitPart(ctx, bucket, upload, partNumber, part, end - start, objectEtag(cipher, part), verified);
  const result = `<ETag>"${record.etag}"</ETag>${element("LastModified", s3Date(record.lastModified))}${checksumElements(verified, 1, false)}`;
  return xmlResponse(xmlDocument("CopyPartResult", result));
}

/** `x-amz-copy-source-range: bytes=first-last` (both required, inside the source); none: all of it. */
function copySourceRange(header: string | null, size: number): { start: number; end: number } {
  if (header === null) return { start: 0, end: size };
  const m = /^bytes=(\d+)-(\d+)$/.exec(header.trim());
  if (!m || Number(m[1]) > Number(m[2])) {
    throw new S3Error(
      "InvalidArgument",
      "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy",
    );
  }
  const [start, last] = [Number(m[1]), Number(m[2])];
  if (last >= size) throw new S3Error("InvalidArgument", `Range specified is not valid for source object of size: ${size}`);
  return { start, end: last + 1 };
}

/**
 * The cipher a part of `upload` is written with: the upload's. A part names the upload's SSE-C key
 * (S3: 400 when it brings none, another one, or one to an upload that is not SSE-C).
 */
async function uploadCipher(ctx: RequestContext, upload: UploadInfo, customer: Uint8Array | null): Promise<Cipher | null> {
  const sseC = upload.encryption?.mode === "SSE-C";
  if (customer && !sseC)
    throw new S3Error("InvalidArgument", "The encryption parameters are not applicable to this upload: it was not initiated with a customer-provided key.");
  if (!upload.encryption) return null;
  if (sseC && !customer) {
    throw new S3Error(
      "InvalidRequest",
      "The multipart upload initiate requested encryption. Subsequent part requests must include the appropriate encryption parameters.",
    );
  }
  try {
    return await cipherOf(ctx.config.masterKey, { ...upload.encryption, partSalts: [] }, customer);
  } catch (e) {
    if (e instanceof S3Error && e.code === "AccessDenied")
      throw new S3Error("InvalidArgument", "The provided encryption parameters did not match the ones used originally.");
    throw e;
  }
}

/** Records a written part; a part it replaces has its shard files removed, and so does this one if the upload is gone. */
async function commitPart(
  ctx: RequestContext,
  bucket: string,
  upload: UploadInfo,
  partNumber: number,
  { written, salt }: WrittenObjectPart,
  size: number,
  etag: string,
  verified: ObjectChecksum[],
): Promise<PartRecord> {
  const checksum = verified.find((c) => c.algorithm === upload.checksumAlgorithm) ?? null;
  const record: PartRecord = {
    partNumber,
    size,
    etag,
    lastModified: Date.now(),
    version: crypto.randomUUID(),
    part: partOf(written, etag, checksum ? [checksum] : []),
    checksum,
    ...(written.missedShards.length > 0 ? { missedShards: written.missedShards } : {}),
    ...(salt ? { salt } : {}),
  };
  const result = await bucketIndex(ctx, bucket).putPart(upload.uploadId, upload.key, record);
  if (!result.ok) {
    ctx.waitUntil(removeParts(ctx.config.nodes, [record.part]));
    throw result.reason === "NoSuchUpload" ? noSuchUpload() : writeRefused(result.reason);
  }
  if (result.previous) ctx.waitUntil(removeParts(ctx.config.nodes, [result.previous.part]));
  return record;
}

interface ListedPart {
  partNumber: number;
  etag: string;
  /** Checksums the client listed for the part, by algorithm. */
  checksums: Map<string, string>;
}

async function parseCompleteBody(body: ReadableStream<Uint8Array> | null): Promise<ListedPart[]> {
  const doc = await readXml(body);
  if (doc.name !== "CompleteMultipartUpload") throw malformedXml();
  const parts = childrenNamed(doc, "Part").map((p) => {
    const number = childText(p, "PartNumber")?.trim() ?? "";
    const etag = childText(p, "ETag");
    if (!/^\d{1,5}$/.test(number) || etag === undefined) throw malformedXml();
    const checksums = new Map<string, string>();
    for (const c of p.children) if (c.name.startsWith("Checksum")) checksums.set(c.name.slice("Checksum".length).toUpperCase(), c.text.trim());
    return { partNumber: Number(number), etag: etag.trim().replace(/^"|"$/g, ""), checksums };
  });
  if (parts.length === 0) throw malformedXml("You must specify at least one part");
  for (let i = 1; i < parts.length; i++) {
    if (parts[i].partNumber <= parts[i - 1].partNumber) {
      throw new S3Error("InvalidPartOrder", "The list of parts was not in ascending order. Parts must be ordered by part number.");
    }
  }
  return parts;
}

function invalidPart(): S3Error {
  return new S3Error(
    "InvalidPart",
    "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not have matched the part's entity tag.",
  );
}

export async function completeMultipartUpload(ctx: RequestContext, { bucket, key }: ObjectAt, { uploadId }: UploadParams): Promise<Response> {
  const listed = await parseCompleteBody(ctx.auth.body);
  const condition = { ...writeCondition(ctx.request.headers), ...(replicaRequest(ctx.request.headers) ? { replica: true } : {}) };
  const index = bucketIndex(ctx, bucket);
  const listing = await index.listParts(uploadId, key, 0, MAX_PART_NUMBER);
  if (!listing.upload) throw noSuchUpload();
  const upload = listing.upload as UploadInfo; // RPC typing widens its [name, value] tuples
  const used = choosePartsUsed(upload, listed, listing.parts as PartRecord[]);

  const etag = await multipartEtag(used.map((p) => p.etag));
  const checksums = await objectChecksums(ctx, upload, used);
  const size = used.reduce((n, p) => n + p.size, 0);
  const lastModified = Date.now();
  const manifest = {
    size,
    etag,
    lastModifiedMs: lastModified,
    headers: upload.headers,
    userMetadata: upload.metadata,
    tags: upload.tags,
    checksums,
    parts: used.map((p) => p.part),
    ...(upload.encryption ? { encryption: { ...upload.encryption, partSalts: used.map((p) => p.salt as string) } } : {}),
  };
  const record = { key, versionId: null, size, etag, lastModified, manifest: ctx.core.encodeManifest(manifest), ...(upload.lock ? { lock: upload.lock } : {}) };
  const missed = used.some((p) => (p.missedShards?.length ?? 0) > 0);
  const usedParts = used.map((p) => ({ partNumber: p.partNumber, version: p.version }));
  const result = await index.completeUpload(uploadId, record, usedParts, condition, missed ? UNDER_REPLICATED : null);
  if (!result.ok) {
    if (result.reason === "NoSuchUpload") throw noSuchUpload();
    if (result.reason === "InvalidPart") throw invalidPart();
    throw writeRefused(result.reason);
  }
  const superseded = result.freed.flatMap((r) => ctx.core.decodeManifest(r.manifest).parts);
  const unused = result.unused.map((p) => p.part);
  if (superseded.length + unused.length > 0) ctx.waitUntil(removeParts(ctx.config.nodes, [...superseded, ...unused], storageIds(manifest.parts)));

  const location = `${ctx.url.origin}/${encodeURIComponent(bucket)}/${key.split("/").map(encodeURIComponent).join("/")}`;
  const body = `${element("Location", location)}${element("Bucket", bucket)}${element("Key", key)}<ETag>"${etag}"</ETag>${checksumElements(checksums, used.length)}`;
  return xmlResponse(xmlDocument("CompleteMultipartUploadResult", body), 200, {
    ...checksumHeaders(checksums, used.length),
    ...writtenHeaders(result),
  });
}

/** The uploaded parts the client listed, checked with S3's rules (InvalidPart, EntityTooSmall). */
function choosePartsUsed(upload: UploadInfo, listed: ListedPart[], parts: PartRecord[]): PartRecord[] {
  const byNumber = new Map(parts.map((p) => [p.partNumber, p]));
  return listed.map((l, i) => {
    const part = byNumber.get(l.partNumber);
    if (!part || part.etag !== l.etag) throw invalidPart();
    const claimed = upload.checksumAlgorithm === null ? undefined : l.checksums.get(upload.checksumAlgorithm);
    if (claimed !== undefined && claimed !== part.checksum?.value) throw invalidPart();
    if (i < listed.length - 1 && part.size < MIN_PART_BYTES) {
      throw new S3Error("EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.");
    }
    return part;
  });
}

/** The object's checksum from its parts' (COMPOSITE or FULL_OBJECT), checked against one the client sent. */
async function objectChecksums(ctx: RequestContext, upload: UploadInfo, used: PartRecord[]) {
  const algorithm = upload.checksumAlgorithm as Algorithm | null;
  if (algorithm === null) return [];
  const checksum = await multipartChecksum(ctx.core, algorithm, upload.checksumType as ChecksumKind, used);
  if (checksum === null) return [];
  const claimed = ctx.request.headers.get(`x-amz-checksum-${algorithm.toLowerCase()}`);
  if (claimed !== null && claimed !== checksumValue(checksum, used.length)) {
    throw new S3Error("BadDigest", `The ${algorithm} you specified did not match the calculated checksum.`);
  }
  return [checksum];
}

export async function abortMultipartUpload(ctx: RequestContext, { bucket, key }: ObjectAt, { uploadId }: UploadParams): Promise<Response> {
  const parts = await bucketIndex(ctx, bucket).abortUpload(uploadId, key);
  if (parts === null) throw noSuchUpload();
  const stored = parts.map((p) => p.part);
  if (stored.length > 0) ctx.waitUntil(removeParts(ctx.config.nodes, stored));
  return new Response(null, { status: 204 });
}

function listLimit(value: string | null, name: string): number {
  if (value === null) return MAX_LIST;
  if (!/^\d{1,10}$/.test(value)) throw new S3Error("InvalidArgument", `Provided ${name} not an integer or within integer range`);
  return Math.min(Number(value), MAX_LIST);
}

/** An upload's Initiator, Owner (the key that signs the request) and StorageClass elements. */
function uploadOwner(ctx: RequestContext): string {
  const id = element("ID", ctx.auth.accessKeyId) + element("DisplayName", ctx.auth.accessKeyId);
  return `<Initiator>${id}</Initiator><Owner>${id}</Owner>${element("StorageClass", "STANDARD")}`;
}

function uploadChecksumElements(upload: Pick<UploadInfo, "checksumAlgorithm" | "checksumType">): string {
  if (upload.checksumAlgorithm === null || upload.checksumType === null) return "";
  return element("ChecksumAlgorithm", upload.checksumAlgorithm) + element("ChecksumType", upload.checksumType);
}

export async function listParts(ctx: RequestContext, { bucket, key }: ObjectAt, { uploadId }: UploadParams): Promise<Response> {
  const params = ctx.url.searchParams;
  const maxParts = listLimit(params.get("max-parts"), "max-parts");
  const markerParam = params.get("part-number-marker");
  const marker = markerParam === null || markerParam === "" ? 0 : Number(markerParam);
  if (!Number.isInteger(marker) || marker < 0) throw new S3Error("InvalidArgument", "Provided part-number-marker not an integer or within integer range");
  const { upload, parts } = await bucketIndex(ctx, bucket).listParts(uploadId, key, marker, maxParts + 1);
  if (!upload) throw noSuchUpload();
  const page = parts.slice(0, maxParts);
  const items = page.map((p) => {
    const fields = `${element("PartNumber", p.partNumber)}${element("LastModified", s3Date(p.lastModified))}<ETag>"${p.etag}"</ETag>${element("Size", p.size)}`;
    const checksum = p.checksum ? `<Checksum${p.checksum.algorithm}>${p.checksum.value}</Checksum${p.checksum.algorithm}>` : "";
    return `<Part>${fields}${checksum}</Part>`;
  });
  const next = page.length > 0 ? page[page.length - 1].partNumber : marker;
  const head = `${element("Bucket", bucket)}${element("Key", key)}${element("UploadId", uploadId)}${uploadOwner(ctx)}`;
  const position = `${element("PartNumberMarker", marker)}${element("NextPartNumberMarker", next)}${element("MaxParts", maxParts)}`;
  const body = `${head}${position}${element("IsTruncated", parts.length > maxParts)}${uploadChecksumElements(upload)}${items.join("")}`;
  return xmlResponse(xmlDocument("ListPartsResult", body));
}

export async function listMultipartUploads(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const params = ctx.url.searchParams;
  const encodeUrl = params.get("encoding-type") === "url";
  if (params.has("encoding-type") && !encodeUrl) throw new S3Error("InvalidArgument", "Invalid Encoding Method specified in Request");
  const query = {
    prefix: params.get("prefix") ?? "",
    delimiter: params.get("delimiter") || null,
    keyMarker: params.get("key-marker") || null,
    uploadIdMarker: params.get("key-marker") ? params.get("upload-id-marker") || null : null,
    maxUploads: listLimit(params.get("max-uploads"), "max-uploads"),
  };
  const page = await bucketIndex(ctx, bucket).listUploads(query);
  const enc = (s: string) => (encodeUrl ? encodeURIComponent(s).replace(/%2F/g, "/") : s);
  // An element only when its value is set.
  const optional = (name: string, value: string | null) => (value === null ? "" : element(name, value));
  const uploads = page.uploads.map((u) => {
    const fields = `${element("Key", enc(u.key))}${element("UploadId", u.uploadId)}${uploadOwner(ctx)}${element("Initiated", s3Date(u.initiated))}`;
    return `<Upload>${fields}${uploadChecksumElements(u)}</Upload>`;
  });
  const prefixes = page.commonPrefixes.map((p) => `<CommonPrefixes>${element("Prefix", enc(p))}</CommonPrefixes>`).join("");
  const markers = `${element("KeyMarker", enc(query.keyMarker ?? ""))}${element("UploadIdMarker", query.uploadIdMarker ?? "")}`;
  const next = `${optional("NextKeyMarker", page.nextKeyMarker === null ? null : enc(page.nextKeyMarker))}${optional("NextUploadIdMarker", page.nextUploadIdMarker)}`;
  const scope = `${element("Prefix", enc(query.prefix))}${optional("Delimiter", query.delimiter === null ? null : enc(query.delimiter))}`;
  const tail = `${element("MaxUploads", query.maxUploads)}${element("IsTruncated", page.isTruncated)}${encodeUrl ? element("EncodingType", "url") : ""}`;
  return xmlResponse(xmlDocument("ListMultipartUploadsResult", `${element("Bucket", bucket)}${markers}${next}${scope}${tail}${uploads.join("")}${prefixes}`));
}
