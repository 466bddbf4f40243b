// The operations table's test twin: one request for each operation of api/operations.ts, in one
// shape every suite that walks the operations builds from. A Record over every operation name, with
// no Partial and no list of names left out, so an operation added without its request fails to
// compile (operations.test.ts plants one to show it). operations.test.ts routes every request;
// access-keys.test.ts sends them with each right on a bucket, policy-enforcement.test.ts with each
// policy action, guarantee-sessions.test.ts with temporary credentials. A suite that does not apply
// to an operation tells so from the operation itself (its scope, authentication, right or action),
// never by its name.
//
// The requests are real: a bucket that holds OBJECT and COPY_SOURCE answers each as S3 would (or
// refuses it for what it says, never for being malformed), without deleting either. A request that
// changes something writes w.txt or copy.txt, deletes gone.txt (which is never there), uploads to mp
// under an upload that does not exist, or sets a setting of the bucket.
import type { OperationName } from "../../worker/src/api/operations";
import type { Method } from "../../worker/src/api/http/router";

/** The object the requests read, tag, lock and plan reads of: the bucket must hold it. */
export const OBJECT = "o.txt";
/** The object a copy reads, untagged (a copy of tags needs tagging actions besides): the bucket must hold it. */
export const COPY_SOURCE = "src.txt";

/** Where the requests are sent. */
export interface Target {
  bucket: string;
  /** A version of the object the request names (`?versionId`, or a DeleteObjects entry's VersionId). */
  version?: string | null;
  /** A version of a copy's source (in `x-amz-copy-source`). */
  sourceVersion?: string | null;
}

/** An operation's request, declared once for any bucket. */
export interface Sample {
  method: Method;
  /** The object the request names in the bucket; without key, path or shard, the request names the bucket. */
  key?: string;
  /** The query: the sub-resource and its parameters, without the `?`. */
  query?: string;
  /** A path outside any bucket: the service's, or the gateway's own (its metrics, its admin API). */
  path?: string;
  /** A shard URL in the bucket: the ticket that follows the bucket in it. */
  shard?: string;
  headers?: Record<string, string>;
  /** The object a copy reads, in the same bucket (`x-amz-copy-source`, with the target's source version). */
  copyFrom?: string;
  /** The body, or how it is made for a target (a policy names its bucket, a batch the version). */
  body?: string | ((target: Target) => string);
  /** S3 requires the body's Content-MD5. */
  md5?: true;
}

/** A request ready to send: its path (path style) and the init of a fetch. */
export interface OperationRequest {
  path: string;
  /** The same request's path in virtual-hosted style (the bucket in the host); null when it names no bucket. */
  hostedPath: string | null;
  init: { method: Method; headers: Headers; body?: string };
}

const UPLOAD = "2~notAnUpload";
const FORM = { "content-type": "multipart/form-data; boundary=x" };
const ACL = { "x-amz-acl": "private" };
const TAGS = "<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>";

