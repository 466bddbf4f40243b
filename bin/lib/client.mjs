// The CLI's requests to the gateway: SigV4-signed with fetch, each bounded in time (--timeout, for
// the whole answer, body included) and in size (an answer larger than MAX_BODY_BYTES is cut off
// and refused), never following redirects. Errors come back as RequestError, one line each: the
// S3 error's code and message, or what was wrong with the answer.
import { createHash } from "node:crypto";
import { clean, RequestError, UsageError } from "./errors.mjs";
import { canonicalQuery, sign, uriEncode } from "./sigv4.mjs";

/** The largest answer read (the admin API's largest, a heal status, is well under this). */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;

export class Client {
  /** @param {{ endpoint: string, credentials: object | null, region: string, timeoutMs: number, maxBodyBytes?: number }} opts */
  constructor({ endpoint, credentials, region, timeoutMs, maxBodyBytes = MAX_BODY_BYTES }) {
    let url;
    try {
      url = new URL(endpoint);
    } catch {
      throw new UsageError(`--endpoint ${clean(endpoint, 100)} is not a URL (e.g. http://127.0.0.1:8787).`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:")
      throw new UsageError(`--endpoint must be an http:// or https:// URL, not ${clean(url.protocol, 20)}`);
    if (url.search || url.hash || url.username || url.password)
      throw new UsageError("--endpoint takes no query, fragment or user name: e.g. http://127.0.0.1:8787.");
    this.origin = url.origin;
    this.basePath = url.pathname.replace(/\/+$/, "");
    this.endpoint = `${this.origin}${this.basePath}`;
    this.credentials = credentials;
    this.region = region;
    this.timeoutMs = timeoutMs;
    this.maxBodyBytes = maxBodyBytes;
  }

  /**
   * One request: `segments` are the path's parts (each encoded here), `query` name → value (null
   * for a bare `?policy`). Resolves with { status, headers, body: Buffer } for a 2xx answer (or a status in `accept`); throws
   * RequestError for anything else.
   */
  async request(method, segments, { query = {}, body, headers = {}, anonymous = false, accept = [] } = {}) {
    const url = this.url(segments, query);
    const payload = body === undefined ? undefined : Buffer.from(body);
    const allHeaders = { ...headers };
    if (payload !== undefined && method === "PUT") allHeaders["content-md5"] = createHash("md5").update(payload).digest("base64");
    const sent =
      anonymous || !this.credentials
        ? allHeaders
        : sign({ method, url, headers: allHeaders, body: payload, credentials: this.credentials, region: this.region });
    const signal = AbortSignal.timeout(this.timeoutMs);
    const what = `${method} ${url.pathname}`;
    let res;
    try {
      res = await fetch(url, { method, headers: sent, body: payload, redirect: "manual", signal });
    } catch (e) {
      throw this.networkError(e, what);
    }
    let bytes;
    try {
      bytes = await this.readBounded(res);
    } catch (e) {
      if (e instanceof RequestError) throw e;
      throw this.networkError(e, what);
    }
    if ((res.status >= 200 && res.status < 300) || accept.includes(res.status)) return { status: res.status, headers: res.headers, body: bytes };
    throw s3Error(res, bytes);
  }

  /** The URL of `segments` (each encoded here), then an object's `key` (its "/" kept), and `query`. */
  url(segments, query = {}, key = null) {
    for (const s of segments) if (s === "" || s === "." || s === "..") throw new UsageError(`"${clean(s, 40)}" is not a valid name here.`);
    // A URL resolves "." and ".." segments away: such a key cannot be named by one (S3 clients escape them otherwise).
    if (key?.split("/").some((s) => s === "." || s === ".."))
      throw new UsageError(`the key "${clean(key, 60)}" has a "." or ".." segment, which a URL cannot carry: use an S3 client for it.`);
    const path = [...segments.map(uriEncode), ...(key === null ? [] : key.split("/").map(uriEncode))].join("/");
    const search = canonicalQuery(query);
    return new URL(`${this.origin}${this.basePath}/${path}${search ? `?${search}` : ""}`);
  }

  /**
   * A request whose body (a ReadableStream of `length` bytes, sent UNSIGNED-PAYLOAD or as
   * `payloadHash` says) or answer
   * may be any size: objects. `timeoutMs` bounds the time without a byte either way, not the
   * whole transfer; `key` is an object's key after `segments`. Resolves with { status, headers,
   * body: ReadableStream, failure(error) → RequestError } for a 2xx answer; throws RequestError (the
   * S3 error) for anything else.
   */
  async stream(method, segments, { key = null, query = {}, headers = {}, body, length, payloadHash = body ? "UNSIGNED-PAYLOAD" : undefined } = {}) {
    const url = this.url(segments, query, key);
    const allHeaders = { ...headers, ...(body ? { "content-length": String(length) } : {}) };
    const sent = this.credentials ? sign({ method, url, headers: allHeaders, payloadHash, credentials: this.credentials, region: this.region }) : allHeaders;
    const what = `${method} ${url.pathname}`;
    const stop = new AbortController();
    let timer;
    const idle = () => {
      clearTimeout(timer);
      timer = setTimeout(() => stop.abort(new RequestError(`${what}: nothing sent or received for ${this.timeoutMs / 1000} s (--timeout).`)), this.timeoutMs);
      timer.unref(); // a body left unread (an error) does not keep the CLI waiting
    };
    /** What went wrong, as one line: the idle timeout, or the network's error. */
    const failure = (e) => (stop.signal.reason instanceof RequestError ? stop.signal.reason : e instanceof RequestError ? e : this.networkError(e, what));
    const ticking = (stream) =>
      stream.pipeThrough(new TransformStream({ transform: (chunk, c) => (idle(), c.enqueue(chunk)), flush: () => clearTimeout(timer) }));
    idle();
    let res;
    try {
      res = await fetch(url, { method, headers: sent, body: body && ticking(body), duplex: "half", redirect: "manual", signal: stop.signal });
    } catch (e) {
      clearTimeout(timer);
      throw failure(e);
    }
    if (res.status < 200 || res.status >= 300) {
      let bytes;
      try {
        bytes = await this.readBounded(res);
      } finally {
        clearTimeout(timer);
      }
      throw s3Error(res, bytes);
    }
    const out = res.body ? ticking(res.body) : new Blob([]).stream();
    if (!res.body) clearTimeout(timer);
    return { status: res.status, headers: res.headers, body: out, failure };
  }

  /** The answer's body, refusing one larger than maxBodyBytes (read stops there). */
  async readBounded(res) {
    const declared = Number(res.headers.get("content-length"));
    if (Number.isFinite(declared) && declared > this.maxBodyBytes) {
      await res.body?.cancel().catch(() => {});
      throw new RequestError(`the gateway's answer (HTTP ${res.status}) is ${declared} bytes, more than the ${this.maxBodyBytes} this CLI reads.`);
    }
    if (!res.body) return Buffer.alloc(0);
    const reader = res.body.getReader();
    const chunks = [];
    let total = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > this.maxBodyBytes) {
        await reader.cancel().catch(() => {});
        throw new RequestError(`the gateway's answer (HTTP ${res.status}) is larger than the ${this.maxBodyBytes} bytes this CLI reads: stopped reading.`);
      }
      chunks.push(value);
    }
    return Buffer.concat(chunks);
  }

