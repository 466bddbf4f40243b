// Cheap rejection (issue #29): requests that cannot authenticate cost no key lookup (a call to the
// KeyStore Durable Object) and cannot wear the gateway down; and a SigV2 link cannot be turned
// into an operation its signature does not cover. Each attack runs while health is probed.
//   - the clock, the scope and the form of a request are checked before its key is looked up;
//   - ids no key can have cost nothing, unknown ids are remembered apart from real keys, and
//     lookups of unknown ids are bounded;
//   - a client that keeps failing is answered 503 SlowDown, and no one else is;
//   - SigV2 signs every parameter that picks an operation, and refuses shardgate-*.
import { AwsClient } from "aws4fetch";
import { env as workersEnv, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleS3 } from "../../worker/src/api/handle";
import { clientOf, MAX_FAILURES } from "../../worker/src/auth/throttle";
import { KEY_CACHE_MS } from "../../worker/src/services/access-keys";
import type { Env } from "../../worker/src/config";
import { CREDENTIALS } from "../shared/credentials";
import { errorCode, metricTotal, scrapeMetrics, whileProbing } from "./hostile";
import { GATEWAY, s3, s3ok } from "./signed";

const env = workersEnv as unknown as Env;
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const randomText = (n: number, alphabet = ALPHABET) => Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => alphabet[b % alphabet.length]).join("");
/** An id of the form the gateway's keys have (SG + 18), that no key has. */
const unknownKeyId = () => `SG${randomText(18)}`;

function signer(accessKeyId: string, secretAccessKey = "not-the-secret", datetime?: string) {
  const client = new AwsClient({ accessKeyId, secretAccessKey, service: "s3", region: "us-east-1" });
  return (path: string, init: RequestInit & { signQuery?: boolean } = {}) =>
    client.sign(`${GATEWAY}${path}`, { ...init, aws: { datetime, signQuery: init.signQuery } });
}

const send = (request: Request) => exports.default.fetch(request);
const lookups = async () => metricTotal(await scrapeMetrics(), "shardgate_key_lookups_total");

