// XML responses the way S3 writes them.
import { xmlEscape } from "../errors";

export const S3_XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/";

export function xmlResponse(body: string, status = 200, headers: HeadersInit = {}): Response {
  const h = new Headers(headers);
  h.set("Content-Type", "application/xml");
  return new Response(`<?xml version="1.0" encoding="UTF-8"?>\n${body}`, { status, headers: h });
}

/** `<name>value</name>` with the value escaped. */
export function el(name: string, value: string | number | boolean): string {
  return `<${name}>${xmlEscape(String(value))}</${name}>`;
}

/** S3's timestamps: ISO 8601 with milliseconds, UTC. */
export function isoDate(ms: number): string {
  return new Date(ms).toISOString();
}
