// A small strict parser for the XML documents S3 clients send (CompleteMultipartUpload, Delete,
// CORSConfiguration, Tagging, CreateBucketConfiguration). Elements, attributes (skipped), text,
// CDATA, comments and the five named and numeric entities; no DTDs (refused, so no entity
// expansion). Anything malformed is S3's MalformedXML, never a crash. Pure, no I/O.
import { readBodyUpTo } from "../http/request-body";
import { S3Error } from "../../s3-error";

export interface XmlElement {
  /** Local name (any namespace prefix removed). */
  name: string;
  children: XmlElement[];
  /** The concatenated text directly inside this element. */
  text: string;
}

/** The biggest request document accepted (S3 caps DeleteObjects bodies in the same range). */
export const MAX_XML_BYTES = 2 * 1024 * 1024;
/**
 * The most elements a document may have: the largest S3 documents (CompleteMultipartUpload of
 * 10,000 parts, DeleteObjects of 1,000 keys) have about 40,000. It bounds the memory one request's
 * tree takes (2 MiB of `<a/>` would be 500,000 objects).
 */
export const MAX_XML_ELEMENTS = 100_000;

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

/** Reads a request body (at most `max` bytes, MAX_XML_BYTES by default) and parses it. */
export async function readXml(body: ReadableStream<Uint8Array> | null, max = MAX_XML_BYTES): Promise<XmlElement> {
  return parseXmlBytes(await readXmlBody(body, max));
}

/** A request body of at most `max` bytes (MAX_XML_BYTES by default), whole (to check its digest before parsing). */
export async function readXmlBody(body: ReadableStream<Uint8Array> | null, max = MAX_XML_BYTES): Promise<Uint8Array> {
  if (!body) throw malformedXml();
  return readBodyUpTo(body, max, () => malformedXml("The XML you provided was too large."));
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

/** The one child named `name` (undefined when there is none; MalformedXML when repeated). */
export function onlyChild(el: XmlElement, name: string): XmlElement | undefined {
  const found = childrenNamed(el, name);
  if (found.length > 1) throw malformedXml();
  return found[0];
}

/** The text of the one child named `name`, or undefined when there is none. */
export function childText(el: XmlElement, name: string): string | undefined {
  return el.children.find((c) => c.name === name)?.text;
}

const NAME = /[A-Za-z_:][-A-Za-z0-9_:.]*/y;
/** Own properties only: a lookup must never reach Object.prototype (`&toString;`). */
const ENTITIES: ReadonlyMap<string, string> = new Map([
  ["lt", "<"],
  ["gt", ">"],
  ["amp", "&"],
  ["quot", '"'],
  ["apos", "'"],
]);
/** How deep elements may nest: S3's documents go 4 or 5 levels deep. Deeper is MalformedXML. */
export const MAX_XML_DEPTH = 64;

/** An element being read, with its qualified name (the end tag must repeat it). */
interface Open {
  el: XmlElement;
  qname: string;
}

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

  /**
   * The element at the cursor and everything in it. A loop over an explicit stack, not recursion:
   * the depth a document can reach is MAX_XML_DEPTH, and the JS stack plays no part in it.
   */
  element(): XmlElement {
    const stack: Open[] = [];
    let root: XmlElement | null = null;
    let elements = 0;
    // Opens the element at the cursor; false when it was empty (`<a/>`) and so is already closed.
    const open = (): boolean => {
      if (this.s[this.at] !== "<") throw malformedXml();
      this.at++;
      const qname = this.name();
      this.attributes();
      if (++elements > MAX_XML_ELEMENTS) throw malformedXml("The XML you provided has too many elements.");
      const el: XmlElement = { name: localName(qname), children: [], text: "" };
      if (stack.length > 0) stack[stack.length - 1]!.el.children.push(el);
      else root = el;
      if (this.s.startsWith("/>", this.at)) {
        this.at += 2;
        return false;
      }
      this.expect(">");
      if (stack.length >= MAX_XML_DEPTH) throw malformedXml("The XML you provided nests elements too deeply.");
      stack.push({ el, qname });
      return true;
    };
    if (!open()) return root!;
    for (;;) {
      const top = stack[stack.length - 1]!;
      const lt = this.s.indexOf("<", this.at);
      if (lt < 0) throw malformedXml();
      top.el.text += decodeText(this.s.slice(this.at, lt));
      this.at = lt;
      if (this.s.startsWith("</", this.at)) {
        this.at += 2;
        if (this.name() !== top.qname) throw malformedXml();
        this.skipSpace();
        this.expect(">");
        stack.pop();
        if (stack.length === 0) return root!;
      } else if (this.s.startsWith("<![CDATA[", this.at)) {
        const end = this.s.indexOf("]]>", this.at + 9);
        if (end < 0) throw malformedXml();
        top.el.text += this.s.slice(this.at + 9, end);
        this.at = end + 3;
      } else if (this.s.startsWith("<!--", this.at)) {
        this.skipPast("-->");
      } else if (this.s.startsWith("<?", this.at)) {
        this.skipPast("?>");
      } else {
        open();
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
    while (this.at < this.s.length && " \t\r\n".includes(this.s[this.at]!)) this.at++;
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

/** Longest reference between `&` and `;` that can be valid (`#x10FFFF`, `#1114111`). */
const MAX_REF_CHARS = 8;

/** Text with its references decoded: the five named entities and `&#N;` / `&#xH;` of a character XML allows. */
function decodeText(raw: string): string {
  let amp = raw.indexOf("&");
  if (amp < 0) return raw;
  let out = "";
  let from = 0;
  while (amp >= 0) {
    const semi = raw.indexOf(";", amp + 1);
    if (semi < 0 || semi - amp - 1 > MAX_REF_CHARS) throw malformedXml();
    out += raw.slice(from, amp) + decodeRef(raw.slice(amp + 1, semi));
    from = semi + 1;
    amp = raw.indexOf("&", from);
  }
  return out + raw.slice(from);
}

const DECIMAL_REF = /^#[0-9]{1,7}$/;
const HEX_REF = /^#x[0-9A-Fa-f]{1,6}$/;

function decodeRef(ref: string): string {
  const named = ENTITIES.get(ref);
  if (named !== undefined) return named;
  // Digits only, whole: parseInt alone would take "#x1g" as 1.
  const code = DECIMAL_REF.test(ref) ? Number(ref.slice(1)) : HEX_REF.test(ref) ? parseInt(ref.slice(2), 16) : -1;
  if (!isXmlChar(code)) throw malformedXml();
  return String.fromCodePoint(code);
}

/** XML 1.0's Char production: tab, LF, CR, and the Unicode scalar values from U+0020 but U+FFFE and U+FFFF. */
function isXmlChar(code: number): boolean {
  if (code === 0x9 || code === 0xa || code === 0xd) return true;
  return (code >= 0x20 && code < 0xd800) || (code >= 0xe000 && code <= 0xfffd) || (code >= 0x10000 && code <= 0x10ffff);
}
