// Put/Get/DeleteBucketWebsite: a bucket's static website configuration (index and error documents,
// a redirect of every request, routing rules), checked as S3 checks it (api/format/website-config.ts) and
// stored as JSON in the bucket's `website` setting, which the website endpoint (api/website-endpoint.ts)
// reads through the per-isolate cache of services/bucket-settings.ts.
import { S3Error } from "../../s3-error";
import { cachedSetting, setSetting } from "../../services/bucket-settings";
import { bucketIndex, type BucketAt, type RequestContext } from "../http/context";
import { MAX_WEBSITE_BYTES, parseWebsiteXml, renderWebsiteXml, storedWebsite, type WebsiteConfig } from "../format/website-config";
import { xmlResponse } from "../format/xml";
import { readXml } from "../format/xml-parse";

export async function putBucketWebsite(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const config = parseWebsiteXml(await readXml(ctx.auth.body, MAX_WEBSITE_BYTES));
  await setSetting(ctx.env, bucket, "website", JSON.stringify(config));
  return new Response(null, { status: 200 });
}

export async function getBucketWebsite(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const stored = await bucketIndex(ctx, bucket).setting("website");
  if (stored === null) throw new S3Error("NoSuchWebsiteConfiguration", "The specified bucket does not have a website configuration");
  return xmlResponse(renderWebsiteXml(storedWebsite(stored)));
}

export async function deleteBucketWebsite(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  await setSetting(ctx.env, bucket, "website", null);
  return new Response(null, { status: 204 });
}

/** The website configuration the endpoint serves by (cached per isolate up to 5 s); null: none, or no such bucket. */
export async function websiteConfig(ctx: Pick<RequestContext, "env">, bucket: string): Promise<WebsiteConfig | null> {
  const stored = await cachedSetting(ctx.env, bucket, "website");
  return stored === null ? null : storedWebsite(stored);
}
