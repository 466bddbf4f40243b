// Versioned buckets (meta/versions.ts, api/s3/versioning.ts): Put/GetBucketVersioning; every write a
// new version with its id in x-amz-version-id; GET, HEAD, DELETE, tagging, attributes and a copy's
// source by versionId; delete markers (404 with x-amz-delete-marker for the current one, 405 for a
// marker's version); DeleteObjects with VersionId; suspended buckets overwrite the null version;
// ListObjectVersions paging over many versions; old versions keep their shard files (the orphan
// sweep included) and deleting a version frees them.
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { loadConfig, type Env } from "../../worker/src/config";
import { core } from "../../worker/src/core";
import { sweepOrphans } from "../../worker/src/services/orphans";
import { randomBytes } from "../shared/core-suite";
import { shardFiles } from "./nodes";
import { s3, s3ok } from "./signed";

const tags = (xml: string, name: string) => [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, "g"))].map((m) => m[1]);
const tag = (xml: string, name: string) => tags(xml, name)[0];
const MIB = 1 << 20;

const config = (status: string) =>
  `<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>${status}</Status></VersioningConfiguration>`;

async function versionedBucket(name: string): Promise<void> {
  await s3ok(`/${name}`, { method: "PUT" });
  await s3ok(`/${name}?versioning`, { method: "PUT", body: config("Enabled") });
}

async function put(path: string, body: BodyInit): Promise<string> {
  const res = await s3ok(path, { method: "PUT", body });
  return res.headers.get("x-amz-version-id") as string;
}

async function text(path: string): Promise<string> {
  return (await s3ok(path)).text();
}

/** Every entry of ListObjectVersions, in order: [key, versionId, isLatest, kind]. */
async function allVersions(bucket: string, maxKeys = 1000): Promise<[string, string, boolean, "Version" | "DeleteMarker"][]> {
  const out: [string, string, boolean, "Version" | "DeleteMarker"][] = [];
  let marker = "";
  for (let page = 0; page < 1000; page++) {
    const xml = await text(`/${bucket}?versions&max-keys=${maxKeys}${marker}`);
    for (const m of xml.matchAll(/<(Version|DeleteMarker)>(.*?)<\/\1>/g)) {
      out.push([tag(m[2], "Key"), tag(m[2], "VersionId"), tag(m[2], "IsLatest") === "true", m[1] as "Version" | "DeleteMarker"]);
    }
    if (tag(xml, "IsTruncated") !== "true") return out;
    marker = `&key-marker=${encodeURIComponent(tag(xml, "NextKeyMarker"))}&version-id-marker=${tag(xml, "NextVersionIdMarker")}`;
  }
  throw new Error("listing did not end");
}

describe("versioning configuration", () => {
  it("is enabled, then suspended, and reads back", async () => {
    await s3ok("/vconf", { method: "PUT" });
    expect(await text("/vconf?versioning")).not.toContain("<Status>");
    await s3ok("/vconf?versioning", { method: "PUT", body: config("Enabled") });
    expect(tag(await text("/vconf?versioning"), "Status")).toBe("Enabled");
    await s3ok("/vconf?versioning", { method: "PUT", body: config("Suspended") });
    expect(tag(await text("/vconf?versioning"), "Status")).toBe("Suspended");
    expect((await s3("/no-such-vbucket?versioning", { method: "PUT", body: config("Enabled") })).status).toBe(404);
  });
});

