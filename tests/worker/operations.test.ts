// The operations table (worker/src/api/operations.ts) routes every request to one operation: each
// operation is reached by the requests S3 sends for it (the compiler makes the sample table name
// every operation), sub-resources are tried in the table's order, and what no route takes is
// refused NotImplemented by S3's name for it.
import { describe, expect, it } from "vitest";
import { OPERATIONS, type OperationName, routeRequest } from "../../worker/src/api/operations";

type Sample = [method: string, path: string, headers?: Record<string, string>];

const COPY = { "x-amz-copy-source": "/b/src" };
const FORM = { "content-type": "multipart/form-data; boundary=x" };

/** One request each operation answers (path style, host localhost). */
const SAMPLES: Record<OperationName, Sample> = {
  ListBuckets: ["GET", "/"],
  GetSessionToken: ["POST", "/"],
  PreflightCors: ["OPTIONS", "/b/k?uploads"],
  GetBucketCors: ["GET", "/b?cors"],
  PutBucketCors: ["PUT", "/b?cors"],
  DeleteBucketCors: ["DELETE", "/b?cors"],
  GetBucketTagging: ["GET", "/b?tagging"],
  PutBucketTagging: ["PUT", "/b?tagging"],
  DeleteBucketTagging: ["DELETE", "/b?tagging"],
  GetBucketLifecycleConfiguration: ["GET", "/b?lifecycle"],
  PutBucketLifecycleConfiguration: ["PUT", "/b?lifecycle"],
  DeleteBucketLifecycle: ["DELETE", "/b?lifecycle"],
  GetObjectLockConfiguration: ["GET", "/b?object-lock"],
  PutObjectLockConfiguration: ["PUT", "/b?object-lock"],
  GetBucketEncryption: ["GET", "/b?encryption"],
  PutBucketEncryption: ["PUT", "/b?encryption"],
  GetBucketWebsite: ["GET", "/b?website"],
  PutBucketWebsite: ["PUT", "/b?website"],
  DeleteBucketWebsite: ["DELETE", "/b?website"],
  GetBucketNotificationConfiguration: ["GET", "/b?notification"],
  PutBucketNotificationConfiguration: ["PUT", "/b?notification"],
  GetBucketReplication: ["GET", "/b?replication"],
  PutBucketReplication: ["PUT", "/b?replication"],
  DeleteBucketReplication: ["DELETE", "/b?replication"],
  DeleteBucketEncryption: ["DELETE", "/b?encryption"],
  GetBucketPolicy: ["GET", "/b?policy"],
  PutBucketPolicy: ["PUT", "/b?policy"],
  DeleteBucketPolicy: ["DELETE", "/b?policy"],
  GetBucketPolicyStatus: ["GET", "/b?policyStatus"],
  GetBucketAcl: ["GET", "/b?acl"],
  PutBucketAcl: ["PUT", "/b?acl"],
  GetBucketOwnershipControls: ["GET", "/b?ownershipControls"],
  PutBucketOwnershipControls: ["PUT", "/b?ownershipControls"],
  ListMultipartUploads: ["GET", "/b?uploads"],
  ListObjectVersions: ["GET", "/b?versions&prefix=a"],
  GetBucketVersioning: ["GET", "/b?versioning"],
  PutBucketVersioning: ["PUT", "/b?versioning"],
  DeleteObjects: ["POST", "/b?delete"],
  GetBucketLocation: ["GET", "/b?location"],
  ListObjectsV2: ["GET", "/b?list-type=2&prefix=x"],
  ListObjects: ["GET", "/b?prefix=x"],
  HeadBucket: ["HEAD", "/b"],
  CreateBucket: ["PUT", "/b"],
  DeleteBucket: ["DELETE", "/b"],
  PostObject: ["POST", "/b", FORM],
  GetObjectTagging: ["GET", "/b/k?tagging"],
  PutObjectTagging: ["PUT", "/b/k?tagging&versionId=null"],
  DeleteObjectTagging: ["DELETE", "/b/k?tagging"],
  GetObjectAttributes: ["GET", "/b/k?attributes"],
  GetObjectRetention: ["GET", "/b/k?retention"],
  PutObjectRetention: ["PUT", "/b/k?retention"],
  GetObjectLegalHold: ["GET", "/b/k?legal-hold"],
  PutObjectLegalHold: ["PUT", "/b/k?legal-hold"],
  GetObjectAcl: ["GET", "/b/k?acl"],
  PutObjectAcl: ["PUT", "/b/k?acl"],
  CreateDirectUpload: ["POST", "/b/k?shardgate-upload"],
  CompleteDirectUpload: ["POST", "/b/k?shardgate-commit"],
  AbortDirectUpload: ["POST", "/b/k?shardgate-abort"],
  GetReadPlan: ["GET", "/b/k?shardgate-plan"],
  TransferShard: ["PUT", "/_shardgate/shards/b/grant.sig"],
  CreateMultipartUpload: ["POST", "/b/k?uploads"],
  UploadPartCopy: ["PUT", "/b/k?partNumber=1&uploadId=u", COPY],
  UploadPart: ["PUT", "/b/k?partNumber=1&uploadId=u"],
  CompleteMultipartUpload: ["POST", "/b/k?uploadId=u"],
  AbortMultipartUpload: ["DELETE", "/b/k?uploadId=u"],
  ListParts: ["GET", "/b/k?uploadId=u"],
  GetObject: ["GET", "/b/k/with/slashes?response-content-type=text/plain"],
  HeadObject: ["HEAD", "/b/k?partNumber=1"],
  CopyObject: ["PUT", "/b/k", COPY],
  PutObject: ["PUT", "/b/k"],
  DeleteObject: ["DELETE", "/b/k?versionId=null"],
  GetMetrics: ["GET", "/_shardgate/metrics"],
  Admin: ["POST", "/_shardgate/admin/heal"],
};