describe("checks before any key lookup", () => {
  it("an out-of-skew request with an unknown key is RequestTimeTooSkewed, an expired presigned URL AccessDenied, a bad scope malformed: no lookup", async () => {
    const before = await lookups();
    const hourAgo = new Date(Date.now() - 3600_000).toISOString().replace(/[:-]|\.\d{3}/g, "");
    const skewed = await send(await signer(unknownKeyId(), "x", hourAgo)("/any-bucket/o"));
    expect(skewed.status).toBe(403);
    expect(errorCode(await skewed.text())).toBe("RequestTimeTooSkewed");

    const url = new URL(`${GATEWAY}/any-bucket/o`);
    url.search = new URLSearchParams({
      "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
      "X-Amz-Credential": `${unknownKeyId()}/${hourAgo.slice(0, 8)}/us-east-1/s3/aws4_request`,
      "X-Amz-Date": hourAgo,
      "X-Amz-Expires": "60",
      "X-Amz-SignedHeaders": "host",
      "X-Amz-Signature": "0".repeat(64),
    }).toString();
    const expired = await send(new Request(url));
    expect(expired.status).toBe(403);
    expect(await expired.text()).toContain("Request has expired");

    const wrongRegion = new AwsClient({ accessKeyId: unknownKeyId(), secretAccessKey: "x", service: "s3", region: "eu-west-9" });
    const malformed = await send(await wrongRegion.sign(`${GATEWAY}/any-bucket/o`));
    expect(errorCode(await malformed.text())).toBe("AuthorizationHeaderMalformed");
    // Unsigned x-amz-* headers: refused before the lookup too.
    const signed = await signer(unknownKeyId())("/any-bucket/o");
    const added = new Request(signed, { headers: new Headers([...signed.headers, ["x-amz-meta-added", "1"]]) });
    expect(errorCode(await (await send(added)).text())).toBe("AccessDenied");

    expect(await lookups()).toBe(before);
  });

  it("a key this isolate knows refreshes without the lookup budget, after a change touched it too: a flood cannot lock it out", async () => {
    await s3ok("/stale-bucket", { method: "PUT" });
    await s3ok("/stale-bucket/o", { method: "PUT", body: "still" });
    await s3ok("/stale-other", { method: "PUT" });
    const created = await s3("/_shardgate/admin/keys", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "stale survivor" }),
    });
    const real = (await created.json()) as { id: string; secret: string };
    await s3ok(`/_shardgate/admin/keys/${real.id}/buckets/stale-bucket`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ read: true }),
    });
    const asReal = signer(real.id, real.secret);
    expect(await (await send(await asReal("/stale-bucket/o"))).text()).toBe("still");
    // The budget spent by made-up ids of the keys' form, until they are answered SlowDown.
    let slowed = false;
    for (let round = 0; round < 10 && !slowed; round++) {
      const batch = await Promise.all(Array.from({ length: 100 }, async () => send(await signer(unknownKeyId())("/stale-bucket/o"))));
      slowed = (await Promise.all(batch.map(async (r) => errorCode(await r.text())))).includes("SlowDown");
    }
    expect(slowed).toBe(true);
    // Deleting another bucket drops its grants and makes every cached key stale: the known key is
    // looked up again, outside the budget; so is one whose rights just changed.
    await s3ok("/stale-other", { method: "DELETE" }, 204);
    expect(await (await send(await asReal("/stale-bucket/o"))).text()).toBe("still");
    await s3ok(`/_shardgate/admin/keys/${real.id}/buckets/stale-bucket`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ read: true, write: true }),
    });
    expect(await (await send(await asReal("/stale-bucket/o"))).text()).toBe("still");
  });

  it("a flood of made-up key ids costs a bounded number of KeyStore lookups; real keys keep working, health keeps answering", async () => {
    await s3ok("/flood-bucket", { method: "PUT" });
    await s3ok("/flood-bucket/o", { method: "PUT", body: "real" });
    const created = await s3("/_shardgate/admin/keys", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "flood survivor" }),
    });
    const real = (await created.json()) as { id: string; secret: string };
    await s3ok(`/_shardgate/admin/keys/${real.id}/buckets/flood-bucket`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ read: true }),
    });
    const asReal = signer(real.id, real.secret);
    expect(await (await send(await asReal("/flood-bucket/o"))).text()).toBe("real");

    const before = await scrapeMetrics();
    const started = Date.now();
    // Ids of any other form (the STS helper's temporary ids aside) are refused without a lookup;
    // ids of the keys' form, all different, are looked up at most as the budget allows.
    const { result, slowestMs } = await whileProbing(async () => {
      const answers: Response[] = [];
      for (let round = 0; round < 6; round++) {
        const batch = await Promise.all(
          Array.from({ length: 100 }, async (_, i) => send(await signer(i % 2 ? unknownKeyId() : `AK${randomText(30)}`)("/flood-bucket/o"))),
        );
        answers.push(...batch);
        // A real key signs among them, answered from the cache its entry stayed in.
        expect(await (await send(await asReal("/flood-bucket/o"))).text()).toBe("real");
      }
      return answers;
    });
    const elapsedMs = Date.now() - started;
    const seconds = Math.ceil(elapsedMs / 1000);
    const codes = new Map<string, number>();
    for (const res of result) {
      const code = errorCode(await res.text()) ?? String(res.status);
      codes.set(code, (codes.get(code) ?? 0) + 1);
    }
    expect([...codes.keys()].sort()).toEqual(expect.arrayContaining(["InvalidAccessKeyId"]));
    for (const code of codes.keys()) expect(["InvalidAccessKeyId", "SlowDown"]).toContain(code);
    const after = await scrapeMetrics();
    const unknown =
      metricTotal(after, "shardgate_key_lookups_total", { result: "unknown" }) - metricTotal(before, "shardgate_key_lookups_total", { result: "unknown" });
    const found =
      metricTotal(after, "shardgate_key_lookups_total", { result: "found" }) - metricTotal(before, "shardgate_key_lookups_total", { result: "found" });
    // 300 ids of the keys' form: at most the burst (100) and 50 a second after it.
    expect(unknown).toBeLessThanOrEqual(100 + 50 * seconds);
    // The real key is answered from the cache: looked up again only when its entry expires, which
    // a flood slower than KEY_CACHE_MS (a loaded machine) outlasts.
    expect(found).toBeLessThanOrEqual(Math.floor(elapsedMs / KEY_CACHE_MS));
    const rejected = (reason: string) =>
      metricTotal(after, "shardgate_auth_rejected_total", { reason }) - metricTotal(before, "shardgate_auth_rejected_total", { reason });
    expect(rejected("InvalidAccessKeyId") + rejected("SlowDown")).toBe(600);
    console.info(
      `flood of 600 made-up key ids: ${unknown} KeyStore lookups, ${codes.get("SlowDown") ?? 0} SlowDown, slowest health probe ${Math.round(slowestMs)} ms`,
    );

    // One unknown id again and again: looked up once.
    const again = unknownKeyId();
    const once = await lookups();
    for (let i = 0; i < 20; i++) await send(await signer(again)("/flood-bucket/o"));
    expect((await lookups()) - once).toBeLessThanOrEqual(1);
  });
});

