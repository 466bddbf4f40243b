// What `npm start` serves (plain workerd) and what `npm run dev` serves (wrangler dev), end to end
// over HTTP (the "node" and "node-dev" projects). Catches what the in-workerd test pool cannot,
// e.g. a main module that workerd refuses to load or a .wasm import wrangler does not bundle.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Gateway } from "./gateway";

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

  it("refuses anonymous S3 requests with an XML AccessDenied", async () => {
    const res = await fetch(`${gateway.base}/bucket/key`, { method: "PUT", body: "x" });
    expect(res.status).toBe(403);
    expect(res.headers.get("content-type")).toMatch(/^application\/xml/);
    expect(res.headers.get("x-amz-request-id")).toMatch(/^[0-9A-F]{16}$/);
    expect(await res.text()).toContain("<Code>AccessDenied</Code>");
  });
});
