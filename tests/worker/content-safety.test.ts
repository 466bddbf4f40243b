// Stored bytes never run as a page of the gateway (issue #29): every object GET and HEAD says
// `X-Content-Type-Options: nosniff`, and an active type (HTML, XHTML, SVG, XML, XSL, JavaScript,
// multipart, or no valid type at all) comes with `Content-Security-Policy: sandbox`, whatever its
// case and parameters, through a signed, presigned or anonymous GET and a response-content-type
// override alike. Shard files of the direct path are application/octet-stream with nosniff.
import { AwsClient } from "aws4fetch";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { isActiveContent } from "../../worker/src/api/s3/get";
import type { DirectReadPlan } from "../../worker/src/shared/direct-protocol";
import { CREDENTIALS } from "../shared/credentials";
import { GATEWAY, s3, s3ok } from "./signed";

const bucket = "content-safety";
const SCRIPT = "<!doctype html><script>parent.postMessage(sessionStorage.getItem('shardgate.credentials'), '*')</script>";

const put = (key: string, type: string, body: string | Uint8Array = SCRIPT) =>
  s3ok(`/${bucket}/${key}`, { method: "PUT", body, headers: { "content-type": type } });

async function healthy(): Promise<void> {
  const res = await exports.default.fetch(`${GATEWAY}/_shardgate/health`);
  expect(res.status).toBe(200);
}

beforeAll(async () => {
  await s3ok(`/${bucket}`, { method: "PUT" });
});

describe("object answers are never active content of the gateway's origin", () => {
  const active = [
    "text/html",
    "TEXT/HTML; charset=UTF-8",
    "text/html;x=y",
    "application/xhtml+xml",
    "image/svg+xml",
    "image/SVG+XML; charset=utf-8",
    "text/xml",
    "application/xml",
    "application/rss+xml",
    "text/xsl",
    "text/javascript",
    "application/javascript",
    "application/x-javascript; charset=utf-8",
    "application/ecmascript",
    "multipart/x-mixed-replace; boundary=x",
    "text/vnd.something-html",
  ];
  const passive = ["text/plain", "image/png", "application/pdf", "application/json", "binary/octet-stream", "video/mp4", "text/csv; charset=utf-8"];

  it("sandboxes every active type on GET and HEAD, with nosniff on all", async () => {
    for (const [i, type] of active.entries()) {
      await put(`active-${i}.pdf`, type);
      for (const method of ["GET", "HEAD"]) {
        const res = await s3ok(`/${bucket}/active-${i}.pdf`, { method });
        expect(res.headers.get("content-type"), type).toBe(type);
        expect(res.headers.get("content-security-policy"), `${method} ${type}`).toBe("sandbox");
        expect(res.headers.get("x-content-type-options"), `${method} ${type}`).toBe("nosniff");
        await res.body?.cancel();
      }
    }
    await healthy();
  });

  it("leaves passive types unsandboxed (a PDF viewer, an image) but never sniffed", async () => {
    for (const [i, type] of passive.entries()) {
      await put(`passive-${i}`, type, "plain bytes");
      const res = await s3ok(`/${bucket}/passive-${i}`);
      expect(res.headers.get("content-security-policy"), type).toBeNull();
      expect(res.headers.get("x-content-type-options"), type).toBe("nosniff");
      expect(await res.text()).toBe("plain bytes");
    }
  });

  it("decides on the type as answered: a response-content-type override, presigned, is sandboxed too", async () => {
    await put("innocent.txt", "text/plain");
    const presigner = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
    const signed = await presigner.sign(`${GATEWAY}/${bucket}/innocent.txt?response-content-type=text%2Fhtml&X-Amz-Expires=60`, {
      aws: { signQuery: true },
    });
    const res = await exports.default.fetch(signed.url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html");
    expect(res.headers.get("content-security-policy")).toBe("sandbox");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    await res.body?.cancel();
  });

  it("sandboxes what an anonymous reader gets through a public-read policy", async () => {
    await put("public/report.pdf", "text/html; charset=utf-8");
    const policy = {
      Version: "2012-10-17",
      Statement: [{ Effect: "Allow", Principal: "*", Action: "s3:GetObject", Resource: `arn:aws:s3:::${bucket}/public/*` }],
    };
    await s3ok(`/${bucket}?policy`, { method: "PUT", body: JSON.stringify(policy) }, 204);
    const res = await exports.default.fetch(`${GATEWAY}/${bucket}/public/report.pdf`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toBe("sandbox");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await res.text()).toBe(SCRIPT);
  });

  it("sandboxes a value that is no type/subtype at all (a browser could sniff it)", () => {
    for (const type of [null, "", "html", "text", "text/", "/html", " ; charset=utf-8"]) expect(isActiveContent(type), String(type)).toBe(true);
    for (const type of passive) expect(isActiveContent(type), type).toBe(false);
    for (const type of active) expect(isActiveContent(type), type).toBe(true);
  });

  it("serves direct-path shard files as application/octet-stream with nosniff", async () => {
    const html = `<html>${"x".repeat(200_000)}<script>alert(1)</script></html>`; // sharded, not inline
    await put("sharded.html", "text/html", html);
    const plan = (await (await s3ok(`/${bucket}/sharded.html?shardgate-plan`)).json()) as DirectReadPlan;
    if (plan.mode !== "direct") throw new Error(`no direct plan: ${plan.reason}`);
    const shard = await exports.default.fetch(`${GATEWAY}${plan.parts[0]!.urls[0]}`);
    expect(shard.status).toBe(200);
    expect(shard.headers.get("content-type")).toBe("application/octet-stream");
    expect(shard.headers.get("x-content-type-options")).toBe("nosniff");
    await shard.body?.cancel();
    await healthy();
  });

  it("keeps errors as they were (no body of the object in them)", async () => {
    const res = await s3(`/${bucket}/missing.html`);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/xml");
  });
});
