// Pages of other sites cannot drive the gateway through a browser (issue #39, item 2), even a page
// that knows a secret and signs with it: each request here is the one a browser really sends.
//   - Host: with SHARDGATE_ALLOWED_HOSTS set (npm start on loopback), a Host that names neither
//     loopback nor a configured name is refused before any work: DNS rebinding reaches nothing.
//   - Origin / Sec-Fetch-Site: the admin API, the metrics and STS answer no page but the console's;
//     a write from another origin needs the bucket's CORS rule (a form's PostObject excepted).
//   - Admin bodies are application/json: what a form or a no-preflight fetch sends is refused.
// worker/src/config.ts hostAllowed, api/middleware.ts checkHost and crossSite, api/http/json.ts.
import { AwsClient } from "aws4fetch";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env as workersEnv } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../worker/src/config";
import { checkVars } from "../../worker/src/config-vars";
import worker from "../../worker/src/index";
import { CREDENTIALS, METRICS_TOKEN } from "../shared/credentials";
import { signedPostFields } from "./post-form";
import { s3ok } from "./signed";

const client = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
const stsClient = new AwsClient({ ...CREDENTIALS, service: "sts", region: "us-east-1" });

/** The gateway as `npm start` serves it on 127.0.0.1:8787, its console on port 8788. */
const GW = "http://localhost:8787";
const CONSOLE = "http://localhost:8788";
const EVIL = "http://evil.example";
const base = workersEnv as unknown as Env;
/** The console's origins as `npm start` on 127.0.0.1 sets them. */
const consoleEnv: Env = { ...base, SHARDGATE_CONSOLE_ORIGIN: `${CONSOLE},http://127.0.0.1:8788` };
/** And the host names it answers to, with a few more configured. */
const loopbackEnv: Env = {
  ...consoleEnv,
  SHARDGATE_ALLOWED_HOSTS: "localhost, gw.example.net, *.lan",
  SHARDGATE_WEBSITE_HOSTS: '{"www.site.example": "xs-site"}',
};

/** The Worker with `env`; the answer read whole before its background work is awaited. */
async function call(request: Request, env: Env = consoleEnv): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(request, env, ctx);
  const body = res.body === null ? null : await res.arrayBuffer();
  await waitOnExecutionContext(ctx);
  return new Response(body, res);
}

/** A request signed (in its headers) for `url`, then sent with `extra` headers a browser adds (unsigned). */
async function signed(url: string, init: RequestInit = {}, extra: Record<string, string> = {}): Promise<Request> {
  const request = await client.sign(url, init);
  const headers = new Headers(request.headers);
  for (const [name, value] of Object.entries(extra)) headers.set(name, value);
  return new Request(request, { headers });
}

/** A presigned URL (signature in the query), as a page that knows the secret would make one. */
async function presigned(url: string, method: string): Promise<string> {
  return (await client.sign(url, { method, aws: { signQuery: true } })).url;
}

async function codeOf(res: Response): Promise<string | undefined> {
  return /<Code>([^<]*)<\/Code>/.exec(await res.text())?.[1];
}

async function keyNames(): Promise<string[]> {
  const res = await call(await signed(`${GW}/_shardgate/admin/keys`));
  expect(res.status).toBe(200);
  return ((await res.json()) as { keys: { name: string }[] }).keys.map((k) => k.name);
}

const BUCKET = "xs-bucket";
const OPEN = "xs-open"; // its CORS rules let http://app.example PUT and POST

beforeAll(async () => {
  await s3ok(`/${BUCKET}`, { method: "PUT" });
  await s3ok(`/${BUCKET}/kept.txt`, { method: "PUT", body: "kept" });
  await s3ok(`/${OPEN}`, { method: "PUT" });
  const rules =
    "<CORSConfiguration><CORSRule><AllowedOrigin>http://app.example</AllowedOrigin><AllowedMethod>PUT</AllowedMethod><AllowedMethod>POST</AllowedMethod></CORSRule>" +
    "<CORSRule><AllowedOrigin>http://reader.example</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>";
  await s3ok(`/${OPEN}?cors`, { method: "PUT", body: rules });
});

