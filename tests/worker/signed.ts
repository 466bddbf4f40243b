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
