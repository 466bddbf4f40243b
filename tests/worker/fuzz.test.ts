// Property tests (fast-check, issue #29) over what the gateway parses from a client: whatever
// arrives, a parser answers with its result or an S3Error (which becomes the S3 answer), never
// another exception (a 500), and within bounded time. Where a model is simple, the parser agrees
// with it: documents and aws-chunked bodies that encode a value decode to it, however split, and
// requests aws4fetch signs authenticate. Runs are kept small (a few seconds in all).
import { AwsClient } from "aws4fetch";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readFormUpload } from "../../worker/src/api/s3/post-object.form";
import { resolveTarget } from "../../worker/src/api/http/router";
import { routeRequest } from "../../worker/src/api/operations";
import { MAX_XML_DEPTH, parseXml, type XmlElement } from "../../worker/src/api/format/xml-parse";
import { AwsChunkedParser } from "../../worker/src/auth/aws-chunked";
import { authenticateV2 } from "../../worker/src/auth/sigv2";
import { authenticate, onlyKey } from "../../worker/src/auth/sigv4";
import { core } from "../../worker/src/core";
import { S3Error } from "../../worker/src/s3-error";
import { CREDENTIALS } from "../shared/credentials";

const GATEWAY = "http://gateway.test";
const secretOf = onlyKey(CREDENTIALS);

/** Runs `f`; fails unless it returns or throws an S3Error. Returns the error code, or "ok". */
async function s3Outcome(f: () => unknown): Promise<string> {
  try {
    await f();
    return "ok";
  } catch (e) {
    if (e instanceof S3Error) return e.code;
    throw new Error(`not an S3Error: ${String(e)}`, { cause: e });
  }
}

const charsOf = (s: string) => fc.constantFrom(...s);
const ascii = fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c));
/** Text a header value may hold (visible ASCII and space). */
const headerText = (maxLength = 80) => fc.string({ unit: ascii, maxLength });
const hex = (n: number) => fc.string({ unit: charsOf("0123456789abcdef"), minLength: n, maxLength: n });
const amzDate = (t: number) => new Date(t).toISOString().replace(/[:-]|\.\d{3}/g, "");

