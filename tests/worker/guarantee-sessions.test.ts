// Guarantee (docs/security.md): temporary credentials create nothing that outlasts them. Every
// operation of the table (operation-requests.ts, one request each) and every route of the admin API
// is sent signed with the root key's session and with a session of a key that holds every right on
// the bucket: what would outlast the session (a bucket's settings, the gateway's, another session)
// is refused with the session's own answer, everything else is not. The refused list here is
// written out on its own, not derived from the rule it checks. Then the attacks that broke it
// (issue #39, row 2), each with what it would have changed.
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { adminApp } from "../../worker/src/api/admin-app";
import type { OperationName } from "../../worker/src/api/operations";
import { CREDENTIALS } from "../shared/credentials";
import { REQUESTS, requestOf } from "./operation-requests";
import { GATEWAY, s3, s3ok, sessionOf, signedAs } from "./signed";

const send = (request: Request) => exports.default.fetch(request);
const REFUSAL = "Temporary credentials cannot ";
const JSON_BODY = { "content-type": "application/json" };
/** The bucket the walk's requests name. */
const WALK = "guarantee-walk";

/** What sessions may not do among the operations: a bucket's settings, replication, another session, the admin API's changes (its twin's request is a POST; every route is walked below). */
const REFUSED: readonly OperationName[] = [
  "GetSessionToken",
  "PutBucketCors",
  "DeleteBucketCors",
  "PutBucketTagging",
  "DeleteBucketTagging",
  "PutBucketLifecycleConfiguration",
  "DeleteBucketLifecycle",
  "PutObjectLockConfiguration",
  "PutBucketEncryption",
  "DeleteBucketEncryption",
  "PutBucketNotificationConfiguration",
  "PutBucketReplication",
  "DeleteBucketReplication",
  "PutBucketWebsite",
  "DeleteBucketWebsite",
  "PutBucketPolicy",
  "DeleteBucketPolicy",
  "PutBucketAcl",
  "PutBucketOwnershipControls",
  "PutBucketVersioning",
  "DeleteBucket",
  "CreateBucket",
  "PutObjectRetention",
  "Admin",
];

/** Among them, what only the root key may do at all: a tenant is refused it by its rights. */
const ROOT_ONLY: readonly OperationName[] = ["PutBucketReplication", "DeleteBucketReplication", "Admin"];

type Call = ReturnType<typeof signedAs>;

/** Whether the answer is the session's refusal (and nothing else refused it first). */
async function refusedAsSession(res: Response): Promise<boolean> {
  const xml = await res.text();
  return res.status === 403 && xml.includes(`<Message>${REFUSAL}`);
}

/** Every admin route, with its parameters filled in. */
const ADMIN_ROUTES = [...new Map(adminApp.routes.map((r) => [`${r.method} ${r.path}`, r])).values()]
  .filter((r) => r.method !== "ALL" && r.path.startsWith("/_shardgate/admin/"))
  .map((r) => ({ method: r.method, path: r.path.replace(/:[a-z]+/g, (p) => (p === ":bucket" ? WALK : p === ":node" ? "NODE_0" : "SGAAAAAAAAAAAAAAAAAA")) }));

let rootSession: Call;
let tenantSession: Call;

beforeAll(async () => {
  await s3ok(`/${WALK}`, { method: "PUT" });
  const made = await s3ok(
    "/_shardgate/admin/keys",
    { method: "POST", headers: JSON_BODY, body: JSON.stringify({ name: "guarantee-tenant", createBucket: true }) },
    201,
  );
  const tenant = (await made.json()) as { id: string; secret: string };
  await s3ok(`/_shardgate/admin/keys/${tenant.id}/buckets/${WALK}`, {
    method: "PUT",
    headers: JSON_BODY,
    body: JSON.stringify({ read: true, write: true, owner: true }),
  });
  rootSession = signedAs(await sessionOf(CREDENTIALS));
  tenantSession = signedAs(await sessionOf({ accessKeyId: tenant.id, secretAccessKey: tenant.secret }));
});

