// Get/Put/DeleteBucketEncryption: a bucket's default server-side encryption. AES256 (SSE-S3) is
// applied to every new object that does not ask for SSE-C itself; SSE-KMS is refused by name.
import { S3Error } from "../../s3-error";
import { bucketEncryption, setBucketEncryption } from "../../services/encryption";
import type { RequestContext, BucketAt } from "../http/context";
import { S3_XMLNS, XML_DECLARATION, xmlResponse } from "../format/xml";
import { childrenNamed, childText, malformedXml, parseXmlBytes, readXmlBody } from "../format/xml-parse";

export async function getBucketEncryption(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const stored = await bucketEncryption(ctx.env, bucket);
  if (stored === null) throw new S3Error("ServerSideEncryptionConfigurationNotFoundError", "The server side encryption configuration was not found");
  const rule =
    "<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault><BucketKeyEnabled>false</BucketKeyEnabled></Rule>";
  return xmlResponse(`${XML_DECLARATION}<ServerSideEncryptionConfiguration xmlns="${S3_XMLNS}">${rule}</ServerSideEncryptionConfiguration>`);
}

export async function putBucketEncryption(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const doc = parseXmlBytes(await readXmlBody(ctx.auth.body));
  if (doc.name !== "ServerSideEncryptionConfiguration") throw malformedXml();
  const rules = childrenNamed(doc, "Rule");
  if (rules.length !== 1) throw malformedXml();
  const apply = childrenNamed(rules[0] as (typeof rules)[number], "ApplyServerSideEncryptionByDefault")[0];
  const algorithm = (apply ? childText(apply, "SSEAlgorithm") : undefined) ?? "";
  if (algorithm.startsWith("aws:kms")) throw new S3Error("NotImplemented", "SSE-KMS is not supported: use AES256 (SSE-S3).");
  if (algorithm !== "AES256") throw malformedXml();
  await setBucketEncryption(ctx.env, bucket, "AES256");
  return new Response(null, { status: 200 });
}

export async function deleteBucketEncryption(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  await setBucketEncryption(ctx.env, bucket, null);
  return new Response(null, { status: 204 });
}