describe("a versioned bucket", () => {
  const bucket = "vbucket";
  beforeAll(() => versionedBucket(bucket));

  it("keeps every write as a version and serves each by id", async () => {
    const v1 = await put(`/${bucket}/doc`, "one");
    const v2 = await put(`/${bucket}/doc`, "two");
    expect(v1).toMatch(/^[0-9a-f]{32}$/);
    expect(v2).not.toBe(v1);
    const current = await s3ok(`/${bucket}/doc`);
    expect(await current.text()).toBe("two");
    expect(current.headers.get("x-amz-version-id")).toBe(v2);
    const old = await s3ok(`/${bucket}/doc?versionId=${v1}`);
    expect(await old.text()).toBe("one");
    expect(old.headers.get("x-amz-version-id")).toBe(v1);
    expect((await s3(`/${bucket}/doc?versionId=${v1}`, { method: "HEAD" })).headers.get("content-length")).toBe("3");
    expect((await allVersions(bucket)).filter(([k]) => k === "doc")).toEqual([
      ["doc", v2, true, "Version"],
      ["doc", v1, false, "Version"],
    ]);
  });

  it("deletes with a delete marker, undone by deleting the marker", async () => {
    const v1 = await put(`/${bucket}/gone`, "data");
    const del = await s3ok(`/${bucket}/gone`, { method: "DELETE" }, 204);
    expect(del.headers.get("x-amz-delete-marker")).toBe("true");
    const marker = del.headers.get("x-amz-version-id") as string;
    expect(marker).toMatch(/^[0-9a-f]{32}$/);

    const get = await s3(`/${bucket}/gone`);
    expect(get.status).toBe(404);
    expect(tag(await get.text(), "Code")).toBe("NoSuchKey");
    expect(get.headers.get("x-amz-delete-marker")).toBe("true");
    expect(get.headers.get("x-amz-version-id")).toBe(marker);
    expect((await s3(`/${bucket}/gone`, { method: "HEAD" })).status).toBe(404);
    const ofMarker = await s3(`/${bucket}/gone?versionId=${marker}`);
    expect(ofMarker.status).toBe(405);
    expect(tag(await ofMarker.text(), "Code")).toBe("MethodNotAllowed");
    expect(ofMarker.headers.get("x-amz-delete-marker")).toBe("true");
    expect(await text(`/${bucket}/gone?versionId=${v1}`)).toBe("data");
    expect(tags(await text(`/${bucket}?list-type=2`), "Key")).not.toContain("gone");
    expect((await allVersions(bucket)).filter(([k]) => k === "gone")).toEqual([
      ["gone", marker, true, "DeleteMarker"],
      ["gone", v1, false, "Version"],
    ]);

    const undo = await s3ok(`/${bucket}/gone?versionId=${marker}`, { method: "DELETE" }, 204);
    expect(undo.headers.get("x-amz-delete-marker")).toBe("true");
    expect(undo.headers.get("x-amz-version-id")).toBe(marker);
    expect(await text(`/${bucket}/gone`)).toBe("data");
  });

  it("deletes a version for good: its shard files go, the next newest becomes current", async () => {
    const body = randomBytes(MIB, 7);
    const v1 = await put(`/${bucket}/big`, body);
    const before = new Set((await shardFiles()).keys());
    const v2 = await put(`/${bucket}/big`, randomBytes(MIB, 8));
    const added = [...(await shardFiles()).keys()].filter((k) => !before.has(k));
    expect(added).toHaveLength(6);
    await s3ok(`/${bucket}/big?versionId=${v2}`, { method: "DELETE" }, 204);
    const current = await s3ok(`/${bucket}/big`);
    expect(current.headers.get("x-amz-version-id")).toBe(v1);
    expect(new Uint8Array(await current.arrayBuffer())).toEqual(body);
    await expect.poll(async () => [...(await shardFiles()).keys()].filter((k) => added.includes(k)), { timeout: 5000 }).toEqual([]);
  });

  it("keeps old versions' shard files through the orphan sweep", async () => {
    const body = randomBytes(MIB + 3, 9);
    const v1 = await put(`/${bucket}/swept`, body);
    await put(`/${bucket}/swept`, "newer");
    const gatewayEnv = env as unknown as Env;
    await sweepOrphans(gatewayEnv, loadConfig(gatewayEnv), core, { graceMs: 0, now: Date.now() + 60_000 });
    expect(new Uint8Array(await (await s3ok(`/${bucket}/swept?versionId=${v1}`)).arrayBuffer())).toEqual(body);
  });

  it("tags, describes and copies a version named by id", async () => {
    const v1 = await put(`/${bucket}/tagged`, "first");
    const v2 = await put(`/${bucket}/tagged`, "second");
    const tagging = `<Tagging><TagSet><Tag><Key>k</Key><Value>old</Value></Tag></TagSet></Tagging>`;
    const putTags = await s3ok(`/${bucket}/tagged?tagging&versionId=${v1}`, { method: "PUT", body: tagging });
    expect(putTags.headers.get("x-amz-version-id")).toBe(v1);
    expect(tags(await text(`/${bucket}/tagged?tagging&versionId=${v1}`), "Value")).toEqual(["old"]);
    expect(tags(await text(`/${bucket}/tagged?tagging`), "Value")).toEqual([]);
    const attrs = await s3ok(`/${bucket}/tagged?attributes&versionId=${v1}`, { headers: { "x-amz-object-attributes": "ObjectSize" } });
    expect(tag(await attrs.text(), "ObjectSize")).toBe("5");
    expect(attrs.headers.get("x-amz-version-id")).toBe(v1);

    const copy = await s3ok(`/${bucket}/copied`, { method: "PUT", headers: { "x-amz-copy-source": `/${bucket}/tagged?versionId=${v1}` } });
    expect(copy.headers.get("x-amz-copy-source-version-id")).toBe(v1);
    expect(copy.headers.get("x-amz-version-id")).toMatch(/^[0-9a-f]{32}$/);
    expect(await text(`/${bucket}/copied`)).toBe("first");
    // A copy onto itself is a new version with its own data: deleting the source version keeps it.
    const self = await s3ok(`/${bucket}/tagged`, {
      method: "PUT",
      headers: { "x-amz-copy-source": `/${bucket}/tagged?versionId=${v2}`, "x-amz-metadata-directive": "REPLACE", "x-amz-meta-m": "1" },
    });
    const v3 = self.headers.get("x-amz-version-id") as string;
    await s3ok(`/${bucket}/tagged?versionId=${v2}`, { method: "DELETE" }, 204);
    const now = await s3ok(`/${bucket}/tagged?versionId=${v3}`);
    expect(await now.text()).toBe("second");
    expect(now.headers.get("x-amz-meta-m")).toBe("1");
  });

  it("deletes versions and adds markers in one DeleteObjects", async () => {
    const v1 = await put(`/${bucket}/batch/a`, "a");
    await put(`/${bucket}/batch/b`, "b");
    const body = `<Delete><Object><Key>batch/a</Key><VersionId>${v1}</VersionId></Object><Object><Key>batch/b</Key></Object></Delete>`;
    const md5 = btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("MD5", new TextEncoder().encode(body)))));
    const xml = await (await s3ok(`/${bucket}?delete`, { method: "POST", body, headers: { "Content-MD5": md5 } })).text();
    const deleted = [...xml.matchAll(/<Deleted>(.*?)<\/Deleted>/g)].map((m) => m[1]);
    expect(tag(deleted[0], "VersionId")).toBe(v1);
    expect(deleted[0]).not.toContain("<DeleteMarker>");
    expect(tag(deleted[1], "DeleteMarker")).toBe("true");
    expect(tag(deleted[1], "DeleteMarkerVersionId")).toMatch(/^[0-9a-f]{32}$/);
    expect((await allVersions(bucket)).filter(([k]) => k.startsWith("batch/")).map(([k, , latest, kind]) => [k, latest, kind])).toEqual([
      ["batch/b", true, "DeleteMarker"],
      ["batch/b", false, "Version"],
    ]);
  });

  it("pages through many versions of many keys, newest first, each key's first one the latest", async () => {
    const b = "vpaging";
    await versionedBucket(b);
    const written = new Map<string, string[]>();
    for (const key of ["k1", "k2", "k3"]) {
      const ids: string[] = [];
      for (let i = 0; i < 9; i++) ids.unshift(await put(`/${b}/${key}`, `${key}-${i}`));
      written.set(key, ids);
    }
    const expected = [...written].flatMap(([key, ids]) => ids.map((id, i) => [key, id, i === 0, "Version"]));
    expect(await allVersions(b, 4)).toEqual(expected);
    expect(await allVersions(b, 1)).toEqual(expected);
  });

  it("gives concurrent writers one version each and exactly one latest", async () => {
    const ids = await Promise.all(Array.from({ length: 8 }, (_, i) => put(`/${bucket}/race`, `writer-${i}`)));
    expect(new Set(ids).size).toBe(8);
    const listed = (await allVersions(bucket)).filter(([k]) => k === "race");
    expect(listed).toHaveLength(8);
    expect(listed.filter(([, , latest]) => latest)).toHaveLength(1);
    const current = await s3ok(`/${bucket}/race`);
    expect(current.headers.get("x-amz-version-id")).toBe(listed[0][1]);
  });

  it("cannot be deleted while it holds versions", async () => {
    const b = "vdrop";
    await versionedBucket(b);
    const v = await put(`/${b}/x`, "x");
    const marker = (await s3ok(`/${b}/x`, { method: "DELETE" }, 204)).headers.get("x-amz-version-id");
    expect(tag(await (await s3(`/${b}`, { method: "DELETE" })).text(), "Code")).toBe("BucketNotEmpty");
    await s3ok(`/${b}/x?versionId=${v}`, { method: "DELETE" }, 204);
    await s3ok(`/${b}/x?versionId=${marker}`, { method: "DELETE" }, 204);
    await s3ok(`/${b}`, { method: "DELETE" }, 204);
  });
});

