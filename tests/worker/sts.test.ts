// Temporary credentials (api/s3/sts.ts, services/sessions.ts, auth/session-token.ts): STS's
// GetSessionToken (and AssumeRole) on `POST /`, signed for service "sts" as the AWS SDKs sign it
// (the body's hash, no x-amz-content-sha256). The temporary key works only with its token, acts
// with exactly its parent key's rights and bucket policies, expires, is refused when its token is
// tampered with or belongs to another key, and stops working as soon as its parent is disabled or
// deleted (for good: enabling the key again does not bring it back) or its parent's secret changes.
// It cannot create lasting access through the admin API.
import { AwsClient } from "aws4fetch";
import { env as workersEnv, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { handleS3 } from "../../worker/src/api/handle";
import { mintSession, openSession, secretFingerprint } from "../../worker/src/auth/session-token";
import type { Env } from "../../worker/src/config";
import { CREDENTIALS, MASTER_KEY } from "../shared/credentials";
import { GATEWAY, s3, s3ok } from "./signed";

const STS_NS = "https://sts.amazonaws.com/doc/2011-06-15/";
const A = "sts-a";
const B = "sts-b";

interface Creds {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}
type Key = { id: string; secret: string };

const send = (request: Request) => exports.default.fetch(request);
const text = (xml: string, tag: string) => new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml)?.[1];

