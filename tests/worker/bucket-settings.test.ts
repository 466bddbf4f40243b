// Bucket tagging (api/s3/bucket-settings.ts) and ACLs answered as a single-owner service does
// (api/s3/acl.ts, api/format/acls.ts): the owner always has FULL_CONTROL, ACLs that say exactly that are
// accepted, anything granting access to someone else is refused by name.
import { describe, expect, it } from "vitest";
import { s3, s3ok } from "./signed";

const errorCode = (xml: string) => xml.match(/<Code>([^<]+)<\/Code>/)?.[1];
const values = (xml: string, name: string) => [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, "g"))].map((m) => m[1]);

const tagging = (pairs: [string, string][]) =>
  `<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet>${pairs
    .map(([k, v]) => `<Tag><Key>${k}</Key><Value>${v}</Value></Tag>`)
    .join("")}</TagSet></Tagging>`;

async function expectError(res: Response, status: number, code: string): Promise<string> {
  const xml = await res.text();
  expect(res.status, xml).toBe(status);
  expect(errorCode(xml)).toBe(code);
  return xml;
}

describe("bucket tagging", () => {
  it("stores, returns (sorted by key), replaces and deletes a bucket's tag set", async () => {
    await s3ok("/tagged-bucket", { method: "PUT" });
    await expectError(await s3("/tagged-bucket?tagging"), 404, "NoSuchTagSet");

    const put = await s3ok(
      "/tagged-bucket?tagging",
      {
        method: "PUT",
        body: tagging([
          ["team", "edge"],
          ["cost-center", "42"],
        ]),
      },
      204,
    );
    expect(put.status).toBe(204);
    const xml = await (await s3ok("/tagged-bucket?tagging")).text();
    expect(values(xml, "Key")).toEqual(["cost-center", "team"]);
    expect(values(xml, "Value")).toEqual(["42", "edge"]);

    await s3ok("/tagged-bucket?tagging", { method: "PUT", body: tagging([["only", ""]]) }, 204);
    const replaced = await (await s3ok("/tagged-bucket?tagging")).text();
    expect(values(replaced, "Key")).toEqual(["only"]);
    expect(values(replaced, "Value")).toEqual([""]);

    expect((await s3ok("/tagged-bucket?tagging", { method: "DELETE" }, 204)).status).toBe(204);
    await expectError(await s3("/tagged-bucket?tagging"), 404, "NoSuchTagSet");
  });

  it("refuses bad tag sets and keeps the old one", async () => {
    await s3ok("/tagged-bad", { method: "PUT" });
    await s3ok("/tagged-bad?tagging", { method: "PUT", body: tagging([["keep", "me"]]) }, 204);
    const tooMany = tagging(Array.from({ length: 51 }, (_, i) => [`k${i}`, "v"] as [string, string]));
    await expectError(await s3("/tagged-bad?tagging", { method: "PUT", body: tooMany }), 400, "InvalidTag");
    await expectError(
      await s3("/tagged-bad?tagging", {
        method: "PUT",
        body: tagging([
          ["dup", "1"],
          ["dup", "2"],
        ]),
      }),
      400,
      "InvalidTag",
    );
    await expectError(await s3("/tagged-bad?tagging", { method: "PUT", body: "<Tagging><TagSet>" }), 400, "MalformedXML");
    expect(values(await (await s3ok("/tagged-bad?tagging")).text(), "Key")).toEqual(["keep"]);
  });

  it("answers NoSuchBucket for a missing bucket, and a recreated bucket starts without tags", async () => {
    await expectError(await s3("/no-such-tagged?tagging"), 404, "NoSuchBucket");
    await expectError(await s3("/no-such-tagged?tagging", { method: "PUT", body: tagging([["a", "b"]]) }), 404, "NoSuchBucket");
    await s3ok("/tagged-again", { method: "PUT" });
    await s3ok("/tagged-again?tagging", { method: "PUT", body: tagging([["a", "b"]]) }, 204);
    await s3ok("/tagged-again", { method: "DELETE" }, 204);
    await s3ok("/tagged-again", { method: "PUT" });
    await expectError(await s3("/tagged-again?tagging"), 404, "NoSuchTagSet");
  });
});