describe("a client that keeps failing authentication", () => {
  const header = "x-test-client";
  const proxied = { ...env, SHARDGATE_CLIENT_IP_HEADER: header } as Env;
  const exec = { waitUntil: () => {} };
  const root = signer(CREDENTIALS.accessKeyId, CREDENTIALS.secretAccessKey);

  async function from(client: string | null, request: Request, withEnv: Env = proxied): Promise<Response> {
    const headers = new Headers(request.headers);
    if (client !== null) headers.set(header, client);
    return handleS3(new Request(request, { headers }), withEnv, exec);
  }

  it("is answered 503 SlowDown for a while, even correctly signed; other clients are not slowed", async () => {
    await s3ok("/throttle-bucket", { method: "PUT" });
    await s3ok("/throttle-bucket/o", { method: "PUT", body: "ok" });
    const wrongSecret = signer(CREDENTIALS.accessKeyId, "guessing");
    const { result } = await whileProbing(async () => {
      const failures: Response[] = [];
      for (let i = 0; i < MAX_FAILURES + 5; i++) failures.push(await from("203.0.113.7", await wrongSecret("/throttle-bucket/o")));
      return failures;
    });
    const codes = await Promise.all(result.map(async (r) => errorCode(await r.text())));
    expect(codes.slice(0, MAX_FAILURES + 1).every((c) => c === "SignatureDoesNotMatch")).toBe(true);
    expect(codes.slice(MAX_FAILURES + 1)).toEqual(Array(4).fill("SlowDown"));
    expect(result.at(-1)!.status).toBe(503);
    expect(result.at(-1)!.headers.get("retry-after")).toMatch(/^\d+$/);

    // The attacker, even with the right key now, waits; everyone else does not.
    const blocked = await from("203.0.113.7", await root("/throttle-bucket/o"));
    expect(blocked.status).toBe(503);
    expect(errorCode(await blocked.text())).toBe("SlowDown");
    const other = await from("198.51.100.1", await root("/throttle-bucket/o"));
    expect(await other.text()).toBe("ok");
    // Unidentified clients (no trusted address) are never throttled, and health answers throughout.
    expect(await (await from(null, await root("/throttle-bucket/o"))).text()).toBe("ok");
    // Anonymous requests are not authentication and are not throttled either.
    expect(errorCode(await (await from("203.0.113.7", new Request(`${GATEWAY}/throttle-bucket/o`))).text())).toBe("AccessDenied");
  });

  it("IPv6 clients count by their /64; an address is trusted from workerd's peer, the operator's header or Cloudflare's edge, never the client's word", async () => {
    const wrongSecret = signer(CREDENTIALS.accessKeyId, "guessing");
    for (let i = 0; i <= MAX_FAILURES; i++) await from(`2001:db8:1:2::${i.toString(16)}`, await wrongSecret("/throttle-bucket/o"));
    const sibling = await from("2001:db8:1:2:ffff::1", await root("/throttle-bucket/o"));
    expect(errorCode(await sibling.text())).toBe("SlowDown");
    expect((await from("2001:db8:1:3::1", await root("/throttle-bucket/o"))).status).toBe(200);

    // Without the setting, a header is the client's own word: ignored.
    const spoofed = new Request(`${GATEWAY}/`, { headers: { [header]: "203.0.113.7", "cf-connecting-ip": "203.0.113.7" } });
    expect(clientOf(spoofed)).toBeNull();
    expect(clientOf(spoofed, header)).toBe("203.0.113.7");
    expect(clientOf(new Request(`${GATEWAY}/`, { headers: { "x-forwarded-for": "10.9.9.9, 192.0.2.4" } }), "x-forwarded-for")).toBe("192.0.2.4");
    // Plain workerd: the TCP peer in request.cf.clientIp ("ip:port"), whatever CF-Connecting-IP the client sends.
    const peer = (clientIp: string) => clientOf(new Request(`${GATEWAY}/`, { headers: { "cf-connecting-ip": "192.0.2.1" }, cf: { clientIp } }));
    expect(peer("203.0.113.5:4444")).toBe("203.0.113.5");
    expect(peer("[2001:db8:aa:bb::7]:443")).toBe("2001:db8:aa:bb::/64");
    expect(peer("[::ffff:198.51.100.7]:80")).toBe("198.51.100.7");
    // A loopback or private peer is a proxy or the operator's tools, which many share: not throttled.
    for (const local of ["127.0.0.1:5555", "[::1]:5", "10.1.2.3:1", "172.20.0.9:2", "192.168.1.1:3", "[fd00::1]:4", "[::ffff:127.0.0.1]:6"]) {
      expect(peer(local), local).toBeNull();
    }
    // The operator's header is believed from the proxy (a local peer) only: a client reaching workerd
    // directly cannot name someone else with it (and so lock them out), nor hide behind it.
    const via = (clientIp: string, value: string) => clientOf(new Request(`${GATEWAY}/`, { headers: { [header]: value }, cf: { clientIp } }), header);
    expect(via("127.0.0.1:5555", "198.51.100.77")).toBe("198.51.100.77");
    expect(via("10.0.0.2:80", "198.51.100.77")).toBe("198.51.100.77");
    expect(via("203.0.113.5:4444", "198.51.100.77")).toBe("203.0.113.5");
    expect(clientOf(new Request(`${GATEWAY}/`, { cf: { clientIp: "203.0.113.5:1" } }), header)).toBe("203.0.113.5");
    // On Cloudflare's edge (request.cf without clientIp), CF-Connecting-IP.
    const edge = new Request(`${GATEWAY}/`, { headers: { "cf-connecting-ip": "192.0.2.99" }, cf: { colo: "TEST" } });
    expect(clientOf(edge)).toBe("192.0.2.99");

    // Through the gateway: a public peer on plain workerd is throttled without any setting.
    const fromPeer = async (clientIp: string, request: Request) => handleS3(new Request(request, { cf: { clientIp } }), env, exec);
    for (let i = 0; i <= MAX_FAILURES; i++) await fromPeer(`198.51.100.9:${40000 + i}`, await wrongSecret("/throttle-bucket/o"));
    expect(errorCode(await (await fromPeer("198.51.100.9:1", await root("/throttle-bucket/o"))).text())).toBe("SlowDown");
    expect((await fromPeer("198.51.100.10:1", await root("/throttle-bucket/o"))).status).toBe(200);
    expect((await fromPeer("127.0.0.1:1", await root("/throttle-bucket/o"))).status).toBe(200);
  });
});

