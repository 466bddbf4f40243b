// S3-style error responses: an XML <Error> body as AWS S3 sends it.
import type { Context } from "hono";

export type S3ErrorStatus = 400 | 403 | 404 | 405 | 409 | 411 | 412 | 416 | 500 | 501 | 503;

export function xmlEscape(s: string): string {
  return s.replace(/[<>&"']/g, (ch) =>
    ch === "<" ? "&lt;" : ch === ">" ? "&gt;" : ch === "&" ? "&amp;" : ch === '"' ? "&quot;" : "&apos;",
  );
}

/** A fresh request id (16 upper-case hex digits, like S3's x-amz-request-id). */
export function newRequestId(): string {
  return crypto.randomUUID().replace(/-/g, "").slice(0, 16).toUpperCase();
}

/**
 * `<Error><Code>…</Code><Message>…</Message><Resource>path</Resource><RequestId>…</RequestId></Error>`
 * with content-type application/xml and the same id in `x-amz-request-id`.
 */
export function s3Error(c: Context, status: S3ErrorStatus, code: string, message: string): Response {
  const requestId = newRequestId();
  const body =
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<Error><Code>${xmlEscape(code)}</Code><Message>${xmlEscape(message)}</Message>` +
    `<Resource>${xmlEscape(c.req.path)}</Resource><RequestId>${requestId}</RequestId></Error>`;
  return c.body(body, status, {
    "Content-Type": "application/xml",
    "x-amz-request-id": requestId,
  });
}
