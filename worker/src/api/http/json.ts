// The gateway's own endpoints (admin API) speak JSON: their answers, and the bodies they read.
import { invalidArgument } from "../../s3-error";
import type { RequestContext } from "./context";
import { readBodyUpTo } from "./request-body";

/** The largest JSON body an admin endpoint reads. */
export const MAX_JSON_BODY_BYTES = 16 * 1024;

/** The admin endpoints' answers: JSON, never cached (they show live state). */
export function json(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value, null, 2), { status, headers: { "content-type": "application/json", "cache-control": "no-store" } });
}

/** Whether a Content-Type header names JSON (`application/json`, parameters such as charset aside). */
function isJsonType(contentType: string | null): boolean {
  return (contentType ?? "").split(";")[0]?.trim().toLowerCase() === "application/json";
}

/**
 * The request's body as a JSON object (no body, or an empty one: {}), read no further than
 * MAX_JSON_BODY_BYTES; anything else is 400 InvalidArgument. A body must come as
 * `Content-Type: application/json`, which a browser sends from a page of another origin only after
 * a preflight: a form's text/plain body, or one without a type, that parses as JSON is refused.
 */
export async function jsonObjectBody(ctx: RequestContext): Promise<Record<string, unknown>> {
  const bytes = ctx.auth.body
    ? await readBodyUpTo(ctx.auth.body, MAX_JSON_BODY_BYTES, () => invalidArgument(`The body is larger than ${MAX_JSON_BODY_BYTES} bytes.`))
    : null;
  if (bytes && bytes.length > 0 && !isJsonType(ctx.request.headers.get("content-type")))
    throw invalidArgument("The body must be sent as Content-Type: application/json.");
  const text = bytes ? new TextDecoder().decode(bytes) : "";
  let value: unknown;
  try {
    value = text === "" ? {} : JSON.parse(text);
  } catch {
    throw invalidArgument("The body is not JSON.");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalidArgument("The body must be a JSON object.");
  return value as Record<string, unknown>;
}
