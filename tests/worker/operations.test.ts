// The operations table (worker/src/api/operations.ts) routes every request to one operation: each
// operation is reached by the request its test twin (operation-requests.ts) sends for it, in path
// and virtual-hosted style and naming a version, sub-resources are tried in the table's order, and
// what no route takes is refused NotImplemented by S3's name for it. The twin names every operation
// of the table and no other, and an operation without its request does not compile: both checked
// below by `npm run typecheck`.
import { describe, expect, it } from "vitest";
import { OPERATIONS, type OperationName, routeRequest } from "../../worker/src/api/operations";
import { REQUESTS, requestOf } from "./operation-requests";

function route(method: string, path: string, headers: Record<string, string> | Headers = {}, host = "localhost") {
  return routeRequest(method, new URL(`http://${host}${path}`), "localhost", new Headers(headers));
}

// The twin's names are exactly the table's (a Partial, or an Exclude of some names, fails here) ...
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _sameNames: Same<keyof typeof REQUESTS, OperationName> = true;
// ... and each needs its request: an operation planted in the table without one (here, the twin with
// PutObject's left out) is a compile error, TS2741 "Property 'PutObject' is missing". Should the twin
// stop requiring every name, the directive below is unused and that is the compile error.
const { PutObject: _planted, ...withoutOne } = REQUESTS;
// @ts-expect-error An operation without its request does not compile.
const _incomplete: typeof REQUESTS = withoutOne;

describe("the operations table", () => {
  it("routes each operation's request in the twin to it, path style and virtual-hosted, naming a version or not", async () => {
    expect(Object.keys(REQUESTS).sort()).toEqual(Object.keys(OPERATIONS).sort());
    for (const op of Object.keys(REQUESTS) as OperationName[]) {
      for (const target of [{ bucket: "b" }, { bucket: "b", version: "null", sourceVersion: "v1" }]) {
        const { path, hostedPath, init } = await requestOf(op, target);
        const { method, headers } = init;
        expect(route(method, path, headers).op, `${method} ${path}`).toBe(op);
        if (hostedPath !== null) expect(route(method, hostedPath, headers, "b.localhost").op, `${method} ${hostedPath} on b.localhost`).toBe(op);
      }
    }
  });

  it("routes a request the same with the parameters clients add", () => {
    for (const [method, path, op] of [
      ["GET", "/b/k/with/slashes?response-content-type=text/plain", "GetObject"],
      ["HEAD", "/b/k?partNumber=1", "HeadObject"],
      ["PUT", "/b/k?tagging&versionId=null", "PutObjectTagging"],
      ["DELETE", "/b/k?versionId=null", "DeleteObject"],
      ["GET", "/b?versions&prefix=a", "ListObjectVersions"],
      ["GET", "/b?list-type=2&prefix=x", "ListObjectsV2"],
      ["GET", "/b?prefix=x", "ListObjects"],
      ["OPTIONS", "/b/k?uploads", "PreflightCors"],
    ]) {
      expect(route(method, path).op, `${method} ${path}`).toBe(op);
    }
  });

  it("names the bucket and key, virtual-hosted or path style, and the shard URL's ticket", () => {
    expect(route("GET", "/b/a//b/")).toMatchObject({ op: "GetObject", scope: "object", bucket: "b", key: "a//b/" });
    const hosted = routeRequest("PUT", new URL("http://my-bucket.localhost/x%2Fy"), "localhost", new Headers());
    expect(hosted).toMatchObject({ op: "PutObject", bucket: "my-bucket", key: "x/y" });
    expect(route("GET", "/_shardgate/shards/b/the-ticket")).toMatchObject({ op: "TransferShard", bucket: "b", rest: "the-ticket" });
    expect(route("OPTIONS", "/_shardgate/shards/b/the-ticket")).toMatchObject({ op: "PreflightCors", bucket: "b" });
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