describe("sessions create nothing that lasts", () => {
  it("every operation: refused to sessions exactly where it would outlast them, for the root key's and a tenant's", async () => {
    for (const [who, call] of [
      ["root", () => rootSession],
      ["tenant", () => tenantSession],
    ] as const) {
      const refusedAsSessions: string[] = [];
      for (const op of Object.keys(REQUESTS) as OperationName[]) {
        const { path, init } = await requestOf(op, { bucket: WALK });
        const res = await call()(path, init);
        const status = res.status;
        if (await refusedAsSession(res)) refusedAsSessions.push(op);
        // What the tenant's key itself may not do (replication, the admin API: the root key's) is refused by its rights first.
        else if (REFUSED.includes(op)) expect(status, `${who} ${op}`).toBe(403);
      }
      if (who === "root") expect(refusedAsSessions.sort()).toEqual([...REFUSED].sort());
      else expect(refusedAsSessions.sort()).toEqual(REFUSED.filter((op) => !ROOT_ONLY.includes(op)).sort());
    }
  });

  it("every admin route: the root key's session reads, and changes nothing; a tenant's session gets nothing", async () => {
    expect(ADMIN_ROUTES.length).toBeGreaterThan(20);
    for (const { method, path } of ADMIN_ROUTES) {
      const res = await rootSession(path, { method, ...(method === "GET" ? {} : { body: "{}", headers: JSON_BODY }) });
      if (method === "GET") {
        expect(res.status, `${method} ${path}`).not.toBe(403);
        await res.body?.cancel();
      } else expect(await refusedAsSession(res), `${method} ${path}`).toBe(true);
      const tenant = await tenantSession(path, { method });
      expect(tenant.status, `tenant ${method} ${path}`).toBe(403);
      await tenant.body?.cancel();
    }
    // The metrics: a read.
    expect((await rootSession("/_shardgate/metrics")).status).toBe(200);
  });

  it("the root key's session adds no node, no public policy and no replication (issue #39, row 2)", async () => {
    const bucket = "guarantee-sessions";
    await s3ok(`/${bucket}`, { method: "PUT" });
    const nodesBefore = await (await s3ok("/_shardgate/admin/nodes")).text();

    const node = await rootSession("/_shardgate/admin/nodes", {
      method: "POST",
      headers: JSON_BODY,
      body: JSON.stringify({ id: "attacker", type: "s3", endpoint: "http://127.0.0.1:9/", bucket: "loot", accessKeyId: "a", secretAccessKey: "b" }),
    });
    expect(await refusedAsSession(node)).toBe(true);
    expect(await (await s3ok("/_shardgate/admin/nodes")).text()).toBe(nodesBefore);

    const policy = JSON.stringify({
      Version: "2012-10-17",
      Statement: [{ Effect: "Allow", Principal: "*", Action: ["s3:PutObject", "s3:GetObject"], Resource: `arn:aws:s3:::${bucket}/*` }],
    });
    expect(await refusedAsSession(await rootSession(`/${bucket}?policy`, { method: "PUT", body: policy }))).toBe(true);
    expect((await s3(`/${bucket}?policy`)).status).toBe(404);
    const anonymous = await send(new Request(`${GATEWAY}/${bucket}/planted.html`, { method: "PUT", body: "<script>1</script>" }));
    expect(anonymous.status).toBe(403);

    const replication =
      "<ReplicationConfiguration><Role>r</Role><Rule><ID>out</ID><Status>Enabled</Status><Filter></Filter>" +
      "<DeleteMarkerReplication><Status>Disabled</Status></DeleteMarkerReplication>" +
      "<Destination><Bucket>arn:aws:s3:::elsewhere</Bucket></Destination></Rule></ReplicationConfiguration>";
    expect(await refusedAsSession(await rootSession(`/${bucket}?replication`, { method: "PUT", body: replication }))).toBe(true);
    expect((await s3(`/${bucket}?replication`)).status).toBe(404);

    // Nor a write that locks what it writes, or says it is another gateway's replica (never replicated again).
    for (const headers of <Record<string, string>[]>[
      { "x-amz-object-lock-mode": "COMPLIANCE", "x-amz-object-lock-retain-until-date": new Date(Date.now() + 86_400_000).toISOString() },
      { "x-shardgate-replica": "true" },
    ]) {
      expect(await refusedAsSession(await rootSession(`/${bucket}/marked.txt`, { method: "PUT", body: "x", headers })), JSON.stringify(headers)).toBe(true);
    }
    expect((await s3(`/${bucket}/marked.txt`)).status).toBe(404);

    // What a session does within its rights still works: an object written, read, deleted.
    expect((await rootSession(`/${bucket}/by-session.txt`, { method: "PUT", body: "made in a session" })).status).toBe(200);
    expect(await (await rootSession(`/${bucket}/by-session.txt`)).text()).toBe("made in a session");
    expect((await rootSession(`/${bucket}/by-session.txt`, { method: "DELETE" })).status).toBe(204);
  });
});
