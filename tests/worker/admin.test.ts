// The admin API's sub-app (worker/src/api/admin-app.ts): signed like S3, every query parameter
// validated as declared (400 InvalidArgument naming it), anything else under /_shardgate/admin/
// answered NotImplemented by name, and errors answered as S3 XML like every other request.
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { GATEWAY, s3, s3ok } from "./signed";

const tag = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];

async function s3Error(res: Response): Promise<{ status: number; code?: string; message?: string }> {
  const xml = await res.text();
  return { status: res.status, code: tag(xml, "Code"), message: tag(xml, "Message") };
}

describe("the admin API", () => {
  it("refuses unsigned requests", async () => {
    const res = await exports.default.fetch(new Request(`${GATEWAY}/_shardgate/admin/nodes`));
    expect(await s3Error(res)).toMatchObject({ status: 403, code: "AccessDenied" });
  });

  it("answers its endpoints as JSON", async () => {
    const res = await s3ok("/_shardgate/admin/nodes");
    expect(res.headers.get("content-type")).toBe("application/json");
    const nodes = (await res.json()) as { dataShards: number; parityShards: number; nodes: unknown[] };
    expect(nodes.nodes).toHaveLength(6);
    expect([nodes.dataShards, nodes.parityShards]).toEqual([4, 2]); // the code new objects get (k + m)
    const sweep = (await (await s3ok("/_shardgate/admin/sweep?grace-seconds=3600", { method: "POST" })).json()) as { orphans: number };
    expect(sweep.orphans).toBe(0);
  });

  it("validates query parameters as declared", async () => {
    for (const [method, path, message] of [
      ["POST", "/_shardgate/admin/scrub?mode=fast", "mode must be deep or shallow."],
      ["POST", "/_shardgate/admin/scrub?heal=maybe", "heal must be true or false."],
      ["POST", "/_shardgate/admin/scrub?max-ms=0", "max-ms must be a whole number, 1 or more."],
      ["POST", "/_shardgate/admin/sweep?grace-seconds=-1", "grace-seconds must be a whole number, 0 or more."],
      ["POST", "/_shardgate/admin/sweep?grace-seconds=1.5", "grace-seconds must be a whole number, 0 or more."],
      ["GET", "/_shardgate/admin/object?bucket=b", "Name the object: ?bucket=NAME&amp;key=KEY."],
      ["POST", "/_shardgate/admin/heal?bucket=", "Name the bucket to heal (?bucket=NAME), or none to work through the heal queues."],
    ] as const) {
      expect(await s3Error(await s3(path, { method })), `${method} ${path}`).toEqual({ status: 400, code: "InvalidArgument", message });
    }
  });

  it("answers other paths and methods NotImplemented, by name", async () => {
    expect(await s3Error(await s3("/_shardgate/admin/reboot", { method: "POST" }))).toMatchObject({
      status: 501,
      code: "NotImplemented",
      message: "POST /_shardgate/admin/reboot is not an admin endpoint.",
    });
    expect(await s3Error(await s3("/_shardgate/admin/nodes", { method: "DELETE" }))).toMatchObject({ status: 501, code: "NotImplemented" });
  });

  it("answers errors of its handlers as S3 errors", async () => {
    expect(await s3Error(await s3("/_shardgate/admin/object?bucket=nope&key=k"))).toMatchObject({ status: 404, code: "NoSuchBucket" });
    expect(await s3Error(await s3("/_shardgate/admin/nodes/NOPE/drain", { method: "POST" }))).toMatchObject({ status: 404, code: "NoSuchNode" });
  });
});
