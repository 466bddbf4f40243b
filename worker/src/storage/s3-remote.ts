// Objects on a remote S3 endpoint (a replication target, services/replication.ts), signed with
// SigV4 by aws4fetch as storage/s3-node.ts signs a node's requests: the payload UNSIGNED-PAYLOAD,
// so a PUT streams its body with its length declared and is never held whole (an object up to
// 1 MiB is read first and sent as one buffer). Path-style URLs.
import { AwsClient } from "aws4fetch";

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
    if (size <= WHOLE_BYTES) {
      const bytes = await readExactly(body, size);
      const signed = await this.sign(bucket, key, "PUT", headers);
      return outcome(await fetch(signed.url, { method: "PUT", headers: signed.headers, body: bytes, signal }), [200]);
    }
    const fixed = new FixedLengthStream(size);
    const stop = new AbortController();
    // Ends with the PUT: a refused or failed one stops the read of the source (its streams close).
    const piping = body.pipeTo(fixed.writable, { signal: stop.signal }).catch(() => {});
    try {
      const signed = await this.sign(bucket, key, "PUT", headers);
      const res = await fetch(signed.url, { method: "PUT", headers: signed.headers, body: fixed.readable, signal });
      return await outcome(res, [200]);
    } finally {
      stop.abort();
      await piping;
    }
  }

  /** DELETEs `bucket`/`key` (a delete marker where the bucket is versioned); null when done. */
  async delete(bucket: string, key: string, signal: AbortSignal): Promise<string | null> {
    const signed = await this.sign(bucket, key, "DELETE", {});
    return outcome(await fetch(signed.url, { method: "DELETE", headers: signed.headers, signal }), [200, 204, 404]);
  }

  private sign(bucket: string, key: string, method: string, headers: Record<string, string>): Promise<Request> {
    const url = `${this.base}/${encodeURIComponent(bucket)}/${key.split("/").map(encodeURIComponent).join("/")}`;
    return this.client.sign(url, { method, headers: { ...headers, "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } });
  }
}

/** Objects up to this size are read first and sent as one buffer; larger ones stream. */
const WHOLE_BYTES = 1024 * 1024;

/** Exactly `size` bytes of `body` (at most WHOLE_BYTES), in one buffer. */
async function readExactly(body: ReadableStream<Uint8Array>, size: number): Promise<Uint8Array> {
  const bytes = new Uint8Array(size);
  const reader = body.getReader();
  let at = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (at + value.length > size) throw new Error(`the object has more than its ${size} bytes`);
    bytes.set(value, at);
    at += value.length;
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
  const reader = res.body?.getReader();
  let text = "";
  while (reader && text.length < 4096) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  await reader?.cancel();
  const start = text.indexOf("<Code>");
  const end = text.indexOf("</Code>", start);
  const code = start >= 0 && end > start ? ` ${text.slice(start + 6, Math.min(end, start + 106))}` : "";
  return `HTTP ${res.status}${code}`;
}
