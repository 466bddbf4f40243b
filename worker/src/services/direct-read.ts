// Read plans (docs/direct-path.md): an object's layout and a short-lived ticket per shard file, so
// that a client fetches the shard ranges it needs itself and decodes them with the same core, as
// shared/read-part.ts does in the Worker: data shards first, parity around a missing or slow one.
import type { DirectReadPlan } from "../shared/direct-protocol";
import { shardUrl } from "./direct-shards";
import type { DirectContext } from "./direct-context";
import { existingObject } from "./objects";

/** The plan to read bucket/key (a version of it); "classic" when only the gateway can read it. */
export async function readPlan(
  ctx: DirectContext,
  bucket: string,
  key: string,
  versionId: string | null | undefined,
  now = Date.now(),
): Promise<DirectReadPlan> {
  const found = await existingObject(ctx, bucket, key, versionId);
  const manifest = ctx.core.decodeManifest(found.object.manifest);
  if (manifest.encryption) return { mode: "classic", reason: "the object is encrypted: the gateway decrypts it" };
  const expires = Math.min(now + ctx.config.direct.sessionMs, ctx.until);
  const parts = [];
  for (const part of manifest.parts) {
    const layout = part.layout;
    if (layout.type !== "sharded") return { mode: "classic", reason: "the object is stored in its manifest" };
    const { blockBytes, dataShards, parityShards, chunkBytes, storageId, placement } = layout;
    const spec = { bucket, key, versioned: versionId !== undefined, layout, size: part.size, write: false, expires };
    const urls = await Promise.all(placement.map((node, shard) => shardUrl(ctx, { ...spec, shard, node }, now)));
    parts.push({ size: part.size, blockBytes, dataShards, parityShards, chunkBytes, storageId, placement, urls });
  }
  const contentType = manifest.headers.find(([name]) => name === "content-type")?.[1] ?? null;
  return {
    mode: "direct",
    size: manifest.size,
    etag: manifest.etag,
    lastModified: manifest.lastModifiedMs,
    contentType,
    versionId: found.versioned ? (found.object.versionId ?? "null") : null,
    expires,
    parts,
  };
}
