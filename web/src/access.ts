// The console's calls for who may do what (docs/access.md): access keys and their rights on buckets
// through the admin API (root key only), and a bucket's policy, including the public-read
// statements the console writes for a bucket or a prefix.
import { S3Error } from "./errors";
import { encodeSegment, type S3Client } from "./s3";

export interface BucketGrant {
  bucket: string;
  read: boolean;
  write: boolean;
  owner: boolean;
}

export interface AccessKey {
  id: string;
  name: string;
  created: number;
  enabled: boolean;
  createBucket: boolean;
  grants: BucketGrant[];
}

export type Rights = Omit<BucketGrant, "bucket">;

/** An admin API call with a JSON body and answer; errors as S3Error. */
export async function adminJson<T>(s3: S3Client, method: string, path: string, body?: unknown): Promise<T | null> {
  const res = await s3.request(method, `/_shardgate/admin/${path}`, {
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.status === 204 ? null : ((await res.json()) as T);
}

export async function listKeys(s3: S3Client): Promise<AccessKey[]> {
  return ((await adminJson<{ keys: AccessKey[] }>(s3, "GET", "keys")) as { keys: AccessKey[] }).keys;
}

/** Creates a key; its secret is in the answer and never shown again. */
export async function createKey(s3: S3Client, name: string, createBucket: boolean): Promise<AccessKey & { secret: string }> {
  return (await adminJson<AccessKey & { secret: string }>(s3, "POST", "keys", { name, createBucket })) as AccessKey & { secret: string };
}

export async function updateKey(s3: S3Client, id: string, change: Partial<Pick<AccessKey, "name" | "enabled" | "createBucket">>): Promise<void> {
  await adminJson(s3, "PATCH", `keys/${encodeSegment(id)}`, change);
}

export async function deleteKey(s3: S3Client, id: string): Promise<void> {
  await adminJson(s3, "DELETE", `keys/${encodeSegment(id)}`);
}

export async function setRights(s3: S3Client, id: string, bucket: string, rights: Rights): Promise<void> {
  await adminJson(s3, "PUT", `keys/${encodeSegment(id)}/buckets/${encodeSegment(bucket)}`, rights);
}

// --- bucket policies ---------------------------------------------------------------------------

/** The Sid of the statements the console writes to make a bucket or a prefix public. */
const PUBLIC_SID = "ConsolePublicRead";

interface Statement {
  Sid?: string;
  Effect: string;
  Principal: unknown;
  Action: unknown;
  Resource: unknown;
}

interface PolicyDocument {
  Version?: string;
  Statement: Statement[];
}

/** The bucket's policy document (as stored), or null when it has none. */
export async function getPolicy(s3: S3Client, bucket: string): Promise<string | null> {
  try {
    return await (await s3.request("GET", `/${encodeSegment(bucket)}`, { query: { policy: "" } })).text();
  } catch (err) {
    if (err instanceof S3Error && err.code === "NoSuchBucketPolicy") return null;
    throw err;
  }
}

/** Stores a policy document (the gateway checks it: MalformedPolicy with the reason), or removes it when empty. */
export async function savePolicy(s3: S3Client, bucket: string, text: string): Promise<void> {
  const path = `/${encodeSegment(bucket)}`;
  if (text.trim() === "") await s3.request("DELETE", path, { query: { policy: "" } });
  else await s3.request("PUT", path, { query: { policy: "" }, headers: { "content-type": "application/json" }, body: text });
}

function parse(text: string | null): PolicyDocument {
  if (!text) return { Version: "2012-10-17", Statement: [] };
  const doc = JSON.parse(text) as PolicyDocument;
  doc.Statement = Array.isArray(doc.Statement) ? doc.Statement : [doc.Statement];
  return doc;
}

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);

/** The prefixes the policy lets everyone read (GetObject to "*"), "" for the whole bucket. */
export function publicPrefixes(text: string | null, bucket: string): string[] {
  const out: string[] = [];
  for (const s of parse(text).Statement) {
    const everyone =
      s.Principal === "*" || (typeof s.Principal === "object" && s.Principal !== null && list((s.Principal as { AWS?: unknown }).AWS).includes("*"));
    const reads = list(s.Action).some((a) => typeof a === "string" && ["s3:getobject", "s3:*", "*", "s3:get*"].includes(a.toLowerCase()));
    if (s.Effect !== "Allow" || !everyone || !reads) continue;
    for (const r of list(s.Resource)) {
      const m = typeof r === "string" ? /^arn:aws:s3:::([^/]+)\/(.*)\*$/.exec(r) : null;
      if (m && m[1] === bucket && !m[2]?.includes("*")) out.push(m[2] ?? "");
    }
  }
  return out;
}

/** The policy with `prefix` ("" = the whole bucket) made public (GetObject to everyone) or not. */
export function withPublicRead(text: string | null, bucket: string, prefix: string, on: boolean): string {
  const doc = parse(text);
  const resource = `arn:aws:s3:::${bucket}/${prefix}*`;
  const mine = doc.Statement.find((s) => s.Sid === PUBLIC_SID);
  const resources = new Set(mine ? list(mine.Resource).map(String) : []);
  if (on) resources.add(resource);
  else resources.delete(resource);
  const others = doc.Statement.filter((s) => s.Sid !== PUBLIC_SID);
  const statement: Statement[] = resources.size
    ? [{ Sid: PUBLIC_SID, Effect: "Allow", Principal: "*", Action: "s3:GetObject", Resource: [...resources].sort() }]
    : [];
  const next = [...others, ...statement];
  return next.length ? JSON.stringify({ Version: doc.Version ?? "2012-10-17", Statement: next }, null, 2) : "";
}