describe("SigV4 parsers", () => {
  const now = Date.now();
  const today = amzDate(now);

  it("an Authorization header, whatever it holds, is refused with an S3Error", async () => {
    const authorization = fc
      .record({
        scheme: fc.oneof(fc.constantFrom("AWS4-HMAC-SHA256", "AWS", "AWS4-ECDSA-P256-SHA256", ""), headerText(20)),
        id: fc.oneof(fc.constant(CREDENTIALS.accessKeyId), fc.constant(`SG${"A".repeat(18)}`), headerText(30)),
        date: fc.oneof(fc.constant(today.slice(0, 8)), headerText(10)),
        region: fc.oneof(fc.constant("us-east-1"), headerText(12)),
        service: fc.oneof(fc.constantFrom("s3", "sts"), headerText(5)),
        terminal: fc.oneof(fc.constant("aws4_request"), headerText(12)),
        signed: fc.oneof(fc.constantFrom("host;x-amz-content-sha256;x-amz-date", "host", "", ";;", "HOST"), headerText(40)),
        signature: fc.oneof(hex(64), headerText(70)),
        sep: fc.constantFrom(", ", ",", " ", ",,", "=", ""),
        extra: fc.option(headerText(40)),
      })
      .map(
        (a) =>
          `${a.scheme} Credential=${a.id}/${a.date}/${a.region}/${a.service}/${a.terminal}${a.sep}SignedHeaders=${a.signed}${a.sep}Signature=${a.signature}${a.extra ?? ""}`,
      );
    const headers = fc.record({
      authorization: fc.oneof(authorization, headerText(200)),
      date: fc.option(fc.oneof(fc.constant(today), fc.constant(new Date(now).toUTCString()), headerText(30))),
      sha: fc.option(
        fc.oneof(fc.constantFrom("UNSIGNED-PAYLOAD", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"), hex(64), headerText(70)),
      ),
      amz: fc.array(fc.tuple(fc.constantFrom("x-amz-meta-a", "x-amz-date", "x-amz-trailer", "x-amz-decoded-content-length"), headerText(20)), { maxLength: 3 }),
      length: fc.option(fc.oneof(fc.constantFrom("0", "5"), headerText(10))),
    });
    await fc.assert(
      fc.asyncProperty(headers, async (h) => {
        const init = new Headers(h.amz);
        init.set("authorization", h.authorization);
        if (h.date !== null) init.set("x-amz-date", h.date);
        if (h.sha !== null) init.set("x-amz-content-sha256", h.sha);
        if (h.length !== null) init.set("content-length", h.length);
        const request = new Request(`${GATEWAY}/bucket/key`, { method: "PUT", headers: init, body: "hello" });
        const outcome = await s3Outcome(() => authenticate(request, secretOf, { region: "us-east-1", now }));
        // A made-up signature never matches.
        expect(outcome).not.toBe("ok");
      }),
      { numRuns: 1000 },
    );
  });

  it("a presigned query, whatever it holds, is refused with an S3Error", async () => {
    const param = (name: string, good: fc.Arbitrary<string>) =>
      fc.option(
        fc.oneof(good, headerText(40)).map((v) => [name, v] as const),
        { freq: 4 },
      );
    const query = fc.tuple(
      param("X-Amz-Algorithm", fc.constant("AWS4-HMAC-SHA256")),
      param("X-Amz-Credential", fc.constant(`${CREDENTIALS.accessKeyId}/${today.slice(0, 8)}/us-east-1/s3/aws4_request`)),
      param("X-Amz-Date", fc.constant(today)),
      param("X-Amz-Expires", fc.oneof(fc.constantFrom("0", "1", "3600", "604800", "604801", "99999999"), fc.nat().map(String))),
      param("X-Amz-SignedHeaders", fc.constantFrom("host", "host;x-amz-date", "")),
      param("X-Amz-Signature", hex(64)),
      param("X-Amz-Security-Token", fc.constant("token")),
    );
    await fc.assert(
      fc.asyncProperty(query, headerText(30), async (params, extra) => {
        const url = new URL(`${GATEWAY}/bucket/key`);
        for (const p of params) if (p) url.searchParams.append(p[0], p[1]);
        url.searchParams.append("x", extra);
        const outcome = await s3Outcome(() => authenticate(new Request(url), secretOf, { region: "us-east-1", now }));
        expect(outcome).not.toBe("ok");
      }),
      { numRuns: 1000 },
    );
  });

  it("a request aws4fetch signs, with any path, query and metadata, authenticates", async () => {
    const client = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
    const segment = fc.string({ unit: fc.oneof(charsOf("abcXYZ019-_.~ !$&'()*+,;=:@%é日"), ascii), minLength: 1, maxLength: 12 });
    const request = fc.record({
      method: fc.constantFrom("GET", "PUT", "DELETE", "HEAD", "POST"),
      path: fc.array(segment, { minLength: 1, maxLength: 4 }),
      // Names unique: aws4fetch signs only the first of a repeated name for S3 (AWS signs them all, as the gateway checks).
      query: fc.uniqueArray(
        fc.tuple(fc.string({ unit: charsOf("abc-_.~ +=&é/"), maxLength: 6 }), fc.string({ unit: charsOf("abc-_.~ +=&é/%"), maxLength: 8 })),
        {
          maxLength: 4,
          selector: ([k]) => k,
        },
      ),
      meta: fc.option(headerText(30).map((v) => v.trim())),
    });
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const url = new URL(`${GATEWAY}/${r.path.map(encodeURIComponent).join("/")}`);
        for (const [k, v] of r.query) url.searchParams.append(k, v);
        const headers: Record<string, string> = r.meta ? { "x-amz-meta-note": r.meta } : {};
        const body = r.method === "PUT" || r.method === "POST" ? "payload" : undefined;
        const signed = await client.sign(url.toString(), { method: r.method, headers, body });
        const auth = await authenticate(signed, secretOf, { region: "us-east-1", now: Date.now() });
        expect(auth.accessKeyId).toBe(CREDENTIALS.accessKeyId);
      }),
      { numRuns: 300 },
    );
  });
});

