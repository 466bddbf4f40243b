// The Worker end to end inside workerd: requests go through its default export's fetch().
import { exports } from "cloudflare:workers";
import { describe, expect, inject, it } from "vitest";
import workerPkg from "../../worker/package.json";

describe("GET /_shardgate/health", () => {
  it("reports ok, the worker version and the core version from the wasm", async () => {
    const res = await exports.default.fetch("http://gateway.test/_shardgate/health");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await res.json()) as { status: string; version: string; core: string };
    expect(body.status).toBe("ok");
    expect(body.version).toBe(workerPkg.version);
    expect(body.core).toMatch(/^\d+\.\d+\.\d+/);
    expect(body.core).toBe(inject("coreCrateVersion"));
  });
});

describe("anything else", () => {
  it("is 501 with an S3-style NotImplemented XML error", async () => {
    const res = await exports.default.fetch("http://gateway.test/some-bucket/some/key.txt?uploads", {
      method: "PUT",
      body: "hello",
    });
    expect(res.status).toBe(501);
    expect(res.headers.get("content-type")).toMatch(/^application\/xml/);
    const xml = await res.text();
    expect(xml).toMatch(/^<\?xml version="1\.0" encoding="UTF-8"\?>\s*<Error>/);
    expect(xml).toContain("<Code>NotImplemented</Code>");
    expect(xml).toMatch(/<Message>[^<]+<\/Message>/);
    expect(xml).toContain("<Resource>/some-bucket/some/key.txt</Resource>");
    const requestId = xml.match(/<RequestId>([^<]+)<\/RequestId>/)?.[1];
    expect(requestId).toBeTruthy();
    expect(res.headers.get("x-amz-request-id")).toBe(requestId);
  });

  it("escapes the path in the XML body", async () => {
    const res = await exports.default.fetch("http://gateway.test/b/%3Cscript%3E&x");
    expect(res.status).toBe(501);
    const xml = await res.text();
    expect(xml).not.toContain("<script>");
    expect(xml).toMatch(/<Resource>\/b\/[^<]*&amp;x<\/Resource>/);
  });
});
