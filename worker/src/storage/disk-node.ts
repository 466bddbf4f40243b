// A node that is a directory on the gateway's own machine, served by workerd's `disk` service
// (self-hosted on plain workerd: scripts/serve.mjs binds one writable disk service per node). The
// service answers GET and HEAD (a single Range gives 206), PUT (a temporary file renamed into
// place when complete, so a crashed upload never leaves a partial shard file) and DELETE.
import { expectDeleted, expectOk, type NodeListing, rangedBody, type ShardBody, type StorageNode } from "../shared/nodes";

/** Any host: a service binding routes by binding, the URL's path names the file. */
const ORIGIN = "http://disk/";
/** HEADs in flight while listing a directory (StorageNode.list). */
const LIST_HEADS_AT_ONCE = 32;

export class DiskNode implements StorageNode {
  readonly kind = "disk";

  constructor(
    readonly id: string,
    private readonly disk: Fetcher,
  ) {}

  async put(key: string, body: ShardBody): Promise<void> {
    // Called before any await: the runtime copies a buffer body as the request is made (shared/nodes.ts).
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

  /**
   * One `DAY/UU` directory per page (the cursor names the last one listed), each file's age from a
   * HEAD. A file whose HEAD fails or shows no date counts as written now, so a sweep leaves it alone.
   */
  async list(cursor: string | null): Promise<NodeListing> {
    const dir = await this.nextDirectory(cursor);
    if (dir === null) return { files: [], cursor: null };
    const day = dir.slice(0, dir.indexOf("/"));
    const named = (await this.entries(dir)).flatMap((e) => {
      const m = e.type === "file" ? /^([0-9a-f-]{36})\.(\d+)$/.exec(e.name) : null;
      return m ? [{ key: `${day}/${m[1]}/${m[2]}`, path: `${dir}/${e.name}` }] : [];
    });
    const files: NodeListing["files"] = [];
    for (let i = 0; i < named.length; i += LIST_HEADS_AT_ONCE) {
      const batch = named.slice(i, i + LIST_HEADS_AT_ONCE);
      files.push(...(await Promise.all(batch.map(async (f) => ({ key: f.key, modified: await this.modified(f.path) })))));
    }
    return { files, cursor: dir };
  }

  /** The `DAY/UU` directory after `cursor` in name order (the first for null), or null after the last. */
  private async nextDirectory(cursor: string | null): Promise<string | null> {
    const [cursorDay, cursorUu] = cursor?.split("/") ?? ["", ""];
    for (const day of (await this.directory("")).sort()) {
      if (day < (cursorDay as string)) continue;
      const uu = (await this.directory(day)).sort().find((u) => day > (cursorDay as string) || u > (cursorUu as string));
      if (uu !== undefined) return `${day}/${uu}`;
    }
    return null;
  }

  private async modified(path: string): Promise<number> {
    const res = await this.disk.fetch(ORIGIN + path, { method: "HEAD" });
    await res.body?.cancel();
    const at = res.ok ? Date.parse(res.headers.get("last-modified") ?? "") : Number.NaN;
    return Number.isNaN(at) ? Date.now() : at;
  }

  /** The subdirectories of `path` (the node's root for ""). */
  private async directory(path: string): Promise<string[]> {
    return (await this.entries(path)).filter((e) => e.type === "directory").map((e) => e.name);
  }

  /** A directory listing of the disk service: [{ name, type }], empty when it does not exist. */
  private async entries(path: string): Promise<{ name: string; type: string }[]> {
    const res = await this.disk.fetch(ORIGIN + path);
    if (res.status === 404) {
      await res.body?.cancel();
      return [];
    }
    await expectOk(res, this.id, "LIST", path || "/");
    return (await res.json()) as { name: string; type: string }[];
  }

  private url(key: string): string {
    return ORIGIN + filePath(key).split("/").map(encodeURIComponent).join("/");
  }
}

/**
 * Where a shard file lives in the node's directory. Keys are `DAY/UUID/SHARD` (shared/nodes.ts
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
