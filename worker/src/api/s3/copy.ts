// CopyObject: the source (api/format/copy-source.ts) streams out of its shard files and into new ones
// (never buffered whole); a copy onto itself that only replaces metadata moves no bytes at all.
import type { Manifest } from "../../shared/core-api";
import type { Expiry, ObjectRecord } from "../../meta/types";
import { S3Error, noSuchKey } from "../../s3-error";
import { conditionRefusal } from "../../meta/object-records";
import { type CopySource, parseCopySource, readCopySource } from "../format/copy-source";
import { type Cipher, encryptionOf, newCipher, objectEtag, objectKeyOf, writeObjectPart } from "../../services/encryption";
import { customerKey, sseHeaders, sseRequest } from "../format/sse-headers";
import { checksumElements, parseAlgorithm, RequestChecksums, type Algorithm } from "../format/checksums";
import { owner, bucketIndex, type RequestContext, type ObjectAt } from "../http/context";
import { storedHeaders, userMetadata } from "../format/object-headers";
import { element, s3Date, xmlResponse, xmlDocument } from "../format/xml";
import { writeCondition } from "../format/conditions";
import { checkAclHeaders } from "../format/acls";
import { openRange, commitObject, partOf, refuseEarly, writeRefused, writtenHeaders, type NewObject } from "../../services/objects";
import { lockFromHeaders } from "../format/object-lock-headers";
import { checkKey } from "../format/object-request";
import { MAX_PUT_BYTES } from "../../s3-limits";
import { parseTaggingHeader } from "../format/tags";
import { COPY_TAGS, passes } from "../http/permissions";
import { bucketPolicy } from "../../services/bucket-policy";

function directive(headers: Headers, name: string): "COPY" | "REPLACE" {
  const value = (headers.get(name) ?? "COPY").toUpperCase();
  if (value !== "COPY" && value !== "REPLACE") throw new S3Error("InvalidArgument", `Unknown ${name}: ${headers.get(name)}`);
  return value;
}

export async function copyObject(ctx: RequestContext, { bucket, key }: ObjectAt): Promise<Response> {
  const headers = ctx.request.headers;
  checkKey(key);
  checkAclHeaders(headers, owner(ctx).id);
  const source = parseCopySource(headers.get("x-amz-copy-source") ?? "");
  const metadataDirective = directive(headers, "x-amz-metadata-directive");
  const taggingDirective = directive(headers, "x-amz-tagging-directive");
  const algorithm = parseAlgorithm(headers.get("x-amz-checksum-algorithm"));
  const condition = writeCondition(headers);
  // The copy's own lock (a source's retention is not copied, as in S3).
  const lock = lockFromHeaders(headers);
  // A copy of an earlier version onto its own key restores it: not a copy onto itself.
  const inPlace = source.bucket === bucket && source.key === key && source.versionId === undefined;
  const sse = await sseRequest(headers);
  if (inPlace && metadataDirective === "COPY" && taggingDirective === "COPY" && algorithm === null && sse === null) {
    throw new S3Error(
      "InvalidRequest",
      "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
    );
  }
  const { record, manifest, versioned, headers: sourceHeaders } = await readCopySource(ctx, source);
  if (taggingDirective === "COPY" && manifest.tags.length > 0) await checkCopyTags(ctx, source, { bucket, key });
  if (manifest.size > MAX_PUT_BYTES) {
    throw new S3Error("InvalidRequest", `The specified copy source is larger than the maximum allowable size for a copy source: ${MAX_PUT_BYTES}`);
  }
  const fields = {
    headers: metadataDirective === "REPLACE" ? storedHeaders(headers) : manifest.headers,
    userMetadata: metadataDirective === "REPLACE" ? userMetadata(headers) : manifest.userMetadata,
    tags: taggingDirective === "REPLACE" ? parseTaggingHeader(headers.get("x-amz-tagging")) : manifest.tags,
  };

  // The source's key (SSE-C: from the x-amz-copy-source-server-side-encryption-customer-* headers);
  // the copy is encrypted as its own request or its bucket's default says, not as the source was.
  const sourceCustomer = await customerKey(headers, true);
  const sourceKey = manifest.encryption ? await objectKeyOf(ctx.config.masterKey, manifest.encryption, sourceCustomer?.key ?? null) : null;
  const cipher = await newCipher(ctx.env, ctx.config, bucket, sse);

  let result: { object: NewObject; lastModified: number; versionId?: string; expiry?: Expiry | null };
  // In a versioned bucket a copy onto itself is a new version, with shard files of its own: two
  // versions never share files, so deleting one never takes the other's data. Only plain objects
  // that stay plain keep their bytes (anything else is re-encrypted under a new key).
  const samePlain = !manifest.encryption && !cipher;
  if (inPlace && samePlain && !versioned && !lock && (algorithm === null || manifest.checksums.some((c) => c.algorithm === algorithm))) {
    result = await replaceInPlace(ctx, bucket, record, manifest, fields, condition);
  } else {
    const keep = algorithm ?? (manifest.checksums[0]?.algorithm as Algorithm | undefined) ?? null;
    const target = { ...fields, ...(lock ? { lock } : {}) };
    result = await copyBytes(ctx, bucket, key, manifest, target, keep, { ...condition, integrity: true }, sourceKey, cipher);
  }
  const { object, lastModified } = result;
  const body = `<ETag>"${object.etag}"</ETag>${element("LastModified", s3Date(lastModified))}${checksumElements(object.checksums, object.parts.length)}`;
  return xmlResponse(xmlDocument("CopyObjectResult", body), 200, {
    ...sourceHeaders,
    ...writtenHeaders(result),
    ...sseHeaders(cipher?.encryption, sse?.keyMd5),
  });
}