describe("the host names a gateway on loopback answers to", () => {
  it("refuses a rebound Host (a page of evil.example re-pointed at 127.0.0.1) before any work, signed or not", async () => {
    for (const host of [
      "evil.example:8787",
      "evil.example",
      "127.0.0.1.nip.io:8787",
      "localhost.evil.example",
      "evil-localhost",
      "lan",
      "gw.example.net.evil.example",
      "[::2]:8787",
      "10.0.0.5:8787",
    ]) {
      const res = await call(await signed(`http://${host}/`), loopbackEnv);
      expect(res.status, host).toBe(403);
      expect(await res.text(), host).toContain("does not answer to this host name");
    }
    // A bad signature is not even looked at: the host is refused first.
    const forged = new Request("http://evil.example:8787/", {
      headers: { authorization: "AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00" },
    });
    expect(await (await call(forged, loopbackEnv)).text()).toContain("does not answer to this host name");
    // Nor the health check, a website's path form or the console's redirect.
    for (const path of ["/_shardgate/health", "/_shardgate/ready", `/_shardgate/website/${BUCKET}/kept.txt`, "/_console/"]) {
      const res = await call(new Request(`http://evil.example:8787${path}`, { headers: { accept: "text/html" } }), loopbackEnv);
      expect(res.status, path).toBe(403);
      expect(await codeOf(res), path).toBe("AccessDenied");
    }
  });

  it("answers loopback names, the names listed and the names it is configured with", async () => {
    for (const host of ["localhost:8787", "127.0.0.1:8787", "127.0.0.2:8787", "0x7f.1:8787", "[::1]:8787", "gw.example.net", "GW.Example.NET:443", "s3.lan"]) {
      const res = await call(await signed(`http://${host}/`), loopbackEnv);
      expect(res.status, host).toBe(200);
      expect(await res.text(), host).toContain("<ListAllMyBucketsResult");
    }
    // Virtual-hosted style under the suffix (localhost), a website host, the console's host.
    expect((await call(await signed(`http://${BUCKET}.localhost:8787/kept.txt`), loopbackEnv)).status).toBe(200);
    expect(await codeOf(await call(new Request("http://www.site.example/"), loopbackEnv))).not.toBe("AccessDenied");
    expect((await call(await signed("http://127.0.0.1:8787/_shardgate/health"), loopbackEnv)).status).toBe(200);
  });

  it("takes names, *.domain and bracketed IPv6 addresses in SHARDGATE_ALLOWED_HOSTS, nothing else", () => {
    for (const ok of ["localhost", "s3.example.com, *.s3.example.com", "[fd00::1],10.0.0.5", ""])
      expect(checkVars({ SHARDGATE_ALLOWED_HOSTS: ok }, { partial: true }), ok).toEqual([]);
    for (const bad of ["*", "evil example", "a/b", "*.", "http://s3.example.com", "x:8787", "**.example.com"])
      expect(checkVars({ SHARDGATE_ALLOWED_HOSTS: bad }, { partial: true }), bad).toHaveLength(1);
  });

  it("answers every host when SHARDGATE_ALLOWED_HOSTS is unset (Cloudflare: routes decide)", async () => {
    const res = await call(await signed("http://evil.example:8787/"), { ...loopbackEnv, SHARDGATE_ALLOWED_HOSTS: undefined });
    expect(res.status).toBe(200);
  });
});