/** An STS request signed as the AWS SDKs sign one: service "sts", the form's hash in the signature. */
async function sts(creds: Creds, form: string, service = "sts"): Promise<Response> {
  const client = new AwsClient({ ...creds, service, region: "us-east-1" });
  return send(
    await client.sign(`${GATEWAY}/`, { method: "POST", body: form, headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-8" } }),
  );
}

async function sessionOf(creds: Creds, form = "Action=GetSessionToken&Version=2011-06-15"): Promise<Required<Creds> & { expiration: string }> {
  const res = await sts(creds, form);
  const xml = await res.text();
  expect(res.status, xml).toBe(200);
  return {
    accessKeyId: text(xml, "AccessKeyId") as string,
    secretAccessKey: text(xml, "SecretAccessKey") as string,
    sessionToken: text(xml, "SessionToken") as string,
    expiration: text(xml, "Expiration") as string,
  };
}

/** S3 requests signed with `creds` (a session token goes in x-amz-security-token, signed). */
function as(creds: Creds) {
  const client = new AwsClient({ ...creds, service: "s3", region: "us-east-1" });
  return async (path: string, init: RequestInit = {}) => send(await client.sign(`${GATEWAY}${path}`, init));
}

async function admin(method: string, path: string, body?: unknown): Promise<Response> {
  return s3(`/_shardgate/admin${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
  });
}

async function newKey(name: string): Promise<Key> {
  const res = await admin("POST", "/keys", { name });
  expect(res.status).toBe(201);
  return (await res.json()) as Key;
}

const keyCreds = (key: Key): Creds => ({ accessKeyId: key.id, secretAccessKey: key.secret });
const code = (xml: string) => text(xml, "Code");

async function healthy(): Promise<void> {
  expect((await send(new Request(`${GATEWAY}/_shardgate/health`))).status).toBe(200);
}

beforeAll(async () => {
  for (const b of [A, B]) await s3ok(`/${b}`, { method: "PUT" });
  await s3ok(`/${A}/doc.txt`, { method: "PUT", body: "in A" });
  await s3ok(`/${A}/secret/plan.txt`, { method: "PUT", body: "hidden" });
  await s3ok(`/${B}/doc.txt`, { method: "PUT", body: "in B" });
});

describe("GetSessionToken", () => {
  it("answers STS's XML with a temporary key, a secret, a token and an expiry of an hour (or DurationSeconds)", async () => {
    // As the SDKs sign for STS: the body's hash is signed, not sent.
    const probe = await new AwsClient({ ...CREDENTIALS, service: "sts", region: "us-east-1" }).sign(`${GATEWAY}/`, { method: "POST", body: "Action=x" });
    expect(probe.headers.has("x-amz-content-sha256")).toBe(false);
    const before = Date.now();
    const res = await sts(CREDENTIALS, "Action=GetSessionToken&Version=2011-06-15");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("xml");
    const xml = await res.text();
    expect(xml).toContain(`<GetSessionTokenResponse xmlns="${STS_NS}"><GetSessionTokenResult><Credentials>`);
    expect(text(xml, "AccessKeyId")).toMatch(/^ASIA[A-Z2-7]{16}$/);
    expect(text(xml, "SecretAccessKey")).toMatch(/^[A-Za-z0-9]{40}$/);
    expect((text(xml, "SessionToken") ?? "").length).toBeGreaterThan(40);
    expect(text(xml, "RequestId")).toBe(res.headers.get("x-amz-request-id"));
    const expires = Date.parse(text(xml, "Expiration") as string);
    expect(expires - before).toBeGreaterThanOrEqual(3600_000 - 1000);
    expect(expires - Date.now()).toBeLessThanOrEqual(3600_000);

    const short = await sessionOf(CREDENTIALS, "Action=GetSessionToken&Version=2011-06-15&DurationSeconds=900");
    expect(Math.round((Date.parse(short.expiration) - Date.now()) / 60_000)).toBe(15);
  });

  it("takes AssumeRole as MinIO does, and a signature for service s3", async () => {
    const res = await sts(CREDENTIALS, "Action=AssumeRole&Version=2011-06-15&RoleArn=arn:x&RoleSessionName=console&DurationSeconds=1200");
    const xml = await res.text();
    expect(res.status, xml).toBe(200);
    expect(xml).toContain(`<AssumeRoleResponse xmlns="${STS_NS}"><AssumeRoleResult><Credentials>`);
    expect(xml).toContain("<AssumedRoleUser>");
    const viaS3 = await sts(CREDENTIALS, "Action=GetSessionToken&Version=2011-06-15", "s3");
    expect(viaS3.status, await viaS3.clone().text()).toBe(200);
  });

  it("refuses durations outside 900…3600 s, unknown actions, session policies and MFA, as STS does", async () => {
    for (const [form, want] of [
      ["Action=GetSessionToken&Version=2011-06-15&DurationSeconds=899", "ValidationError"],
      ["Action=GetSessionToken&Version=2011-06-15&DurationSeconds=3601", "ValidationError"],
      ["Action=GetSessionToken&Version=2011-06-15&DurationSeconds=129600", "ValidationError"],
      ["Action=GetSessionToken&Version=2011-06-15&DurationSeconds=1e3", "ValidationError"],
      ["Action=GetSessionToken&Version=2011-06-15&DurationSeconds=-1000", "ValidationError"],
      ["Action=AssumeRole&Version=2011-06-15&Policy=%7B%7D", "ValidationError"],
      ["Action=GetSessionToken&Version=2011-06-15&SerialNumber=x&TokenCode=123456", "ValidationError"],
      ["Action=GetCallerIdentity&Version=2011-06-15", "InvalidAction"],
      ["Action=GetSessionToken&Version=2099-01-01", "InvalidAction"],
      ["Version=2011-06-15", "InvalidAction"],
    ] as const) {
      const res = await sts(CREDENTIALS, form);
      const xml = await res.text();
      expect(res.status, form).toBe(400);
      expect(xml, form).toContain(`<ErrorResponse xmlns="${STS_NS}"><Error><Type>Sender</Type><Code>${want}</Code>`);
    }
  });

  it("refuses anonymous callers, wrong signatures and oversized bodies, and keeps answering", async () => {
    const anonymous = await send(
      new Request(`${GATEWAY}/`, { method: "POST", body: "Action=GetSessionToken", headers: { "content-type": "application/x-www-form-urlencoded" } }),
    );
    expect(anonymous.status).toBe(403);
    expect(code(await anonymous.text())).toBe("AccessDenied");
    const wrong = await sts({ accessKeyId: CREDENTIALS.accessKeyId, secretAccessKey: "not-the-secret" }, "Action=GetSessionToken");
    expect(wrong.status).toBe(403);
    expect(await wrong.text()).toContain("<Code>SignatureDoesNotMatch</Code>");
    // The body is signed: changing it after signing breaks the signature.
    const signed = await new AwsClient({ ...CREDENTIALS, service: "sts", region: "us-east-1" }).sign(`${GATEWAY}/`, {
      method: "POST",
      body: "Action=GetSessionToken&DurationSeconds=900",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    const changed = await send(new Request(signed, { body: "Action=GetSessionToken&DurationSeconds=3600" }));
    expect(changed.status).toBe(403);
    expect(code(await changed.text())).toBe("SignatureDoesNotMatch");
    // A body past the bound is refused before it is read whole.
    const big = await sts(CREDENTIALS, `Action=GetSessionToken&Pad=${"x".repeat(64 * 1024)}`);
    expect(big.status).toBe(400);
    expect(code(await big.text())).toBe("ValidationError");
    await healthy();
  });
});

describe("temporary credentials", () => {
  it("sign S3 requests with their token (header or presigned URL) and are unknown without it", async () => {
    const temp = await sessionOf(CREDENTIALS);
    const call = as(temp);
    expect((await call("/")).status).toBe(200);
    expect((await call(`/${A}/made-by-session.txt`, { method: "PUT", body: "temporary" })).status).toBe(200);
    expect(await (await s3ok(`/${A}/made-by-session.txt`)).text()).toBe("temporary");
    // Presigned, the token rides in the signed query.
    const url = (
      await new AwsClient({ ...temp, service: "s3", region: "us-east-1" }).sign(`${GATEWAY}/${A}/doc.txt?X-Amz-Expires=60`, { aws: { signQuery: true } })
    ).url;
    expect(new URL(url).searchParams.get("X-Amz-Security-Token")).toBe(temp.sessionToken);
    const presigned = await send(new Request(url));
    expect(presigned.status).toBe(200);
    expect(await presigned.text()).toBe("in A");

    const withoutToken = await as({ accessKeyId: temp.accessKeyId, secretAccessKey: temp.secretAccessKey })("/");
    expect(withoutToken.status).toBe(403);
    expect(code(await withoutToken.text())).toBe("InvalidAccessKeyId");
  });

  it("refuse a tampered token, another session's token and a token on a long-term key", async () => {
    const temp = await sessionOf(CREDENTIALS);
    const other = await sessionOf(CREDENTIALS);
    const token = temp.sessionToken;
    const at = token.length - 10;
    const flipped = token.slice(0, at) + (token[at] === "A" ? "B" : "A") + token.slice(at + 1);
    for (const sessionToken of [flipped, other.sessionToken, "garbage", `v1.${"A".repeat(5000)}`]) {
      const res = await as({ ...temp, sessionToken })("/");
      expect(res.status, sessionToken.slice(0, 20)).toBe(400);
      expect(code(await res.text())).toBe("InvalidToken");
    }
    const onRoot = await as({ ...CREDENTIALS, sessionToken: token })("/");
    expect(onRoot.status).toBe(400);
    expect(code(await onRoot.text())).toBe("InvalidToken");
    await healthy();
  });

  it("expire: a token past its expiry is ExpiredToken", async () => {
    const parent = { parentId: CREDENTIALS.accessKeyId, parentFingerprint: await secretFingerprint(CREDENTIALS.secretAccessKey), issued: Date.now() - 2000 };
    const expired = await mintSession(MASTER_KEY, { ...parent, expires: Date.now() - 1000 });
    const res = await as(expired)("/");
    expect(res.status).toBe(400);
    expect(code(await res.text())).toBe("ExpiredToken");
    const live = await mintSession(MASTER_KEY, { ...parent, expires: Date.now() + 60_000 });
    expect(await openSession(MASTER_KEY, live.accessKeyId, live.sessionToken, live.expires - 1)).toMatchObject({ parentId: CREDENTIALS.accessKeyId });
    expect(await openSession(MASTER_KEY, live.accessKeyId, live.sessionToken, live.expires)).toBe("expired");
    // Sealed under another master key: not this gateway's.
    expect(await openSession(`${MASTER_KEY}x`, live.accessKeyId, live.sessionToken, Date.now())).toBe("invalid");
  });

  it("cannot make further sessions (they would outlive what they were given for)", async () => {
    const temp = await sessionOf(CREDENTIALS);
    const res = await sts(temp, "Action=GetSessionToken&Version=2011-06-15");
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("<Code>AccessDenied</Code><Message>Temporary credentials cannot call GetSessionToken: ");
  });

  it("have exactly the rights of their parent key: reads where it reads, nothing more; no admin API", async () => {
    const reader = await newKey("sts-reader");
    expect((await admin("PUT", `/keys/${reader.id}/buckets/${A}`, { read: true })).status).toBe(200);
    const temp = await sessionOf(keyCreds(reader));
    const call = as(temp);
    expect(await (await call(`/${A}/doc.txt`)).text()).toBe("in A");
    expect((await call(`/${A}/nope.txt`, { method: "PUT", body: "x" })).status).toBe(403);
    expect((await call(`/${B}/doc.txt`)).status).toBe(403);
    const listed = await (await call("/")).text();
    expect(listed).toContain(`<Name>${A}</Name>`);
    expect(listed).not.toContain(`<Name>${B}</Name>`);
    expect((await call("/_shardgate/admin/keys")).status).toBe(403);
    expect(
      (await call("/_shardgate/admin/keys", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "escalate" }) }))
        .status,
    ).toBe(403);
    // The root key's session acts as the root key, the admin API's reads included.
    const rootTemp = as(await sessionOf(CREDENTIALS));
    expect((await rootTemp("/_shardgate/admin/keys")).status).toBe(200);
  });

  it("cannot change anything through the admin API: no key, no rights, no enabling, renaming, disabling or deleting", async () => {
    const key = await newKey("sts-lasting");
    expect((await admin("PATCH", `/keys/${key.id}`, { enabled: false })).status).toBe(200);
    const rootTemp = as(await sessionOf(CREDENTIALS));
    const call = (method: string, path: string, body?: unknown) =>
      rootTemp(`/_shardgate/admin${path}`, {
        method,
        ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
      });
    for (const [method, path, body] of [
      ["POST", "/keys", { name: "persist", createBucket: true }],
      ["PUT", `/keys/${key.id}/buckets/${A}`, { read: true, write: true, owner: true }],
      ["PUT", `/keys/${key.id}/buckets/${A}`, { read: false, write: false, owner: false }],
      ["PATCH", `/keys/${key.id}`, { enabled: true }],
      ["PATCH", `/keys/${key.id}`, { createBucket: true }],
      ["PATCH", `/keys/${key.id}`, { name: "renamed", createBucket: false }],
      ["PATCH", `/keys/${key.id}`, { name: "renamed", enabled: false }],
      ["DELETE", `/keys/${key.id}`, undefined],
    ] as const) {
      const res = await call(method, path, body);
      const xml = await res.text();
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(403);
      expect(code(xml)).toBe("AccessDenied");
      expect(xml).toContain("<Message>Temporary credentials cannot ");
    }
    // Nothing changed.
    const listed = (await (await admin("GET", "/keys")).json()) as {
      keys: { id: string; name: string; enabled: boolean; createBucket: boolean; grants: unknown[] }[];
    };
    expect(listed.keys.map((k) => k.name)).not.toContain("persist");
    expect(listed.keys.find((k) => k.id === key.id)).toMatchObject({ name: "sts-lasting", enabled: false, createBucket: false, grants: [] });
    // Reads stay open to the root key's sessions.
    for (const path of ["/keys", "/nodes", `/buckets/${A}/keys`]) expect((await call("GET", path)).status, path).toBe(200);
    // The root key itself still may.
    const made = await admin("POST", "/keys", { name: "sts-by-root" });
    expect(made.status).toBe(201);
    await healthy();
  });

  it("are bound by policies that name their parent key", async () => {
    const key = await newKey("sts-policy");
    expect((await admin("PUT", `/keys/${key.id}/buckets/${A}`, { read: true })).status).toBe(200);
    const policyA = {
      Version: "2012-10-17",
      Statement: [{ Effect: "Deny", Principal: { AWS: key.id }, Action: "s3:GetObject", Resource: `arn:aws:s3:::${A}/secret/*` }],
    };
    const policyB = {
      Version: "2012-10-17",
      Statement: [{ Effect: "Allow", Principal: { AWS: [key.id] }, Action: "s3:GetObject", Resource: `arn:aws:s3:::${B}/*` }],
    };
    await s3ok(`/${A}?policy`, { method: "PUT", body: JSON.stringify(policyA) }, 204);
    await s3ok(`/${B}?policy`, { method: "PUT", body: JSON.stringify(policyB) }, 204);
    const call = as(await sessionOf(keyCreds(key)));
    expect((await call(`/${A}/doc.txt`)).status).toBe(200);
    expect((await call(`/${A}/secret/plan.txt`)).status).toBe(403); // the Deny on the parent
    expect(await (await call(`/${B}/doc.txt`)).text()).toBe("in B"); // the Allow to the parent
    await s3ok(`/${A}?policy`, { method: "DELETE" }, 204);
    await s3ok(`/${B}?policy`, { method: "DELETE" }, 204);
  });

  it("hand out direct-path tickets that end when they do, not hours later", async () => {
    await s3ok(`/${A}/big.bin`, { method: "PUT", body: new Uint8Array(256 * 1024) });
    const temp = await sessionOf(
      { accessKeyId: CREDENTIALS.accessKeyId, secretAccessKey: CREDENTIALS.secretAccessKey },
      "Action=GetSessionToken&DurationSeconds=900",
    );
    const ends = Date.parse(temp.expiration);
    const call = as(temp);
    const plan = (await (await call(`/${A}/big.bin?shardgate-plan`)).json()) as { mode: string; expires: number };
    expect(plan.mode).toBe("direct");
    expect(plan.expires).toBeLessThanOrEqual(ends);
    const upload = await call(`/${A}/up.bin?shardgate-upload`, { method: "POST", body: JSON.stringify({ size: 256 * 1024 }) });
    const session = (await upload.json()) as { mode: string; expires: number };
    expect(session.mode).toBe("direct");
    expect(session.expires).toBeLessThanOrEqual(ends);
    // A long-term key's tickets last the configured session (hours).
    const own = (await (await s3(`/${A}/big.bin?shardgate-plan`)).json()) as { expires: number };
    expect(own.expires).toBeGreaterThan(ends + 3600_000);
  });

  it("stop working when the parent key is disabled or deleted", async () => {
    const key = await newKey("sts-revoked");
    expect((await admin("PUT", `/keys/${key.id}/buckets/${A}`, { read: true })).status).toBe(200);
    const temp = await sessionOf(keyCreds(key));
    const call = as(temp);
    expect((await call(`/${A}/doc.txt`)).status).toBe(200);
    expect((await admin("PATCH", `/keys/${key.id}`, { enabled: false })).status).toBe(200);
    const disabled = await call(`/${A}/doc.txt`);
    expect(disabled.status).toBe(403);
    expect(code(await disabled.text())).toBe("InvalidAccessKeyId");
    expect((await sts(keyCreds(key), "Action=GetSessionToken")).status).toBe(403);
    // Enabled again, the key works, its new sessions too, but not the sessions made before.
    expect((await admin("PATCH", `/keys/${key.id}`, { enabled: true })).status).toBe(200);
    expect((await as(keyCreds(key))(`/${A}/doc.txt`)).status).toBe(200);
    const revoked = await call(`/${A}/doc.txt`);
    expect(revoked.status).toBe(400);
    expect(await revoked.text()).toContain(
      "<Code>ExpiredToken</Code><Message>The provided token has expired: its key was disabled after it was issued.</Message>",
    );
    const fresh = as(await sessionOf(keyCreds(key)));
    expect((await fresh(`/${A}/doc.txt`)).status).toBe(200);
    expect((await admin("DELETE", `/keys/${key.id}`)).status).toBe(204);
    for (const session of [call, fresh]) {
      const deleted = await session(`/${A}/doc.txt`);
      expect(deleted.status).toBe(403);
      expect(code(await deleted.text())).toBe("InvalidAccessKeyId");
    }
    await healthy();
  });

  it("end when their key's secret changes, though the master key that seals them stays", async () => {
    const env = workersEnv as unknown as Env;
    const exec = { waitUntil: () => {} };
    const rotated = { ...env, SHARDGATE_SECRET_ACCESS_KEY: `${CREDENTIALS.secretAccessKey}-rotated` } as Env;
    expect(rotated.SHARDGATE_MASTER_KEY).toBe(MASTER_KEY);
    const temp = await sessionOf(CREDENTIALS);
    const signer = new AwsClient({ ...temp, service: "s3", region: "us-east-1" });
    const before = await handleS3(await signer.sign(`${GATEWAY}/${A}/doc.txt`), env, exec);
    expect(await before.text()).toBe("in A");
    const after = await handleS3(await signer.sign(`${GATEWAY}/${A}/doc.txt`), rotated, exec);
    expect(after.status).toBe(400);
    expect(await after.text()).toContain("<Code>ExpiredToken</Code><Message>The provided token has expired: the secret of its key has changed.</Message>");
    // The new secret's sessions work under the new secret (and not under the old one).
    const newRoot = { accessKeyId: CREDENTIALS.accessKeyId, secretAccessKey: `${CREDENTIALS.secretAccessKey}-rotated` };
    const minted = await handleS3(
      await new AwsClient({ ...newRoot, service: "sts", region: "us-east-1" }).sign(`${GATEWAY}/`, {
        method: "POST",
        body: "Action=GetSessionToken&Version=2011-06-15",
        headers: { "content-type": "application/x-www-form-urlencoded" },
      }),
      rotated,
      exec,
    );
    const xml = await minted.text();
    expect(minted.status, xml).toBe(200);
    const next = new AwsClient({
      accessKeyId: text(xml, "AccessKeyId") as string,
      secretAccessKey: text(xml, "SecretAccessKey") as string,
      sessionToken: text(xml, "SessionToken") as string,
      service: "s3",
      region: "us-east-1",
    });
    expect(await (await handleS3(await next.sign(`${GATEWAY}/${A}/doc.txt`), rotated, exec)).text()).toBe("in A");
    expect((await handleS3(await next.sign(`${GATEWAY}/${A}/doc.txt`), env, exec)).status).toBe(400);
    await healthy();
  });
});