  networkError(e, what) {
    if (e?.name === "TimeoutError" || e?.cause?.name === "TimeoutError")
      return new RequestError(`${what}: no complete answer from ${this.endpoint} within ${this.timeoutMs / 1000} s (--timeout).`);
    const cause = e?.cause;
    const code = cause?.code ?? e?.code;
    if (code === "ECONNREFUSED")
      return new RequestError(
        `cannot reach ${this.endpoint}: connection refused (is the gateway running? \`npm start\` or \`shardgate serve\` serves it; --endpoint or SHARDGATE_ENDPOINT name another).`,
      );
    if (code === "ENOTFOUND" || code === "EAI_AGAIN") return new RequestError(`cannot reach ${this.endpoint}: unknown host.`);
    return new RequestError(`${what} to ${this.endpoint} failed: ${clean(cause?.message ?? e?.message ?? String(e), 200)}${code ? ` (${code})` : ""}.`);
  }

  /** A request answered with JSON (the admin API): the parsed value. */
  async json(method, segments, opts = {}) {
    const res = await this.request(method, segments, opts);
    if (res.body.length === 0) return null;
    return parseJson(res);
  }

  /** `method /_shardgate/admin/<path…>` answered with JSON. An AccessDenied says what the admin API takes. */
  async admin(method, path, opts = {}) {
    try {
      return await this.json(method, ["_shardgate", "admin", ...path], opts);
    } catch (e) {
      if (!(e instanceof RequestError) || e.code !== "AccessDenied") throw e;
      const hint = "admin commands need the root key: docs/access.md";
      throw new RequestError(`${e.message} (${hint})`, { code: e.code, status: e.status, detail: `${e.detail} (${hint})` });
    }
  }
}