describe("the admin API, the metrics and STS answer no page of another site", () => {
  it("refuses a presigned admin POST that a page sends without a preflight (fetch, text/plain body): no key made", async () => {
    const url = await presigned(`${GW}/_shardgate/admin/keys`, "POST");
    const body = JSON.stringify({ name: "planted-by-fetch" });
    for (const headers of <Record<string, string>[]>[
      { origin: EVIL, "sec-fetch-site": "cross-site", "content-type": "text/plain;charset=UTF-8" },
      { origin: "null", "content-type": "text/plain;charset=UTF-8" }, // a sandboxed page, a redirect
      { origin: "http://demo.website.localhost:8787", "sec-fetch-site": "same-site", "content-type": "application/json" }, // a website's page
      { origin: "http://localhost:9999", "sec-fetch-site": "same-site", "content-type": "application/json" },
      { "sec-fetch-site": "cross-site", "content-type": "application/json" }, // no Origin, still marked
    ]) {
      const res = await call(new Request(url, { method: "POST", body, headers }));
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(await codeOf(res)).toBe("AccessDenied");
    }
    expect(await keyNames()).not.toContain("planted-by-fetch");
  });

  it("refuses an <img> or link to a presigned admin GET, and the metrics, from another site", async () => {
    const keys = await call(new Request(await presigned(`${GW}/_shardgate/admin/keys`, "GET"), { headers: { "sec-fetch-site": "cross-site" } }));
    expect(keys.status).toBe(403);
    const metrics = await call(
      new Request(`${GW}/_shardgate/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}`, "sec-fetch-site": "cross-site" } }),
    );
    expect(metrics.status).toBe(403);
    expect((await call(new Request(`${GW}/_shardgate/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }))).status).toBe(200);
  });

  it("refuses STS (GetSessionToken) from another origin, signed or not", async () => {
    const form = "Action=GetSessionToken&Version=2011-06-15";
    const request = await stsClient.sign(`${GW}/`, { method: "POST", body: form, headers: { "content-type": "application/x-www-form-urlencoded" } });
    const res = await call(new Request(request, { headers: { ...Object.fromEntries(request.headers), origin: EVIL, "sec-fetch-site": "cross-site" } }));
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("AccessDenied");
  });

  it("answers the console's origin (same-site to the gateway on localhost), the gateway's own and clients outside a browser", async () => {
    for (const extra of <Record<string, string>[]>[
      { origin: CONSOLE, "sec-fetch-site": "same-site" },
      { origin: "http://127.0.0.1:8788", "sec-fetch-site": "cross-site" },
      { origin: GW },
      {},
    ]) {
      const res = await call(await signed(`${GW}/_shardgate/admin/keys`, {}, extra));
      expect(res.status, JSON.stringify(extra)).toBe(200);
    }
    const form = "Action=GetSessionToken&Version=2011-06-15";
    const request = await stsClient.sign(`${GW}/`, { method: "POST", body: form, headers: { "content-type": "application/x-www-form-urlencoded" } });
    const sts = await call(new Request(request, { headers: { ...Object.fromEntries(request.headers), origin: CONSOLE, "sec-fetch-site": "same-site" } }));
    expect(sts.status).toBe(200);
    expect(sts.headers.get("access-control-allow-origin")).toBe(CONSOLE);
  });
});

describe("admin bodies are application/json", () => {
  it("refuses a JSON body sent as text/plain (an HTML form's enctype), form-urlencoded or without a type: nothing made", async () => {
    const body = JSON.stringify({ name: "planted-by-type", x: "=" });
    for (const type of [
      "text/plain",
      "text/plain;charset=UTF-8",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      null,
      "application/jsonx",
    ]) {
      const init: RequestInit = { method: "POST", body: new TextEncoder().encode(body), headers: type === null ? {} : { "content-type": type } };
      const res = await call(await signed(`${GW}/_shardgate/admin/keys`, init));
      expect(res.status, String(type)).toBe(400);
      expect(await res.text()).toContain("application/json");
    }
    // A storage node too (the attack's form added one pointing at the attacker).
    const node = JSON.stringify({ id: "planted", endpoint: "http://127.0.0.1:9", bucket: "shards", accessKeyId: "a", secretAccessKey: "b" });
    const res = await call(await signed(`${GW}/_shardgate/admin/nodes`, { method: "POST", body: node, headers: { "content-type": "text/plain" } }));
    expect(res.status).toBe(400);
    expect(await keyNames()).not.toContain("planted-by-type");
  });

  it("takes application/json (any case, with a charset), and no body at all", async () => {
    const res = await call(
      await signed(`${GW}/_shardgate/admin/keys`, {
        method: "POST",
        body: JSON.stringify({ name: "typed" }),
        headers: { "content-type": "Application/JSON; charset=utf-8" },
      }),
    );
    expect(res.status).toBe(201);
    const id = ((await res.json()) as { id: string }).id;
    expect(
      (await call(await signed(`${GW}/_shardgate/admin/keys/${id}`, { method: "PATCH", body: "", headers: { "content-type": "text/plain" } }))).status,
    ).toBe(200);
    expect(await keyNames()).toContain("typed");
  });
});

describe("S3 writes from another origin", () => {
  it("refuses a write a page sends without a preflight unless the bucket's CORS rules allow its origin and method: nothing written", async () => {
    const cases: [string, string, Record<string, string>][] = [
      // A no-preflight POST (fetch with a text/plain body, or a form): a multipart upload, a direct-path session.
      [`/${BUCKET}/planted.html?uploads`, "POST", { "content-type": "text/plain" }],
      [`/${BUCKET}/planted.html?shardgate-upload`, "POST", { "content-type": "text/plain" }],
      [`/${BUCKET}?delete`, "POST", { "content-type": "application/x-www-form-urlencoded" }],
      // What a page could only send after a preflight (refused too): a PUT, a DELETE.
      [`/${BUCKET}/planted.html`, "PUT", { "content-type": "text/html" }],
      [`/${BUCKET}/kept.txt`, "DELETE", {}],
      // A bucket whose rules allow another origin, or this origin only to read.
      [`/${OPEN}/planted.html`, "PUT", {}],
    ];
    // Another site's page, a sandboxed page ("null"), an origin the rules let read only, a website's page (same-site).
    const origins = [EVIL, "null", "http://reader.example", "http://demo.website.localhost:8787"];
    for (const [i, [path, method, headers]] of cases.entries()) {
      for (const origin of [origins[i % origins.length] ?? EVIL, "http://reader.example"]) {
        const body = method === "DELETE" ? undefined : method === "POST" && path.includes("shardgate") ? '{"size":5}' : "<html>planted</html>";
        const url = await presigned(`${GW}${path}`, method);
        const res = await call(new Request(url, { method, body, headers: { ...headers, origin, "sec-fetch-site": "cross-site" } }));
        expect(res.status, `${method} ${path} from ${origin}`).toBe(403);
        expect(await codeOf(res)).toBe("AccessForbidden");
      }
    }
    expect((await call(await signed(`${GW}/${BUCKET}/planted.html`))).status).toBe(404);
    expect(await (await call(await signed(`${GW}/${BUCKET}/kept.txt`))).text()).toBe("kept");
    expect(await (await call(await signed(`${GW}/${BUCKET}?uploads`))).text()).not.toContain("planted.html");
  });

  it("lets an origin the bucket's CORS rules allow write, and every origin read as before", async () => {
    const put = await call(
      new Request(await presigned(`${GW}/${OPEN}/app.txt`, "PUT"), {
        method: "PUT",
        body: "from the app",
        headers: { origin: "http://app.example", "content-length": "12" },
      }),
    );
    expect(put.status).toBe(200);
    expect(put.headers.get("access-control-allow-origin")).toBe("http://app.example");
    const read = await call(new Request(await presigned(`${GW}/${BUCKET}/kept.txt`, "GET"), { headers: { origin: EVIL, "sec-fetch-site": "cross-site" } }));
    expect(read.status).toBe(200);
    expect(read.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("keeps a browser form's PostObject working from any origin, within its signed policy", async () => {
    const key = "uploads/form.txt";
    const fields = await signedPostFields([{ bucket: BUCKET }, ["starts-with", "$key", "uploads/"]]);
    const post = async (k: string) => {
      const form = new FormData();
      form.set("key", k);
      for (const [name, value] of Object.entries(fields)) form.set(name, value);
      form.set("file", new Blob(["from a form"]), "form.txt");
      const encoded = new Response(form);
      // A browser ends the form with a CRLF after the closing boundary (workerd does not: tests/worker/post-object.test.ts).
      const body = new Uint8Array([...new Uint8Array(await encoded.arrayBuffer()), 13, 10]);
      const headers = {
        "content-type": encoded.headers.get("content-type") ?? "",
        "content-length": String(body.length),
        origin: EVIL,
        "sec-fetch-site": "cross-site",
      };
      return call(new Request(`${GW}/${BUCKET}`, { method: "POST", body, headers }));
    };
    expect((await post(key)).status).toBe(204);
    expect(await (await call(await signed(`${GW}/${BUCKET}/${key}`))).text()).toBe("from a form");
    // Outside its policy: refused by the policy, as before.
    expect((await post("planted.html")).status).toBe(403);
  });
});
