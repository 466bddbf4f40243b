// Objects on a remote S3 endpoint (a replication target, services/replication.ts), signed with
// SigV4 by aws4fetch as storage/s3-node.ts signs a node's requests: the payload UNSIGNED-PAYLOAD,
// so a PUT (or an UploadPart) streams its body with its length declared and is never held whole (a
// body up to 1 MiB is read first and sent as one buffer). Path-style URLs. Besides PUT and DELETE,
// a multipart upload: create, parts (each with its Content-MD5 when known), complete (an answer of
// 200 that carries an <Error>, as S3 may send, is a failure) and abort.
import { AwsClient } from "aws4fetch";
import { xmlEscape } from "../errors";
import { nodeText } from "../shared/nodes";

export interface S3RemoteSpec {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

export class S3Remote {
  private readonly client: AwsClient;
  private readonly base: string;

  constructor(spec: S3RemoteSpec) {
    this.client = new AwsClient({ accessKeyId: spec.accessKeyId, secretAccessKey: spec.secretAccessKey, service: "s3", region: spec.region, retries: 0 });
    this.base = spec.endpoint.replace(/\/+$/, "");
  }

  /**
   * PUTs `size` bytes of `body` as `bucket`/`key` with `headers` (content headers, x-amz-meta-*,
   * x-amz-tagging); null when stored, else why not (the status and S3's error code).
   */
  async put(
    bucket: string,
    key: string,
    body: ReadableStream<Uint8Array>,
    size: number,
    headers: Record<string, string>,
    signal: AbortSignal,
  ): Promise<string | null> {
    return outcome(await this.send(bucket, key, "", body, size, headers, signal), [200]);
  }

  /** CreateMultipartUpload of `bucket`/`key` with `headers` (as put's): its upload id, or why not. */
  async createUpload(bucket: string, key: string, headers: Record<string, string>, signal: AbortSignal): Promise<{ uploadId: string } | { error: string }> {
    const res = await this.request(bucket, key, "POST", headers, "uploads", { signal });
    if (res.status !== 200) return { error: await failure(res) };
    const xml = (await nodeText(res, ANSWER_BYTES)).text;
    const uploadId = elementText(xml, "UploadId");
    if (hasError(xml) || !uploadId) return { error: `HTTP 200 without an upload id${errorCode(xml)}` };
    // Kept in the bucket's index until the upload ends: a sane id only (S3's are ~100 characters).
    if (uploadId.length > MAX_UPLOAD_ID || !/^[\x21-\x7e]+$/.test(uploadId)) return { error: "HTTP 200 with an upload id this gateway does not keep" };
    return { uploadId };
  }

  /**
   * UploadPart: `size` bytes of `body` as part `partNumber` (with `md5`, hex, as its Content-MD5
   * when given: the remote checks the bytes); the part's ETag as the remote answers it, or why not.
   */
  async uploadPart(
    bucket: string,
    key: string,
    uploadId: string,
    partNumber: number,
    body: ReadableStream<Uint8Array>,
    size: number,
    md5: string | null,
    signal: AbortSignal,
  ): Promise<{ etag: string } | { error: string }> {
    const headers: Record<string, string> = md5 ? { "content-md5": hexToBase64(md5) } : {};
    const query = `partNumber=${partNumber}&uploadId=${encodeURIComponent(uploadId)}`;
    const res = await this.send(bucket, key, query, body, size, headers, signal);
    const etag = res.headers.get("etag");
    const error = await outcome(res, [200]);
    if (error !== null) return { error };
    return etag ? { etag } : { error: "HTTP 200 without an ETag" };
  }

