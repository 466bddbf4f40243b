// The STS endpoint (docs/access.md "Temporary credentials"): `POST /` with a form body
// `Action=GetSessionToken&Version=2011-06-15[&DurationSeconds=N]` (or `Action=AssumeRole`, as MinIO
// takes it, with the same meaning), signed with SigV4 by an access key (scope service "sts" or
// "s3"), answers temporary credentials for that key in STS's XML. Errors are STS's <ErrorResponse>,
// which the AWS SDKs read codes from.
import { sha256Hex } from "../../auth/crypto";
import { xmlEscape } from "../../errors";
import { S3Error } from "../../s3-error";
import { issueSession, MAX_SESSION_SECONDS, MIN_SESSION_SECONDS } from "../../services/sessions";
import type { RequestContext } from "../http/context";
import { readBodyUpTo } from "../http/request-body";
import { element } from "../format/xml";

const STS_XMLNS = "https://sts.amazonaws.com/doc/2011-06-15/";
const STS_VERSION = "2011-06-15";
/** The largest form body read (STS's own requests are a few hundred bytes). */
const MAX_FORM_BYTES = 16 * 1024;
/** The services a request to this endpoint may be signed for: STS's own, or S3's (a client signing everything for S3). */
export const STS_SIGNING_SERVICES = ["sts", "s3"] as const;

const tooLarge = () => new S3Error("ValidationError", `The request body may be at most ${MAX_FORM_BYTES} bytes.`);

/**
 * The STS request with its form body read (bounded) and its SHA-256, which SigV4 signs: STS
 * clients send no x-amz-content-sha256, the server hashes the body (AWS's rule for services but S3).
 */
export async function readStsRequest(request: Request): Promise<{ request: Request; payloadHash: string }> {
  const body = request.body ? await readBodyUpTo(request.body, MAX_FORM_BYTES, tooLarge) : new Uint8Array(0);
  const read = new Request(request.url, { method: request.method, headers: request.headers, body: body.length > 0 ? body : null });
  return { request: read, payloadHash: await sha256Hex(body) };
}

/** The request's session token, if any: the header, or a presigned URL's query (SigV4's name, or SigV2's lower-case one). */
export function sessionTokenOf(request: Request, url: URL): string | null {
  return request.headers.get("x-amz-security-token") ?? url.searchParams.get("X-Amz-Security-Token") ?? url.searchParams.get("x-amz-security-token");
}

/** GetSessionToken / AssumeRole: temporary credentials for the key that signed the request. */
export async function getSessionToken(ctx: RequestContext): Promise<Response> {
  const form = await formOf(ctx);
  const action = form.get("Action");
  if (action === null) throw new S3Error("InvalidAction", "The request has no Action.");
  const version = form.get("Version");
  if ((action !== "GetSessionToken" && action !== "AssumeRole") || (version !== null && version !== STS_VERSION))
    throw new S3Error("InvalidAction", `Could not find operation ${action} for version ${version ?? "(none)"}.`);
  if (ctx.principal.kind === "anonymous") throw new S3Error("AccessDenied", "Access Denied");
  // What would narrow a session's rights is not enforced here: refused rather than ignored.
  for (const name of form.keys()) {
    if (name === "Policy" || name.startsWith("PolicyArns.") || name === "SerialNumber" || name === "TokenCode")
      throw new S3Error("ValidationError", `${name} is not supported: temporary credentials have exactly the rights of the key that asks for them.`);
  }
  const seconds = durationOf(form.get("DurationSeconds"));
  const creds = await issueSession(ctx.env, ctx.config.masterKey, rootOf(ctx), ctx.principal.keyId, seconds);
  const credentials =
    "<Credentials>" +
    element("AccessKeyId", creds.accessKeyId) +
    element("SecretAccessKey", creds.secretAccessKey) +
    element("SessionToken", creds.sessionToken) +
    element("Expiration", new Date(creds.expires).toISOString()) +
    "</Credentials>";
  const role =
    action === "AssumeRole"
      ? `<AssumedRoleUser>${element("Arn", `arn:aws:sts:::assumed-role/${ctx.principal.keyId}/${form.get("RoleSessionName") ?? "shardgate"}`)}${element("AssumedRoleId", `${ctx.principal.keyId}:${creds.accessKeyId}`)}</AssumedRoleUser>`
      : "";
  const body = `<${action}Response xmlns="${STS_XMLNS}"><${action}Result>${credentials}${role}</${action}Result><ResponseMetadata>${element("RequestId", ctx.requestId)}</ResponseMetadata></${action}Response>`;
  return new Response(body, { status: 200, headers: { "content-type": "text/xml", "cache-control": "no-store" } });
}

/** An error as STS answers it (`<ErrorResponse><Error><Type><Code><Message>`), which the AWS SDKs' query protocol reads. */
export function stsErrorResponse(error: S3Error, requestId: string): Response {
  const type = error.status >= 500 ? "Receiver" : "Sender";
  const body =
    `<ErrorResponse xmlns="${STS_XMLNS}"><Error><Type>${type}</Type><Code>${xmlEscape(error.code)}</Code>` +
    `<Message>${xmlEscape(error.message)}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`;
  return new Response(body, { status: error.status, headers: { ...error.headers, "content-type": "text/xml" } });
}

async function formOf(ctx: RequestContext): Promise<URLSearchParams> {
  const type = (ctx.request.headers.get("content-type") ?? "").toLowerCase();
  if (!type.startsWith("application/x-www-form-urlencoded"))
    throw new S3Error("InvalidAction", "STS requests are forms: Content-Type application/x-www-form-urlencoded.");
  const body = ctx.auth.body ? await readBodyUpTo(ctx.auth.body, MAX_FORM_BYTES, tooLarge) : new Uint8Array(0);
  return new URLSearchParams(new TextDecoder().decode(body));
}

/** DurationSeconds: 900 … 3600, default 3600. */
function durationOf(value: string | null): number {
  if (value === null) return MAX_SESSION_SECONDS;
  const n = /^\d{1,9}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n))
    throw new S3Error("ValidationError", `Value '${value}' at 'durationSeconds' failed to satisfy constraint: Member must be a number.`);
  const constraint = `1 validation error detected: Value '${n}' at 'durationSeconds' failed to satisfy constraint: Member must have value`;
  if (n < MIN_SESSION_SECONDS) throw new S3Error("ValidationError", `${constraint} greater than or equal to ${MIN_SESSION_SECONDS}`);
  if (n > MAX_SESSION_SECONDS) throw new S3Error("ValidationError", `${constraint} less than or equal to ${MAX_SESSION_SECONDS}`);
  return n;
}

function rootOf(ctx: RequestContext): { accessKeyId: string; secretAccessKey: string } {
  const root = ctx.config.credentials;
  if (!root) throw new S3Error("AccessDenied", "The gateway has no credentials configured.");
  return root;
}
