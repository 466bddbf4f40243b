// Signed requests straight into the Worker's fetch handler (no network): aws4fetch signs with
// SigV4 (service s3, the payload's SHA-256 in x-amz-content-sha256) exactly as a client would.
import { AwsClient } from "aws4fetch";
import { exports } from "cloudflare:workers";
import { CREDENTIALS } from "../shared/credentials";

export const GATEWAY = "http://gateway.test";

const client = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });

/** Signs `init` for `path` (under GATEWAY) and hands it to the Worker. */
export async function s3(path: string, init: RequestInit = {}): Promise<Response> {
  const request = await client.sign(`${GATEWAY}${path}`, init);
  return exports.default.fetch(request);
}

/** Like s3(), failing the test unless the status is `status`. */
export async function s3ok(path: string, init: RequestInit = {}, status = 200): Promise<Response> {
  const res = await s3(path, init);
  if (res.status !== status) throw new Error(`${init.method ?? "GET"} ${path}: ${res.status} ${await res.text()}`);
  return res;
}

/** An access key, and the token of temporary credentials. */
export interface Creds {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** Requests signed with `creds` (a session token goes in x-amz-security-token, signed), handed to the Worker. */
export function signedAs(creds: Creds): (path: string, init?: RequestInit) => Promise<Response> {
  const signer = new AwsClient({ ...creds, service: "s3", region: "us-east-1" });
  return async (path, init = {}) => exports.default.fetch(await signer.sign(`${GATEWAY}${path}`, init));
}

/** Temporary credentials for `creds` (STS GetSessionToken, signed as the SDKs sign it); throws unless granted. */
export async function sessionOf(creds: Creds): Promise<Required<Creds>> {
  const sts = new AwsClient({ ...creds, service: "sts", region: "us-east-1" });
  const body = "Action=GetSessionToken&Version=2011-06-15";
  const res = await exports.default.fetch(
    await sts.sign(`${GATEWAY}/`, { method: "POST", body, headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-8" } }),
  );
  const xml = await res.text();
  const field = (tag: string) => new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml)?.[1];
  const [accessKeyId, secretAccessKey, sessionToken] = ["AccessKeyId", "SecretAccessKey", "SessionToken"].map(field);
  if (res.status !== 200 || !accessKeyId || !secretAccessKey || !sessionToken) throw new Error(`GetSessionToken: ${res.status} ${xml}`);
  return { accessKeyId, secretAccessKey, sessionToken };
}
