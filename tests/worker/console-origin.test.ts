// The console on an origin of its own (worker/src/console.ts, api/http/console-origin.ts): with
// SHARDGATE_CONSOLE_ORIGIN set, the gateway answers that origin CORS on every S3, admin and STS
// request (preflights included) whatever a bucket's CORS rules say, and no other origin; it serves
// no console itself (/_console/ and a browser's "/" go to the console's origin); and a request to
// the console's own host (Cloudflare: a second route on this Worker) gets the console's files and
// /config.json from the assets, never the S3 API. `*` is refused.
import { AwsClient } from "aws4fetch";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env as workersEnv } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import worker from "../../worker/src/index";
import type { Env } from "../../worker/src/config";
import { CREDENTIALS } from "../shared/credentials";
import { GATEWAY, s3ok } from "./signed";

const CONSOLE = "http://console.test";
const gatewayEnv = {
  ...(workersEnv as unknown as Env),
  SHARDGATE_CONSOLE_ORIGIN: `${CONSOLE}, http://other-console.test:8788`,
  SHARDGATE_GATEWAY_URL: GATEWAY,
};
const signer = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });

/** The Worker with the console's origin configured (`env` to override); the answer read whole before its background work is awaited. */
async function call(request: Request, env: Env = gatewayEnv): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(request, env, ctx);
  const body = res.body === null ? null : await res.arrayBuffer();
  await waitOnExecutionContext(ctx);
  return new Response(body, res);
}

const bucket = "console-origin";

beforeAll(async () => {
  await s3ok(`/${bucket}`, { method: "PUT" });
  await s3ok(`/${bucket}/page.html`, { method: "PUT", body: "<script>alert(1)</script>", headers: { "content-type": "text/html" } });
  // The bucket's own rules allow another origin only.
  const rules = `<CORSConfiguration><CORSRule><AllowedOrigin>http://app.example</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>`;
  await s3ok(`/${bucket}?cors`, { method: "PUT", body: rules });
});

