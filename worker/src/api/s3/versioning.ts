// GetBucketVersioning and PutBucketVersioning. A bucket starts unversioned; once versioning is
// enabled it can be suspended but never turned off again (as S3). What each state means for
// writes and deletes is in meta/versions.ts.
import { S3Error } from "../../s3-error";
import { bucketIndex, type RequestContext, type BucketAt } from "../http/context";
import { element, xmlResponse, xmlDocument } from "../format/xml";
import { childText, malformedXml, readXml } from "../format/xml-parse";

export async function getBucketVersioning(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const status = await bucketIndex(ctx, bucket).versioning();
  // A bucket that never had versioning answers an empty configuration.
  const body = status === null ? "" : element("Status", status);
  return xmlResponse(xmlDocument("VersioningConfiguration", body));
}

export async function putBucketVersioning(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const doc = await readXml(ctx.auth.body);
  if (doc.name !== "VersioningConfiguration") throw malformedXml();
  if (childText(doc, "MfaDelete")?.trim() === "Enabled") throw new S3Error("NotImplemented", "MFA delete is not implemented.");
  const status = childText(doc, "Status")?.trim();
  const index = bucketIndex(ctx, bucket);
  if (status === undefined) {
    // Nothing to change; the bucket must still exist.
    await index.versioning(); // NoSuchBucket unless it exists
    return new Response(null, { status: 200 });
  }
  if (status !== "Enabled" && status !== "Suspended") {
    throw new S3Error("IllegalVersioningConfigurationException", "The versioning configuration specified in the request is invalid.");
  }
  const result = await index.setVersioning(status);
  if (result === "locked") {
    throw new S3Error("InvalidBucketState", "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed.");
  }
  if (result === "replicating") {
    throw new S3Error("InvalidBucketState", "A replication configuration is present on this bucket, so the versioning state cannot be changed.");
  }
  return new Response(null, { status: 200 });
}
