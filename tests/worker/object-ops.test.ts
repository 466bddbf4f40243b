// CopyObject, DeleteObjects, tagging, GetObjectAttributes, conditional writes under concurrency
// and CORS, in workerd with real R2 nodes and Durable Objects.
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { expectSameBytes, randomBytes } from "../shared/core-suite";
import { GATEWAY, s3, s3ok } from "./signed";

const MIB = 1 << 20;
const bucket = "object-ops";
const other = "object-ops-other";

beforeAll(async () => {
  await s3ok(`/${bucket}`, { method: "PUT" });
  await s3ok(`/${other}`, { method: "PUT" });
});

const tag = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];
const errorCode = (xml: string) => tag(xml, "Code");
const bytesOf = async (res: Response) => new Uint8Array(await res.arrayBuffer());

async function md5Base64(bytes: Uint8Array): Promise<string> {
  return btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("MD5", bytes))));
}

describe("user metadata", () => {
  // S3 takes 2 KB of it: the bytes of every name (without x-amz-meta-) and value.
  const meta = (bytes: number) => ({ "x-amz-meta-a": "v".repeat(bytes - 1) });

  it("takes 2 KB of names and values, and refuses one byte more on PUT, multipart and copy, storing nothing", async () => {
    await s3ok(`/${bucket}/meta/full`, { method: "PUT", body: "x", headers: meta(2048) });
    expect((await s3ok(`/${bucket}/meta/full`, { method: "HEAD" })).headers.get("x-amz-meta-a")).toHaveLength(2047);
    const refused = [
      await s3(`/${bucket}/meta/over`, { method: "PUT", body: "x", headers: meta(2049) }),
      await s3(`/${bucket}/meta/over?uploads`, { method: "POST", headers: meta(2049) }),
      await s3(`/${bucket}/meta/over`, {
        method: "PUT",
        headers: { "x-amz-copy-source": `/${bucket}/meta/full`, "x-amz-metadata-directive": "REPLACE", ...meta(2049) },
      }),
      // Split over many headers, the same sum.
      await s3(`/${bucket}/meta/over`, {
        method: "PUT",
        body: "x",
        headers: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`x-amz-meta-k${i}`, "v".repeat(186)])),
      }),
    ];
    for (const res of refused) {
      expect(res.status).toBe(400);
      expect(errorCode(await res.text())).toBe("MetadataTooLarge");
    }
    expect((await s3(`/${bucket}/meta/over`, { method: "HEAD" })).status).toBe(404);
    const uploads = await (await s3ok(`/${bucket}?uploads&prefix=meta/`)).text();
    expect(uploads).not.toContain("<Upload>");
  });
});

