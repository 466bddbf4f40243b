// Reading the gateway's S3 XML answers and escaping what goes into XML requests.
import { S3Error } from "./errors";

export function childText(el: Element, name: string): string {
  for (const c of Array.from(el.children)) if (c.localName === name) return c.textContent ?? "";
  return "";
}

export function children(el: Element, name: string): Element[] {
  return Array.from(el.children).filter((c) => c.localName === name);
}

export function parseXml(text: string): Element {
  const doc = new DOMParser().parseFromString(text, "application/xml");
  if (doc.querySelector("parsererror")) throw new S3Error(502, "MalformedResponse", "The gateway sent a response the console cannot read");
  return doc.documentElement;
}

export function dateOf(s: string): Date | null {
  if (!s) return null;
  const d = new Date(s);
  return Number.isNaN(d.getTime()) ? null : d;
}

export function xmlEscape(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
