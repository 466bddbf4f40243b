// Hostile input (issue #29): what a client sends the gateway to parse, built to make it misbehave.
// Each attack here failed on the code before it was fixed, and each runs while health is probed
// (hostile.ts): the gateway must keep answering.
//   - XML: entity names looked up on Object.prototype, nesting deep enough to overflow a recursive
//     parser (a 500), numeric references parseInt half-read.
//   - bodies: CreateBucket, PutBucketPolicy and the admin API read bodies whole before any size check.
import { describe, expect, it } from "vitest";
import { MAX_XML_DEPTH, parseXml } from "../../worker/src/api/xml-parse";
import { S3Error } from "../../worker/src/s3-error";
import { countedBody, errorCode, whileProbing } from "./hostile";
import { s3, s3ok } from "./signed";

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
