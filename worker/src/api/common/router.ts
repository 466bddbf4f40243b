import { SHARD_PATH } from "../../shared/direct-protocol";

// Turns every S3 request into one Endpoint value that names its operation and parameters, so
// dispatch is exhaustive and an operation we do not implement is refused by name (Garage's design).

export type Endpoint =
  | { op: "ListBuckets" }
  | { op: "GetSessionToken" }
  | { op: "CreateBucket"; bucket: string }
  | { op: "HeadBucket"; bucket: string }
  | { op: "DeleteBucket"; bucket: string }
  | { op: "GetBucketLocation"; bucket: string }
  | { op: "GetBucketVersioning"; bucket: string }
  | { op: "PutBucketVersioning"; bucket: string }
  | { op: "ListObjectsV2"; bucket: string }
  | { op: "ListObjects"; bucket: string }
  | { op: "ListObjectVersions"; bucket: string }
  | { op: "GetObject"; bucket: string; key: string }
  | { op: "HeadObject"; bucket: string; key: string }
  | { op: "PutObject"; bucket: string; key: string }
  | { op: "PostObject"; bucket: string }
  | { op: "DeleteObject"; bucket: string; key: string }
  | { op: "DeleteObjects"; bucket: string }
  | { op: "CopyObject"; bucket: string; key: string }
  | { op: "GetObjectAttributes"; bucket: string; key: string }
  | { op: "CreateMultipartUpload"; bucket: string; key: string }
  | { op: "UploadPart"; bucket: string; key: string; uploadId: string; partNumber: string | null }
  | { op: "UploadPartCopy"; bucket: string; key: string; uploadId: string; partNumber: string | null }
  | { op: "CompleteMultipartUpload"; bucket: string; key: string; uploadId: string }
  | { op: "AbortMultipartUpload"; bucket: string; key: string; uploadId: string }
  | { op: "ListParts"; bucket: string; key: string; uploadId: string }
  | { op: "ListMultipartUploads"; bucket: string }
  | { op: "GetObjectTagging"; bucket: string; key: string }
  | { op: "PutObjectTagging"; bucket: string; key: string }
  | { op: "DeleteObjectTagging"; bucket: string; key: string }
  | { op: "GetBucketTagging"; bucket: string }
  | { op: "PutBucketTagging"; bucket: string }
  | { op: "DeleteBucketTagging"; bucket: string }
  | { op: "GetBucketLifecycleConfiguration"; bucket: string }
  | { op: "PutBucketLifecycleConfiguration"; bucket: string }
  | { op: "DeleteBucketLifecycle"; bucket: string }
  | { op: "GetObjectLockConfiguration"; bucket: string }
  | { op: "PutObjectLockConfiguration"; bucket: string }
  | { op: "GetObjectRetention"; bucket: string; key: string }
  | { op: "PutObjectRetention"; bucket: string; key: string }
  | { op: "GetObjectLegalHold"; bucket: string; key: string }
  | { op: "PutObjectLegalHold"; bucket: string; key: string }
  | { op: "GetBucketAcl"; bucket: string }
  | { op: "PutBucketAcl"; bucket: string }
  | { op: "GetObjectAcl"; bucket: string; key: string }
  | { op: "PutObjectAcl"; bucket: string; key: string }
  | { op: "GetBucketCors"; bucket: string }
  | { op: "PutBucketCors"; bucket: string }
  | { op: "DeleteBucketCors"; bucket: string }
  | { op: "GetBucketEncryption"; bucket: string }
  | { op: "PutBucketEncryption"; bucket: string }
  | { op: "DeleteBucketEncryption"; bucket: string }
  | { op: "GetBucketPolicy"; bucket: string }
  | { op: "PutBucketPolicy"; bucket: string }
  | { op: "DeleteBucketPolicy"; bucket: string }
  | { op: "GetBucketPolicyStatus"; bucket: string }
  | { op: "PreflightCors"; bucket: string }
  | { op: "CreateDirectUpload"; bucket: string; key: string }
  | { op: "CompleteDirectUpload"; bucket: string; key: string }
  | { op: "AbortDirectUpload"; bucket: string; key: string }
  | { op: "GetReadPlan"; bucket: string; key: string }
  | { op: "TransferShard"; bucket: string; token: string }
  | { op: "GetMetrics" }
  | { op: "Admin"; path: string }
  | { op: "NotImplemented"; name: string };

