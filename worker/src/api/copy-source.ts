// The source of a copy (x-amz-copy-source and its x-amz-copy-source-if-* conditions), shared by
// CopyObject and UploadPartCopy.
import type { Manifest } from "../core-api";
import type { ObjectRecord } from "../meta/types";
import { S3Error, preconditionFailed } from "../s3-error";
import { existingObject } from "../services/objects";
import { checkConditions, requestConditions } from "./conditions";
import type { RequestContext } from "./context";

export interface CopySource {
  bucket: string;
  key: string;
}

/** `x-amz-copy-source`: `[/]bucket/key[?versionId=…]`, the key URL-encoded. */
export function parseCopySource(header: string): CopySource {
  const [path, query] = header.split("?", 2);
  const trimmed = path.startsWith("/") ? path.slice(1) : path;
  const slash = trimmed.indexOf("/");
  let key: string;
  try {
    key = decodeURIComponent(trimmed.slice(slash + 1));
  } catch {
    key = "";
  }
  if (slash <= 0 || key === "") throw new S3Error("InvalidArgument", "Copy Source must mention the source bucket and key: sourcebucket/sourcekey.");
  const version = new URLSearchParams(query ?? "").get("versionId");
  // Buckets are unversioned: only the "null" version exists.
  if (version !== null && version !== "null") throw new S3Error("NoSuchVersion", "The specified version does not exist.");
  return { bucket: decodeURIComponent(trimmed.slice(0, slash)), key };
}

/** The source object, after its x-amz-copy-source-if-* conditions (any failure is a 412). */
export async function readCopySource(ctx: RequestContext, source: CopySource): Promise<{ record: ObjectRecord; manifest: Manifest }> {
  const object = await existingObject(ctx, source.bucket, source.key);
  if (checkConditions(requestConditions(ctx.request.headers, "x-amz-copy-source-if-"), object)) throw preconditionFailed();
  return { record: object, manifest: ctx.core.decodeManifest(object.manifest) };
}