describe("CopyObject", () => {
  const data = randomBytes(3 * MIB + 17, 1);

  beforeAll(async () => {
    await s3ok(`/${bucket}/src/one.bin`, {
      method: "PUT",
      body: data,
      headers: { "content-type": "image/png", "x-amz-meta-origin": "camera", "x-amz-tagging": "a=1&b=two" },
    });
  });

  it("copies between buckets, keeping metadata and tags (COPY), streaming the bytes", async () => {
    const res = await s3ok(`/${other}/dst/copy.bin`, { method: "PUT", headers: { "x-amz-copy-source": `/${bucket}/src/one.bin` } });
    const xml = await res.text();
    const head = await s3ok(`/${bucket}/src/one.bin`, { method: "HEAD" });
    expect(tag(xml, "ETag")).toBe(head.headers.get("etag"));
    const got = await s3ok(`/${other}/dst/copy.bin`);
    expect(got.headers.get("content-type")).toBe("image/png");
    expect(got.headers.get("x-amz-meta-origin")).toBe("camera");
    expect(got.headers.get("x-amz-tagging-count")).toBe("2");
    expectSameBytes(await bytesOf(got), data);
  });

  it("replaces metadata (REPLACE), also in place on the object itself, without moving its data", async () => {
    await s3ok(`/${bucket}/src/two.bin`, { method: "PUT", headers: { "x-amz-copy-source": `${bucket}/src/one.bin` } });
    const illegal = await s3(`/${bucket}/src/two.bin`, { method: "PUT", headers: { "x-amz-copy-source": `${bucket}/src/two.bin` } });
    expect(illegal.status).toBe(400);
    expect(errorCode(await illegal.text())).toBe("InvalidRequest");
    const inPlace = await s3(`/${bucket}/src/two.bin`, {
      method: "PUT",
      headers: { "x-amz-copy-source": `${bucket}/src/two.bin`, "x-amz-metadata-directive": "REPLACE", "content-type": "text/plain", "x-amz-meta-new": "yes" },
    });
    expect(inPlace.status).toBe(200);
    const got = await s3ok(`/${bucket}/src/two.bin`);
    expect(got.headers.get("content-type")).toBe("text/plain");
    expect(got.headers.get("x-amz-meta-new")).toBe("yes");
    expect(got.headers.get("x-amz-meta-origin")).toBeNull();
    expectSameBytes(await bytesOf(got), data);
  });

  it("checks x-amz-copy-source-if-* and the destination's conditions, and names a missing source", async () => {
    const etag = (await s3ok(`/${bucket}/src/one.bin`, { method: "HEAD" })).headers.get("etag") as string;
    const copy = (headers: Record<string, string>) =>
      s3(`/${bucket}/cond.bin`, { method: "PUT", headers: { "x-amz-copy-source": `${bucket}/src/one.bin`, ...headers } });
    expect((await copy({ "x-amz-copy-source-if-match": '"nope"' })).status).toBe(412);
    expect((await copy({ "x-amz-copy-source-if-none-match": etag })).status).toBe(412);
    expect((await copy({ "x-amz-copy-source-if-match": etag })).status).toBe(200);
    expect((await copy({ "if-none-match": "*" })).status).toBe(412);
    const missing = await s3(`/${bucket}/x.bin`, { method: "PUT", headers: { "x-amz-copy-source": `${bucket}/src/none.bin` } });
    expect(errorCode(await missing.text())).toBe("NoSuchKey");
    const noBucket = await s3(`/${bucket}/x.bin`, { method: "PUT", headers: { "x-amz-copy-source": `no-such-bucket-here/a` } });
    expect(errorCode(await noBucket.text())).toBe("NoSuchBucket");
  });
});

describe("DeleteObjects", () => {
  it("deletes a batch, reports every key (or only errors when Quiet), and requires a digest", async () => {
    for (const k of ["batch/a", "batch/b", "batch/c"]) await s3ok(`/${bucket}/${k}`, { method: "PUT", body: randomBytes(20_000, 3) });
    const body = `<Delete><Object><Key>batch/a</Key></Object><Object><Key>batch/b</Key></Object><Object><Key>batch/never</Key></Object><Object><Key>batch/c</Key><VersionId>v7</VersionId></Object></Delete>`; // v7: not a version id this gateway makes
    const noDigest = await s3(`/${bucket}?delete`, { method: "POST", body });
    expect(noDigest.status).toBe(400);
    const wrongDigest = await s3(`/${bucket}?delete`, { method: "POST", body, headers: { "content-md5": await md5Base64(new TextEncoder().encode("x")) } });
    expect(errorCode(await wrongDigest.text())).toBe("BadDigest");

    const res = await s3ok(`/${bucket}?delete`, { method: "POST", body, headers: { "content-md5": await md5Base64(new TextEncoder().encode(body)) } });
    const xml = await res.text();
    expect([...xml.matchAll(/<Deleted><Key>([^<]*)<\/Key><\/Deleted>/g)].map((m) => m[1])).toEqual(["batch/a", "batch/b", "batch/never"]);
    expect(xml).toContain("<Error><Key>batch/c</Key><VersionId>v7</VersionId><Code>NoSuchVersion</Code>");
    expect((await s3(`/${bucket}/batch/a`, { method: "HEAD" })).status).toBe(404);
    expect((await s3(`/${bucket}/batch/c`, { method: "HEAD" })).status).toBe(200);

    const quiet = `<Delete><Quiet>true</Quiet><Object><Key>batch/c</Key></Object></Delete>`;
    const q = await s3ok(`/${bucket}?delete`, { method: "POST", body: quiet, headers: { "content-md5": await md5Base64(new TextEncoder().encode(quiet)) } });
    expect(await q.text()).not.toContain("<Deleted>");
    expect((await s3(`/${bucket}/batch/c`, { method: "HEAD" })).status).toBe(404);

    const tooMany = `<Delete>${"<Object><Key>k</Key></Object>".repeat(1001)}</Delete>`;
    const big = await s3(`/${bucket}?delete`, {
      method: "POST",
      body: tooMany,
      headers: { "content-md5": await md5Base64(new TextEncoder().encode(tooMany)) },
    });
    expect(errorCode(await big.text())).toBe("MalformedXML");
  });
});

