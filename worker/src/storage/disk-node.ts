// A node that is a directory on the gateway's own machine, served by workerd's `disk` service
// (self-hosted on plain workerd: scripts/serve.mjs binds one writable disk service per node). The
// service answers GET and HEAD (a single Range gives 206), PUT (a temporary file renamed into
// place when complete, so a crashed upload never leaves a partial shard file) and DELETE.
import { expectDeleted, expectOk, rangedBody, type StorageNode } from "./nodes";

/** Any host: a service binding routes by binding, the URL's path names the file. */
const ORIGIN = "http://disk/";

export class DiskNode implements StorageNode {
  readonly kind = "disk";

  constructor(
    readonly id: string,
    private readonly disk: Fetcher,
  ) {}

  async put(key: string, body: ReadableStream<Uint8Array>): Promise<void> {
    const res = await this.disk.fetch(this.url(key), { method: "PUT", body });
    await expectOk(res, this.id, "PUT", key);
    await res.body?.cancel();
  }

  async get(key: string, start: number, end: number): Promise<ReadableStream<Uint8Array> | null> {
    const res = await this.disk.fetch(this.url(key), { headers: { range: `bytes=${start}-${end - 1}` } });
    return rangedBody(res, this.id, key, start, end);
  }

  async delete(keys: string[]): Promise<void> {
    await Promise.all(keys.map(async (key) => expectDeleted(await this.disk.fetch(this.url(key), { method: "DELETE" }), this.id, key)));
  }

  async head(key: string): Promise<number | null> {
    const res = await this.disk.fetch(this.url(key), { method: "HEAD" });
    if (res.status === 404) return null;
    await expectOk(res, this.id, "HEAD", key);
    return Number(res.headers.get("content-length"));
  }

  private url(key: string): string {
    return ORIGIN + filePath(key).split("/").map(encodeURIComponent).join("/");
  }
}

/**
 * Where a shard file lives in the node's directory. Keys are `DAY/UUID/SHARD` (nodes.ts
 * shardKey); one directory per object would cost the filesystem a directory creation per shard
 * file written (ext4 spends more CPU allocating those inodes than the gateway spends on MD5), so a
 * part's shard file is `DAY/UU/UUID.SHARD`: a day's objects spread over 256 directories by the
 * first two characters of their UUID. This is the on-disk layout of disk nodes: keep it stable.
 */
export function filePath(key: string): string {
  const parts = key.split("/");
  if (parts.length !== 3) return key;
  const [day, id, shard] = parts;
  return `${day}/${id.slice(0, 2)}/${id}.${shard}`;
}
