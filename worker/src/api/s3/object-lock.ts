// Object lock's own operations: Get/PutObjectLockConfiguration (enabling lock on a versioned
// bucket, default retention), Get/PutObjectRetention and Get/PutObjectLegalHold of a version. The
// rules are applied in the bucket's Durable Object (meta/object-lock.ts) in the transaction that
// changes the version.
import type { LockConfig, ObjectLock } from "../../meta/object-lock";
import { noSuchKey, S3Error } from "../../s3-error";
import { existingObject } from "../../services/objects";
import { bucketIndex, type RequestContext, type BucketAt, type ObjectAt } from "../http/context";
import { bypassGovernance, parseMode, parseRetainUntil } from "../format/object-lock-headers";
import { element, xmlResponse, xmlDocument } from "../format/xml";
import { childrenNamed, childText, malformedXml, readXml } from "../format/xml-parse";

const missingLockConfiguration = () => new S3Error("InvalidRequest", "Bucket is missing Object Lock Configuration");

export async function getObjectLockConfiguration(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const config = await bucketIndex(ctx, bucket).objectLock();
  if (config === null) throw new S3Error("ObjectLockConfigurationNotFoundError", "Object Lock configuration does not exist for this bucket");
  const d = config.defaultRetention;
  const rule = d
    ? `<Rule><DefaultRetention>${element("Mode", d.mode)}${d.days !== undefined ? element("Days", d.days) : element("Years", d.years ?? 0)}</DefaultRetention></Rule>`
    : "";
  return xmlResponse(xmlDocument("ObjectLockConfiguration", `${element("ObjectLockEnabled", "Enabled")}${rule}`));
}

export async function putObjectLockConfiguration(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const doc = await readXml(ctx.auth.body);
  if (doc.name !== "ObjectLockConfiguration" || childText(doc, "ObjectLockEnabled")?.trim() !== "Enabled") throw malformedXml();
  const config: LockConfig = { enabled: true };
  const rule = childrenNamed(doc, "Rule")[0];
  if (rule) {
    const retention = childrenNamed(rule, "DefaultRetention")[0];
    if (!retention) throw malformedXml();
    const mode = parseMode(childText(retention, "Mode")?.trim());
    const days = childText(retention, "Days")?.trim();
    const years = childText(retention, "Years")?.trim();
    if ((days === undefined) === (years === undefined)) throw malformedXml();
    const n = Number(days ?? years);
    if (!/^\d+$/.test(days ?? years ?? "") || !Number.isSafeInteger(n) || n < 1) {
      throw new S3Error("InvalidArgument", "Default retention period must be a positive integer value.");
    }
    config.defaultRetention = { mode, ...(days !== undefined ? { days: n } : { years: n }) };
  }
  const result = await bucketIndex(ctx, bucket).setObjectLock(config);
  if (result === "not-versioned") throw new S3Error("InvalidBucketState", "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration");
  return new Response(null, { status: 200 });
}

/** A version's lock, for the Get operations (its bucket must have object lock). */
async function lockOf(ctx: RequestContext, { bucket, key, versionId }: ObjectAt): Promise<ObjectLock> {
  const [found, config] = await Promise.all([existingObject(ctx, bucket, key, versionId), bucketIndex(ctx, bucket).objectLock()]);
  if (!config) throw missingLockConfiguration();
  return found.object.lock ?? {};
}

const noLockOnObject = () => new S3Error("NoSuchObjectLockConfiguration", "The specified object does not have a ObjectLock configuration");

export async function getObjectRetention(ctx: RequestContext, object: ObjectAt): Promise<Response> {
  const lock = await lockOf(ctx, object);
  if (lock.mode === undefined || lock.until === undefined) throw noLockOnObject();
  return xmlResponse(xmlDocument("Retention", `${element("Mode", lock.mode)}${element("RetainUntilDate", new Date(lock.until).toISOString())}`));
}

export async function getObjectLegalHold(ctx: RequestContext, object: ObjectAt): Promise<Response> {
  const lock = await lockOf(ctx, object);
  if (lock.legalHold === undefined) throw noLockOnObject();
  return xmlResponse(xmlDocument("LegalHold", element("Status", lock.legalHold ? "ON" : "OFF")));
}

export async function putObjectRetention(ctx: RequestContext, object: ObjectAt): Promise<Response> {
  const doc = await readXml(ctx.auth.body);
  if (doc.name !== "Retention") throw malformedXml();
  const modeText = childText(doc, "Mode")?.trim();
  const untilText = childText(doc, "RetainUntilDate")?.trim();
  // An empty <Retention/> removes the retention (as far as its mode allows).
  let retention: Pick<ObjectLock, "mode" | "until"> = {};
  if (modeText !== undefined || untilText !== undefined) {
    if (modeText === undefined || untilText === undefined) throw malformedXml();
    retention = { mode: parseMode(modeText), until: parseRetainUntil(untilText, Date.now()) };
  }
  await changeLock(ctx, object, { retention });
  return new Response(null, { status: 200 });
}

export async function putObjectLegalHold(ctx: RequestContext, object: ObjectAt): Promise<Response> {
  const doc = await readXml(ctx.auth.body);
  const status = doc.name === "LegalHold" ? childText(doc, "Status")?.trim() : undefined;
  if (status !== "ON" && status !== "OFF") throw malformedXml();
  await changeLock(ctx, object, { legalHold: status === "ON" });
  return new Response(null, { status: 200 });
}

async function changeLock(
  ctx: RequestContext,
  { bucket, key, versionId }: ObjectAt,
  change: { retention: Pick<ObjectLock, "mode" | "until"> } | { legalHold: boolean },
): Promise<void> {
  const outcome = await bucketIndex(ctx, bucket).setVersionLock(key, versionId, change, await bypassGovernance(ctx, bucket, key));
  switch (outcome.result) {
    case "ok":
      return;
    case "no-lock":
      throw missingLockConfiguration();
    case "no-key":
      throw noSuchKey();
    case "no-version":
      throw new S3Error("NoSuchVersion", "The specified version does not exist.");
    case "marker":
      throw new S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.");
    case "denied":
      throw new S3Error("AccessDenied", outcome.reason);
  }
}
