// Guarantee (docs/security.md): a version under COMPLIANCE retention is never deleted before its
// date, nor one under GOVERNANCE retention or a legal hold without the bypass. Every path that
// deletes a version tries: DELETE ?versionId, DeleteObjects, a replica's delete (the replication
// mark), the lifecycle pass with its clock moved to 2100 (issue #39, row 3) by the root key, by the
// root key's session and through a SigV2 URL with parameters appended (row 4), and the admin API's
// jobs (heal, scrub, the orphan sweep with no grace). Each version reads back byte for byte after.
// The direct path's commits and shard writes against locked objects: direct-guards.test.ts.
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { CREDENTIALS } from "../shared/credentials";
import { GATEWAY, s3, s3ok, sessionOf, signedAs } from "./signed";

const DAY = 24 * 3600 * 1000;
const BUCKET = "guarantee-worm";
const send = (request: Request) => exports.default.fetch(request);
const iso = (ms: number) => new Date(ms).toISOString();
const errorCode = (xml: string) => /<Code>([^<]+)<\/Code>/.exec(xml)?.[1];

async function sha256Header(body: Uint8Array | string): Promise<Record<string, string>> {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return { "x-amz-checksum-sha256": btoa(String.fromCharCode(...digest)) };
}

async function put(key: string, body: Uint8Array | string, headers: Record<string, string> = {}): Promise<string> {
  const res = await s3ok(`/${BUCKET}/${key}`, { method: "PUT", body, headers: { ...(await sha256Header(body)), ...headers } });
  return res.headers.get("x-amz-version-id") as string;
}

async function hmacSha1(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
  return btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text)))));
}

interface Locked {
  key: string;
  versionId: string;
  data: Uint8Array;
  /** What the delete must not get past. */
  how: Record<string, string>;
}

const locked: Locked[] = [];

beforeAll(async () => {
  await s3ok(`/${BUCKET}`, { method: "PUT", headers: { "x-amz-bucket-object-lock-enabled": "true" } });
  const rules =
    "<LifecycleConfiguration><Rule><ID>all</ID><Filter></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration>" +
    "<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule></LifecycleConfiguration>";
  await s3ok(`/${BUCKET}?lifecycle`, { method: "PUT", body: rules });
  const until = iso(Date.now() + 30 * DAY);
  for (const [key, how] of [
    ["compliance", { "x-amz-object-lock-mode": "COMPLIANCE", "x-amz-object-lock-retain-until-date": until }],
    ["governance", { "x-amz-object-lock-mode": "GOVERNANCE", "x-amz-object-lock-retain-until-date": until }],
    ["held", { "x-amz-object-lock-legal-hold": "ON" }],
  ] as const) {
    const data = randomBytes(300_000, key.length);
    locked.push({ key, versionId: await put(key, data, how), data, how });
    // A newer version on top: the locked one is noncurrent, what the lifecycle rule expires after a day.
    await put(key, `newer ${key}`);
  }
}, 60_000);

async function expectIntact(): Promise<void> {
  for (const v of locked) {
    const res = await s3(`/${BUCKET}/${v.key}?versionId=${v.versionId}`);
    expect(res.status, `${v.key}: ${res.status}`).toBe(200);
    expect(new Uint8Array(await res.arrayBuffer()), v.key).toEqual(v.data);
  }
}