describe("tagging", () => {
  it("puts, gets and deletes an object's tags, and validates them", async () => {
    // A tag without "=" has the empty value; GetObjectTagging lists tags sorted by key.
    await s3ok(`/${bucket}/tagged.txt`, { method: "PUT", body: "hello", headers: { "x-amz-tagging": "project=blue%20sky&empty=&bare" } });
    const first = await (await s3ok(`/${bucket}/tagged.txt?tagging`)).text();
    expect([...first.matchAll(/<Key>([^<]*)<\/Key><Value>([^<]*)<\/Value>/g)].map((m) => [m[1], m[2]])).toEqual([
      ["bare", ""],
      ["empty", ""],
      ["project", "blue sky"],
    ]);
    const set = `<Tagging><TagSet><Tag><Key>k &amp; 1</Key><Value>v</Value></Tag></TagSet></Tagging>`;
    await s3ok(`/${bucket}/tagged.txt?tagging`, { method: "PUT", body: set });
    expect(await (await s3ok(`/${bucket}/tagged.txt?tagging`)).text()).toContain("<Key>k &amp; 1</Key><Value>v</Value>");
    expect(await (await s3ok(`/${bucket}/tagged.txt`)).text()).toBe("hello");
    const dup = `<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag><Tag><Key>a</Key><Value>2</Value></Tag></TagSet></Tagging>`;
    expect(errorCode(await (await s3(`/${bucket}/tagged.txt?tagging`, { method: "PUT", body: dup })).text())).toBe("InvalidTag");
    await s3ok(`/${bucket}/tagged.txt?tagging`, { method: "DELETE" }, 204);
    expect(await (await s3ok(`/${bucket}/tagged.txt?tagging`)).text()).toContain("<TagSet></TagSet>");
    expect(errorCode(await (await s3(`/${bucket}/missing.txt?tagging`)).text())).toBe("NoSuchKey");
  });
});

describe("GetObjectAttributes", () => {
  it("returns the ETag, checksum, size and storage class asked for", async () => {
    const body = randomBytes(9000, 4);
    const put = await s3ok(`/${bucket}/attrs.bin`, {
      method: "PUT",
      body,
      headers: {
        "x-amz-sdk-checksum-algorithm": "SHA256",
        "x-amz-checksum-sha256": btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-256", body)))),
      },
    });
    const xml = await (
      await s3ok(`/${bucket}/attrs.bin?attributes`, { headers: { "x-amz-object-attributes": "ETag,Checksum,ObjectSize,StorageClass" } })
    ).text();
    expect(`"${tag(xml, "ETag")}"`).toBe(put.headers.get("etag"));
    expect(tag(xml, "ChecksumSHA256")).toBe(put.headers.get("x-amz-checksum-sha256"));
    expect(tag(xml, "ObjectSize")).toBe("9000");
    expect(tag(xml, "StorageClass")).toBe("STANDARD");
    const bad = await s3(`/${bucket}/attrs.bin?attributes`, { headers: { "x-amz-object-attributes": "Colour" } });
    expect(errorCode(await bad.text())).toBe("InvalidArgument");
  });
});

