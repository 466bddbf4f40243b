// The console's S3 client: every call is a SigV4-signed request (aws4fetch) to the gateway (service
// "s3", in the region the console's /config.json names: web/src/config.ts), on another origin than the console's (docs/console.md), signed with
// temporary credentials held in memory only. Uploads of bodies are signed here and sent with
// XMLHttpRequest, the only browser API that reports upload progress.
import { AwsClient } from "aws4fetch";
import { errorFrom, errorFromText, S3Error } from "./errors";
import { childText, children, dateOf, parseXml, xmlEscape } from "./xml";

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** Temporary credentials' token (x-amz-security-token). */
  sessionToken?: string;
}

/** What signing in gives: temporary credentials for the key that signed in, never its own secret. */
export interface Session extends Required<Credentials> {
  /** The key the session acts as (the one entered). */
  parentKeyId: string;
  expiration: Date;
}

export interface Bucket {
  name: string;
  created: Date | null;
}

export interface ObjectEntry {
  key: string;
  size: number;
  lastModified: Date | null;
  etag: string;
}

export interface ListPage {
  folders: string[];
  objects: ObjectEntry[];
  nextToken: string | null;
}

export interface Part {
  partNumber: number;
  size: number;
  etag: string;
  checksum: string | null;
}

export interface ObjectHead {
  size: number;
  etag: string;
  contentType: string;
  lastModified: Date | null;
  checksums: Record<string, string>;
  metadata: Record<string, string>;
  headers: Headers;
}

/** One version of an object (or a delete marker), as ListObjectVersions shows it. */
export interface ObjectVersion {
  key: string;
  versionId: string;
  isLatest: boolean;
  deleteMarker: boolean;
  size: number;
  etag: string;
  lastModified: Date | null;
}

/** A bucket's versioning: "Enabled", "Suspended", or null (never enabled). */
export type VersioningStatus = "Enabled" | "Suspended" | null;

export interface XhrResult {
  status: number;
  header(name: string): string | null;
  text: string;
}

/** The region requests are signed for: the gateway's (SHARDGATE_REGION), as /config.json says (setRegion). */
let region = "us-east-1";

/** Sets the region every later signature uses (web/src/config.ts, from the console's /config.json). */
export function setRegion(name: string): void {
  region = name;
}

/** The region requests are signed for. */
export function signingRegion(): string {
  return region;
}
/** How long a console session lasts (s): the most the gateway gives temporary credentials. */
export const SESSION_SECONDS = 3600;

/**
 * Exchanges an access key for temporary credentials (STS GetSessionToken on the gateway, signed for
 * service "sts"). The key's secret is used for this one signature and kept nowhere.
 */
export async function startSession(endpoint: string, key: Credentials, seconds = SESSION_SECONDS): Promise<Session> {
  const sts = new AwsClient({ accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey, service: "sts", region, retries: 0 });
  const asked = Date.now();
  const res = await sts.fetch(new URL("/", endpoint).toString(), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-8" },
    body: `Action=GetSessionToken&Version=2011-06-15&DurationSeconds=${seconds}`,
  });
  if (!res.ok) throw await errorFrom(res);
  const root = parseXml(await res.text());
  const creds = root.getElementsByTagName("Credentials")[0];
  const expires = dateOf(creds ? childText(creds, "Expiration") : "");
  if (!creds || !expires) throw new S3Error(502, "MalformedResponse", "The gateway did not return temporary credentials");
  // When it ends by this browser's clock (which may differ from the gateway's): the duration asked
  // for, counted from the asking.
  const expiration = new Date(asked + seconds * 1000);
  return {
    accessKeyId: childText(creds, "AccessKeyId"),
    secretAccessKey: childText(creds, "SecretAccessKey"),
    sessionToken: childText(creds, "SessionToken"),
    expiration,
    parentKeyId: key.accessKeyId,
  };
}

function signer(c: Credentials): AwsClient {
  return new AwsClient({
    accessKeyId: c.accessKeyId,
    secretAccessKey: c.secretAccessKey,
    sessionToken: c.sessionToken,
    service: "s3",
    region,
    retries: 0,
  });
}

