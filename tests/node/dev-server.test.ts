// What `npm start` serves (plain workerd) and what `npm run dev` serves (wrangler dev), end to end
// over HTTP (the "node" and "node-dev" projects). Catches what the in-workerd test pool cannot,
// e.g. a main module that workerd refuses to load or a .wasm import wrangler does not bundle.
import { connect } from "node:net";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CREDENTIALS, Gateway } from "./gateway";

const gateway = new Gateway();
beforeAll(() => gateway.start(), 90_000);
afterAll(() => gateway.dispose());

describe(`the ${gateway.runtime} runtime`, () => {
  it("serves the health endpoint with the core's version", async () => {
    const res = await fetch(`${gateway.base}/_shardgate/health`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; version: string; core: string };
    expect(body).toMatchObject({ status: "ok", core: inject("coreCrateVersion") });
    expect(body.version).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("serves the console on an origin of its own, which the gateway answers CORS for; temporary credentials work", async () => {
    const index = await fetch(`${gateway.consoleBase}/`);
    expect(index.status).toBe(200);
    expect(await index.text()).toContain("shardgate console");
    expect(await (await fetch(`${gateway.consoleBase}/config.json`)).json()).toEqual({ gateway: gateway.base, region: "us-east-1" });
    const preflight = await fetch(`${gateway.base}/`, {
      method: "OPTIONS",
      headers: { origin: gateway.consoleBase, "access-control-request-method": "POST", "access-control-request-headers": "authorization" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(gateway.consoleBase);
    const sts = new AwsClient({ ...CREDENTIALS, service: "sts", region: "us-east-1", retries: 0 });
    const xml = await (
      await sts.fetch(`${gateway.base}/`, {
        method: "POST",
        body: "Action=GetSessionToken&Version=2011-06-15",
        headers: { "content-type": "application/x-www-form-urlencoded" },
      })
    ).text();
    const field = (name: string) => new RegExp(`<${name}>([^<]+)</${name}>`).exec(xml)?.[1] ?? "";
    const temp = new AwsClient({
      accessKeyId: field("AccessKeyId"),
      secretAccessKey: field("SecretAccessKey"),
      sessionToken: field("SessionToken"),
      service: "s3",
      region: "us-east-1",
    });
    const listed = await temp.fetch(`${gateway.base}/`, { headers: { origin: gateway.consoleBase } });
    expect(listed.status).toBe(200);
    expect(listed.headers.get("access-control-allow-origin")).toBe(gateway.consoleBase);
  });

  it("refuses anonymous S3 requests with an XML AccessDenied", async () => {
    const res = await fetch(`${gateway.base}/bucket/key`, { method: "PUT", body: "x" });
    expect(res.status).toBe(403);
    expect(res.headers.get("content-type")).toMatch(/^application\/xml/);
    expect(res.headers.get("x-amz-request-id")).toMatch(/^[0-9A-F]{16}$/);
    expect(await res.text()).toContain("<Code>AccessDenied</Code>");
  });

  it("answers Expect: 100-continue itself, so clients send the body without waiting", async () => {
    const s3 = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
    expect((await s3.fetch(`${gateway.base}/expect-continue`, { method: "PUT" })).status).toBe(200);
    const body = Buffer.alloc(2 << 20, 7);
    const signed = await s3.sign(`${gateway.base}/expect-continue/object`, {
      method: "PUT",
      headers: { "x-amz-content-sha256": "UNSIGNED-PAYLOAD", "content-length": String(body.length), expect: "100-continue" },
    });
    const url = new URL(signed.url);
    const head = [`PUT ${url.pathname} HTTP/1.1`, `host: ${url.host}`, ...[...signed.headers].map(([k, v]) => `${k}: ${v}`), "connection: close", "", ""].join(
      "\r\n",
    );
    // The head goes out alone; the body only once the server said 100 Continue, as the SDKs do.
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => socket.write(head));
      let received = "";
      let sent = false;
      socket.on("data", (d: Buffer) => {
        received += d.toString("latin1");
        if (!sent && received.startsWith("HTTP/1.1 100 Continue\r\n\r\n")) {
          sent = true;
          socket.write(body);
        }
      });
      socket.on("end", () => resolve(received));
      socket.on("error", reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
  });
});
