// A bucket's website configuration (S3's PutBucketWebsite document): read and checked as S3 checks
// it, stored as JSON (the bucket's `website` setting), written back as S3's XML, and what the
// website endpoint (api/website-endpoint.ts) decides with it: the routing rule that matches a request, where
// a redirect goes. Pure functions, no I/O.
import { invalidArgument } from "../../s3-error";
import { element, xmlDocument } from "./xml";
import { childrenNamed, malformedXml, onlyChild, type XmlElement } from "./xml-parse";

export type WebProtocol = "http" | "https";

export interface WebsiteRedirect {
  protocol?: WebProtocol;
  hostName?: string;
  replaceKeyPrefixWith?: string;
  replaceKeyWith?: string;
  httpRedirectCode?: number;
}

export interface RoutingRule {
  condition?: { keyPrefixEquals?: string; httpErrorCodeReturnedEquals?: number };
  redirect: WebsiteRedirect;
}

export interface WebsiteConfig {
  indexSuffix?: string;
  errorKey?: string;
  redirectAll?: { hostName: string; protocol?: WebProtocol };
  routingRules: RoutingRule[];
}

/** S3's limit on routing rules, which bounds what each website request compares. */
export const MAX_ROUTING_RULES = 50;
/** The largest website document taken (S3's own are a few KiB; 50 rules of 1 KiB keys fit). */
export const MAX_WEBSITE_BYTES = 128 * 1024;
/** Keys, prefixes and replacements: S3's key length. */
const MAX_KEY_BYTES = 1024;

/** One optional child element's text, MalformedXML when repeated. */
const single = (el: XmlElement, name: string) => onlyChild(el, name)?.text;

/** A key, prefix or replacement: at most 1 KiB, no control characters (they would reach a Location header). */
function keyText(value: string, what: string): string {
  if (new TextEncoder().encode(value).length > MAX_KEY_BYTES) throw invalidArgument(`The ${what} is too long.`);
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) throw invalidArgument(`The ${what} is not well formed`);
  }
  return value;
}

/** A host name, with a port or not: letters, digits, dots and hyphens only (it goes into a Location header). */
function hostName(value: string | undefined): string {
  const host = (value ?? "").trim();
  if (host === "") throw malformedXml();
  if (!/^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})(?::[0-9]{1,5})?$/.test(host)) throw invalidArgument(`The HostName ${host.slice(0, 64)} is not valid.`);
  return host;
}

function protocol(value: string | undefined): WebProtocol | undefined {
  if (value === undefined) return undefined;
  const p = value.trim();
  if (p === "http" || p === "https") return p;
  throw invalidArgument("Invalid protocol, protocol can be http or https. If not defined the protocol will be selected automatically.");
}

/** A status code in [min, max), else S3's refusal naming what the code is for and which are `valid`. */
function statusCode(value: string, min: number, max: number, what: string, valid: string): number {
  const v = value.trim();
  const n = /^[0-9]{3}$/.test(v) ? Number(v) : Number.NaN;
  if (!(n >= min && n < max)) throw invalidArgument(`The provided HTTP ${what} code (${v.slice(0, 16)}) is not valid. Valid codes are ${valid}.`);
  return n;
}

const redirectCode = (v: string) => statusCode(v, 301, 400, "redirect", "3XX except 300");
const errorCode = (v: string) => statusCode(v, 400, 600, "error", "4XX or 5XX");

function parseCondition(el: XmlElement): RoutingRule["condition"] {
  const prefix = single(el, "KeyPrefixEquals");
  const code = single(el, "HttpErrorCodeReturnedEquals");
  if (prefix === undefined && code === undefined)
    throw invalidArgument("Condition cannot be empty. To redirect all requests without a condition, the condition element shouldn't be present.");
  return {
    ...(prefix !== undefined ? { keyPrefixEquals: keyText(prefix, "KeyPrefixEquals") } : {}),
    ...(code !== undefined ? { httpErrorCodeReturnedEquals: errorCode(code) } : {}),
  };
}

