// Hostile input (issue #29): what a client sends the gateway to parse, built to make it misbehave.
// Each attack here failed on the code before it was fixed, and each runs while health is probed
// (hostile.ts): the gateway must keep answering.
//   - XML: entity names looked up on Object.prototype, nesting deep enough to overflow a recursive
//     parser (a 500), numeric references parseInt half-read.
//   - bodies: CreateBucket, PutBucketPolicy and the admin API read bodies whole before any size check.
//   - CORS: a 2 MiB configuration made every preflight compare each asked header with thousands of
//     patterns; now S3's 64 KB, one wildcard per AllowedHeader, and exact names looked up in a set.
//   - keys, query strings, ranges, tag headers and form uploads at their limits and past them,
//     answered at once (their parsers were linear already: these hold them to it).
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_XML_DEPTH, MAX_XML_ELEMENTS, parseXml } from "../../worker/src/api/format/xml-parse";
import { signedPostFields } from "./post-form";
import { S3Error } from "../../worker/src/s3-error";
import { countedBody, errorCode, whileProbing } from "./hostile";
import { GATEWAY, s3, s3ok } from "./signed";

/** The S3 error code parseXml throws for `doc`, or "ok". */
function parsed(doc: string): string {
  try {
    parseXml(doc);
    return "ok";
  } catch (e) {
    if (e instanceof S3Error) return e.code;
    throw e;
  }
}

const tagging = (value: string) => `<Tagging><TagSet><Tag><Key>k</Key><Value>${value}</Value></Tag></TagSet></Tagging>`;

describe("XML parser", () => {
  it("looks entities up by own name only: &toString; and its kin are MalformedXML, not a function's source", async () => {
    await s3ok("/hostile-xml", { method: "PUT" });
    await s3ok("/hostile-xml/o", { method: "PUT", body: "o" });
    for (const name of ["toString", "constructor", "__proto__", "valueOf", "hasOwnProperty"]) {
      expect(parsed(`<a>&${name};</a>`), name).toBe("MalformedXML");
      const res = await s3("/hostile-xml/o?tagging", { method: "PUT", body: tagging(`&${name};`) });
      expect(res.status, name).toBe(400);
      expect(errorCode(await res.text()), name).toBe("MalformedXML");
    }
    // The five named entities still decode.
    expect(parseXml("<a>&lt;&gt;&amp;&quot;&apos;</a>").text).toBe(`<>&"'`);
    const tags = await (await s3ok("/hostile-xml/o?tagging")).text();
    expect(tags).not.toContain("function");
  });

  it("takes only whole, valid numeric references", () => {
    expect(parseXml("<a>&#65;&#x42;&#x1F600;&#9;</a>").text).toBe("AB\u{1F600}\t");
    for (const ref of [
      "&#x1g;",
      "&#;",
      "&#x;",
      "&#xD800;",
      "&#xDFFF;",
      "&#x110000;",
      "&#1114112;",
      "&# 65;",
      "&#x 41;",
      "&#+65;",
      "&#-1;",
      "&#1;",
      "&#0;",
      "&#xFFFE;",
      "&#65",
      "&#00000000065;",
      "&#X41;",
      "&#x41 ;",
    ]) {
      expect(parsed(`<a>${ref}</a>`), ref).toBe("MalformedXML");
    }
  });

  it(`caps nesting at ${MAX_XML_DEPTH} levels: deeper is MalformedXML, never a stack overflow and a 500`, async () => {
    const nest = (depth: number) => `${"<a>".repeat(depth)}${"</a>".repeat(depth)}`;
    expect(parsed(nest(MAX_XML_DEPTH))).toBe("ok");
    expect(parsed(nest(MAX_XML_DEPTH + 1))).toBe("MalformedXML");
    expect(parsed(`${"<a>".repeat(MAX_XML_DEPTH)}${"<b/>".repeat(1000)}${"</a>".repeat(MAX_XML_DEPTH)}`)).toBe("ok");

    await s3ok("/hostile-deep", { method: "PUT" });
    await s3ok("/hostile-deep/o", { method: "PUT", body: "o" });
    // 2 MiB of nesting (the most a document may be), as tagging and as a bucket's CORS rules, a few at once.
    const deep = `<Tagging><TagSet><Tag><Key>k</Key><Value>${"<a>".repeat(500_000)}`;
    const { result } = await whileProbing(() =>
      Promise.all(Array.from({ length: 4 }, (_, i) => s3(i % 2 ? "/hostile-deep/o?tagging" : "/hostile-deep?cors", { method: "PUT", body: deep }))),
    );
    for (const res of result) {
      expect(res.status).toBe(400);
      expect(errorCode(await res.text())).toBe("MalformedXML");
    }
  });
});