describe("conditional writes", () => {
  it("If-None-Match with an ETag refuses to overwrite that object (412) and allows any other", async () => {
    const first = await s3ok(`/${bucket}/inm.txt`, { method: "PUT", body: "one" });
    const etag = first.headers.get("etag") as string;
    const same = await s3(`/${bucket}/inm.txt`, { method: "PUT", body: "two", headers: { "if-none-match": etag } });
    expect(same.status).toBe(412);
    expect(await (await s3ok(`/${bucket}/inm.txt`)).text()).toBe("one");
    await s3ok(`/${bucket}/inm.txt`, { method: "PUT", body: "three", headers: { "if-none-match": '"0123456789abcdef0123456789abcdef"' } });
    expect(await (await s3ok(`/${bucket}/inm.txt`)).text()).toBe("three");
  });

  it("two simultaneous create-only PUTs: exactly one wins, and its bytes are stored", async () => {
    const bodies = [randomBytes(2 * MIB, 5), randomBytes(2 * MIB, 6)];
    const results = await Promise.all(bodies.map((body) => s3(`/${bucket}/race.bin`, { method: "PUT", body, headers: { "if-none-match": "*" } })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 412]);
    const winner = results.findIndex((r) => r.status === 200);
    expectSameBytes(await bytesOf(await s3ok(`/${bucket}/race.bin`)), bodies[winner]);
    // If-Match with the current ETag replaces; with another, refuses.
    const etag = results[winner].headers.get("etag") as string;
    expect((await s3(`/${bucket}/race.bin`, { method: "PUT", body: "x", headers: { "if-match": '"0000"' } })).status).toBe(412);
    expect((await s3(`/${bucket}/race.bin`, { method: "PUT", body: "x", headers: { "if-match": etag } })).status).toBe(200);
  });
});

describe("CORS", () => {
  const preflight = (origin: string, method: string, headers = "") =>
    exports.default.fetch(
      new Request(`${GATEWAY}/${bucket}/some/key`, {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": method, ...(headers ? { "access-control-request-headers": headers } : {}) },
      }),
    );

  it("stores the rules, answers preflights without credentials, and adds the headers to actual responses", async () => {
    expect(errorCode(await (await s3(`/${bucket}?cors`)).text())).toBe("NoSuchCORSConfiguration");
    expect((await preflight("https://app.example", "PUT")).status).toBe(403);
    const rules =
      "<CORSConfiguration><CORSRule><AllowedOrigin>https://*.example</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedMethod>PUT</AllowedMethod>" +
      "<AllowedHeader>*</AllowedHeader><ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>600</MaxAgeSeconds></CORSRule></CORSConfiguration>";
    await s3ok(`/${bucket}?cors`, { method: "PUT", body: rules });
    expect(await (await s3ok(`/${bucket}?cors`)).text()).toContain("<AllowedOrigin>https://*.example</AllowedOrigin>");

    const ok = await preflight("https://app.example", "PUT", "content-type, x-amz-date, authorization");
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(ok.headers.get("access-control-allow-methods")).toBe("GET, PUT");
    expect(ok.headers.get("access-control-allow-headers")).toBe("content-type, x-amz-date, authorization");
    expect(ok.headers.get("access-control-max-age")).toBe("600");
    expect((await preflight("https://evil.test", "PUT")).status).toBe(403);
    expect((await preflight("https://app.example", "DELETE")).status).toBe(403);

    await s3ok(`/${bucket}/cors.txt`, { method: "PUT", body: "hi" });
    const get = await s3ok(`/${bucket}/cors.txt`, { headers: { origin: "https://app.example" } });
    expect(get.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(get.headers.get("access-control-expose-headers")).toBe("ETag");
    const missing = await s3(`/${bucket}/nothing.txt`, { headers: { origin: "https://app.example" } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get("access-control-allow-origin")).toBe("https://app.example");

    await s3ok(`/${bucket}?cors`, { method: "DELETE" }, 204);
    expect((await preflight("https://app.example", "GET")).status).toBe(403);
    const bad = "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod></CORSRule></CORSConfiguration>";
    expect(errorCode(await (await s3(`/${bucket}?cors`, { method: "PUT", body: bad })).text())).toBe("InvalidRequest");
  });
});
