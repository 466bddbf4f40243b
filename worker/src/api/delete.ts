// DeleteObject: idempotent; the manifest goes first, its shard files after the response.
import { removePartData } from "../storage/remove";
import { noSuchBucket } from "./bucket";
import { bucketIndex, type RequestContext } from "./context";

export async function deleteObject(ctx: RequestContext, bucket: string, key: string): Promise<Response> {
  const { bucket: exists, previous } = await bucketIndex(ctx, bucket).delete(key);
  if (!exists) throw noSuchBucket(bucket);
  if (previous) ctx.waitUntil(removePartData(ctx, ctx.core.decodeManifest(previous.manifest)));
  return new Response(null, { status: 204 });
}