describe("COMPLIANCE data is never deleted early; GOVERNANCE and legal holds not without the bypass", () => {
  it("DELETE ?versionId, DeleteObjects and a replica's delete are refused; COMPLIANCE and holds also with the bypass", async () => {
    for (const v of locked) {
      const plain = await s3(`/${BUCKET}/${v.key}?versionId=${v.versionId}`, { method: "DELETE" });
      expect(plain.status, v.key).toBe(403);
      await plain.body?.cancel();
      const replica = await s3(`/${BUCKET}/${v.key}?versionId=${v.versionId}`, { method: "DELETE", headers: { "x-shardgate-replica": "true" } });
      expect(replica.status, `${v.key} as a replica's delete`).toBe(403);
      await replica.body?.cancel();
      const batch = `<Delete><Object><Key>${v.key}</Key><VersionId>${v.versionId}</VersionId></Object></Delete>`;
      const deleted = await (await s3ok(`/${BUCKET}?delete`, { method: "POST", body: batch, headers: await sha256Header(batch) })).text();
      expect(deleted, v.key).toContain("<Code>AccessDenied</Code>");
      if (v.key !== "governance") {
        const bypass = await s3(`/${BUCKET}/${v.key}?versionId=${v.versionId}`, { method: "DELETE", headers: { "x-amz-bypass-governance-retention": "true" } });
        expect(bypass.status, `${v.key} with the bypass`).toBe(403);
        await bypass.body?.cancel();
      }
    }
    await expectIntact();
  });

  it("the lifecycle pass with its clock moved to 2100 expires nothing locked: root key, its session, a SigV2 URL with parameters added", async () => {
    const now = "2100-01-01T00:00:00Z";
    // Three passes: current versions become delete markers, then what is noncurrent falls due.
    for (let pass = 0; pass < 3; pass++) await s3ok(`/_shardgate/admin/lifecycle?bucket=${BUCKET}&now=${now}`, { method: "POST" });
    const session = signedAs(await sessionOf(CREDENTIALS));
    const bySession = await session(`/_shardgate/admin/lifecycle?bucket=${BUCKET}&now=${now}`, { method: "POST" });
    expect(bySession.status).toBe(403);
    await bySession.body?.cancel();
    // A SigV2 URL for the admin endpoint, parameters appended after signing.
    const expires = Math.floor(Date.now() / 1000) + 60;
    const signature = await hmacSha1(CREDENTIALS.secretAccessKey, `POST\n\n\n${expires}\n/_shardgate/admin/lifecycle`);
    const v2 = `${GATEWAY}/_shardgate/admin/lifecycle?AWSAccessKeyId=${CREDENTIALS.accessKeyId}&Expires=${expires}&Signature=${encodeURIComponent(signature)}`;
    const tampered = await send(new Request(`${v2}&bucket=${BUCKET}&now=${now}`, { method: "POST" }));
    const xml = await tampered.text();
    expect(tampered.status, xml).toBe(400);
    expect(errorCode(xml)).toBe("InvalidRequest");
    await expectIntact();
  });

  it("the admin API's jobs (heal, deep scrub, orphan sweep with no grace) leave every locked version whole", async () => {
    for (const job of [`heal?bucket=${BUCKET}&max-objects=1000`, "scrub?mode=deep&max-objects=1000", "sweep?grace-seconds=0"]) {
      const res = await s3(`/_shardgate/admin/${job}`, { method: "POST" });
      expect(res.status, job).toBe(200);
      await res.body?.cancel();
    }
    await expectIntact();
  });

  it("a version whose retention has really ended is expired by the lifecycle pass", async () => {
    const data = "short retention";
    const versionId = await put("short", data, { "x-amz-object-lock-mode": "COMPLIANCE", "x-amz-object-lock-retain-until-date": iso(Date.now() + 1500) });
    await put("short", "newer short");
    const before = await s3(`/_shardgate/admin/lifecycle?bucket=${BUCKET}&now=${iso(Date.now() + 2 * DAY)}`, { method: "POST" });
    await before.body?.cancel();
    expect(await (await s3ok(`/${BUCKET}/short?versionId=${versionId}`)).text()).toBe(data);
    await new Promise((r) => setTimeout(r, 2000));
    for (let pass = 0; pass < 2; pass++) await s3ok(`/_shardgate/admin/lifecycle?bucket=${BUCKET}&now=${iso(Date.now() + 2 * DAY)}`, { method: "POST" });
    expect(errorCode(await (await s3(`/${BUCKET}/short?versionId=${versionId}`)).text())).toBe("NoSuchVersion");
    await expectIntact();
  });
});
