// Every operation the gateway answers, declared once: how a request reaches it (its routes), what
// it takes to be let in (the right by grants and the action a bucket policy names it by:
// docs/access.md), its parameters parsed into typed fields, and its handler. The router
// (api/http/router.ts), authorization (api/http/permissions.ts) and dispatch (api/handle.ts)
// read this table; adding an operation is an entry here, its handler in api/s3/ or api/admin/ and its
// request in the tests' twin of this table (docs/development.md, "Adding an S3 operation").
import type { PolicyAction } from "../auth/policy";
import {
  BYPASS_GOVERNANCE,
  CONDITIONAL_WRITE_HEADERS,
  DELETE_OBJECT,
  IF_MATCH_READS,
  type Permission,
  READ_OBJECT,
  WRITE_OBJECT,
  WRITE_OBJECT_HEADERS,
  REPLICA_MARK,
} from "./http/permissions";
import type { BucketAt, ObjectAt, RequestContext, ShardAt } from "./http/context";
import { compileRouter, type Endpoint, type Route, type RouteRequest, type Routed, type Scope, type SubresourceNames } from "./http/router";
import { parseVersionId, partParams, readPartParams, uploadParams } from "./format/object-request";
import { adminApp } from "./admin-app";
import { getMetrics } from "./admin/metrics";
import { getBucketAcl, getBucketOwnershipControls, getObjectAcl, putBucketAcl, putBucketOwnershipControls, putObjectAcl } from "./s3/acl";
import { getObjectAttributes } from "./s3/attributes";
import { createBucket, deleteBucket, getBucketLocation, headBucket } from "./s3/bucket";
import { bucketCors, preflightCors } from "./s3/bucket-cors";
import { bucketLifecycle } from "./s3/bucket-lifecycle";
import { getBucketNotification, putBucketNotification } from "./s3/bucket-notification";
import { deleteBucketReplication, getBucketReplication, putBucketReplication } from "./s3/bucket-replication";
import { deleteBucketPolicy, getBucketPolicy, getBucketPolicyStatus, putBucketPolicy } from "./s3/bucket-policy";
import { bucketEncryption, bucketTagging } from "./s3/bucket-settings";
import { bucketWebsite } from "./s3/bucket-website";
import { copyObject } from "./s3/copy";
import { deleteObject, deleteObjects } from "./s3/delete";
import { abortDirectUpload, completeDirectUpload, createDirectUpload, getReadPlan, transferShard } from "./s3/direct";
import { getObject } from "./s3/get";
import { listBuckets, listObjects, listObjectVersions } from "./s3/list";
import {
  abortMultipartUpload,
  completeMultipartUpload,
  createMultipartUpload,
  listMultipartUploads,
  listParts,
  uploadPart,
  uploadPartCopy,
} from "./s3/multipart";
import {
  getObjectLegalHold,
  getObjectLockConfiguration,
  getObjectRetention,
  putObjectLegalHold,
  putObjectLockConfiguration,
  putObjectRetention,
} from "./s3/object-lock";
import { deleteObjectTagging, getObjectTagging, putObjectTagging } from "./s3/object-tagging";
import { postObject } from "./s3/post-object";
import { putObject } from "./s3/put";
import { getSessionToken } from "./s3/sts";
import { getBucketVersioning, putBucketVersioning } from "./s3/versioning";

/** Where an operation acts, typed by its scope. */
type AtOf<S extends Scope> = S extends "object" ? ObjectAt : S extends "bucket" ? BucketAt : S extends "shard" ? ShardAt : object;

/**
 * How a request proves who sent it: a signature (SigV4 or V2) or none (anonymous, then a bucket
 * policy's Allow); `self`: the operation checks what the request carries itself (a form's signed
 * policy, a shard URL's ticket); `none`: nothing at all (a CORS preflight); `bearer`: also a bearer
 * token (`SHARDGATE_METRICS_TOKEN`, what a Prometheus scraper can send).
 */
export type Authentication = "signature" | "self" | "none" | "bearer";

