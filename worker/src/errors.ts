// S3-style error responses: an XML <Error> body as AWS S3 sends it.
import type { S3Error } from "./s3-error";

export function xmlEscape(s: string): string {
  return s.replace(/[<>&"']/g, (ch) => (ch === "<" ? "&lt;" : ch === ">" ? "&gt;" : ch === "&" ? "&amp;" : ch === '"' ? "&quot;" : "&apos;"));
}

/** A fresh request id (16 upper-case hex digits, like S3's x-amz-request-id). */
export function newRequestId(): string {
  return crypto.randomUUID().replace(/-/g, "").slice(0, 16).toUpperCase();
}

/**
 * `<Error><Code>…</Code><Message>…</Message><Resource>path</Resource><RequestId>…</RequestId></Error>`
 * with content-type application/xml. HEAD responses carry no body, as in S3.
 */
export function errorResponse(error: S3Error, resource: string, requestId: string, head = false): Response {
  const body =
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<Error><Code>${xmlEscape(error.code)}</Code><Message>${xmlEscape(error.message)}</Message>` +
    `<Resource>${xmlEscape(resource)}</Resource><RequestId>${requestId}</RequestId></Error>`;
  return textResponse(head ? null : body, {
    status: error.status,
    headers: { ...error.headers, "Content-Type": "application/xml", "x-amz-request-id": requestId },
  });
}

/** A response with a text body and its Content-Length declared (what the metrics count as sent). */
export function textResponse(text: string | null, init: ResponseInit): Response {
  const bytes = text === null ? null : new TextEncoder().encode(text);
  const response = new Response(bytes, init);
  if (bytes) response.headers.set("Content-Length", String(bytes.length));
  return response;
}

/** What a caught value says: an Error's message, anything else as text. */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