describe("the XML tree a request builds", () => {
  it(`has at most ${MAX_XML_ELEMENTS} elements: 2 MiB of empty elements is MalformedXML, not half a million objects`, async () => {
    const many = (n: number) => `<Delete>${"<a/>".repeat(n - 1)}</Delete>`;
    expect(parsed(many(MAX_XML_ELEMENTS))).toBe("ok");
    expect(parsed(many(MAX_XML_ELEMENTS + 1))).toBe("MalformedXML");
    await s3ok("/hostile-wide", { method: "PUT" });
    const wide = `<Tagging><TagSet>${"<a/>".repeat(520_000)}</TagSet></Tagging>`;
    expect(wide.length).toBeLessThanOrEqual(2 * 1024 * 1024);
    const { result } = await whileProbing(() => Promise.all(Array.from({ length: 4 }, () => s3("/hostile-wide?tagging", { method: "PUT", body: wide }))));
    for (const res of result) {
      expect(res.status).toBe(400);
      expect(errorCode(await res.text())).toBe("MalformedXML");
    }
  });
});

describe("request bodies are read no further than their bound", () => {
  const huge = 64 * 1024 * 1024;
  const unsigned = { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" };

  it("PutBucketPolicy: a body past 20 KiB is PolicyTooLarge, read no further", async () => {
    await s3ok("/hostile-policy", { method: "PUT" });
    const { body, pulled } = countedBody(huge);
    const { result: res } = await whileProbing(() => s3("/hostile-policy?policy", { method: "PUT", body, headers: unsigned }));
    expect(res.status).toBe(400);
    expect(errorCode(await res.text())).toBe("PolicyTooLarge");
    expect(pulled()).toBeLessThan(1024 * 1024);
  });

  it("CreateBucket: a configuration past 64 KiB is MalformedXML, read no further; a real one is parsed", async () => {
    const { body, pulled } = countedBody(huge);
    const { result: res } = await whileProbing(() => s3("/hostile-create", { method: "PUT", body, headers: unsigned }));
    expect(res.status).toBe(400);
    expect(errorCode(await res.text())).toBe("MalformedXML");
    expect(pulled()).toBeLessThan(1024 * 1024);

    const config = (region: string) =>
      `<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>${region}</LocationConstraint></CreateBucketConfiguration>`;
    const wrong = await s3("/hostile-create", { method: "PUT", body: config("eu-west-1") });
    expect(errorCode(await wrong.text())).toBe("InvalidLocationConstraint");
    await s3ok("/hostile-create", { method: "PUT", body: config("us-east-1") });
  });

  it("the admin API: a JSON body past 16 KiB is refused, read no further", async () => {
    const { body, pulled } = countedBody(huge);
    const { result: res } = await whileProbing(() => s3("/_shardgate/admin/keys", { method: "POST", body, headers: unsigned }));
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("larger than");
    expect(pulled()).toBeLessThan(1024 * 1024);
  });
});

describe("JSON bodies nested as deep as their bound allows", () => {
  it("a policy and an admin body of 10,000 nested arrays are refused as malformed, never a stack overflow", async () => {
    await s3ok("/hostile-json", { method: "PUT" });
    const nested = (depth: number, inner = "") => `${"[".repeat(depth)}${inner}${"]".repeat(depth)}`;
    const policy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":${nested(9000, '"arn:aws:s3:::hostile-json/*"')}}]}`;
    const { result } = await whileProbing(() =>
      Promise.all([
        s3("/hostile-json?policy", { method: "PUT", body: policy }),
        s3("/hostile-json?policy", { method: "PUT", body: `{"Statement":${nested(10_000)}}` }),
        s3("/_shardgate/admin/keys", { method: "POST", headers: { "content-type": "application/json" }, body: `{"name":${nested(7000)}}` }),
      ]),
    );
    const codes = await Promise.all(result.map(async (r) => [r.status, errorCode(await r.text())]));
    expect(codes).toEqual([
      [400, "MalformedPolicy"],
      [400, "MalformedPolicy"],
      [400, "InvalidArgument"],
    ]);
  });
});

describe("CORS rules: bounded configurations, linear matching", () => {
  const rule = (headers: string[]) =>
    `<CORSRule><AllowedMethod>GET</AllowedMethod><AllowedOrigin>https://*.example.com</AllowedOrigin>${headers.map((h) => `<AllowedHeader>${h}</AllowedHeader>`).join("")}</CORSRule>`;
  const config = (rules: string[]) => `<CORSConfiguration>${rules.join("")}</CORSConfiguration>`;

  it("refuses a configuration over S3's 64 KB and AllowedHeaders with two wildcards", async () => {
    await s3ok("/hostile-cors", { method: "PUT" });
    // 2 MiB of AllowedHeaders was accepted before: every preflight then compared each asked header with all of them.
    const big = config([rule(Array.from({ length: 5000 }, (_, i) => `x-h${i}-*`))]);
    expect(big.length).toBeGreaterThan(64 * 1024);
    const res = await s3("/hostile-cors?cors", { method: "PUT", body: big });
    expect(res.status).toBe(400);
    expect(errorCode(await res.text())).toBe("MalformedXML");
    const twoStars = await s3("/hostile-cors?cors", { method: "PUT", body: config([rule(["x-*-*"])]) });
    expect(errorCode(await twoStars.text())).toBe("InvalidRequest");
  });

  it("a configuration takes at most 50 AllowedHeader patterns; a preflight asking more than 64 headers is refused at once", async () => {
    // The review's attack: ~1,800 wildcard AllowedHeaders in one rule (under 64 KB), then anonymous
    // preflights asking thousands of names: each name was compared with every pattern (0.7 s each).
    const many = config([rule([...Array.from({ length: 1700 }, (_, i) => `h${i}-*`), "z*"])]);
    expect(many.length).toBeLessThan(64 * 1024);
    const refused = await s3("/hostile-cors?cors", { method: "PUT", body: many });
    expect(refused.status).toBe(400);
    expect(errorCode(await refused.text())).toBe("InvalidRequest");
    // The most a configuration may take: 50 patterns over 100 rules, with exact names besides.
    const rules = Array.from({ length: 100 }, (_, r) => rule([...(r < 50 ? [`x-r${r}-*`] : []), ...Array.from({ length: 8 }, (_, i) => `x-exact-${r}-${i}`)]));
    const body = config(rules);
    expect(body.length).toBeLessThan(64 * 1024);
    await s3ok("/hostile-cors?cors", { method: "PUT", body });
    const preflight = (asked: string) =>
      exports.default.fetch(`${GATEWAY}/hostile-cors/o`, {
        method: "OPTIONS",
        headers: { origin: "https://app.example.com", "access-control-request-method": "GET", "access-control-request-headers": asked },
      });
    const thousands = Array.from({ length: 6000 }, (_, i) => `z${i}`).join(",");
    const sixtyFour = Array.from({ length: 64 }, (_, i) => `x-asked-${i}`).join(",");
    const { result, slowestMs } = await whileProbing(() => Promise.all(Array.from({ length: 5 }, (_, i) => preflight(i % 2 ? thousands : sixtyFour))));
    for (const res of result) expect(res.status).toBe(403);
    console.info(`5 preflights (6,000 or 64 asked headers, 50 patterns, 800 exact names): slowest health probe ${Math.round(slowestMs)} ms`);
    // What the rules allow still matches: a pattern, and exact names.
    expect((await preflight("X-R7-anything")).status).toBe(200);
    expect((await preflight("x-exact-70-1, x-exact-70-2")).status).toBe(200);
  });
});

describe("keys, query strings, ranges and tag headers", () => {
  it("keys up to 1,024 bytes of UTF-8 are taken, longer is KeyTooLongError on every write", async () => {
    await s3ok("/hostile-keys", { method: "PUT" });
    await s3ok(`/hostile-keys/${"k".repeat(1024)}`, { method: "PUT", body: "x" });
    await s3ok(`/hostile-keys/${encodeURIComponent("日".repeat(341))}a`, { method: "PUT", body: "x" }); // 1,024 bytes
    for (const [path, init] of [
      [`/hostile-keys/${"k".repeat(1025)}`, { method: "PUT", body: "x" }],
      [`/hostile-keys/${encodeURIComponent("日".repeat(342))}`, { method: "PUT", body: "x" }], // 1,026 bytes
      [`/hostile-keys/${"k".repeat(1025)}?uploads`, { method: "POST" }],
      [`/hostile-keys/${"k".repeat(1025)}`, { method: "PUT", headers: { "x-amz-copy-source": `/hostile-keys/${"k".repeat(1024)}` } }],
    ] as const) {
      const res = await s3(path, init);
      expect(res.status, `${init.method} ${path.length}`).toBe(400);
      expect(errorCode(await res.text())).toBe("KeyTooLongError");
    }
    // Reading one is answered, not crashed on.
    expect((await s3(`/hostile-keys/${"k".repeat(8000)}`)).status).toBe(404);
    // Nor is one deleted: in a versioned bucket that would make a delete marker (and an event) with it.
    await s3ok("/hostile-keys?versioning", { method: "PUT", body: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>" });
    const del = await s3(`/hostile-keys/${"k".repeat(9000)}`, { method: "DELETE" });
    expect(del.status).toBe(400);
    expect(errorCode(await del.text())).toBe("KeyTooLongError");
    const body = `<Delete><Object><Key>${"k".repeat(1025)}</Key></Object><Object><Key>${"k".repeat(1024)}</Key></Object></Delete>`;
    const md5 = btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("MD5", new TextEncoder().encode(body)))));
    const batch = await (await s3ok("/hostile-keys?delete", { method: "POST", body, headers: { "content-md5": md5 } })).text();
    expect(batch).toContain(`<Error><Key>${"k".repeat(1025)}</Key><Code>KeyTooLongError</Code>`);
    expect(batch).toContain(`<Deleted><Key>${"k".repeat(1024)}</Key>`);
    const versions = await (await s3ok("/hostile-keys?versions")).text();
    expect(versions).not.toContain("k".repeat(1025));
  });

  it("thousands of query parameters, a 10,000-digit range, ranges by the thousand and 10,000 tags are answered at once", async () => {
    await s3ok("/hostile-query", { method: "PUT" });
    await s3ok("/hostile-query/o", { method: "PUT", body: "0123456789" });
    const query = Array.from({ length: 3000 }, (_, i) => `p${i}=${i}`).join("&");
    const tags = Array.from({ length: 10_000 }, (_, i) => `t${i}=v`).join("&");
    const { result } = await whileProbing(() =>
      Promise.all([
        s3(`/hostile-query?list-type=2&${query}`),
        exports.default.fetch(`${GATEWAY}/hostile-query?${query}&${query}`),
        s3("/hostile-query/o", { headers: { range: `bytes=${"9".repeat(10_000)}-` } }),
        s3("/hostile-query/o", { headers: { range: `bytes=${Array.from({ length: 2000 }, (_, i) => `${i}-${i}`).join(",")}` } }),
        s3("/hostile-query/t", { method: "PUT", body: "t", headers: { "x-amz-tagging": tags } }),
      ]),
    );
    const [signed, anonymous, bigRange, manyRanges, tagged] = result;
    expect(signed!.status).toBe(200);
    expect(anonymous!.status).toBe(403);
    // Ranges S3 ignores are the whole object.
    expect(await bigRange!.text()).toBe("0123456789");
    expect(await manyRanges!.text()).toBe("0123456789");
    expect(tagged!.status).toBe(400);
    expect(errorCode(await tagged!.text())).toBe("BadRequest");
  });
});

describe("browser form uploads: the multipart parser's work is linear", () => {
  const boundary = "----hostileBoundary0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLM"; // 70 characters
  const nearMiss = `\r\n--${boundary.slice(0, -1)}X`;
  const enc = new TextEncoder();

  /** The SigV4 fields of a POST policy allowing any key in `bucket`, signed with the root key. */
  const signedFields = async (bucket: string) => Object.entries(await signedPostFields([{ bucket }, ["starts-with", "$key", ""]]));

  function form(fields: [string, string][], file: Uint8Array | null): Uint8Array {
    const head = fields.map(([n, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${n}"\r\n\r\n${v}\r\n`).join("");
    const fileHead = file ? `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\n` : "";
    const parts = [enc.encode(head + fileHead), file ?? new Uint8Array(0), enc.encode(file ? `\r\n--${boundary}--\r\n` : `--${boundary}--\r\n`)];
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
    return out;
  }

  const postForm = (bucket: string, body: Uint8Array) =>
    exports.default.fetch(
      new Request(`${GATEWAY}/${bucket}`, { method: "POST", body, headers: { "content-type": `multipart/form-data; boundary=${boundary}` } }),
    );

  it("fields past 20 KiB (near-miss boundaries in one piece) are MaxPostPreDataLengthExceeded; a hundred tiny fields parse at once", async () => {
    await s3ok("/hostile-form", { method: "PUT" });
    const nearMisses = form(
      [
        ["key", "k"],
        ["x-amz-meta-a", nearMiss.repeat(Math.floor(30_000 / nearMiss.length))],
      ],
      enc.encode("f"),
    );
    const tiny = form([["key", "k"], ...Array.from({ length: 100 }, (_, i): [string, string] => [`x-amz-meta-${i}`, "v"])], enc.encode("f"));
    const { result } = await whileProbing(() => Promise.all([postForm("hostile-form", nearMisses), postForm("hostile-form", tiny)]));
    expect(errorCode(await result[0]!.text())).toBe("MaxPostPreDataLengthExceeded");
    // Parsed whole; unsigned, it is refused by authorization.
    expect(errorCode(await result[1]!.text())).toBe("AccessDenied");
  });

  it("a file of 8 MiB of near-miss boundaries is stored, its scan linear", async () => {
    const pattern = enc.encode(nearMiss);
    const file = new Uint8Array(8 * 1024 * 1024);
    for (let at = 0; at < file.length; at += pattern.length) file.set(pattern.subarray(0, Math.min(pattern.length, file.length - at)), at);
    const body = form([["key", "near-miss"], ...(await signedFields("hostile-form"))], file);
    const started = performance.now();
    const { result, slowestMs } = await whileProbing(() => postForm("hostile-form", body));
    expect(result.status, await result.clone().text()).toBe(204);
    console.info(
      `8 MiB form file of near-miss boundaries: stored in ${Math.round(performance.now() - started)} ms, slowest health probe ${Math.round(slowestMs)} ms`,
    );
    const stored = await s3ok("/hostile-form/near-miss", { method: "HEAD" });
    expect(stored.headers.get("content-length")).toBe(String(file.length));
  });
});