export interface Target {
  bucket: string | null;
  key: string | null;
}

/**
 * Splits host and path into bucket and key: virtual-hosted style (`bucket.<suffix>`) or path
 * style (`/bucket/key`). Keys keep every character, including leading, doubled and trailing
 * slashes.
 */
export function resolveTarget(url: URL, virtualHostSuffix: string): Target {
  const path = decodePath(url.pathname);
  const host = url.hostname.toLowerCase();
  const suffix = `.${virtualHostSuffix.toLowerCase()}`;
  if (host.endsWith(suffix) && host.length > suffix.length) {
    const key = path.slice(1);
    return { bucket: host.slice(0, -suffix.length), key: key === "" ? null : key };
  }
  const rest = path.slice(1);
  if (rest === "") return { bucket: null, key: null };
  const slash = rest.indexOf("/");
  if (slash < 0) return { bucket: rest, key: null };
  const key = rest.slice(slash + 1);
  return { bucket: rest.slice(0, slash), key: key === "" ? null : key };
}

function decodePath(pathname: string): string {
  try {
    return decodeURIComponent(pathname);
  } catch {
    return pathname;
  }
}

/** Sub-resources that name an operation we do not implement (yet), by method. */
const BUCKET_SUBRESOURCES: Record<string, string> = {
  acl: "BucketAcl",
  analytics: "BucketAnalyticsConfiguration",
  cors: "BucketCors",
  intelligentTiering: "BucketIntelligentTieringConfiguration",
  inventory: "BucketInventoryConfiguration",
  lifecycle: "BucketLifecycleConfiguration",
  logging: "BucketLogging",
  metrics: "BucketMetricsConfiguration",
  notification: "BucketNotificationConfiguration",
  "object-lock": "ObjectLockConfiguration",
  ownershipControls: "BucketOwnershipControls",
  publicAccessBlock: "PublicAccessBlock",
  replication: "BucketReplication",
  requestPayment: "BucketRequestPayment",
  tagging: "BucketTagging",
  website: "BucketWebsite",
  accelerate: "BucketAccelerateConfiguration",
};

const OBJECT_SUBRESOURCES: Record<string, string> = {
  acl: "ObjectAcl",
  attributes: "ObjectAttributes",
  "legal-hold": "ObjectLegalHold",
  retention: "ObjectRetention",
  tagging: "ObjectTagging",
  torrent: "ObjectTorrent",
  restore: "RestoreObject",
  select: "SelectObjectContent",
};

const VERB: Record<string, string> = { GET: "Get", HEAD: "Get", PUT: "Put", DELETE: "Delete", POST: "Post" };

/** The gateway's own signed endpoint (no bucket may start with "_", so it cannot shadow one). */
export const METRICS_PATH = "/_shardgate/metrics";
/** The admin API's paths: api/admin-app.ts routes within them. */
const ADMIN_PATHS = "/_shardgate/admin/";

/** The Endpoint for a request: the gateway's own endpoints first, then S3's. */
export function routeRequest(method: string, url: URL, virtualHostSuffix: string, headers: Headers): Endpoint {
  if (url.pathname === METRICS_PATH) return method === "GET" ? { op: "GetMetrics" } : notImplemented(`${method} on the metrics endpoint`);
  if (url.pathname.startsWith(ADMIN_PATHS)) return { op: "Admin", path: url.pathname.slice(ADMIN_PATHS.length) };
  if (url.pathname.startsWith(SHARD_PATH)) return routeShard(method, url.pathname.slice(SHARD_PATH.length));
  return route(method, resolveTarget(url, virtualHostSuffix), url.searchParams, headers);
}

