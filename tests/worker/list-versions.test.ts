// Versions on an unversioned bucket: ListObjectVersions shows every object once, as its latest and
// only version `null` (prefix, delimiter, key-marker / version-id-marker paging, max-keys,
// encoding-type); GetBucketVersioning answers an empty configuration; object requests may name
// version `null`, and any other version is missing. Versioned buckets: versioning.test.ts.
import { beforeAll, describe, expect, it } from "vitest";
import { s3, s3ok } from "./signed";

const bucket = "versions";
const KEYS = ["a", "b/1", "b/2", "c d"];

const tags = (xml: string, name: string) => [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, "g"))].map((m) => m[1]);
const tag = (xml: string, name: string) => tags(xml, name)[0];

beforeAll(async () => {
  await s3ok(`/${bucket}`, { method: "PUT" });
  for (const key of KEYS) await s3ok(`/${bucket}/${encodeURIComponent(key).replace(/%2F/g, "/")}`, { method: "PUT", body: `body of ${key}` });
});

async function versions(query: string): Promise<string> {
  return (await s3ok(`/${bucket}?versions${query}`)).text();
}

describe("ListObjectVersions", () => {
  it("shows every object once, as version null and the latest", async () => {
    const xml = await versions("");
    expect(xml).toContain("<ListVersionsResult");
    expect(tags(xml, "Key")).toEqual(KEYS);
    expect(tags(xml, "VersionId")).toEqual(["null", "null", "null", "null"]);
    expect(tags(xml, "IsLatest")).toEqual(["true", "true", "true", "true"]);
    expect(tags(xml, "Size")).toEqual(KEYS.map((k) => String(`body of ${k}`.length)));
    expect(tag(xml, "IsTruncated")).toBe("false");
    expect(xml).not.toContain("<NextKeyMarker>");
  });

  it("pages with key-marker and version-id-marker", async () => {
    const first = await versions("&max-keys=2");
    expect(tags(first, "Key")).toEqual(["a", "b/1"]);
    expect(tag(first, "IsTruncated")).toBe("true");
    expect(tag(first, "NextKeyMarker")).toBe("b/1");
    expect(tag(first, "NextVersionIdMarker")).toBe("null");
    const second = await versions("&max-keys=2&key-marker=b/1&version-id-marker=null");
    expect(tags(second, "Key")).toEqual(["b/2", "c d"]);
    expect(tag(second, "KeyMarker")).toBe("b/1");
    expect(tag(second, "VersionIdMarker")).toBe("null");
    expect(tag(second, "IsTruncated")).toBe("false");
  });

  it("rolls keys up by delimiter and encodes them on request", async () => {
    const xml = await versions("&delimiter=/&encoding-type=url");
    expect(tags(xml, "Key")).toEqual(["a", "c+d"]);
    expect(tags(xml, "Prefix")).toEqual(["", "b/"]);
    expect(tag(xml, "EncodingType")).toBe("url");
    const truncated = await versions("&delimiter=/&max-keys=2");
    expect(tag(truncated, "NextKeyMarker")).toBe("b/");
    expect(truncated).not.toContain("<NextVersionIdMarker>");
  });

  it("answers S3's errors", async () => {
    const code = async (path: string, init?: RequestInit) => tag(await (await s3(path, init)).text(), "Code");
    expect(await code(`/${bucket}?versions&version-id-marker=null`)).toBe("InvalidArgument");
    expect(await code(`/${bucket}?versions&key-marker=a&version-id-marker=3HL4kqtJlcpXroDTDmJ`)).toBe("InvalidArgument");
    expect(await code(`/no-such-bucket?versions`)).toBe("NoSuchBucket");
    expect(await code(`/${bucket}?versions`, { method: "POST" })).toBe("NotImplemented");
  });
});

describe("versions of an unversioned bucket", () => {
  const code = async (path: string, init?: RequestInit) => {
    const res = await s3(path, init);
    return [res.status, tag(await res.text(), "Code")];
  };

  it("answers GetBucketVersioning with an empty configuration", async () => {
    const xml = await (await s3ok(`/${bucket}?versioning`)).text();
    expect(xml).toContain("<VersioningConfiguration");
    expect(xml).not.toContain("<Status>");
    expect(await code(`/no-such-bucket?versioning`)).toEqual([404, "NoSuchBucket"]);
    const bad = `<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>On</Status></VersioningConfiguration>`;
    expect(await code(`/${bucket}?versioning`, { method: "PUT", body: bad })).toEqual([400, "IllegalVersioningConfigurationException"]);
  });

  it("serves version null of an object; other versions are missing, malformed ids refused", async () => {
    const other = "0123456789abcdef0123456789abcdef";
    expect(await (await s3ok(`/${bucket}/a?versionId=null`)).text()).toBe("body of a");
    expect((await s3(`/${bucket}/a?versionId=null`, { method: "HEAD" })).status).toBe(200);
    expect(await code(`/${bucket}/a?versionId=${other}`)).toEqual([404, "NoSuchVersion"]);
    expect(await code(`/${bucket}/a?versionId=3HL4kqtJlcpXroDTDmJ`)).toEqual([400, "InvalidArgument"]);
    expect(await code(`/${bucket}/a?versionId=3HL4kqtJlcpXroDTDmJ`, { method: "DELETE" })).toEqual([400, "InvalidArgument"]);
    // Deleting a version that does not exist: done already (204), nothing else touched.
    await s3ok(`/${bucket}/a?versionId=${other}`, { method: "DELETE" }, 204);
    expect(await (await s3ok(`/${bucket}/a`)).text()).toBe("body of a"); // still there
    await s3ok(`/${bucket}/a?versionId=null`, { method: "DELETE" }, 204);
    expect((await s3(`/${bucket}/a`)).status).toBe(404);
  });
});