function parseRedirect(el: XmlElement): WebsiteRedirect {
  const host = single(el, "HostName");
  const proto = protocol(single(el, "Protocol"));
  const prefix = single(el, "ReplaceKeyPrefixWith");
  const key = single(el, "ReplaceKeyWith");
  const code = single(el, "HttpRedirectCode");
  if (host === undefined && proto === undefined && prefix === undefined && key === undefined && code === undefined)
    throw invalidArgument("Redirect must contain at least one of the following: HostName, Protocol, ReplaceKeyPrefixWith, ReplaceKeyWith, HttpRedirectCode.");
  if (prefix !== undefined && key !== undefined) throw invalidArgument("You can only define ReplaceKeyPrefix or ReplaceKey but not both.");
  return {
    ...(proto !== undefined ? { protocol: proto } : {}),
    ...(host !== undefined ? { hostName: hostName(host) } : {}),
    ...(prefix !== undefined ? { replaceKeyPrefixWith: keyText(prefix, "ReplaceKeyPrefixWith") } : {}),
    ...(key !== undefined ? { replaceKeyWith: keyText(key, "ReplaceKeyWith") } : {}),
    ...(code !== undefined ? { httpRedirectCode: redirectCode(code) } : {}),
  };
}

/**
 * Whether `rule` sends a request to a key it matches again, on the same host: a redirect loop
 * (a condition on the key's prefix alone, or none, and no HostName). S3 stores such rules and lets
 * browsers give up after 20 redirects; the gateway refuses them.
 */
export function loops(rule: RoutingRule): boolean {
  const { condition, redirect } = rule;
  if (redirect.hostName !== undefined || condition?.httpErrorCodeReturnedEquals !== undefined) return false;
  const prefix = condition?.keyPrefixEquals ?? "";
  if (redirect.replaceKeyWith !== undefined) return redirect.replaceKeyWith.startsWith(prefix);
  return (redirect.replaceKeyPrefixWith ?? prefix).startsWith(prefix);
}

function parseRule(el: XmlElement): RoutingRule {
  const condition = onlyChild(el, "Condition");
  const redirect = onlyChild(el, "Redirect");
  if (redirect === undefined) throw malformedXml();
  const rule: RoutingRule = { ...(condition ? { condition: parseCondition(condition) } : {}), redirect: parseRedirect(redirect) };
  if (loops(rule)) throw invalidArgument("The routing rule redirects requests to a key it matches again (a redirect loop).");
  return rule;
}

function parseRules(doc: XmlElement): RoutingRule[] {
  const container = onlyChild(doc, "RoutingRules");
  if (container === undefined) return [];
  const rules = childrenNamed(container, "RoutingRule");
  if (rules.length === 0) throw malformedXml();
  if (rules.length > MAX_ROUTING_RULES) throw invalidArgument(`The number of routing rules must not exceed ${MAX_ROUTING_RULES}.`);
  return rules.map(parseRule);
}

/** A WebsiteConfiguration document, checked as S3 checks it (MalformedXML, InvalidArgument). */
export function parseWebsiteXml(doc: XmlElement): WebsiteConfig {
  if (doc.name !== "WebsiteConfiguration") throw malformedXml();
  const all = onlyChild(doc, "RedirectAllRequestsTo");
  const index = onlyChild(doc, "IndexDocument");
  const error = onlyChild(doc, "ErrorDocument");
  const routing = onlyChild(doc, "RoutingRules");
  if (all !== undefined) {
    if (index || error || routing) throw invalidArgument("RedirectAllRequestsTo cannot be provided in conjunction with other Routing/Website configurations.");
    const proto = protocol(single(all, "Protocol"));
    return { redirectAll: { hostName: hostName(single(all, "HostName")), ...(proto ? { protocol: proto } : {}) }, routingRules: [] };
  }
  if (index === undefined) throw invalidArgument("A value for IndexDocument Suffix must be provided if RedirectAllRequestsTo is empty");
  const suffix = single(index, "Suffix");
  if (suffix === undefined || suffix === "" || suffix.includes("/")) throw invalidArgument("The IndexDocument Suffix is not well formed");
  const config: WebsiteConfig = { indexSuffix: keyText(suffix, "IndexDocument Suffix"), routingRules: parseRules(doc) };
  if (error !== undefined) {
    const key = single(error, "Key");
    if (key === undefined || key === "") throw invalidArgument("The ErrorDocument Key is not well formed");
    config.errorKey = keyText(key, "ErrorDocument Key");
  }
  return config;
}

