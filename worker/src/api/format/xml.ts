// XML the way S3 writes it: the pieces every response renderer shares.
import { textResponse, xmlEscape } from "../../errors";

const S3_XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/";
const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n';

/** A whole S3 document: the declaration, then `<root xmlns="S3's namespace">body</root>`. */
export function xmlDocument(root: string, body: string): string {
  return `${XML_DECLARATION}<${root} xmlns="${S3_XMLNS}">${body}</${root}>`;
}

/** A response carrying a whole XML document (declaration included). */
export function xmlResponse(document: string, status = 200, headers: HeadersInit = {}): Response {
  const h = new Headers(headers);
  h.set("Content-Type", "application/xml");
  return textResponse(document, { status, headers: h });
}

/** `<name>value</name>` with the value XML-escaped. */
export function element(name: string, value: string | number | boolean): string {
  return `<${name}>${xmlEscape(String(value))}</${name}>`;
}

/** ISO-8601 with milliseconds in UTC, as S3 writes dates: 2009-10-12T17:50:30.000Z. */
export function s3Date(ms: number): string {
  return new Date(ms).toISOString();
}