describe("a suspended bucket", () => {
  it("overwrites the null version in place and keeps the versions made while enabled", async () => {
    const b = "vsuspended";
    await s3ok(`/${b}`, { method: "PUT" });
    await put(`/${b}/k`, "before versioning"); // the null version
    await s3ok(`/${b}?versioning`, { method: "PUT", body: config("Enabled") });
    const v1 = await put(`/${b}/k`, "enabled");
    expect(await text(`/${b}/k?versionId=null`)).toBe("before versioning");
    await s3ok(`/${b}?versioning`, { method: "PUT", body: config("Suspended") });
    expect(await put(`/${b}/k`, "suspended 1")).toBe("null");
    expect(await put(`/${b}/k`, "suspended 2")).toBe("null");
    expect(await text(`/${b}/k`)).toBe("suspended 2");
    expect(await allVersions(b)).toEqual([
      ["k", "null", true, "Version"],
      ["k", v1, false, "Version"],
    ]);
    // A delete makes the null version a delete marker.
    const del = await s3ok(`/${b}/k`, { method: "DELETE" }, 204);
    expect(del.headers.get("x-amz-version-id")).toBe("null");
    expect(await allVersions(b)).toEqual([
      ["k", "null", true, "DeleteMarker"],
      ["k", v1, false, "Version"],
    ]);
  });
});