function renderRedirect(r: WebsiteRedirect): string {
  return (
    (r.hostName !== undefined ? element("HostName", r.hostName) : "") +
    (r.httpRedirectCode !== undefined ? element("HttpRedirectCode", r.httpRedirectCode) : "") +
    (r.protocol !== undefined ? element("Protocol", r.protocol) : "") +
    (r.replaceKeyPrefixWith !== undefined ? element("ReplaceKeyPrefixWith", r.replaceKeyPrefixWith) : "") +
    (r.replaceKeyWith !== undefined ? element("ReplaceKeyWith", r.replaceKeyWith) : "")
  );
}

function renderRule(rule: RoutingRule): string {
  const c = rule.condition;
  const condition = c
    ? "<Condition>" +
      (c.httpErrorCodeReturnedEquals !== undefined ? element("HttpErrorCodeReturnedEquals", c.httpErrorCodeReturnedEquals) : "") +
      (c.keyPrefixEquals !== undefined ? element("KeyPrefixEquals", c.keyPrefixEquals) : "") +
      "</Condition>"
    : "";
  return `<RoutingRule>${condition}<Redirect>${renderRedirect(rule.redirect)}</Redirect></RoutingRule>`;
}

/** The configuration as GetBucketWebsite answers it. */
export function renderWebsiteXml(config: WebsiteConfig): string {
  let body = "";
  if (config.redirectAll) {
    const { hostName: host, protocol: proto } = config.redirectAll;
    body = `<RedirectAllRequestsTo>${element("HostName", host)}${proto ? element("Protocol", proto) : ""}</RedirectAllRequestsTo>`;
  } else {
    if (config.indexSuffix !== undefined) body += `<IndexDocument>${element("Suffix", config.indexSuffix)}</IndexDocument>`;
    if (config.errorKey !== undefined) body += `<ErrorDocument>${element("Key", config.errorKey)}</ErrorDocument>`;
    if (config.routingRules.length > 0) body += `<RoutingRules>${config.routingRules.map(renderRule).join("")}</RoutingRules>`;
  }
  return xmlDocument("WebsiteConfiguration", body);
}

/**
 * The first rule that applies to `key`: before the object is looked up (`errorCode` null) a rule
 * whose condition names no error code; after a failed lookup, one whose condition names that code
 * (and whose prefix, if any, the key has). At most MAX_ROUTING_RULES comparisons.
 */
export function matchRule(rules: readonly RoutingRule[], key: string, errorCode: number | null): RoutingRule | null {
  for (const rule of rules) {
    const c = rule.condition;
    const code = c?.httpErrorCodeReturnedEquals;
    if ((errorCode === null) !== (code === undefined)) continue;
    if (code !== undefined && code !== errorCode) continue;
    if (c?.keyPrefixEquals !== undefined && !key.startsWith(c.keyPrefixEquals)) continue;
    return rule;
  }
  return null;
}

/** A key as a URL path: each segment percent-encoded, the slashes kept. */
export function keyPath(key: string): string {
  return `/${key.split("/").map(encodeURIComponent).join("/")}`;
}

/**
 * Where a matching rule sends a request for `key` that came on `url`, and with which status; `base`:
 * the path before keys on this host (the path form's `/_shardgate/website/<bucket>`), kept unless
 * the rule names another host.
 */
export function ruleTarget(rule: RoutingRule, key: string, url: URL, base = ""): { location: string; status: number } {
  const r = rule.redirect;
  const proto = r.protocol ?? url.protocol.slice(0, -1);
  const host = r.hostName ?? url.host;
  const prefix = rule.condition?.keyPrefixEquals ?? "";
  const next =
    r.replaceKeyWith !== undefined ? r.replaceKeyWith : r.replaceKeyPrefixWith !== undefined ? r.replaceKeyPrefixWith + key.slice(prefix.length) : key;
  return { location: `${proto}://${host}${r.hostName === undefined ? base : ""}${keyPath(next)}`, status: r.httpRedirectCode ?? 301 };
}