describe("ACLs", () => {
  it("shows the owner with FULL_CONTROL on buckets and objects", async () => {
    await s3ok("/acl-bucket", { method: "PUT" });
    await s3ok("/acl-bucket/obj", { method: "PUT", body: "x" });
    const owner = values(await (await s3ok("/?x-id=ListBuckets")).text(), "ID")[0];
    for (const path of ["/acl-bucket?acl", "/acl-bucket/obj?acl"]) {
      const xml = await (await s3ok(path)).text();
      expect(xml).toContain("<AccessControlPolicy");
      expect(values(xml, "ID")).toEqual([owner, owner]);
      expect(values(xml, "Permission")).toEqual(["FULL_CONTROL"]);
    }
    await expectError(await s3("/acl-bucket/missing?acl"), 404, "NoSuchKey");
    await expectError(await s3("/no-such-acl-bucket?acl"), 404, "NoSuchBucket");
  });

  it("serves ACLs that give the owner FULL_CONTROL alone (canned, a grant header, a policy); refuses others as S3 with ACLs disabled does: 400 AccessControlListNotSupported, nothing stored", async () => {
    await s3ok("/acl-put", { method: "PUT", headers: { "x-amz-acl": "private" } });
    await s3ok("/acl-put/obj", { method: "PUT", body: "x", headers: { "x-amz-acl": "bucket-owner-full-control" } });
    await s3ok("/acl-put?acl", { method: "PUT", headers: { "x-amz-acl": "private" } });
    await s3ok("/acl-put/obj?acl", { method: "PUT", headers: { "x-amz-acl": "private" } });

    const acl = await (await s3ok("/acl-put/obj?acl")).text();
    await s3ok("/acl-put/obj?acl", { method: "PUT", body: acl });

    // x-amz-grant-full-control naming the owner (quoted or not) is the owner's ACL too.
    const owner = values(acl, "ID")[0] as string;
    await s3ok("/acl-put/obj?acl", { method: "PUT", headers: { "x-amz-grant-full-control": `id="${owner}"` } });
    await s3ok("/acl-put/granted", { method: "PUT", body: "g", headers: { "x-amz-grant-full-control": `id=${owner}` } });

    const refused = "AccessControlListNotSupported";
    const publicRead = await expectError(await s3("/acl-put/obj?acl", { method: "PUT", headers: { "x-amz-acl": "public-read" } }), 400, refused);
    expect(publicRead).toContain("public-read");
    await expectError(await s3("/acl-put/other", { method: "PUT", body: "y", headers: { "x-amz-acl": "public-read" } }), 400, refused);
    await expectError(
      await s3("/acl-put/other", { method: "PUT", headers: { "x-amz-copy-source": "/acl-put/obj", "x-amz-acl": "authenticated-read" } }),
      400,
      refused,
    );
    await expectError(
      await s3("/acl-put?acl", { method: "PUT", headers: { "x-amz-grant-read": 'uri="http://acs.amazonaws.com/groups/global/AllUsers"' } }),
      400,
      refused,
    );
    for (const grantees of [`id="${owner}", id="someone-else"`, 'emailAddress="a@example.com"', `id="${owner}x"`, "id", "=", ""])
      await expectError(await s3("/acl-put/obj?acl", { method: "PUT", headers: { "x-amz-grant-full-control": grantees } }), 400, refused);
    const everyone = acl.replace(
      "</AccessControlList>",
      `<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AllUsers</URI></Grantee><Permission>READ</Permission></Grant></AccessControlList>`,
    );
    await expectError(await s3("/acl-put/obj?acl", { method: "PUT", body: everyone }), 400, refused);
    // Refused writes store nothing.
    await expectError(await s3("/acl-put/other"), 404, "NoSuchKey");
  });

  it("says ACLs are disabled through Object Ownership too: BucketOwnerEnforced is read back and may be set; a setting that enables ACLs is NotImplemented, a bad one refused, nothing changed", async () => {
    const rule = "<Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership></Rule>";
    const enforced = `<OwnershipControls>${rule}</OwnershipControls>`;
    await s3ok("/ownership", { method: "PUT", headers: { "x-amz-object-ownership": "BucketOwnerEnforced" } });
    expect(await (await s3ok("/ownership?ownershipControls")).text()).toContain(rule);
    await s3ok("/ownership?ownershipControls", { method: "PUT", body: enforced });
    for (const setting of ["ObjectWriter", "BucketOwnerPreferred"]) {
      await expectError(
        await s3("/ownership?ownershipControls", { method: "PUT", body: enforced.replace("BucketOwnerEnforced", setting) }),
        501,
        "NotImplemented",
      );
      await expectError(await s3("/ownership-acls", { method: "PUT", headers: { "x-amz-object-ownership": setting } }), 501, "NotImplemented");
    }
    for (const body of [
      enforced.replace("BucketOwnerEnforced", "bucketownerenforced"),
      enforced.replace("BucketOwnerEnforced", ""),
      enforced.replace("</Rule>", "</Rule><Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership></Rule>"),
      enforced.replace("</ObjectOwnership>", "</ObjectOwnership><ObjectOwnership>ObjectWriter</ObjectOwnership>"),
      "<OwnershipControls/>",
      "<Other/>",
      "",
    ])
      await expectError(await s3("/ownership?ownershipControls", { method: "PUT", body }), 400, "MalformedXML");
    await expectError(await s3("/ownership-bad", { method: "PUT", headers: { "x-amz-object-ownership": "Everyone" } }), 400, "InvalidArgument");
    // Refused CreateBuckets made no bucket; DeleteBucketOwnershipControls (which would enable ACLs) is not a thing here.
    for (const name of ["ownership-acls", "ownership-bad"]) await expectError(await s3(`/${name}?location`), 404, "NoSuchBucket");
    await expectError(await s3("/ownership?ownershipControls", { method: "DELETE" }), 501, "NotImplemented");
    expect(await (await s3ok("/ownership?ownershipControls")).text()).toContain(rule);
    await expectError(await s3("/no-such-ownership?ownershipControls"), 404, "NoSuchBucket");
  });
});
