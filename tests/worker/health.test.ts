// The Worker end to end inside workerd: requests go through its default export's fetch().
import { exports } from "cloudflare:workers";
import { describe, expect, inject, it } from "vitest";
import workerPkg from "../../worker/package.json";
import { GATEWAY, s3 } from "./signed";

describe("GET /_shardgate/health", () => {
  it("reports ok, the worker version and the core version from the wasm", async () => {
    const res = await exports.default.fetch(`${GATEWAY}/_shardgate/health`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await res.json()) as { status: string; version: string; core: string };
    expect(body.status).toBe("ok");
    expect(body.version).toBe(workerPkg.version);
    expect(body.core).toMatch(/^\d+\.\d+\.\d+/);
    expect(body.core).toBe(inject("coreCrateVersion"));
  });
});

function errorCode(xml: string): string | undefined {
  return xml.match(/<Code>([^<]+)<\/Code>/)?.[1];
}

describe("everything else", () => {
  it("refuses anonymous requests with an S3 AccessDenied XML error, even unsupported ones", async () => {
    const res = await exports.default.fetch(`${GATEWAY}/some-bucket/some/key.txt?uploads`, { method: "POST", body: "hello" });
    expect(res.status).toBe(403);
    expect(res.headers.get("content-type")).toMatch(/^application\/xml/);
    const xml = await res.text();
    expect(xml).toMatch(/^<\?xml version="1\.0" encoding="UTF-8"\?>\s*<Error>/);
    expect(errorCode(xml)).toBe("AccessDenied");
    expect(xml).toContain("<Resource>/some-bucket/some/key.txt</Resource>");
    const requestId = xml.match(/<RequestId>([^<]+)<\/RequestId>/)?.[1];
    expect(requestId).toMatch(/^[0-9A-F]{16}$/);
    expect(res.headers.get("x-amz-request-id")).toBe(requestId);
  });

  it("names an unsupported operation in a 501 NotImplemented", async () => {
    for (const [method, path, name] of [
      ["DELETE", "/some-bucket?versioning", "DeleteBucketVersioning"],
      ["GET", "/some-bucket?logging", "GetBucketLogging"],
      ["GET", "/some-bucket/key?torrent", "GetObjectTorrent"],
      ["POST", "/some-bucket/key?select&select-type=2", "PostSelectObjectContent"],
    ] as const) {
      const res = await s3(path, { method, body: method === "GET" ? undefined : "" });
      expect(res.status, path).toBe(501);
      const xml = await res.text();
      expect(errorCode(xml)).toBe("NotImplemented");
      expect(xml).toContain(name);
    }
  });

  it("escapes what it echoes in the XML body", async () => {
    const res = await s3("/no-such-bucket/%3Cscript%3E&x");
    expect(res.status).toBe(404);
    const xml = await res.text();
    expect(errorCode(xml)).toBe("NoSuchBucket");
    expect(xml).not.toContain("<script>");
    expect(xml).toMatch(/<Resource>\/no-such-bucket\/[^<]*&amp;x<\/Resource>/);
  });
});