/** A copy that keeps its source's tags reads them as GetObjectTagging and writes them as PutObjectTagging: a policy denying either refuses it. */
async function checkCopyTags(ctx: RequestContext, source: CopySource, target: { bucket: string; key: string }): Promise<void> {
  const policyOf = (b: string) => bucketPolicy(ctx.env, b);
  const mayRead = await passes(ctx.principal, COPY_TAGS.source, source.bucket, source.key, source.versionId !== undefined, policyOf);
  if (!mayRead || !(await passes(ctx.principal, COPY_TAGS.target, target.bucket, target.key, false, policyOf)))
    throw new S3Error("AccessDenied", "Access Denied");
}

type Fields = Pick<NewObject, "headers" | "userMetadata" | "tags">;

/** Streams the source's bytes into a new object, computing `algorithm` on the way. */
async function copyBytes(
  ctx: RequestContext,
  bucket: string,
  key: string,
  source: Manifest,
  fields: Fields & Pick<NewObject, "lock">,
  algorithm: Algorithm | null,
  condition: ReturnType<typeof writeCondition>,
  sourceKey: Uint8Array | null,
  cipher: Cipher | null,
) {
  // A copy of more than one block is not made for a condition that already fails.
  if (condition && source.size > ctx.config.blockBytes) await refuseEarly(ctx, bucket, key, condition);
  const checksums = RequestChecksums.computing(ctx.core, algorithm);
  const body = await openRange(ctx, source, 0, source.size, undefined, sourceKey);
  const part = await writeObjectPart(ctx.config, ctx.core, body, source.size, (b) => checksums.update(b), cipher, "copy");
  const { written, salt } = part;
  const etag = objectEtag(cipher, part);
  const verified = await checksums.verify(Promise.resolve(new Headers()));
  const encryption = cipher ? { encryption: encryptionOf(cipher, [salt as string]) } : {};
  const object: NewObject = { key, size: source.size, etag, ...fields, checksums: verified, parts: [partOf(written, etag, [])], ...encryption };
  return { object, ...(await commitObject(ctx, bucket, object, { ...condition, event: "Copy" }, [written])) };
}

/**
 * The same data under new metadata: only the manifest changes, and only if the object is still
 * the one read (otherwise a concurrent overwrite could lose the data this manifest points to).
 */
async function replaceInPlace(
  ctx: RequestContext,
  bucket: string,
  record: ObjectRecord,
  manifest: Manifest,
  fields: Fields,
  condition: ReturnType<typeof writeCondition>,
) {
  // The condition against the object read; replace() below commits only if it is still that one.
  const refused = condition ? conditionRefusal(record, condition) : null;
  if (refused) throw writeRefused(refused);
  const object: NewObject = { key: record.key, size: manifest.size, etag: manifest.etag, checksums: manifest.checksums, parts: manifest.parts, ...fields };
  const lastModified = Date.now();
  const next: Manifest = { ...manifest, ...fields, lastModifiedMs: lastModified };
  // The record read, with the new manifest (replace() writes its size, ETag, time and manifest).
  const result = await bucketIndex(ctx, bucket).replace(record.manifest, { ...record, lastModified, manifest: ctx.core.encodeManifest(next) });
  if (result === "missing") throw noSuchKey();
  if (result === "changed") throw new S3Error("OperationAborted", "A conflicting operation is currently in progress against this resource. Please try again.");
  return { object, lastModified };
}
