// A bucket's static website (docs/self-hosting.md#website-endpoints): its configuration as the console edits it (index and
// error documents, or a redirect of every request; routing rules set with the S3 API are kept as
// they are), and the URLs the site answers on.
import { S3Error } from "./errors";
import { encodeSegment, type S3Client } from "./s3";
import { childText, children, parseXml, xmlEscape } from "./xml";

export interface WebsiteSettings {
  index: string;
  error: string;
  /** Redirect every request to this host (then no index or error document). */
  redirectHost: string;
  redirectProtocol: "" | "http" | "https";
  /** Routing rules, as their XML, kept when the documents change. */
  rules: string[];
}

const S3_XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/";

/** The bucket's website configuration, or null when it has none. */
export async function getWebsite(s3: S3Client, bucket: string): Promise<WebsiteSettings | null> {
  let text: string;
  try {
    text = await (await s3.request("GET", `/${encodeSegment(bucket)}`, { query: { website: "" } })).text();
  } catch (err) {
    if (err instanceof S3Error && err.code === "NoSuchWebsiteConfiguration") return null;
    throw err;
  }
  const doc = parseXml(text);
  const first = (name: string) => children(doc, name)[0];
  const index = first("IndexDocument");
  const error = first("ErrorDocument");
  const all = first("RedirectAllRequestsTo");
  const routing = first("RoutingRules");
  const protocol = all ? childText(all, "Protocol") : "";
  return {
    index: index ? childText(index, "Suffix") : "",
    error: error ? childText(error, "Key") : "",
    redirectHost: all ? childText(all, "HostName") : "",
    redirectProtocol: protocol === "http" || protocol === "https" ? protocol : "",
    rules: routing ? children(routing, "RoutingRule").map((r) => new XMLSerializer().serializeToString(r).replace(` xmlns="${S3_XMLNS}"`, "")) : [],
  };
}

/** The document PutBucketWebsite takes for `settings`: a redirect of every request, or the documents and the kept rules. */
export function websiteXml(settings: WebsiteSettings): string {
  const el = (name: string, value: string) => `<${name}>${xmlEscape(value)}</${name}>`;
  let body: string;
  if (settings.redirectHost !== "") {
    const protocol = settings.redirectProtocol === "" ? "" : el("Protocol", settings.redirectProtocol);
    body = `<RedirectAllRequestsTo>${el("HostName", settings.redirectHost)}${protocol}</RedirectAllRequestsTo>`;
  } else {
    body = `<IndexDocument>${el("Suffix", settings.index)}</IndexDocument>`;
    if (settings.error !== "") body += `<ErrorDocument>${el("Key", settings.error)}</ErrorDocument>`;
    if (settings.rules.length > 0) body += `<RoutingRules>${settings.rules.join("")}</RoutingRules>`;
  }
  return `<WebsiteConfiguration xmlns="${S3_XMLNS}">${body}</WebsiteConfiguration>`;
}

/** Stores `settings` as the bucket's website configuration (the gateway checks it: InvalidArgument with the reason). */
export async function saveWebsite(s3: S3Client, bucket: string, settings: WebsiteSettings): Promise<void> {
  await s3.request("PUT", `/${encodeSegment(bucket)}`, { query: { website: "" }, headers: { "content-type": "application/xml" }, body: websiteXml(settings) });
}

export async function deleteWebsite(s3: S3Client, bucket: string): Promise<void> {
  await s3.request("DELETE", `/${encodeSegment(bucket)}`, { query: { website: "" } });
}

/**
 * Where the site answers: on a host of its own, `<bucket>.website.<suffix>` (the suffix guessed
 * from the gateway's host: "localhost" for an address, else the host itself), and on the gateway
 * under `/_shardgate/website/<bucket>/` (sandboxed: for a quick look).
 */
export function websiteUrls(gateway: string, bucket: string): { host: string; path: string } {
  const url = new URL(gateway);
  const name = url.hostname;
  const address = /^[0-9.]+$/.test(name) || name.startsWith("[") || name === "localhost";
  const suffix = address ? "localhost" : name;
  return {
    host: `${url.protocol}//${bucket}.website.${suffix}${url.port ? `:${url.port}` : ""}/`,
    path: `${url.origin}/_shardgate/website/${encodeSegment(bucket)}/`,
  };
}