export function route(method: string, target: Target, query: URLSearchParams, headers: Headers): Endpoint {
  const { bucket, key } = target;
  if (bucket === null) {
    if (method === "GET") return { op: "ListBuckets" };
    // STS (api/s3/sts.ts): GetSessionToken or AssumeRole, named by the form body's Action.
    return method === "POST" ? { op: "GetSessionToken" } : notImplemented(`${method} on the service`);
  }
  // Preflights are answered by the bucket's CORS rules, without credentials.
  if (method === "OPTIONS") return { op: "PreflightCors", bucket };
  if (key === null) return routeBucket(method, bucket, query, headers);
  return routeObject(method, bucket, key, query, headers);
}

function routeBucket(method: string, bucket: string, query: URLSearchParams, headers: Headers): Endpoint {
  if (query.has("cors")) {
    if (method === "GET") return { op: "GetBucketCors", bucket };
    if (method === "PUT") return { op: "PutBucketCors", bucket };
    if (method === "DELETE") return { op: "DeleteBucketCors", bucket };
  }
  if (query.has("tagging")) {
    if (method === "GET") return { op: "GetBucketTagging", bucket };
    if (method === "PUT") return { op: "PutBucketTagging", bucket };
    if (method === "DELETE") return { op: "DeleteBucketTagging", bucket };
  }
  if (query.has("lifecycle")) {
    if (method === "GET") return { op: "GetBucketLifecycleConfiguration", bucket };
    if (method === "PUT") return { op: "PutBucketLifecycleConfiguration", bucket };
    if (method === "DELETE") return { op: "DeleteBucketLifecycle", bucket };
  }
  if (query.has("object-lock")) {
    if (method === "GET") return { op: "GetObjectLockConfiguration", bucket };
    if (method === "PUT") return { op: "PutObjectLockConfiguration", bucket };
  }
  if (query.has("encryption")) {
    if (method === "GET") return { op: "GetBucketEncryption", bucket };
    if (method === "PUT") return { op: "PutBucketEncryption", bucket };
    if (method === "DELETE") return { op: "DeleteBucketEncryption", bucket };
  }
  if (query.has("policy")) {
    if (method === "GET") return { op: "GetBucketPolicy", bucket };
    if (method === "PUT") return { op: "PutBucketPolicy", bucket };
    if (method === "DELETE") return { op: "DeleteBucketPolicy", bucket };
  }
  if (query.has("policyStatus") && method === "GET") return { op: "GetBucketPolicyStatus", bucket };
  if (query.has("acl")) {
    if (method === "GET") return { op: "GetBucketAcl", bucket };
    if (method === "PUT") return { op: "PutBucketAcl", bucket };
  }
  for (const [name, op] of Object.entries(BUCKET_SUBRESOURCES)) {
    if (query.has(name)) return notImplemented(`${VERB[method] ?? method}${op}`);
  }
  if (query.has("uploads")) return method === "GET" ? { op: "ListMultipartUploads", bucket } : notImplemented(`${method} on uploads`);
  if (query.has("versions")) return method === "GET" ? { op: "ListObjectVersions", bucket } : notImplemented(`${method} on versions`);
  if (query.has("versioning")) {
    if (method === "GET") return { op: "GetBucketVersioning", bucket };
    return method === "PUT" ? { op: "PutBucketVersioning", bucket } : notImplemented(`${VERB[method] ?? method}BucketVersioning`);
  }
  if (query.has("delete")) return method === "POST" ? { op: "DeleteObjects", bucket } : notImplemented(`${method} on delete`);
  switch (method) {
    case "GET":
      if (query.has("location")) return { op: "GetBucketLocation", bucket };
      return query.get("list-type") === "2" ? { op: "ListObjectsV2", bucket } : { op: "ListObjects", bucket };
    case "HEAD":
      return { op: "HeadBucket", bucket };
    case "PUT":
      return { op: "CreateBucket", bucket };
    case "DELETE":
      return { op: "DeleteBucket", bucket };
    case "POST":
      // A browser form upload (presigned POST).
      if (/^multipart\/form-data\b/i.test(headers.get("content-type") ?? "")) return { op: "PostObject", bucket };
      return notImplemented(`${method} on a bucket`);
    default:
      return notImplemented(`${method} on a bucket`);
  }
}

