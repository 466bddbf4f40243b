// A small strict parser for the XML documents S3 clients send (CompleteMultipartUpload, Delete,
// CORSConfiguration, Tagging, CreateBucketConfiguration). Elements, attributes (skipped), text,
// CDATA, comments and the five named and numeric entities; no DTDs (refused, so no entity
// expansion). Anything malformed is S3's MalformedXML, never a crash. Pure, no I/O.
import { readBodyUpTo } from "./request-body";
import { S3Error } from "../s3-error";

export interface XmlElement {
  /** Local name (any namespace prefix removed). */
  name: string;
  children: XmlElement[];
  /** The concatenated text directly inside this element. */
  text: string;
}

/** The biggest request document accepted (S3 caps DeleteObjects bodies in the same range). */
export const MAX_XML_BYTES = 2 * 1024 * 1024;

export function malformedXml(detail = "The XML you provided was not well-formed or did not validate against our published schema."): S3Error {
  return new S3Error("MalformedXML", detail);
}

/** Parses a document and returns its root element. */
export function parseXml(source: string): XmlElement {
  const p = new Parser(source);
  p.skipProlog();
  const root = p.element();
  p.skipMisc();
  if (!p.atEnd()) throw malformedXml();
  return root;
}

/** Reads a request body (at most MAX_XML_BYTES) and parses it. */
export async function readXml(body: ReadableStream<Uint8Array> | null): Promise<XmlElement> {
  return parseXmlBytes(await readXmlBody(body));
}

/** A request body of at most MAX_XML_BYTES, whole (to check its digest before parsing). */
export async function readXmlBody(body: ReadableStream<Uint8Array> | null): Promise<Uint8Array> {
  if (!body) throw malformedXml();
  return readBodyUpTo(body, MAX_XML_BYTES, () => malformedXml("The XML you provided was too large."));
}

/** Parses a UTF-8 document. */
export function parseXmlBytes(bytes: Uint8Array): XmlElement {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw malformedXml();
  }
  return parseXml(text);
}

/** The children of `el` named `name`. */
export function childrenNamed(el: XmlElement, name: string): XmlElement[] {
  return el.children.filter((c) => c.name === name);
}

/** The text of the one child named `name`, or undefined when there is none. */
export function childText(el: XmlElement, name: string): string | undefined {
  return el.children.find((c) => c.name === name)?.text;
}

const NAME = /[A-Za-z_:][-A-Za-z0-9_:.]*/y;
const ENTITIES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };

class Parser {
  private at = 0;

  constructor(private readonly s: string) {}

  atEnd(): boolean {
    return this.at >= this.s.length;
  }

  skipProlog(): void {
    if (this.s.charCodeAt(0) === 0xfeff) this.at = 1;
    this.skipSpace();
    if (this.s.startsWith("<?xml", this.at)) this.skipPast("?>");
    this.skipMisc();
  }

  /** White space, comments and processing instructions between elements. */
  skipMisc(): void {
    for (;;) {
      this.skipSpace();
      if (this.s.startsWith("<!--", this.at)) this.skipPast("-->");
      else if (this.s.startsWith("<?", this.at)) this.skipPast("?>");
      else if (this.s.startsWith("<!", this.at))
        throw malformedXml(); // DOCTYPE and the like
      else return;
    }
  }

  element(): XmlElement {
    if (this.s[this.at] !== "<") throw malformedXml();
    this.at++;
    const qname = this.name();
    this.attributes();
    const el: XmlElement = { name: localName(qname), children: [], text: "" };
    if (this.s.startsWith("/>", this.at)) {
      this.at += 2;
      return el;
    }
    this.expect(">");
    for (;;) {
      const lt = this.s.indexOf("<", this.at);
      if (lt < 0) throw malformedXml();
      el.text += decodeText(this.s.slice(this.at, lt));
      this.at = lt;
      if (this.s.startsWith("</", this.at)) {
        this.at += 2;
        if (this.name() !== qname) throw malformedXml();
        this.skipSpace();
        this.expect(">");
        return el;
      }
      if (this.s.startsWith("<![CDATA[", this.at)) {
        const end = this.s.indexOf("]]>", this.at + 9);
        if (end < 0) throw malformedXml();
        el.text += this.s.slice(this.at + 9, end);
        this.at = end + 3;
      } else if (this.s.startsWith("<!--", this.at)) {
        this.skipPast("-->");
      } else if (this.s.startsWith("<?", this.at)) {
        this.skipPast("?>");
      } else {
        el.children.push(this.element());
      }
    }
  }

  private attributes(): void {
    for (;;) {
      const before = this.at;
      this.skipSpace();
      const ch = this.s[this.at];
      if (ch === ">" || ch === "/") return;
      if (this.at === before) throw malformedXml();
      this.name();
      this.skipSpace();
      this.expect("=");
      this.skipSpace();
      const quote = this.s[this.at];
      if (quote !== '"' && quote !== "'") throw malformedXml();
      const end = this.s.indexOf(quote, this.at + 1);
      if (end < 0) throw malformedXml();
      this.at = end + 1;
    }
  }

  private name(): string {
    NAME.lastIndex = this.at;
    const m = NAME.exec(this.s);
    if (!m) throw malformedXml();
    this.at += m[0].length;
    return m[0];
  }

  private expect(token: string): void {
    if (!this.s.startsWith(token, this.at)) throw malformedXml();
    this.at += token.length;
  }

  private skipSpace(): void {
    while (this.at < this.s.length && " \t\r\n".includes(this.s[this.at])) this.at++;
  }

  private skipPast(token: string): void {
    const end = this.s.indexOf(token, this.at);
    if (end < 0) throw malformedXml();
    this.at = end + token.length;
  }
}

function localName(qname: string): string {
  const colon = qname.indexOf(":");
  return colon < 0 ? qname : qname.slice(colon + 1);
}

function decodeText(raw: string): string {
  if (!raw.includes("&")) return raw;
  return raw.replace(/&([^;]{0,10});?/g, (whole, ref: string) => {
    if (!whole.endsWith(";")) throw malformedXml();
    if (ref in ENTITIES) return ENTITIES[ref];
    const code = ref.startsWith("#x") ? parseInt(ref.slice(2), 16) : ref.startsWith("#") ? parseInt(ref.slice(1), 10) : NaN;
    if (!Number.isInteger(code) || code < 1 || code > 0x10ffff || (code >= 0xd800 && code < 0xe000)) throw malformedXml();
    return String.fromCodePoint(code);
  });
}
