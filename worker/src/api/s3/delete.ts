// DeleteObject and DeleteObjects: idempotent; the manifests go first (one metadata call for a
// whole batch), their shard files after the response. In a versioned bucket a delete without a
// version id adds a delete marker; with one, it removes that version for good. A batch is
// authorized per key, as S3 does: a key the policy denies (s3:DeleteObject, or
// s3:DeleteObjectVersion for an entry naming a version) is answered AccessDenied and kept.
import { isVersionId } from "../../meta/versions";
import type { DeleteOutcome } from "../../meta/types";
import { S3Error } from "../../s3-error";
import { removeFreed } from "../../services/objects";
import { RequestChecksums } from "../format/checksums";
import { bucketIndex, type RequestContext, type BucketAt, type ObjectAt } from "../http/context";
import { equalBytes } from "../../shared/bytes";
import { element, xmlResponse, xmlDocument } from "../format/xml";
import { childrenNamed, childText, malformedXml, parseXmlBytes, readXmlBody } from "../format/xml-parse";
import { checkKey, keyTooLong, parseContentMd5, replicaRequest } from "../format/object-request";
import { bypassGovernance } from "../format/object-lock-headers";
import { bucketPolicy } from "../../services/bucket-policy";
import { DELETE_OBJECT, passes } from "../http/permissions";

/** S3's limit on keys per DeleteObjects request. */
const MAX_DELETE_KEYS = 1000;
/** Keys of a batch evaluated against a bucket policy between two turns of the event loop. */
const YIELD_EVERY_KEYS = 100;

export async function deleteObject(ctx: RequestContext, { bucket, key, versionId }: ObjectAt): Promise<Response> {
  // No object has a longer key; in a versioned bucket a delete marker would be made with it.
  checkKey(key);
  const replica = replicaRequest(ctx.request.headers);
  const outcome = await bucketIndex(ctx, bucket).delete(key, versionId, await bypassGovernance(ctx, bucket, key), replica);
  // A version that does not exist is already deleted: 204 as for a missing key.
  if (!outcome) return new Response(null, { status: 204 });
  if (outcome.denied) throw new S3Error("AccessDenied", outcome.denied);
  removeFreed(ctx, outcome.freed);
  const headers: Record<string, string> = {};
  if (outcome.versionId !== undefined) headers["x-amz-version-id"] = outcome.versionId;
  if (outcome.marker) headers["x-amz-delete-marker"] = "true";
  return new Response(null, { status: 204, headers });
}

export async function deleteObjects(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const request = await parseDeleteRequest(ctx);
  // One policy read for the batch; each key is evaluated against it (linear in the keys, and a
  // long batch yields now and then so that other requests are served between its slices).
  const policy = await bucketPolicy(ctx.env, bucket);
  const policyOf = async () => policy;
  const mayBypass = new Map<DeleteItem, boolean>();
  for (const [i, item] of request.items.entries()) {
    if (policy !== null && i > 0 && i % YIELD_EVERY_KEYS === 0) await new Promise((resolve) => setTimeout(resolve, 0));
    if (item.error !== null) continue;
    if (!(await passes(ctx.principal, DELETE_OBJECT, bucket, item.key, item.versionId !== undefined, policyOf))) {
      item.error = { code: "AccessDenied", message: "Access Denied" };
      continue;
    }
    mayBypass.set(item, await bypassGovernance(ctx, bucket, item.key, policyOf));
  }
  const valid = request.items.filter((item) => item.error === null);
  const outcomeOf = new Map<DeleteItem, DeleteOutcome | null>();
  // The governance bypass is each key's too: one call for the keys that may bypass, one for the
  // others (made even when empty if nothing else was: it says whether the bucket exists).
  for (const bypass of [true, false]) {
    const group = valid.filter((item) => mayBypass.get(item) === bypass);
    if (group.length === 0 && (bypass || outcomeOf.size > 0)) continue;
    const outcomes = await bucketIndex(ctx, bucket).deleteMany(
      group.map(({ key, versionId }) => ({ key, versionId })),
      bypass,
    );
    removeFreed(
      ctx,
      outcomes.flatMap((o) => o?.freed ?? []),
    );
    for (const [i, item] of group.entries()) outcomeOf.set(item, outcomes[i] ?? null);
  }
  for (const [item, outcome] of outcomeOf) if (outcome?.denied) item.error = { code: "AccessDenied", message: outcome.denied };
  // S3 reports a key as deleted whether or not it existed; Quiet leaves out the successes.
  const results = request.items.map((item) => {
    if (item.error !== null)
      return `<Error>${element("Key", item.key)}${item.versionId === undefined ? "" : element("VersionId", item.versionId ?? "null")}${element("Code", item.error.code)}${element("Message", item.error.message)}</Error>`;
    return request.quiet ? "" : deletedXml(item, outcomeOf.get(item) ?? null);
  });
  return xmlResponse(xmlDocument("DeleteResult", results.join("")));
}

/** One <Deleted>: the version asked for, and the delete marker it was or that took its place. */
function deletedXml(item: DeleteItem, outcome: DeleteOutcome | null): string {
  let body = element("Key", item.key);
  if (item.versionId !== undefined) body += element("VersionId", item.versionId ?? "null");
  if (outcome?.marker) body += element("DeleteMarker", true) + element("DeleteMarkerVersionId", outcome.versionId ?? "null");
  return `<Deleted>${body}</Deleted>`;
}

interface DeleteItem {
  key: string;
  /** undefined: the current version; null: the null version. */
  versionId: string | null | undefined;
  error: { code: string; message: string } | null;
}

interface DeleteRequest {
  quiet: boolean;
  items: DeleteItem[];
}

/** The <Delete> body, whose integrity S3 requires a Content-MD5 or x-amz-checksum-* to prove. */
async function parseDeleteRequest(ctx: RequestContext): Promise<DeleteRequest> {
  const headers = ctx.request.headers;
  const contentMd5 = parseContentMd5(headers.get("content-md5"));
  const checksums = RequestChecksums.fromRequest(ctx.core, headers);
  if (!contentMd5 && checksums.isEmpty) throw new S3Error("InvalidRequest", "Missing required header for this request: Content-MD5 or x-amz-checksum-*");
  const bytes = await readXmlBody(ctx.auth.body);
  if (contentMd5 && !equalBytes(contentMd5, new Uint8Array(await crypto.subtle.digest("MD5", bytes)))) {
    throw new S3Error("BadDigest", "The Content-MD5 you specified did not match what we received.");
  }
  checksums.update(bytes);
  await checksums.verify(ctx.auth.trailers);
  const doc = parseXmlBytes(bytes);
  if (doc.name !== "Delete") throw malformedXml();
  const objects = childrenNamed(doc, "Object");
  if (objects.length === 0 || objects.length > MAX_DELETE_KEYS) throw malformedXml();
  const items = objects.map((o): DeleteItem => {
    const key = childText(o, "Key");
    if (key === undefined) throw malformedXml();
    if (keyTooLong(key)) return { key, versionId: undefined, error: { code: "KeyTooLongError", message: "Your key is too long." } };
    const version = childText(o, "VersionId");
    if (version === undefined) return { key, versionId: undefined, error: null };
    if (!isVersionId(version)) return { key, versionId: version, error: { code: "NoSuchVersion", message: "The specified version does not exist." } };
    return { key, versionId: version === "null" ? null : version, error: null };
  });
  return { quiet: childText(doc, "Quiet")?.trim().toLowerCase() === "true", items };
}