/** The body as JSON, or a RequestError saying the gateway answered something else. */
export function parseJson(res) {
  try {
    return JSON.parse(res.body.toString("utf8"));
  } catch {
    if ((res.headers.get("content-type") ?? "").startsWith("text/html"))
      throw new RequestError(
        `the gateway answered HTTP ${res.status} with a web page, not JSON: is this the web console's port? --endpoint takes the S3 endpoint (by default the port below the console's).`,
      );
    throw new RequestError(
      `the gateway answered HTTP ${res.status} with something that is not JSON (${clean(res.headers.get("content-type") ?? "no content type", 60)}).`,
    );
  }
}

/** The RequestError for a non-2xx answer: its S3 error (code: message), else its status. */
function s3Error(res, bytes) {
  const text = bytes.subarray(0, 64 * 1024).toString("utf8");
  const code = xmlText(text, "Code");
  const message = xmlText(text, "Message");
  if (code) {
    const detail = clean(message ?? "(no message)");
    return new RequestError(`${clean(code, 80)}: ${detail}`, { code: clean(code, 80), status: res.status, detail });
  }
  const status = `HTTP ${res.status}${res.statusText ? ` ${clean(res.statusText, 60)}` : ""}`;
  const codeByStatus = { 301: "PermanentRedirect", 307: "TemporaryRedirect", 403: "AccessDenied", 404: "NotFound" }[res.status];
  if (res.status >= 300 && res.status < 400)
    return new RequestError(
      `${status}: the endpoint redirects (to ${clean(res.headers.get("location") ?? "nowhere", 100)}); give the gateway's own URL as --endpoint.`,
      {
        code: codeByStatus,
        status: res.status,
      },
    );
  return new RequestError(`${codeByStatus ? `${codeByStatus}: ` : ""}${status} (the answer is not an S3 error document).`, {
    code: codeByStatus,
    status: res.status,
  });
}

const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

/** XML text with its entities decoded. */
export function decodeXml(text) {
  return text.replace(/&(#x[0-9a-fA-F]+|#\d+|amp|lt|gt|quot|apos);/g, (_, e) => {
    if (e[0] !== "#") return ENTITIES[e];
    const n = e[1] === "x" ? Number.parseInt(e.slice(2), 16) : Number(e.slice(1));
    return n <= 0x10ffff ? String.fromCodePoint(n) : "";
  });
}

/** The text of the first <name> element of a small XML document, or null. */
export function xmlText(xml, name) {
  const m = new RegExp(`<${name}(?:\\s[^>]*)?>([^<]*)</${name}>`).exec(xml);
  return m ? decodeXml(m[1]) : null;
}

/** Every <name>…</name> element's inner XML. */
export function xmlElements(xml, name) {
  // One pass with indexOf (a hostile answer of unclosed elements costs linear time, not quadratic).
  const out = [];
  const open = `<${name}`;
  const close = `</${name}>`;
  let at = 0;
  for (;;) {
    const start = xml.indexOf(open, at);
    if (start < 0) return out;
    const next = xml[start + open.length];
    if (next !== ">" && next !== " " && next !== "\t" && next !== "\n" && next !== "\r") {
      at = start + open.length; // another element whose name starts the same
      continue;
    }
    const gt = xml.indexOf(">", start);
    const end = gt < 0 ? -1 : xml.indexOf(close, gt + 1);
    if (end < 0) return out;
    out.push(xml.slice(gt + 1, end));
    at = end + close.length;
  }
}