describe("aws-chunked framing", () => {
  const splits = (bytes: Uint8Array, cuts: number[]) => {
    const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
    const pieces: Uint8Array[] = [];
    let from = 0;
    for (const c of [...at, bytes.length]) {
      pieces.push(bytes.subarray(from, c));
      from = c;
    }
    return pieces.filter((p) => p.length > 0);
  };

  async function decode(pieces: Uint8Array[], trailer: boolean, declared: string[] | null) {
    const parser = new AwsChunkedParser({ signing: null, trailer, declaredTrailers: declared, decodedLength: null, maxChunkBytes: 4096 });
    const out: Uint8Array[] = [];
    for (const p of pieces) await parser.push(p, out);
    const trailers = await parser.end();
    return { data: new Uint8Array(out.flatMap((o) => [...o])), trailers };
  }

  it("any bytes, split anywhere, decode or fail with an S3Error", async () => {
    const framed = fc.array(
      fc.oneof(
        fc.uint8Array({ maxLength: 40 }),
        fc
          .constantFrom("\r\n", "0\r\n", "5\r\nhello\r\n", "ffffffffffffffff\r\n", "0;chunk-signature=x\r\n", "x-amz-checksum-crc32:AAAAAA==\r\n", ":\r\n")
          .map((s) => new TextEncoder().encode(s)),
      ),
      { maxLength: 12 },
    );
    await fc.assert(
      fc.asyncProperty(framed, fc.array(fc.nat(), { maxLength: 6 }), fc.boolean(), async (parts, cuts, trailer) => {
        const bytes = new Uint8Array(parts.flatMap((p) => [...p]));
        await s3Outcome(() => decode(splits(bytes, cuts), trailer, trailer ? ["x-amz-checksum-crc32"] : null));
      }),
      { numRuns: 1000 },
    );
  });

  it("chunks of any sizes with trailers decode to their data and trailers, however the body is split", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 300 }), { maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.string({ unit: charsOf("ABCabc012+/="), minLength: 1, maxLength: 12 }),
        async (chunks, cuts, checksum) => {
          const enc = new TextEncoder();
          const parts: Uint8Array[] = [];
          for (const c of chunks) parts.push(enc.encode(`${c.length.toString(16)}\r\n`), c, enc.encode("\r\n"));
          parts.push(enc.encode(`0\r\nx-amz-checksum-crc32:${checksum}\r\n\r\n`));
          const bytes = new Uint8Array(parts.flatMap((p) => [...p]));
          const { data, trailers } = await decode(splits(bytes, cuts), true, ["x-amz-checksum-crc32"]);
          expect(data).toEqual(new Uint8Array(chunks.flatMap((c) => [...c])));
          expect(trailers.get("x-amz-checksum-crc32")).toBe(checksum);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("SigV2 parsing", () => {
  it("an Authorization: AWS header or a V2 query, whatever it holds, is refused with an S3Error", async () => {
    const now = Date.now();
    const v2 = fc.record({
      header: fc.option(
        fc.oneof(
          fc.tuple(fc.oneof(fc.constant(CREDENTIALS.accessKeyId), headerText(20)), headerText(40)).map(([id, sig]) => `AWS ${id}:${sig}`),
          headerText(60),
        ),
      ),
      date: fc.option(fc.oneof(fc.constant(new Date(now).toUTCString()), fc.constant(new Date(now - 3600_000).toUTCString()), headerText(30))),
      query: fc.array(
        fc.tuple(
          fc.constantFrom("AWSAccessKeyId", "Signature", "Expires", "acl", "shardgate-plan", "encryption", "x"),
          fc.oneof(fc.constant(CREDENTIALS.accessKeyId), fc.constant(String(Math.floor(now / 1000) + 60)), headerText(20)),
        ),
        { maxLength: 5 },
      ),
      path: fc.constantFrom("/", "/b", "/b/", "/b/k", "/b/%E6%97%A5", "/b/%zz"),
    });
    await fc.assert(
      fc.asyncProperty(v2, async (r) => {
        const url = new URL(`${GATEWAY}${r.path}`);
        for (const [k, v] of r.query) url.searchParams.append(k, v);
        const headers = new Headers();
        if (r.header !== null) headers.set("authorization", r.header);
        if (r.date !== null) headers.set("date", r.date);
        const outcome = await s3Outcome(() => authenticateV2(new Request(url, { headers }), secretOf, { now, virtualHostSuffix: "localhost" }));
        expect(outcome).not.toBe("ok");
      }),
      { numRuns: 1000 },
    );
  });
});

describe("router", () => {
  it("any method, host, path, query and headers route to an Endpoint (or an S3Error), never a crash", async () => {
    const pathChar = fc.oneof(charsOf("/abc%2F%zz._~-?#&=+ é日"), ascii);
    const queryName = fc.oneof(
      fc.constantFrom(
        "acl",
        "cors",
        "tagging",
        "uploads",
        "uploadId",
        "partNumber",
        "versions",
        "versioning",
        "delete",
        "policy",
        "encryption",
        "shardgate-plan",
        "shardgate-upload",
        "list-type",
        "attributes",
        "select",
      ),
      headerText(10),
    );
    const request = fc.record({
      method: fc.oneof(
        fc.constantFrom("GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS", "PATCH"),
        fc.string({ unit: charsOf("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), minLength: 1, maxLength: 8 }),
      ),
      host: fc.constantFrom("gateway.test", "bucket.localhost", "a.b.localhost", "localhost", "LOCALHOST"),
      path: fc.string({ unit: pathChar, maxLength: 60 }),
      query: fc.array(fc.tuple(queryName, headerText(10)), { maxLength: 4 }),
      contentType: fc.option(fc.oneof(fc.constant("multipart/form-data; boundary=x"), headerText(30))),
      copy: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        let url: URL;
        try {
          url = new URL(`http://${r.host}/${r.path}`);
        } catch {
          return; // not a URL a request can have
        }
        for (const [k, v] of r.query) url.searchParams.append(k, v);
        const headers = new Headers();
        if (r.contentType !== null) headers.set("content-type", r.contentType);
        if (r.copy) headers.set("x-amz-copy-source", "/b/k");
        await s3Outcome(() => {
          const endpoint = routeRequest(r.method, url, "localhost", headers);
          expect(typeof endpoint.op).toBe("string");
          const target = resolveTarget(url, "localhost");
          if (target.key !== null) expect(target.bucket).not.toBeNull();
        });
      }),
      { numRuns: 3000 },
    );
  });
});

describe("XML parser", () => {
  /** What a parse gives: the tree, or the S3 error code; anything else fails. */
  function parse(doc: string): XmlElement | string {
    try {
      return parseXml(doc);
    } catch (e) {
      if (e instanceof S3Error) return e.code;
      throw e;
    }
  }

  it("garbage and near-XML give an element or MalformedXML", () => {
    const token = fc.oneof(
      fc.constantFrom(
        "<a>",
        "</a>",
        "<b/>",
        "<a x='1'>",
        "&amp;",
        "&toString;",
        "&#x1g;",
        "&#65;",
        "<![CDATA[",
        "]]>",
        "<!--",
        "-->",
        "<?",
        "?>",
        "<!DOCTYPE a>",
        "<",
        ">",
        "&",
        ";",
        '"',
      ),
      fc.string({ maxLength: 8 }),
    );
    fc.assert(
      fc.property(fc.array(token, { maxLength: 30 }), (tokens) => {
        const out = parse(tokens.join(""));
        if (typeof out === "string") expect(out).toBe("MalformedXML");
        else expect(typeof out.name).toBe("string");
      }),
      { numRuns: 3000 },
    );
  });

  type Tree = { name: string; text: string; children: Tree[] };
  const name = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_.-]{0,6}$/);
  const text = fc
    .string({ maxLength: 12 })
    .filter((t) => ![...t].some((c) => c.charCodeAt(0) < 0x20 && !"\t\n\r".includes(c)) && !/[\uD800-\uDFFF\uFFFE\uFFFF]/.test(t));
  const treeOf = (depth: number): fc.Arbitrary<Tree> =>
    fc.record({ name, text, children: depth === 0 ? fc.constant([]) : fc.array(treeOf(depth - 1), { maxLength: 3 }) });
  const tree = treeOf(4);
  const escaped = (t: string, cdata: boolean) =>
    cdata && !t.includes("]]>") ? `<![CDATA[${t}]]>` : t.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&#x3E;").replace(/"/g, "&quot;");
  const serialize = (t: Tree, cdata: boolean): string =>
    `<${t.name}>${escaped(t.text, cdata)}${t.children.map((c) => serialize(c, cdata)).join("")}</${t.name}>`;
  const textOf = (t: Tree): string => t.text; // text before the children, as serialized
  const same = (t: Tree, el: XmlElement): void => {
    expect(el.name).toBe(t.name);
    expect(el.text).toBe(textOf(t));
    expect(el.children.length).toBe(t.children.length);
    t.children.forEach((c, i) => same(c, el.children[i]!));
  };

  it("a document that encodes a tree parses back to it (escaped or as CDATA)", () => {
    fc.assert(
      fc.property(tree, fc.boolean(), (t, cdata) => {
        const out = parse(`<?xml version="1.0"?>\n${serialize(t, cdata)}\n`);
        expect(typeof out).not.toBe("string");
        same(t, out as XmlElement);
      }),
      { numRuns: 500 },
    );
  });

  it(`nesting deeper than ${MAX_XML_DEPTH} is MalformedXML, and large hostile documents parse in bounded time`, () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3 * MAX_XML_DEPTH }), (depth) => {
        const out = parse(`${"<a>".repeat(depth)}x${"</a>".repeat(depth)}`);
        if (depth <= MAX_XML_DEPTH) expect(typeof out).not.toBe("string");
        else expect(out).toBe("MalformedXML");
      }),
      { numRuns: 200 },
    );
    // 2 MiB (the largest body read) of each hostile shape: linear work, no stack.
    const big = 2 * 1024 * 1024;
    const shapes = {
      deep: "<a>".repeat(big / 3),
      wide: `<a>${"<b/>".repeat(big / 4)}</a>`,
      entities: `<a>${"&amp;".repeat(big / 5)}</a>`,
      unclosedComment: `<a><!--${"-".repeat(big)}`,
      attributes: `<a ${"x='1' ".repeat(big / 6)}>`,
      text: `<a>${"x".repeat(big)}`,
    };
    for (const [shape, doc] of Object.entries(shapes)) {
      const started = performance.now();
      const out = parse(doc);
      const ms = performance.now() - started;
      expect(out === "MalformedXML" || typeof out === "object", shape).toBe(true);
      // Liveness, not speed (a few ms to tens of ms here): a backtracking or quadratic parser takes minutes.
      expect(ms, `${shape}: ${Math.round(ms)} ms`).toBeLessThan(2_000);
    }
  });
});

