// A node that is a bucket on any S3-compatible endpoint (AWS S3, R2's S3 API, MinIO, Garage,
// versitygw …), spoken to with SigV4 by aws4fetch: one streaming PUT per shard file (its length
// known up front), ranged GETs, HEAD, DELETE. Shard files are at most a part's size divided by k,
// so a single PUT (S3 allows 5 GiB) carries any part a single PutObject or UploadPart can.
import { AwsClient } from "aws4fetch";
import { expectDeleted, expectOk, type NodeListing, nodeText, rangedBody, type ShardBody, type StorageNode } from "../shared/nodes";
import type { S3RemoteSpec } from "./s3-remote";

/** The endpoint is a base URL, e.g. http://127.0.0.1:7070 or https://<account>.r2.cloudflarestorage.com. */
export interface S3NodeSpec extends S3RemoteSpec {
  bucket: string;
  /** Whether clients can reach the endpoint themselves (with CORS for browsers): the direct path then sends shard files straight to it. */
  clientUrls: boolean;
}

export class S3Node implements StorageNode {
  readonly kind = "s3";
  private readonly client: AwsClient;
  private readonly base: string;
  readonly presign?: StorageNode["presign"];

  constructor(
    readonly id: string,
    spec: S3NodeSpec,
    /** How long to wait for a response's headers before the node counts as failed. */
    private readonly timeoutMs: number,
  ) {
    this.client = new AwsClient({ accessKeyId: spec.accessKeyId, secretAccessKey: spec.secretAccessKey, service: "s3", region: spec.region, retries: 0 });
    this.base = `${spec.endpoint.replace(/\/+$/, "")}/${encodeURIComponent(spec.bucket)}/`;
    // A presigned URL (query-string SigV4, unsigned payload): S3 takes them for at most 7 days.
    if (spec.clientUrls) {
      this.presign = async (key, method, expiresSeconds) => {
        const expires = Math.max(1, Math.min(7 * 24 * 3600, Math.floor(expiresSeconds)));
        return (await this.client.sign(`${this.fileUrl(key)}?X-Amz-Expires=${expires}`, { method, aws: { signQuery: true } })).url;
      };
    }
  }

  async put(key: string, body: ShardBody): Promise<void> {
    // Bytes are the caller's again once put returns (shared/nodes.ts): kept across the signing, they are copied.
    const kept = body instanceof Uint8Array ? body.slice() : body;
    // Signed without the body (UNSIGNED-PAYLOAD), which then streams with its length declared.
    const signed = await this.sign(key, "PUT");
    const res = await fetch(signed.url, { method: "PUT", headers: signed.headers, body: kept });
    await expectOk(res, this.id, "PUT", key);
    await res.body?.cancel();
  }

  async get(key: string, start: number, end: number): Promise<ReadableStream<Uint8Array> | null> {
    const res = await this.fetchWithin(await this.sign(key, "GET", { range: `bytes=${start}-${end - 1}` }));
    return rangedBody(res, this.id, key, start, end);
  }

  async delete(keys: string[]): Promise<void> {
    await Promise.all(keys.map(async (key) => expectDeleted(await this.fetchWithin(await this.sign(key, "DELETE")), this.id, key)));
  }

  async head(key: string): Promise<number | null> {
    const res = await this.fetchWithin(await this.sign(key, "HEAD"));
    if (res.status === 404) return null;
    await expectOk(res, this.id, "HEAD", key);
    return Number(res.headers.get("content-length"));
  }

  /** ListObjectsV2, a page of up to 1000 keys. */
  async list(cursor: string | null): Promise<NodeListing> {
    const query = new URLSearchParams({ "list-type": "2", "max-keys": "1000" });
    if (cursor) query.set("continuation-token", cursor);
    const signed = await this.client.sign(`${this.base}?${query}`, { method: "GET", headers: { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } });
    const res = await this.fetchWithin(signed);
    await expectOk(res, this.id, "LIST", "/");
    const { text, whole } = await nodeText(res, MAX_LISTING_BYTES);
    if (!whole) throw new Error(`node ${this.id} answered a listing of more than ${MAX_LISTING_BYTES} bytes`);
    return parseNodeListing(text);
  }

  /** fetch, failing if the headers take longer than timeoutMs (a stalled node); the body is not timed. */
  private async fetchWithin(request: Request): Promise<Response> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error(`node ${this.id} did not answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    try {
      return await fetch(request, { signal: abort.signal });
    } finally {
      clearTimeout(timer);
    }
  }

  private sign(key: string, method: string, headers: Record<string, string> = {}): Promise<Request> {
    return this.client.sign(this.fileUrl(key), { method, headers: { ...headers, "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } });
  }

  private fileUrl(key: string): string {
    return this.base + key.split("/").map(encodeURIComponent).join("/");
  }
}

/** A ListObjectsV2 answer of a node, read in linear time whatever it holds (no lazy RegExp over it). */
export function parseNodeListing(xml: string): NodeListing {
  const files = elementsNamed(xml, "Contents").map((c) => ({
    key: xmlText(elementsNamed(c, "Key")[0] ?? ""),
    modified: Date.parse(elementsNamed(c, "LastModified")[0] ?? "") || 0,
  }));
  const next = elementsNamed(xml, "NextContinuationToken")[0];
  return { files, cursor: elementsNamed(xml, "IsTruncated")[0] === "true" && next ? xmlText(next) : null };
}

/** The most a listing page of 1,000 keys may take (keys are at most 1 KiB): a node sending more is refused. */
const MAX_LISTING_BYTES = 8 * 1024 * 1024;

/** The contents of every `<name>…</name>` in `xml`, in order, found by one forward scan (no nesting of the same name). */
function elementsNamed(xml: string, name: string): string[] {
  const open = `<${name}>`;
  const close = `</${name}>`;
  const found: string[] = [];
  for (let at = xml.indexOf(open); at >= 0; ) {
    const start = at + open.length;
    const end = xml.indexOf(close, start);
    if (end < 0) break;
    found.push(xml.slice(start, end));
    at = xml.indexOf(open, end + close.length);
  }
  return found;
}

/** The text of an XML element's content (the five predefined entities). */
function xmlText(s: string): string {
  const entities: Record<string, string> = { lt: "<", gt: ">", quot: '"', apos: "'", amp: "&" };
  return s.replace(/&(lt|gt|quot|apos|amp);/g, (_, e: string) => entities[e] ?? "");
}