/** RFC 3986 encoding of one path segment (what SigV4 and S3 expect). */
export function encodeSegment(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export function objectPath(bucket: string, key = ""): string {
  return `/${encodeSegment(bucket)}/${key.split("/").map(encodeSegment).join("/")}`;
}

export type Query = Record<string, string | number | null | undefined>;

/**
 * How the gateway refuses temporary credentials what would outlast them (a bucket's settings, the
 * admin API's changes): such a request is sent again signed with the key itself, asked for.
 */
const SESSION_REFUSAL = "Temporary credentials cannot ";

export class S3Client {
  private aws: AwsClient;
  private creds: Credentials;
  /**
   * Asks for the key's own secret when the gateway refuses the session a request (`why`: its
   * message): a client signing with it, for that one request, or null when dismissed.
   */
  askForKey: ((why: string) => Promise<S3Client | null>) | null = null;

  /** `origin`: the gateway (not this page's origin). */
  constructor(
    credentials: Credentials,
    readonly origin: string,
  ) {
    this.creds = credentials;
    this.aws = signer(credentials);
  }

  get credentials(): Credentials {
    return this.creds;
  }

  /** Seconds until the session's credentials end (null for credentials that do not). */
  secondsLeft(): number | null {
    const ends = (this.creds as Partial<Session>).expiration;
    return ends ? Math.max(1, Math.floor((ends.getTime() - Date.now()) / 1000)) : null;
  }

  /** Signs from now on with `credentials` (a renewed session). */
  setCredentials(credentials: Credentials): void {
    this.creds = credentials;
    this.aws = signer(credentials);
  }

  url(path: string, query: Query = {}): string {
    const u = new URL(path, this.origin);
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) u.searchParams.set(k, String(v));
    // S3 wants %20, not "+", in the query; SigV4 signs the same encoding.
    return u.toString().replace(/\+/g, "%20");
  }

  /** A signed request; throws S3Error (with a readable message) unless the status is 2xx. */
  async request(
    method: string,
    path: string,
    opts: { query?: Query; headers?: Record<string, string>; body?: string | Uint8Array; signal?: AbortSignal; ok?: (status: number) => boolean } = {},
  ): Promise<Response> {
    const res = await this.aws.fetch(this.url(path, opts.query), {
      method,
      headers: opts.headers,
      body: opts.body as BodyInit | undefined,
      signal: opts.signal,
    });
    if (opts.ok ? opts.ok(res.status) : res.ok) return res;
    const error = await errorFrom(res);
    const key = await this.keyFor(error);
    if (key) return key.request(method, path, opts);
    throw error;
  }

  /**
   * A client signing with the key itself when `error` is the gateway refusing the session (asked
   * for), else null. Dismissing the question is said as such, not as the refusal: AccessDenied's
   * sentence ("This key may not do that …") would send the user after a right, not a secret.
   */
  private async keyFor(error: S3Error): Promise<S3Client | null> {
    if (!this.askForKey || error.code !== "AccessDenied" || !error.detail.startsWith(SESSION_REFUSAL)) return null;
    const key = await this.askForKey(error.detail);
    if (!key) throw new Error("Not done: this change is signed with the secret key itself, which was not given.");
    return key;
  }

  /**
   * A client for one action of several requests (a heal's batches, a rebalance's steps): the key's
   * secret, when the gateway refuses the session one of them, is asked for once and then signs the
   * action's remaining requests too, instead of being asked for again at each.
   */
  forOneAction(): S3Client {
    const action = new S3Client(this.creds, this.origin);
    const ask = this.askForKey;
    if (ask)
      action.askForKey = async (why) => {
        const key = await ask(why);
        if (key) action.setCredentials(key.credentials);
        return key;
      };
    return action;
  }

  /** Signs a request whose body is sent separately (UNSIGNED-PAYLOAD): method, URL and headers. */
  async signed(method: string, path: string, query: Query, headers: Record<string, string>): Promise<{ url: string; headers: [string, string][] }> {
    const req = await this.aws.sign(this.url(path, query), { method, headers: { ...headers, "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } });
    return { url: req.url, headers: [...req.headers.entries()] };
  }

  /** A presigned GET URL valid for `expiresSeconds` (1 s … 7 days). */
  async presign(bucket: string, key: string, expiresSeconds: number, query: Query = {}): Promise<string> {
    const req = await this.aws.sign(this.url(objectPath(bucket, key), { ...query, "X-Amz-Expires": Math.round(expiresSeconds) }), {
      method: "GET",
      aws: { signQuery: true },
    });
    return req.url;
  }

  /** Sends a body with XMLHttpRequest, reporting upload progress; rejects on network failure or abort. */
  async sendWithProgress(
    method: string,
    path: string,
    query: Query,
    headers: Record<string, string>,
    body: Blob,
    onProgress: (loaded: number) => void,
    signal?: AbortSignal,
  ): Promise<XhrResult> {
    const { url, headers: signedHeaders } = await this.signed(method, path, query, headers);
    return new Promise<XhrResult>((resolve, reject) => {
      if (signal?.aborted) return reject(new DOMException("Cancelled", "AbortError"));
      const xhr = new XMLHttpRequest();
      xhr.open(method, url);
      for (const [k, v] of signedHeaders) if (k.toLowerCase() !== "host") xhr.setRequestHeader(k, v);
      xhr.upload.onprogress = (e) => onProgress(e.loaded);
      xhr.onload = () => resolve({ status: xhr.status, header: (n) => xhr.getResponseHeader(n), text: xhr.responseText });
      xhr.onerror = () => reject(new TypeError("network error"));
      xhr.onabort = () => reject(new DOMException("Cancelled", "AbortError"));
      signal?.addEventListener("abort", () => xhr.abort(), { once: true });
      xhr.send(body);
    });
  }

  // --- buckets ---------------------------------------------------------------------------------

  async listBuckets(): Promise<Bucket[]> {
    const root = parseXml(await (await this.request("GET", "/")).text());
    const list = root.getElementsByTagName("Bucket");
    return Array.from(list).map((b) => ({ name: childText(b, "Name"), created: dateOf(childText(b, "CreationDate")) }));
  }

  /** Creates a bucket; with `objectLock`, versioned for good and able to lock versions (WORM). */
  async createBucket(name: string, objectLock = false): Promise<void> {
    await this.request("PUT", `/${encodeSegment(name)}`, { headers: objectLock ? { "x-amz-bucket-object-lock-enabled": "true" } : {} });
  }

  async getVersioning(bucket: string): Promise<VersioningStatus> {
    const root = parseXml(await (await this.request("GET", `/${encodeSegment(bucket)}`, { query: { versioning: "" } })).text());
    const status = childText(root, "Status");
    return status === "Enabled" || status === "Suspended" ? status : null;
  }

  async setVersioning(bucket: string, status: "Enabled" | "Suspended"): Promise<void> {
    const body = `<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>${status}</Status></VersioningConfiguration>`;
    await this.request("PUT", `/${encodeSegment(bucket)}`, { query: { versioning: "" }, body });
  }

  /** Every version of `key` (and its delete markers), newest first, page after page. */
  async listKeyVersions(bucket: string, key: string): Promise<ObjectVersion[]> {
    const out: ObjectVersion[] = [];
    let keyMarker: string | null = null;
    let versionMarker: string | null = null;
    for (;;) {
      const query: Query = { versions: "", prefix: key, "key-marker": keyMarker, "version-id-marker": versionMarker };
      const root = parseXml(await (await this.request("GET", `/${encodeSegment(bucket)}`, { query })).text());
      for (const el of Array.from(root.children)) {
        if (el.localName !== "Version" && el.localName !== "DeleteMarker") continue;
        if (childText(el, "Key") !== key) continue; // longer keys that share the prefix
        out.push({
          key,
          versionId: childText(el, "VersionId"),
          isLatest: childText(el, "IsLatest") === "true",
          deleteMarker: el.localName === "DeleteMarker",
          size: Number(childText(el, "Size") || 0),
          etag: childText(el, "ETag").replace(/"/g, ""),
          lastModified: dateOf(childText(el, "LastModified")),
        });
      }
      if (childText(root, "IsTruncated") !== "true") return out;
      keyMarker = childText(root, "NextKeyMarker");
      versionMarker = childText(root, "NextVersionIdMarker") || null;
      if (keyMarker > key) return out;
    }
  }

  /** Makes an old version current again: a copy of it onto its own key (a new version). */
  async restoreVersion(bucket: string, key: string, versionId: string): Promise<void> {
    const source = `${objectPath(bucket, key)}?versionId=${encodeURIComponent(versionId)}`;
    await this.request("PUT", objectPath(bucket, key), { headers: { "x-amz-copy-source": source } });
  }

  /** Deletes one version (or delete marker) for good. */
  async deleteVersion(bucket: string, key: string, versionId: string): Promise<void> {
    await this.request("DELETE", objectPath(bucket, key), { query: { versionId } });
  }

  async deleteBucket(name: string): Promise<void> {
    await this.request("DELETE", `/${encodeSegment(name)}`);
  }

  // --- objects ---------------------------------------------------------------------------------

  /** One page of ListObjectsV2 with "/" as delimiter: folders and objects directly under prefix. */
  async listPage(bucket: string, prefix: string, maxKeys: number, token: string | null, delimiter = "/"): Promise<ListPage> {
    const res = await this.request("GET", `/${encodeSegment(bucket)}`, {
      query: { "list-type": 2, prefix, delimiter: delimiter || undefined, "max-keys": maxKeys, "continuation-token": token ?? undefined },
    });
    const root = parseXml(await res.text());
    const folders = children(root, "CommonPrefixes").map((p) => childText(p, "Prefix"));
    const objects = children(root, "Contents").map((c) => ({
      key: childText(c, "Key"),
      size: Number(childText(c, "Size")),
      lastModified: dateOf(childText(c, "LastModified")),
      etag: childText(c, "ETag"),
    }));
    const truncated = childText(root, "IsTruncated") === "true";
    return { folders, objects, nextToken: truncated ? childText(root, "NextContinuationToken") || null : null };
  }

  async headObject(bucket: string, key: string): Promise<ObjectHead> {
    const res = await this.request("HEAD", objectPath(bucket, key), { headers: { "x-amz-checksum-mode": "ENABLED" } });
    const checksums: Record<string, string> = {};
    const metadata: Record<string, string> = {};
    res.headers.forEach((value, name) => {
      if (name.startsWith("x-amz-checksum-") && name !== "x-amz-checksum-type") checksums[name.slice("x-amz-checksum-".length).toUpperCase()] = value;
      if (name.startsWith("x-amz-meta-")) metadata[name.slice("x-amz-meta-".length)] = value;
    });
    const type = res.headers.get("x-amz-checksum-type");
    if (type) checksums.TYPE = type;
    return {
      size: Number(res.headers.get("content-length") ?? "0"),
      etag: res.headers.get("etag") ?? "",
      contentType: res.headers.get("content-type") ?? "",
      lastModified: dateOf(res.headers.get("last-modified") ?? ""),
      checksums,
      metadata,
      headers: res.headers,
    };
  }

  /** The first `bytes` of an object (for text previews). */
  async getText(bucket: string, key: string, bytes: number): Promise<{ text: string; truncated: boolean }> {
    const res = await this.request("GET", objectPath(bucket, key), { headers: { range: `bytes=0-${bytes - 1}` } });
    const total = Number(res.headers.get("content-range")?.split("/")[1] ?? res.headers.get("content-length") ?? 0);
    const buf = await res.arrayBuffer();
    return { text: new TextDecoder().decode(buf), truncated: total > buf.byteLength };
  }

  /** Replaces an object's user metadata by copying it onto itself (moves no bytes). */
  async replaceMetadata(bucket: string, key: string, head: ObjectHead, metadata: Record<string, string>): Promise<void> {
    const headers: Record<string, string> = {
      "x-amz-copy-source": `/${encodeSegment(bucket)}/${key.split("/").map(encodeSegment).join("/")}`,
      "x-amz-metadata-directive": "REPLACE",
    };
    // REPLACE replaces the content headers too: carry them over.
    for (const name of ["content-type", "content-disposition", "content-encoding", "content-language", "cache-control", "expires"]) {
      const v = head.headers.get(name);
      if (v) headers[name] = v;
    }
    for (const [k, v] of Object.entries(metadata)) headers[`x-amz-meta-${k.toLowerCase()}`] = v;
    const res = await this.request("PUT", objectPath(bucket, key), { headers });
    const text = await res.text();
    // CopyObject may answer 200 with an <Error> body.
    if (/<Error>/.test(text)) throw errorFromText(500, text);
  }

  /** DeleteObjects: up to 1000 keys per call. Returns the keys that failed, with why. */
  async deleteObjects(bucket: string, keys: string[], checksumCrc32: (body: Uint8Array) => string): Promise<{ key: string; message: string }[]> {
    const failed: { key: string; message: string }[] = [];
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      const xml = `<?xml version="1.0" encoding="UTF-8"?><Delete><Quiet>true</Quiet>${batch.map((k) => `<Object><Key>${xmlEscape(k)}</Key></Object>`).join("")}</Delete>`;
      const body = new TextEncoder().encode(xml);
      const res = await this.request("POST", `/${encodeSegment(bucket)}`, {
        query: { delete: "" },
        headers: { "content-type": "application/xml", "x-amz-checksum-crc32": checksumCrc32(body) },
        body,
      });
      const root = parseXml(await res.text());
      for (const e of children(root, "Error"))
        failed.push({
          key: childText(e, "Key"),
          message: errorFromText(400, `<Error><Code>${xmlEscape(childText(e, "Code"))}</Code><Message>${xmlEscape(childText(e, "Message"))}</Message></Error>`)
            .message,
        });
    }
    return failed;
  }

  // --- multipart -------------------------------------------------------------------------------

  async createMultipart(bucket: string, key: string, contentType: string, algorithm: string): Promise<string> {
    const res = await this.request("POST", objectPath(bucket, key), {
      query: { uploads: "" },
      headers: { "content-type": contentType || "application/octet-stream", "x-amz-checksum-algorithm": algorithm },
    });
    const id = childText(parseXml(await res.text()), "UploadId");
    if (!id) throw new S3Error(502, "MalformedResponse", "The gateway did not return an upload id");
    return id;
  }

  /** Every part uploaded so far (follows ListParts' pagination). */
  async listParts(bucket: string, key: string, uploadId: string, algorithm: string): Promise<Part[]> {
    const parts: Part[] = [];
    let marker: string | undefined;
    for (;;) {
      const res = await this.request("GET", objectPath(bucket, key), { query: { uploadId, "part-number-marker": marker } });
      const root = parseXml(await res.text());
      for (const p of children(root, "Part")) {
        parts.push({
          partNumber: Number(childText(p, "PartNumber")),
          size: Number(childText(p, "Size")),
          etag: childText(p, "ETag"),
          checksum: childText(p, `Checksum${algorithm}`) || null,
        });
      }
      if (childText(root, "IsTruncated") !== "true") return parts;
      marker = childText(root, "NextPartNumberMarker");
      if (!marker) return parts;
    }
  }

  async completeMultipart(bucket: string, key: string, uploadId: string, algorithm: string, parts: Part[]): Promise<void> {
    const xml =
      `<CompleteMultipartUpload>` +
      parts
        .sort((a, b) => a.partNumber - b.partNumber)
        .map(
          (p) =>
            `<Part><PartNumber>${p.partNumber}</PartNumber><ETag>${xmlEscape(p.etag)}</ETag>${p.checksum ? `<Checksum${algorithm}>${p.checksum}</Checksum${algorithm}>` : ""}</Part>`,
        )
        .join("") +
      `</CompleteMultipartUpload>`;
    const res = await this.request("POST", objectPath(bucket, key), { query: { uploadId }, headers: { "content-type": "application/xml" }, body: xml });
    const text = await res.text();
    if (/<Error>/.test(text)) throw errorFromText(500, text);
  }

  async abortMultipart(bucket: string, key: string, uploadId: string): Promise<void> {
    await this.request("DELETE", objectPath(bucket, key), { query: { uploadId }, ok: (s) => (s >= 200 && s < 300) || s === 404 });
  }

  // --- gateway admin endpoints (JSON) ------------------------------------------------------------

  /** GET or POST an admin endpoint. Resolves null when the gateway does not have it (404/501). */
  async admin<T>(method: "GET" | "POST", path: string, query: Query = {}): Promise<T | null> {
    const res = await this.aws.fetch(this.url(`/_shardgate/admin/${path}`, query), { method });
    const json = (res.headers.get("content-type") ?? "").includes("json");
    if (!res.ok) {
      const err = await errorFrom(res);
      const key = await this.keyFor(err);
      if (key) return key.admin(method, path, query);
      // An older gateway routes an unknown admin path as S3 (bucket "_shardgate"): not available.
      if ([400, 404, 405, 501].includes(res.status) && err.code !== "NoSuchKey" && !(json && res.status === 404)) return null;
      throw err;
    }
    if (!json) return null;
    return (await res.json()) as T;
  }
}