/** One request each operation answers. */
export const REQUESTS: Record<OperationName, Sample> = {
  ListBuckets: { method: "GET", path: "/" },
  GetSessionToken: {
    method: "POST",
    path: "/",
    headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-8" },
    body: "Action=GetSessionToken&Version=2011-06-15",
  },
  PreflightCors: { method: "OPTIONS", key: OBJECT, headers: { origin: "https://elsewhere.example", "access-control-request-method": "GET" } },
  GetBucketCors: { method: "GET", query: "cors" },
  PutBucketCors: {
    method: "PUT",
    query: "cors",
    body: "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
    md5: true,
  },
  DeleteBucketCors: { method: "DELETE", query: "cors" },
  GetBucketTagging: { method: "GET", query: "tagging" },
  PutBucketTagging: { method: "PUT", query: "tagging", body: TAGS },
  DeleteBucketTagging: { method: "DELETE", query: "tagging" },
  GetBucketLifecycleConfiguration: { method: "GET", query: "lifecycle" },
  PutBucketLifecycleConfiguration: {
    method: "PUT",
    query: "lifecycle",
    body: "<LifecycleConfiguration><Rule><ID>r</ID><Filter><Prefix>tmp/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>9</Days></Expiration></Rule></LifecycleConfiguration>",
    md5: true,
  },
  DeleteBucketLifecycle: { method: "DELETE", query: "lifecycle" },
  GetObjectLockConfiguration: { method: "GET", query: "object-lock" },
  PutObjectLockConfiguration: {
    method: "PUT",
    query: "object-lock",
    body: "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>",
  },
  GetBucketEncryption: { method: "GET", query: "encryption" },
  PutBucketEncryption: {
    method: "PUT",
    query: "encryption",
    body: "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>",
  },
  DeleteBucketEncryption: { method: "DELETE", query: "encryption" },
  GetBucketNotificationConfiguration: { method: "GET", query: "notification" },
  PutBucketNotificationConfiguration: { method: "PUT", query: "notification", body: "<NotificationConfiguration/>" },
  GetBucketReplication: { method: "GET", query: "replication" },
  PutBucketReplication: { method: "PUT", query: "replication", body: "<ReplicationConfiguration/>" },
  DeleteBucketReplication: { method: "DELETE", query: "replication" },
  GetBucketWebsite: { method: "GET", query: "website" },
  PutBucketWebsite: {
    method: "PUT",
    query: "website",
    body: "<WebsiteConfiguration><IndexDocument><Suffix>index.html</Suffix></IndexDocument></WebsiteConfiguration>",
  },
  DeleteBucketWebsite: { method: "DELETE", query: "website" },
  GetBucketPolicy: { method: "GET", query: "policy" },
  // Replaces whatever policy the bucket has with one that lets nobody anything.
  PutBucketPolicy: {
    method: "PUT",
    query: "policy",
    body: ({ bucket }) =>
      JSON.stringify({
        Version: "2012-10-17",
        Statement: [{ Effect: "Allow", Principal: { AWS: "SGNOBODY" }, Action: "s3:GetObject", Resource: `arn:aws:s3:::${bucket}/none/*` }],
      }),
  },
  DeleteBucketPolicy: { method: "DELETE", query: "policy" },
  GetBucketPolicyStatus: { method: "GET", query: "policyStatus" },
  GetBucketAcl: { method: "GET", query: "acl" },
  PutBucketAcl: { method: "PUT", query: "acl", headers: ACL },
  GetBucketOwnershipControls: { method: "GET", query: "ownershipControls" },
  PutBucketOwnershipControls: {
    method: "PUT",
    query: "ownershipControls",
    body: "<OwnershipControls><Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership></Rule></OwnershipControls>",
  },
  ListMultipartUploads: { method: "GET", query: "uploads" },
  ListObjectVersions: { method: "GET", query: "versions" },
  GetBucketVersioning: { method: "GET", query: "versioning" },
  // Suspending: refused (409) where object lock keeps versioning on.
  PutBucketVersioning: { method: "PUT", query: "versioning", body: "<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>" },
  DeleteObjects: {
    method: "POST",
    query: "delete",
    body: ({ version }) => `<Delete><Object><Key>gone.txt</Key>${version ? `<VersionId>${version}</VersionId>` : ""}</Object></Delete>`,
    md5: true,
  },
  GetBucketLocation: { method: "GET", query: "location" },
  ListObjectsV2: { method: "GET", query: "list-type=2" },
  ListObjects: { method: "GET" },
  HeadBucket: { method: "HEAD" },
  CreateBucket: { method: "PUT" },
  // Not empty: 409 once allowed.
  DeleteBucket: { method: "DELETE" },
  PostObject: { method: "POST", headers: FORM },
  GetObjectTagging: { method: "GET", key: OBJECT, query: "tagging" },
  PutObjectTagging: { method: "PUT", key: OBJECT, query: "tagging", body: TAGS },
  DeleteObjectTagging: { method: "DELETE", key: OBJECT, query: "tagging" },
  GetObjectAttributes: { method: "GET", key: OBJECT, query: "attributes", headers: { "x-amz-object-attributes": "ETag" } },
  GetObjectRetention: { method: "GET", key: OBJECT, query: "retention" },
  PutObjectRetention: {
    method: "PUT",
    key: OBJECT,
    query: "retention",
    body: "<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>2099-01-01T00:00:00Z</RetainUntilDate></Retention>",
  },
  GetObjectLegalHold: { method: "GET", key: OBJECT, query: "legal-hold" },
  PutObjectLegalHold: { method: "PUT", key: OBJECT, query: "legal-hold", body: "<LegalHold><Status>OFF</Status></LegalHold>" },
  GetObjectAcl: { method: "GET", key: OBJECT, query: "acl" },
  PutObjectAcl: { method: "PUT", key: OBJECT, query: "acl", headers: ACL },
  // The direct path. Not JSON: refused as InvalidRequest by whoever may commit or abort.
  CreateDirectUpload: { method: "POST", key: "direct.bin", query: "shardgate-upload", body: JSON.stringify({ size: 100_000 }) },
  CompleteDirectUpload: { method: "POST", key: "direct.bin", query: "shardgate-commit", body: "not json" },
  AbortDirectUpload: { method: "POST", key: "direct.bin", query: "shardgate-abort", body: "not json" },
  GetReadPlan: { method: "GET", key: OBJECT, query: "shardgate-plan" },
  TransferShard: { method: "PUT", shard: "ticket.sig" },
  CreateMultipartUpload: { method: "POST", key: "mp", query: "uploads" },
  UploadPartCopy: { method: "PUT", key: "mp", query: `partNumber=1&uploadId=${UPLOAD}`, copyFrom: COPY_SOURCE },
  UploadPart: { method: "PUT", key: "mp", query: `partNumber=1&uploadId=${UPLOAD}`, body: "p" },
  CompleteMultipartUpload: {
    method: "POST",
    key: "mp",
    query: `uploadId=${UPLOAD}`,
    body: "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>",
  },
  AbortMultipartUpload: { method: "DELETE", key: "mp", query: `uploadId=${UPLOAD}` },
  ListParts: { method: "GET", key: "mp", query: `uploadId=${UPLOAD}` },
  GetObject: { method: "GET", key: OBJECT },
  HeadObject: { method: "HEAD", key: OBJECT },
  CopyObject: { method: "PUT", key: "copy.txt", copyFrom: COPY_SOURCE },
  PutObject: { method: "PUT", key: "w.txt", body: "w" },
  // A version of OBJECT named on gone.txt: no such version, so deleting it changes nothing.
  DeleteObject: { method: "DELETE", key: "gone.txt" },
  GetMetrics: { method: "GET", path: "/_shardgate/metrics" },
  Admin: { method: "POST", path: "/_shardgate/admin/heal" },
};