  /**
   * CompleteMultipartUpload with the parts' ETags (as uploadPart answered them, in order from part
   * 1): the object's ETag without quotes, or why not; a 200 whose body is an <Error> is one.
   */
  async completeUpload(
    bucket: string,
    key: string,
    uploadId: string,
    etags: readonly string[],
    headers: Record<string, string>,
    signal: AbortSignal,
  ): Promise<{ etag: string } | { error: string }> {
    const parts = etags.map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${xmlEscape(etag)}</ETag></Part>`).join("");
    const body = new TextEncoder().encode(`<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${parts}</CompleteMultipartUpload>`);
    const query = `uploadId=${encodeURIComponent(uploadId)}`;
    const res = await this.request(bucket, key, "POST", { ...headers, "content-type": "application/xml" }, query, { signal, body });
    if (res.status !== 200) return { error: await failure(res) };
    // S3 answers 200 at once and keeps the connection alive with whitespace while it assembles the
    // object; a failure then comes as an <Error> document in that 200's body.
    const xml = (await nodeText(res, ANSWER_BYTES)).text;
    if (hasError(xml)) return { error: `HTTP 200 with an error${errorCode(xml)}` };
    const etag = xml.includes("<CompleteMultipartUploadResult") ? elementText(xml, "ETag") : null;
    return etag ? { etag: etag.replace(/^"|"$/g, "") } : { error: "HTTP 200 without a CompleteMultipartUploadResult and its ETag" };
  }

  /** AbortMultipartUpload; null when the upload is gone (aborted now, or already: 404 NoSuchUpload). */
  async abortUpload(bucket: string, key: string, uploadId: string, signal: AbortSignal): Promise<string | null> {
    return outcome(await this.request(bucket, key, "DELETE", {}, `uploadId=${encodeURIComponent(uploadId)}`, { signal }), [200, 204, 404]);
  }

  /** DELETEs `bucket`/`key` (a delete marker where the bucket is versioned) with `headers`; null when done. */
  async delete(bucket: string, key: string, headers: Record<string, string>, signal: AbortSignal): Promise<string | null> {
    return outcome(await this.request(bucket, key, "DELETE", headers, "", { signal }), [200, 204, 404]);
  }

  /** PUTs `size` bytes of `body` to `bucket`/`key` (`query`: none, or an UploadPart's); the answer, its body unread. */
  private async send(
    bucket: string,
    key: string,
    query: string,
    body: ReadableStream<Uint8Array>,
    size: number,
    headers: Record<string, string>,
    signal: AbortSignal,
  ): Promise<Response> {
    if (size <= WHOLE_BYTES) return this.request(bucket, key, "PUT", headers, query, { signal, body: await readExactly(body, size) });
    const fixed = new FixedLengthStream(size);
    const stop = new AbortController();
    // Ends with the PUT: a refused or failed one stops the read of the source (its streams close).
    const piping = body.pipeTo(fixed.writable, { signal: stop.signal }).catch(() => {});
    try {
      return await this.request(bucket, key, "PUT", headers, query, { signal, body: fixed.readable });
    } finally {
      stop.abort();
      await piping;
    }
  }

  /** Signs (the payload UNSIGNED-PAYLOAD) and sends a request for `bucket`/`key` (`query`: a sub-resource's, or none). */
  private async request(bucket: string, key: string, method: string, headers: Record<string, string>, query: string, init: RequestInit): Promise<Response> {
    const path = `${this.base}/${encodeURIComponent(bucket)}/${key.split("/").map(encodeURIComponent).join("/")}`;
    const signed = await this.client.sign(query === "" ? path : `${path}?${query}`, {
      method,
      headers: { ...headers, "x-amz-content-sha256": "UNSIGNED-PAYLOAD" },
    });
    return fetch(signed.url, { ...init, method, headers: signed.headers });
  }
}

/** Objects up to this size are read first and sent as one buffer; larger ones stream. */
const WHOLE_BYTES = 1024 * 1024;

/** Exactly `size` bytes of `body` (at most WHOLE_BYTES), in one buffer. */
async function readExactly(body: ReadableStream<Uint8Array>, size: number): Promise<Uint8Array> {
  const bytes = new Uint8Array(size);
  const reader = body.getReader();
  let at = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (at + value.length > size) throw new Error(`the object has more than its ${size} bytes`);
      bytes.set(value, at);
      at += value.length;
    }
  } catch (e) {
    await reader.cancel().catch(() => {});
    throw e;
  }
  if (at !== size) throw new Error(`the object ended after ${at} of its ${size} bytes`);
  return bytes;
}

/** Null when the answer's status is one of `ok`, else the status and the error code of its body (read at most 4 KiB). */
async function outcome(res: Response, ok: readonly number[]): Promise<string | null> {
  if (ok.includes(res.status)) {
    await res.body?.cancel();
    return null;
  }
  return failure(res);
}

/** The status and the error code of an answer's body (read at most 4 KiB). */
async function failure(res: Response): Promise<string> {
  return `HTTP ${res.status}${errorCode((await nodeText(res, 4096)).text)}`;
}

/** Whether an answer's document is (or holds) an S3 <Error>, with or without attributes. */
function hasError(xml: string): boolean {
  return /<Error[\s>]/.test(xml);
}

/** The longest upload id taken from a remote. */
const MAX_UPLOAD_ID = 1024;

/** The most of a create's or complete's answer that is read (their documents are small). */
const ANSWER_BYTES = 64 * 1024;

/** " CODE" of an S3 error document's <Code> (at most 100 characters), or "". */
function errorCode(xml: string): string {
  const start = xml.indexOf("<Code>");
  const end = xml.indexOf("</Code>", start);
  return start >= 0 && end > start ? ` ${xml.slice(start + 6, Math.min(end, start + 106))}` : "";
}

/** The text of the first `<name>` element of `xml` (entities decoded); null when it has none. */
function elementText(xml: string, name: string): string | null {
  const start = xml.indexOf(`<${name}>`);
  if (start < 0) return null;
  const end = xml.indexOf(`</${name}>`, start);
  if (end < 0) return null;
  const entities: Record<string, string> = { lt: "<", gt: ">", quot: '"', apos: "'", amp: "&" };
  return xml
    .slice(start + name.length + 2, end)
    .trim()
    .replace(/&(lt|gt|quot|apos|amp|#34|#x22);/g, (_, e: string) => entities[e] ?? '"');
}

/** An MD5 in hex as Content-MD5 wants it (base64 of its 16 bytes). */
function hexToBase64(hex: string): string {
  let binary = "";
  for (let i = 0; i < hex.length; i += 2) binary += String.fromCharCode(parseInt(hex.slice(i, i + 2), 16));
  return btoa(binary);
}
