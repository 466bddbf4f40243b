// Fields of a browser form signed with SigV4 (a presigned POST), as the AWS SDKs make them: the
// policy (its conditions, the signing fields, an expiration) in base64 and its signature.
import { CREDENTIALS } from "../shared/credentials";

const enc = new TextEncoder();

export async function hmacSha256(key: Uint8Array | string, text: string): Promise<Uint8Array> {
  const raw = typeof key === "string" ? enc.encode(key) : key;
  const k = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, enc.encode(text)));
}

const hexOf = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

/** The fields a SigV4 presigned POST carries for `conditions`, signed with `key` (the root key by default). */
export async function signedPostFields(
  conditions: unknown[],
  opts: { key?: { id: string; secret: string }; expires?: Date } = {},
): Promise<Record<string, string>> {
  const key = opts.key ?? { id: CREDENTIALS.accessKeyId, secret: CREDENTIALS.secretAccessKey };
  const date = new Date().toISOString().slice(0, 10).replaceAll("-", "");
  const amzDate = `${date}T000000Z`;
  const credential = `${key.id}/${date}/us-east-1/s3/aws4_request`;
  const all = [...conditions, { "x-amz-algorithm": "AWS4-HMAC-SHA256" }, { "x-amz-credential": credential }, { "x-amz-date": amzDate }];
  const expiration = (opts.expires ?? new Date(Date.now() + 600_000)).toISOString();
  const policy = btoa(JSON.stringify({ expiration, conditions: all }));
  let signing = await hmacSha256(`AWS4${key.secret}`, date);
  for (const part of ["us-east-1", "s3", "aws4_request"]) signing = await hmacSha256(signing, part);
  return {
    policy,
    "x-amz-algorithm": "AWS4-HMAC-SHA256",
    "x-amz-credential": credential,
    "x-amz-date": amzDate,
    "x-amz-signature": hexOf(await hmacSha256(signing, policy)),
  };
}