async function md5(body: string): Promise<string> {
  return btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("MD5", new TextEncoder().encode(body)))));
}

/**
 * The request of `op` for `target`: in its bucket, naming the target's version when the request
 * names an object, its copy's source version, and the body's Content-MD5 where S3 requires one.
 */
export async function requestOf(op: OperationName, target: Target): Promise<OperationRequest> {
  const sample = REQUESTS[op];
  const { bucket, version, sourceVersion } = target;
  const params = [sample.query, sample.key !== undefined && version ? `versionId=${encodeURIComponent(version)}` : undefined].filter((p) => p);
  const query = params.length > 0 ? `?${params.join("&")}` : "";
  const object = sample.key === undefined ? "" : `/${sample.key}`;
  const inBucket = sample.path === undefined && sample.shard === undefined;
  const path = sample.path ?? (sample.shard === undefined ? `/${bucket}${object}` : `/_shardgate/shards/${bucket}/${sample.shard}`);
  const headers = new Headers(sample.headers);
  if (sample.copyFrom !== undefined) {
    headers.set("x-amz-copy-source", `/${bucket}/${sample.copyFrom}${sourceVersion ? `?versionId=${encodeURIComponent(sourceVersion)}` : ""}`);
  }
  const body = typeof sample.body === "function" ? sample.body(target) : sample.body;
  if (sample.md5 && body !== undefined) headers.set("content-md5", await md5(body));
  return { path: `${path}${query}`, hostedPath: inBucket ? `${object || "/"}${query}` : null, init: { method: sample.method, headers, body } };
}
