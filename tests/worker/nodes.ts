// The local storage nodes as tests see them: the R2 bindings NODE_0..NODE_5 of wrangler.toml.
import { env } from "cloudflare:workers";

export const NODES = ["NODE_0", "NODE_1", "NODE_2", "NODE_3", "NODE_4", "NODE_5"];

export const node = (id: string) => (env as unknown as Record<string, R2Bucket>)[id] as R2Bucket;

/** Every shard file on every node: key → node id. */
export async function shardFiles(): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const id of NODES) {
    let cursor: string | undefined;
    do {
      const page = await node(id).list({ cursor });
      for (const o of page.objects) files.set(o.key, id);
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor);
  }
  return files;
}
