// The operations table (worker/src/api/operations.ts) routes every request to one operation: each
// operation is reached by the requests S3 sends for it (the compiler makes the sample table name
// every operation), sub-resources are tried in the table's order, and what no route takes is
// refused NotImplemented by S3's name for it.
import { describe, expect, it } from "vitest";
import { OPERATIONS, routeRequest } from "../../worker/src/api/operations";
import { SAMPLES } from "./operation-requests";

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