describe("the gateway and the console's origin", () => {
  it("answers the console's preflights on S3, admin and STS paths, whatever the bucket's rules", async () => {
    for (const [path, method] of [
      [`/${bucket}/page.html`, "GET"],
      [`/${bucket}/new.txt`, "PUT"],
      ["/_shardgate/admin/keys", "PATCH"],
      ["/", "POST"],
      ["/_shardgate/shards/console-origin/ticket", "PUT"],
    ]) {
      const res = await call(
        new Request(`${GATEWAY}${path}`, {
          method: "OPTIONS",
          headers: {
            origin: CONSOLE,
            "access-control-request-method": method,
            "access-control-request-headers": "Authorization, X-Amz-Date, x-amz-security-token",
          },
        }),
      );
      expect(res.status, path).toBe(204);
      expect(res.headers.get("access-control-allow-origin"), path).toBe(CONSOLE);
      expect(res.headers.get("access-control-allow-methods"), path).toContain(method);
      expect(res.headers.get("access-control-allow-headers"), path).toBe("authorization, x-amz-date, x-amz-security-token");
    }
    // The second listed origin too; others get only what the bucket's rules say.
    const other = await call(
      new Request(`${GATEWAY}/${bucket}/page.html`, {
        method: "OPTIONS",
        headers: { origin: "http://other-console.test:8788", "access-control-request-method": "GET" },
      }),
    );
    expect(other.headers.get("access-control-allow-origin")).toBe("http://other-console.test:8788");
    const evil = await call(
      new Request(`${GATEWAY}/${bucket}/page.html`, { method: "OPTIONS", headers: { origin: "http://evil.example", "access-control-request-method": "GET" } }),
    );
    expect(evil.status).toBe(403);
    expect(evil.headers.get("access-control-allow-origin")).toBeNull();
    const app = await call(
      new Request(`${GATEWAY}/${bucket}/page.html`, { method: "OPTIONS", headers: { origin: "http://app.example", "access-control-request-method": "GET" } }),
    );
    expect(app.headers.get("access-control-allow-origin")).toBe("http://app.example");
    // Not a prefix or a look-alike of the console's origin.
    const lookalike = await call(
      new Request(`${GATEWAY}/`, { method: "OPTIONS", headers: { origin: `${CONSOLE}.evil.example`, "access-control-request-method": "POST" } }),
    );
    expect(lookalike.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("lets the console read answers, errors included, with the headers it needs exposed", async () => {
    const signed = await signer.sign(`${GATEWAY}/${bucket}/page.html`, { headers: { origin: CONSOLE } });
    const res = await call(signed);
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe(CONSOLE);
    const exposed = res.headers.get("access-control-expose-headers") ?? "";
    for (const name of ["*", "ETag", "Content-Range", "x-amz-version-id", "x-amz-request-id"]) expect(exposed).toContain(name);
    expect(res.headers.get("content-security-policy")).toBe("sandbox");
    expect(await res.text()).toBe("<script>alert(1)</script>");
    const denied = await call(new Request(`${GATEWAY}/${bucket}/page.html`, { headers: { origin: CONSOLE } }));
    expect(denied.status).toBe(403);
    expect(denied.headers.get("access-control-allow-origin")).toBe(CONSOLE);
    // No credentials ride along: a page on the console's origin that is not the console has nothing to sign with.
    expect(denied.headers.get("access-control-allow-credentials")).toBeNull();
  });

  it("serves no console on the gateway: /_console/ and a browser's / go to the console's origin", async () => {
    for (const path of ["/_console/", "/_console", "/_console/assets/x.js"]) {
      const res = await call(new Request(`${GATEWAY}${path}`));
      expect(res.status, path).toBe(302);
      expect(res.headers.get("location"), path).toBe(`${CONSOLE}/`);
    }
    const browser = await call(new Request(`${GATEWAY}/`, { headers: { accept: "text/html" } }));
    expect(browser.status).toBe(302);
    expect(browser.headers.get("location")).toBe(`${CONSOLE}/`);
    // Without a console origin configured: nothing there.
    const none = { ...gatewayEnv, SHARDGATE_CONSOLE_ORIGIN: undefined };
    const res = await call(new Request(`${GATEWAY}/_console/`), none);
    expect(res.status).toBe(404);
    expect(await res.text()).toContain("SHARDGATE_CONSOLE_ORIGIN");
  });

  it("serves the console, and only the console, on its own host (Cloudflare: a second route)", async () => {
    const index = await call(new Request(`${CONSOLE}/`));
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toContain("text/html");
    expect(index.headers.get("content-security-policy")).toContain("script-src 'self' 'wasm-unsafe-eval'");
    expect(index.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(index.headers.get("x-frame-options")).toBe("DENY");
    expect(await index.text()).toContain("shardgate console");
    expect(await (await call(new Request(`${CONSOLE}/config.json`))).json()).toEqual({ gateway: GATEWAY, region: "us-east-1" });
    // An object path on the console's host is the app, never the object; a signed S3 write is refused.
    const object = await call(new Request(`${CONSOLE}/${bucket}/page.html`));
    expect(await object.text()).toContain("shardgate console");
    expect(object.headers.get("content-type")).toContain("text/html");
    const put = await call(await signer.sign(`${CONSOLE}/${bucket}/x.txt`, { method: "PUT", body: "x" }));
    expect(put.status).toBe(405);
    expect((await call(new Request(`${CONSOLE}/assets/missing.js`))).status).toBe(404);
    expect((await call(new Request(`${CONSOLE}/_console/`))).headers.get("location")).toBe(`${CONSOLE}/`);
  });

  it("refuses a wildcard or malformed console origin loudly, and the health check still answers", async () => {
    for (const bad of ["*", "http://console.test/path", "console.test", "ftp://console.test"]) {
      const env = { ...gatewayEnv, SHARDGATE_CONSOLE_ORIGIN: bad };
      const res = await call(new Request(`${GATEWAY}/`, { headers: { origin: "http://anything.example" } }), env);
      expect(res.status, bad).toBe(500);
      expect(res.headers.get("access-control-allow-origin"), bad).toBeNull();
      expect((await call(new Request(`${GATEWAY}/_shardgate/health`), env)).status, bad).toBe(200);
    }
  });
});