/** One operation, as dispatch sees it. */
export interface Operation {
  routes: readonly Route[];
  permission: Permission;
  authentication: Authentication;
  /** Refused to temporary credentials whatever `sessionsMay` derives (minting another session, a retention, a bucket and its grant). */
  refusedToSessions?: true;
  /**
   * Signed with AWS4-HMAC-SHA256 only: the gateway's own operations, whose parameters (`shardgate-*`,
   * the admin API's) no V2 signer signs, so a V2 URL could be turned into them or changed unseen.
   */
  v4Only?: true;
  /**
   * What a page of another site may make a browser send (api/middleware.ts crossSite): by default it
   * reads, and writes where the bucket's CORS rules allow its origin and method; "console": never
   * (the admin API, the metrics, STS: the console's and non-browser clients' alone); "any": always
   * (a form upload, bounded by its signed policy).
   */
  pages?: "console" | "any";
  /** Speaks STS rather than S3: its form body is what is signed (read before authentication), and its errors are STS's XML. */
  sts?: true;
  run(ctx: RequestContext, routed: Routed<string>): Promise<Response>;
}

/** Methods that change nothing. */
export const READ_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Whether temporary credentials may do `operation` by `method` with `headers` (docs/security.md,
 * "Sessions create nothing that lasts"): they read, and read and write objects within their key's
 * rights, but do not make what outlasts them: a bucket's configuration (what the owner right
 * changes: its policy, lifecycle, lock, versioning, CORS, website, notifications …), the gateway's
 * (what only the root key may: nodes, keys and rights, replication, the admin API's jobs), a bucket
 * (and its key's grant on it), a retention, the replica mark, or another session. The key itself
 * signs those (the console asks for its secret for that one request).
 */
export function sessionsMay(operation: Pick<Operation, "permission" | "refusedToSessions">, method: string, headers: Headers): boolean {
  const { need, headers: checks = [] } = operation.permission;
  if (operation.refusedToSessions || checks.some((c) => c.refusedToSessions && c.names.some((name) => headers.has(name)))) return false;
  return READ_METHODS.has(method) || (need !== "owner" && need !== "root");
}

/** The typed target of a routed request (the router sets bucket and key for the scopes that have them). */
function at(routed: Routed<string>, query: URLSearchParams): AtOf<Scope> {
  const bucket = routed.bucket ?? "";
  switch (routed.scope) {
    case "object": {
      const versionId = query.get("versionId");
      return { bucket, key: routed.key ?? "", versionId: versionId === null ? undefined : parseVersionId(versionId) };
    }
    case "shard":
      return { bucket, ticket: routed.rest ?? "" };
    case "bucket":
      return { bucket };
    default:
      return {};
  }
}

// Conditions routes look at besides the sub-resource.
const copies = (r: RouteRequest) => r.headers.has("x-amz-copy-source");
const listV2 = (r: RouteRequest) => r.query.get("list-type") === "2";
const form = (r: RouteRequest) => /^multipart\/form-data\b/i.test(r.headers.get("content-type") ?? "");

// Permissions: the right by grants and the action a bucket policy names the operation by (and the
// action of its versioned form, when the request names a version).
const read = (action: PolicyAction, versioned?: PolicyAction): Permission => ({ need: "read", action, ...(versioned ? { versioned } : {}) });
const write = (action: PolicyAction, versioned?: PolicyAction): Permission => ({ need: "write", action, ...(versioned ? { versioned } : {}) });
const owner = (action: PolicyAction): Permission => ({ need: "owner", action });
const anyKey: Permission = { need: "anyKey", action: null };
const root: Permission = { need: "root", action: null };

/**
 * Declares operations in `scope`: `bucket(route, permission, handler, { params, authentication })`.
 * The handler gets where the operation acts, typed by its scope, and its parameters, parsed once by
 * `params` (after authorization: a malformed one is refused only to whoever may ask).
 */
function on<S extends Scope>(scope: S) {
  return <P = undefined>(
    route: Omit<Route, "on">,
    permission: Permission,
    handle: (ctx: RequestContext, at: AtOf<S>, params: P) => Promise<Response>,
    options: { params?: (query: URLSearchParams) => P; authentication?: Authentication } & Pick<
      Operation,
      "refusedToSessions" | "v4Only" | "pages" | "sts"
    > = {},
  ): Operation => ({
    routes: [{ ...route, on: scope }],
    permission,
    authentication: options.authentication ?? "signature",
    ...(options.refusedToSessions ? { refusedToSessions: true } : {}),
    ...(options.v4Only ? { v4Only: true } : {}),
    ...(options.pages ? { pages: options.pages } : {}),
    ...(options.sts ? { sts: true } : {}),
    run: (ctx, routed) => {
      const query = ctx.url.searchParams;
      return handle(ctx, at(routed, query) as AtOf<S>, (options.params ? options.params(query) : undefined) as P);
    },
  });
}
/**
 * Declares an operation reached on the bucket of whatever it names (a CORS preflight, on a bucket,
 * an object or a shard URL): its handler gets the bucket alone, and nothing else of the request is
 * parsed.
 */
function onBucketOf(scopes: readonly ("bucket" | "object" | "shard")[]) {
  return (
    route: Omit<Route, "on">,
    permission: Permission,
    handle: (ctx: RequestContext, at: BucketAt) => Promise<Response>,
    authentication: Authentication,
  ): Operation => ({
    routes: scopes.map((on) => ({ ...route, on })),
    permission,
    authentication,
    run: (ctx, routed) => handle(ctx, { bucket: routed.bucket ?? "" }),
  });
}

/** The gateway's own operations: AWS4-HMAC-SHA256 only (Operation.v4Only). */
const V4_ONLY = { v4Only: true } as const;
/** The gateway's own API: AWS4-HMAC-SHA256 only, and never from a page of another site. */
const OWN_API = { v4Only: true, pages: "console" } as const;

const service = on("service");
const bucket = on("bucket");
const object = on("object");
const shard = on("shard");
const metrics = on("metrics");
const admin = on("admin");

/** The one table. Within a scope, sub-resources are tried in the order they appear here. */
export const OPERATIONS = {
  // The service; STS on `POST /` (GetSessionToken or AssumeRole, named by the form's Action):
  // temporary credentials with the signing key's own rights, never from temporary credentials.
  ListBuckets: service({ method: "GET" }, anyKey, listBuckets),
  GetSessionToken: service({ method: "POST" }, anyKey, getSessionToken, { refusedToSessions: true, pages: "console", sts: true }),

  // CORS preflights: answered from the bucket's rules, without credentials; also for shard URLs.
  PreflightCors: onBucketOf(["bucket", "object", "shard"])({ method: "OPTIONS", anyQuery: true }, anyKey, preflightCors, "none"),

  // A bucket's settings.
  GetBucketCors: bucket({ method: "GET", sub: "cors" }, read("s3:GetBucketCORS"), bucketCors.get),
  PutBucketCors: bucket({ method: "PUT", sub: "cors" }, owner("s3:PutBucketCORS"), bucketCors.put),
  DeleteBucketCors: bucket({ method: "DELETE", sub: "cors" }, owner("s3:PutBucketCORS"), bucketCors.delete),
  GetBucketTagging: bucket({ method: "GET", sub: "tagging" }, read("s3:GetBucketTagging"), bucketTagging.get),
  PutBucketTagging: bucket({ method: "PUT", sub: "tagging" }, owner("s3:PutBucketTagging"), bucketTagging.put),
  DeleteBucketTagging: bucket({ method: "DELETE", sub: "tagging" }, owner("s3:PutBucketTagging"), bucketTagging.delete),
  GetBucketLifecycleConfiguration: bucket({ method: "GET", sub: "lifecycle" }, read("s3:GetLifecycleConfiguration"), bucketLifecycle.get),
  PutBucketLifecycleConfiguration: bucket({ method: "PUT", sub: "lifecycle" }, owner("s3:PutLifecycleConfiguration"), bucketLifecycle.put),
  DeleteBucketLifecycle: bucket({ method: "DELETE", sub: "lifecycle" }, owner("s3:PutLifecycleConfiguration"), bucketLifecycle.delete),
  GetObjectLockConfiguration: bucket({ method: "GET", sub: "object-lock" }, read("s3:GetBucketObjectLockConfiguration"), getObjectLockConfiguration),
  PutObjectLockConfiguration: bucket({ method: "PUT", sub: "object-lock" }, owner("s3:PutBucketObjectLockConfiguration"), putObjectLockConfiguration),
  GetBucketEncryption: bucket({ method: "GET", sub: "encryption" }, read("s3:GetEncryptionConfiguration"), bucketEncryption.get),
  PutBucketEncryption: bucket({ method: "PUT", sub: "encryption" }, owner("s3:PutEncryptionConfiguration"), bucketEncryption.put),
  DeleteBucketEncryption: bucket({ method: "DELETE", sub: "encryption" }, owner("s3:PutEncryptionConfiguration"), bucketEncryption.delete),
  GetBucketNotificationConfiguration: bucket({ method: "GET", sub: "notification" }, owner("s3:GetBucketNotification"), getBucketNotification),
  PutBucketNotificationConfiguration: bucket({ method: "PUT", sub: "notification" }, owner("s3:PutBucketNotification"), putBucketNotification),
  GetBucketReplication: bucket({ method: "GET", sub: "replication" }, owner("s3:GetReplicationConfiguration"), getBucketReplication),
  // Replication writes into other buckets for good, with the gateway's authority: the root key's to set (api/s3/bucket-replication.ts).
  PutBucketReplication: bucket({ method: "PUT", sub: "replication" }, root, putBucketReplication),
  DeleteBucketReplication: bucket({ method: "DELETE", sub: "replication" }, root, deleteBucketReplication),
  GetBucketWebsite: bucket({ method: "GET", sub: "website" }, owner("s3:GetBucketWebsite"), bucketWebsite.get),
  PutBucketWebsite: bucket({ method: "PUT", sub: "website" }, owner("s3:PutBucketWebsite"), bucketWebsite.put),
  DeleteBucketWebsite: bucket({ method: "DELETE", sub: "website" }, owner("s3:DeleteBucketWebsite"), bucketWebsite.delete),
  GetBucketPolicy: bucket({ method: "GET", sub: "policy" }, owner("s3:GetBucketPolicy"), getBucketPolicy),
  PutBucketPolicy: bucket({ method: "PUT", sub: "policy" }, owner("s3:PutBucketPolicy"), putBucketPolicy),
  DeleteBucketPolicy: bucket({ method: "DELETE", sub: "policy" }, owner("s3:DeleteBucketPolicy"), deleteBucketPolicy),
  GetBucketPolicyStatus: bucket({ method: "GET", sub: "policyStatus" }, owner("s3:GetBucketPolicyStatus"), getBucketPolicyStatus),
  GetBucketAcl: bucket({ method: "GET", sub: "acl" }, read("s3:GetBucketAcl"), getBucketAcl),
  PutBucketAcl: bucket({ method: "PUT", sub: "acl" }, owner("s3:PutBucketAcl"), putBucketAcl),
  // Always BucketOwnerEnforced (ACLs disabled, api/format/acls.ts): DeleteBucketOwnershipControls, which would enable them, is NotImplemented.
  GetBucketOwnershipControls: bucket({ method: "GET", sub: "ownershipControls" }, read("s3:GetBucketOwnershipControls"), getBucketOwnershipControls),
  PutBucketOwnershipControls: bucket({ method: "PUT", sub: "ownershipControls" }, owner("s3:PutBucketOwnershipControls"), putBucketOwnershipControls),
  ListMultipartUploads: bucket({ method: "GET", sub: "uploads" }, write("s3:ListBucketMultipartUploads"), listMultipartUploads),
  ListObjectVersions: bucket({ method: "GET", sub: "versions" }, read("s3:ListBucketVersions"), listObjectVersions),
  GetBucketVersioning: bucket({ method: "GET", sub: "versioning" }, read("s3:GetBucketVersioning"), getBucketVersioning),
  PutBucketVersioning: bucket({ method: "PUT", sub: "versioning" }, owner("s3:PutBucketVersioning"), putBucketVersioning),
  // Judged per key as S3 does: api/s3/delete.ts checks each key with DELETE_OBJECT.
  DeleteObjects: bucket({ method: "POST", sub: "delete" }, { ...DELETE_OBJECT, perKey: true, bypass: BYPASS_GOVERNANCE }, deleteObjects),
  GetBucketLocation: bucket({ method: "GET", sub: "location" }, read("s3:GetBucketLocation"), getBucketLocation),

  // A bucket itself. A browser form upload (presigned POST) carries its credentials in the form:
  // the operation checks them.
  ListObjectsV2: bucket({ method: "GET", when: listV2 }, read("s3:ListBucket"), listObjects),
  ListObjects: bucket({ method: "GET" }, read("s3:ListBucket"), listObjects),
  HeadBucket: bucket({ method: "HEAD" }, read("s3:ListBucket"), headBucket),
  CreateBucket: bucket({ method: "PUT" }, { need: "createBucket", action: null }, createBucket, { refusedToSessions: true }),
  DeleteBucket: bucket({ method: "DELETE" }, owner("s3:DeleteBucket"), deleteBucket),
  PostObject: bucket({ method: "POST", when: form }, WRITE_OBJECT, postObject, { authentication: "self", pages: "any" }),

  // An object's sub-resources.
  GetObjectTagging: object({ method: "GET", sub: "tagging" }, read("s3:GetObjectTagging", "s3:GetObjectVersionTagging"), getObjectTagging),
  PutObjectTagging: object({ method: "PUT", sub: "tagging" }, write("s3:PutObjectTagging", "s3:PutObjectVersionTagging"), putObjectTagging),
  DeleteObjectTagging: object({ method: "DELETE", sub: "tagging" }, write("s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging"), deleteObjectTagging),
  GetObjectAttributes: object({ method: "GET", sub: "attributes" }, read("s3:GetObjectAttributes", "s3:GetObjectVersionAttributes"), getObjectAttributes),
  GetObjectRetention: object({ method: "GET", sub: "retention" }, read("s3:GetObjectRetention"), getObjectRetention),
  PutObjectRetention: object({ method: "PUT", sub: "retention" }, { ...write("s3:PutObjectRetention"), bypass: BYPASS_GOVERNANCE }, putObjectRetention, {
    refusedToSessions: true,
  }),
  GetObjectLegalHold: object({ method: "GET", sub: "legal-hold" }, read("s3:GetObjectLegalHold"), getObjectLegalHold),
  PutObjectLegalHold: object({ method: "PUT", sub: "legal-hold" }, write("s3:PutObjectLegalHold"), putObjectLegalHold),
  GetObjectAcl: object({ method: "GET", sub: "acl" }, read("s3:GetObjectAcl", "s3:GetObjectVersionAcl"), getObjectAcl),
  PutObjectAcl: object({ method: "PUT", sub: "acl" }, write("s3:PutObjectAcl", "s3:PutObjectVersionAcl"), putObjectAcl),

  // The direct path (docs/direct-path.md): sessions, commits and read plans on an object; shard
  // URLs, authorized by their ticket alone.
  CreateDirectUpload: object({ method: "POST", sub: "shardgate-upload" }, WRITE_OBJECT, createDirectUpload, V4_ONLY),
  CompleteDirectUpload: object({ method: "POST", sub: "shardgate-commit" }, { ...WRITE_OBJECT, headers: [IF_MATCH_READS] }, completeDirectUpload, V4_ONLY),
  AbortDirectUpload: object({ method: "POST", sub: "shardgate-abort" }, write("s3:AbortMultipartUpload"), abortDirectUpload, V4_ONLY),
  GetReadPlan: object({ method: "GET", sub: "shardgate-plan" }, READ_OBJECT, getReadPlan, V4_ONLY),
  TransferShard: shard({}, anyKey, transferShard, { authentication: "self" }),

  // Multipart uploads.
  CreateMultipartUpload: object({ method: "POST", sub: "uploads" }, { ...WRITE_OBJECT, headers: WRITE_OBJECT_HEADERS }, createMultipartUpload),
  UploadPartCopy: object({ method: "PUT", sub: "uploadId", when: copies }, { ...WRITE_OBJECT, source: READ_OBJECT }, uploadPartCopy, { params: partParams }),
  UploadPart: object({ method: "PUT", sub: "uploadId" }, WRITE_OBJECT, uploadPart, { params: partParams }),
  CompleteMultipartUpload: object({ method: "POST", sub: "uploadId" }, { ...WRITE_OBJECT, headers: [IF_MATCH_READS, REPLICA_MARK] }, completeMultipartUpload, {
    params: uploadParams,
  }),
  AbortMultipartUpload: object({ method: "DELETE", sub: "uploadId" }, write("s3:AbortMultipartUpload"), abortMultipartUpload, { params: uploadParams }),
  ListParts: object({ method: "GET", sub: "uploadId" }, write("s3:ListMultipartUploadParts"), listParts, { params: uploadParams }),

  // An object itself.
  GetObject: object({ method: "GET" }, READ_OBJECT, (ctx, o, p) => getObject(ctx, o, p.partNumber, false), { params: readPartParams }),
  HeadObject: object({ method: "HEAD" }, READ_OBJECT, (ctx, o, p) => getObject(ctx, o, p.partNumber, true), { params: readPartParams }),
  CopyObject: object({ method: "PUT", when: copies }, { ...WRITE_OBJECT, source: READ_OBJECT, headers: CONDITIONAL_WRITE_HEADERS }, copyObject),
  PutObject: object({ method: "PUT" }, { ...WRITE_OBJECT, headers: [...CONDITIONAL_WRITE_HEADERS, REPLICA_MARK] }, putObject),
  DeleteObject: object({ method: "DELETE" }, { ...DELETE_OBJECT, bypass: BYPASS_GOVERNANCE, headers: [REPLICA_MARK] }, deleteObject),

  // The gateway's own: its metrics (also with the scraper's bearer token) and the admin API
  // (api/admin-app.ts routes within it).
  GetMetrics: metrics({ method: "GET" }, root, (ctx) => getMetrics(ctx.env, (p) => ctx.waitUntil(p)), { authentication: "bearer", ...OWN_API }),
  Admin: admin({}, root, async (ctx) => adminApp.fetch(ctx.request, { ctx }), OWN_API),
} satisfies Record<string, Operation>;

export type OperationName = keyof typeof OPERATIONS;

/**
 * The sub-resources S3 names operations by, whether implemented here or not: a request naming one
 * that no route takes (with its method) is refused NotImplemented by S3's name for it.
 */
export const SUBRESOURCES: SubresourceNames = {
  bucket: {
    acl: "BucketAcl",
    analytics: "BucketAnalyticsConfiguration",
    cors: "BucketCors",
    encryption: "BucketEncryption",
    intelligentTiering: "BucketIntelligentTieringConfiguration",
    inventory: "BucketInventoryConfiguration",
    lifecycle: "BucketLifecycleConfiguration",
    logging: "BucketLogging",
    metrics: "BucketMetricsConfiguration",
    notification: "BucketNotificationConfiguration",
    "object-lock": "ObjectLockConfiguration",
    ownershipControls: "BucketOwnershipControls",
    policy: "BucketPolicy",
    policyStatus: "BucketPolicyStatus",
    publicAccessBlock: "PublicAccessBlock",
    replication: "BucketReplication",
    requestPayment: "BucketRequestPayment",
    tagging: "BucketTagging",
    versioning: "BucketVersioning",
    website: "BucketWebsite",
    accelerate: "BucketAccelerateConfiguration",
  },
  object: {
    acl: "ObjectAcl",
    attributes: "ObjectAttributes",
    "legal-hold": "ObjectLegalHold",
    retention: "ObjectRetention",
    tagging: "ObjectTagging",
    torrent: "ObjectTorrent",
    restore: "RestoreObject",
    select: "SelectObjectContent",
  },
};

const routes = (Object.entries(OPERATIONS) as [OperationName, Operation][]).flatMap(([name, o]) => o.routes.map((r): [OperationName, Route] => [name, r]));

/** The operation a request names (api/http/router.ts), or NotImplemented by name. */
export const routeRequest: (method: string, url: URL, virtualHostSuffix: string, headers: Headers) => Endpoint<OperationName> = compileRouter(
  routes,
  SUBRESOURCES,
);