describe("Range", () => {
  it("any Range header resolves within the object, is ignored, or is unsatisfiable, as http_range's model says", () => {
    const digits = fc.oneof(fc.nat({ max: 5000 }).map(String), fc.constantFrom("", "18446744073709551615", "99999999999999999999", "007"));
    const header = fc.oneof(
      fc.tuple(digits, digits).map(([a, b]) => `bytes=${a}-${b}`),
      headerText(30),
      fc.tuple(fc.constantFrom("bytes=", "bytes =", "Bytes=", ""), headerText(12)).map(([p, s]) => p + s),
    );
    fc.assert(
      fc.property(header, fc.nat({ max: 4000 }), (h, size) => {
        const r = core.resolveRange(h, size);
        const m = /^bytes=(\d*)-(\d*)$/.exec(h);
        const U64_MAX = 2n ** 64n - 1n;
        const overflows = m !== null && [m[1]!, m[2]!].some((d) => d !== "" && BigInt(d) > U64_MAX);
        if (r === null) {
          // Ignored: not one well-formed range (first > last, or a number past u64).
          if (m && (m[1] || m[2]) && !overflows) expect(m[1] !== "" && m[2] !== "" && BigInt(m[1]!) > BigInt(m[2]!)).toBe(true);
          return;
        }
        expect(overflows).toBe(false);
        expect(m).not.toBeNull();
        const [first, last] = [m![1]!, m![2]!];
        if (r === "unsatisfiable") {
          if (first === "") expect(BigInt(last)).toBe(0n);
          else expect(BigInt(first) >= BigInt(size)).toBe(true);
          return;
        }
        expect(r.start).toBeGreaterThanOrEqual(0);
        expect(r.start).toBeLessThanOrEqual(r.end);
        expect(r.end).toBeLessThanOrEqual(size);
        if (first === "") expect(r).toEqual({ start: Math.max(0, size - Number(last)), end: size });
        else expect(r).toEqual({ start: Number(first), end: last === "" ? size : Math.min(Number(last) + 1, size) });
      }),
      { numRuns: 5000 },
    );
  });
});

describe("form upload (multipart/form-data)", () => {
  it("any body gives the form or an S3Error, and reading its file does too", async () => {
    const enc = new TextEncoder();
    const piece = fc.oneof(
      fc.constantFrom(
        "--x\r\n",
        "\r\n--x\r\n",
        "\r\n--x--\r\n",
        "\r\n\r\n",
        'Content-Disposition: form-data; name="key"\r\n',
        'Content-Disposition: form-data; name="file"; filename="a"\r\n',
        "value",
      ),
      fc.string({ maxLength: 20 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { maxLength: 14 }), fc.integer({ min: -5, max: 5 }), async (pieces, lengthError) => {
        const bytes = enc.encode(pieces.join(""));
        const body = new Response(bytes).body;
        await s3Outcome(async () => {
          const form = await readFormUpload(body, "multipart/form-data; boundary=x", Math.max(0, bytes.length + lengthError));
          await new Response(form.file).arrayBuffer();
          await form.finish();
        });
      }),
      { numRuns: 1000 },
    );
  });
});