function route(method: string, path: string, headers: Record<string, string> = {}) {
  return routeRequest(method, new URL(`http://localhost${path}`), "localhost", new Headers(headers));
}

describe("the operations table", () => {
  it("routes a request S3 sends for each operation to it", () => {
    for (const [op, [method, path, headers]] of Object.entries(SAMPLES)) expect(route(method, path, headers).op, `${method} ${path}`).toBe(op);
    expect(Object.keys(SAMPLES).sort()).toEqual(Object.keys(OPERATIONS).sort());
  });

  it("names the bucket and key, virtual-hosted or path style, and the shard URL's grant", () => {
    expect(route("GET", "/b/a//b/")).toMatchObject({ op: "GetObject", scope: "object", bucket: "b", key: "a//b/" });
    const hosted = routeRequest("PUT", new URL("http://my-bucket.localhost/x%2Fy"), "localhost", new Headers());
    expect(hosted).toMatchObject({ op: "PutObject", bucket: "my-bucket", key: "x/y" });
    expect(route("GET", "/_shardgate/shards/b/the-grant")).toMatchObject({ op: "TransferShard", bucket: "b", rest: "the-grant" });
    expect(route("OPTIONS", "/_shardgate/shards/b/the-grant")).toMatchObject({ op: "PreflightCors", bucket: "b" });
    expect(route("GET", "/_shardgate/admin/nodes")).toMatchObject({ op: "Admin", rest: "nodes" });
  });

  it("tries sub-resources in the table's order, whatever the query's order", () => {
    expect(route("GET", "/b?website&cors").op).toBe("GetBucketCors");
    expect(route("GET", "/b/k?uploadId=u&tagging").op).toBe("GetObjectTagging");
    expect(route("POST", "/b/k?uploadId=u&uploads").op).toBe("CreateMultipartUpload");
    // A preflight is a preflight whatever else the query names.
    expect(route("OPTIONS", "/b?delete").op).toBe("PreflightCors");
  });

  it("refuses what no route takes by S3's name for it, or by method and place", () => {
    for (const [method, path, name] of [
      ["DELETE", "/b?versioning", "DeleteBucketVersioning"],
      ["GET", "/b?logging", "GetBucketLogging"],
      ["POST", "/b?website", "PostBucketWebsite"],
      ["PUT", "/b?policyStatus", "PutBucketPolicyStatus"],
      ["GET", "/b/k?torrent", "GetObjectTorrent"],
      ["POST", "/b/k?select&select-type=2", "PostSelectObjectContent"],
      ["POST", "/b/k?tagging", "PostObjectTagging"],
      ["PUT", "/b?uploads", "PUT on ?uploads"],
      ["GET", "/b/k?shardgate-upload", "GET on ?shardgate-upload"],
      ["PATCH", "/b/k?uploadId=u", "PATCH on ?uploadId"],
      ["POST", "/b", "POST on a bucket"],
      ["POST", "/b/k", "POST on an object"],
      ["DELETE", "/", "DELETE on the service"],
      ["PUT", "/_shardgate/metrics", "PUT on the metrics endpoint"],
      ["GET", "/_shardgate/shards/nobucket", "GET on a shard URL without a bucket"],
    ]) {
      expect(route(method, path), `${method} ${path}`).toEqual({ op: "NotImplemented", name });
    }
  });

  it("declares a permission and at least one route for every operation", () => {
    for (const [op, o] of Object.entries(OPERATIONS)) {
      expect(o.routes.length, op).toBeGreaterThan(0);
      expect(["read", "write", "owner", "createBucket", "anyKey", "root"], op).toContain(o.permission.need);
    }
  });
});