function routeObject(method: string, bucket: string, key: string, query: URLSearchParams, headers: Headers): Endpoint {
  if (query.has("tagging")) {
    if (method === "GET") return { op: "GetObjectTagging", bucket, key };
    if (method === "PUT") return { op: "PutObjectTagging", bucket, key };
    if (method === "DELETE") return { op: "DeleteObjectTagging", bucket, key };
  }
  if (query.has("attributes") && method === "GET") return { op: "GetObjectAttributes", bucket, key };
  if (query.has("retention")) {
    if (method === "GET") return { op: "GetObjectRetention", bucket, key };
    if (method === "PUT") return { op: "PutObjectRetention", bucket, key };
  }
  if (query.has("legal-hold")) {
    if (method === "GET") return { op: "GetObjectLegalHold", bucket, key };
    if (method === "PUT") return { op: "PutObjectLegalHold", bucket, key };
  }
  if (query.has("acl")) {
    if (method === "GET") return { op: "GetObjectAcl", bucket, key };
    if (method === "PUT") return { op: "PutObjectAcl", bucket, key };
  }
  const direct = routeDirect(method, bucket, key, query);
  if (direct) return direct;
  for (const [name, op] of Object.entries(OBJECT_SUBRESOURCES)) {
    if (query.has(name)) return notImplemented(`${VERB[method] ?? method}${op}`);
  }
  const copy = headers.has("x-amz-copy-source");
  if (query.has("uploads")) return method === "POST" ? { op: "CreateMultipartUpload", bucket, key } : notImplemented(`${method} on uploads`);
  const uploadId = query.get("uploadId");
  if (uploadId !== null) {
    const partNumber = query.get("partNumber");
    switch (method) {
      case "GET":
        return { op: "ListParts", bucket, key, uploadId };
      case "PUT":
        return { op: copy ? "UploadPartCopy" : "UploadPart", bucket, key, uploadId, partNumber };
      case "POST":
        return { op: "CompleteMultipartUpload", bucket, key, uploadId };
      case "DELETE":
        return { op: "AbortMultipartUpload", bucket, key, uploadId };
      default:
        return notImplemented(`${method} on an upload`);
    }
  }
  switch (method) {
    case "GET":
      return { op: "GetObject", bucket, key };
    case "HEAD":
      return { op: "HeadObject", bucket, key };
    case "PUT":
      return copy ? { op: "CopyObject", bucket, key } : { op: "PutObject", bucket, key };
    case "DELETE":
      return { op: "DeleteObject", bucket, key };
    default:
      return notImplemented(`${method} on an object`);
  }
}

/** A shard file's URL: SHARD_PATH, the bucket, the grant (docs/browser-path.md). Preflights get the bucket's CORS rules. */
function routeShard(method: string, rest: string): Endpoint {
  const slash = rest.indexOf("/");
  if (slash <= 0) return notImplemented(`${method} on a shard URL without a bucket`);
  const bucket = decodePath(rest.slice(0, slash));
  if (method === "OPTIONS") return { op: "PreflightCors", bucket };
  return { op: "TransferShard", bucket, token: rest.slice(slash + 1) };
}

/** The browser path's requests on an object (docs/browser-path.md), or null for none. */
function routeDirect(method: string, bucket: string, key: string, query: URLSearchParams): Endpoint | null {
  const ops = [
    ["shardgate-upload", "POST", "CreateDirectUpload"],
    ["shardgate-commit", "POST", "CompleteDirectUpload"],
    ["shardgate-abort", "POST", "AbortDirectUpload"],
    ["shardgate-plan", "GET", "GetReadPlan"],
  ] as const;
  for (const [name, verb, op] of ops) {
    if (query.has(name)) return method === verb ? { op, bucket, key } : notImplemented(`${method} on ${name}`);
  }
  return null;
}

function notImplemented(name: string): Endpoint {
  return { op: "NotImplemented", name };
}
