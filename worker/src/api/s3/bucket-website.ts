// Put/Get/DeleteBucketWebsite: a bucket's static website configuration (index and error documents,
// a redirect of every request, routing rules), checked as S3 checks it (api/format/website-config.ts) and
// stored as JSON in the bucket's `website` setting, which the website endpoint (api/website-endpoint.ts)
// reads through the per-isolate cache of services/bucket-settings.ts.
import { cachedSetting } from "../../services/bucket-settings";
import type { RequestContext } from "../http/context";
import { MAX_WEBSITE_BYTES, parseWebsiteXml, renderWebsiteXml, type WebsiteConfig } from "../format/website-config";
import { readXml } from "../format/xml-parse";
import { settingOperations } from "../http/setting-operations";

export const bucketWebsite = settingOperations<WebsiteConfig>({
  name: "website",
  read: async (body) => parseWebsiteXml(await readXml(body, MAX_WEBSITE_BYTES)),
  render: renderWebsiteXml,
  missing: ["NoSuchWebsiteConfiguration", "The specified bucket does not have a website configuration"],
});

/** The website configuration the endpoint serves by (cached per isolate up to 5 s); null: none, or no such bucket. */
export async function websiteConfig(ctx: Pick<RequestContext, "env">, bucket: string): Promise<WebsiteConfig | null> {
  const stored = await cachedSetting(ctx.env, bucket, "website");
  return stored === null ? null : (JSON.parse(stored) as WebsiteConfig);
}