describe("Signature Version 2 signs every parameter that picks an operation", () => {
  async function hmacSha1(secret: string, text: string): Promise<string> {
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
    return btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text)))));
  }
  async function presignedV2(method: string, path: string, resource: string, seconds: number): Promise<string> {
    const expires = Math.floor(Date.now() / 1000) + seconds;
    const signature = await hmacSha1(CREDENTIALS.secretAccessKey, `${method}\n\n\n${expires}\n${resource}`);
    return `${GATEWAY}${path}${path.includes("?") ? "&" : "?"}AWSAccessKeyId=${CREDENTIALS.accessKeyId}&Expires=${expires}&Signature=${encodeURIComponent(signature)}`;
  }

  it("a 60-second V2 link to an object cannot be turned into the direct path's read tickets (shardgate-plan)", async () => {
    await s3ok("/v2-plan", { method: "PUT" });
    await s3ok("/v2-plan/o", { method: "PUT", body: "secret bytes" });
    const link = await presignedV2("GET", "/v2-plan/o", "/v2-plan/o", 60);
    expect(await (await send(new Request(link))).text()).toBe("secret bytes");
    const { result } = await whileProbing(() =>
      Promise.all(["shardgate-plan", "shardgate-plan=1", "shardgate%2Dplan"].map((extra) => send(new Request(`${link}&${extra}`)))),
    );
    for (const res of result) {
      const text = await res.text();
      expect(res.status, text).toBe(400);
      expect(errorCode(text)).toBe("InvalidRequest");
      expect(text).not.toContain('"urls"');
    }
    // Signed in the header (a request someone captured and replays within the 15 minutes): refused alike.
    const date = new Date().toUTCString();
    const signature = await hmacSha1(CREDENTIALS.secretAccessKey, `GET\n\n\n${date}\n/v2-plan/o`);
    const replay = new Request(`${GATEWAY}/v2-plan/o?shardgate-plan`, { headers: { date, authorization: `AWS ${CREDENTIALS.accessKeyId}:${signature}` } });
    expect(errorCode(await (await send(replay)).text())).toBe("InvalidRequest");
  });

  it("a V2 link to a bucket or object cannot be turned into GetBucketEncryption or GetObjectAttributes", async () => {
    await s3ok("/v2-subresources", { method: "PUT" });
    await s3ok("/v2-subresources/o", { method: "PUT", body: "o" });
    const list = await presignedV2("GET", "/v2-subresources", "/v2-subresources", 60);
    expect((await send(new Request(list))).status).toBe(200);
    const encryption = await send(new Request(`${list}&encryption`));
    expect(errorCode(await encryption.text())).toBe("SignatureDoesNotMatch");
    const get = await presignedV2("GET", "/v2-subresources/o", "/v2-subresources/o", 60);
    const attributes = await send(new Request(`${get}&attributes`));
    expect(errorCode(await attributes.text())).toBe("SignatureDoesNotMatch");
    // Signed, they work.
    const signedEncryption = await presignedV2("GET", "/v2-subresources?encryption", "/v2-subresources?encryption", 60);
    expect(errorCode(await (await send(new Request(signedEncryption))).text())).toBe("ServerSideEncryptionConfigurationNotFoundError");
  });
});
