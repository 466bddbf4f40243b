// The source of a copy (x-amz-copy-source and its x-amz-copy-source-if-* conditions), shared by
// CopyObject and UploadPartCopy.
import type { Manifest } from "../../shared/core-api";
import type { ObjectRecord } from "../../meta/types";
import { S3Error, preconditionFailed } from "../../s3-error";
import { existingObject, versionHeader } from "../../services/objects";
import { parseVersionId } from "./object-request";
import { checkConditions, requestConditions } from "./conditions";
import type { RequestContext } from "../http/context";

export interface CopySource {
  bucket: string;
  key: string;
  /** undefined: the current version; null: the null version. */
  versionId: string | null | undefined;
}

/** `x-amz-copy-source`: `[/]bucket/key[?versionId=…]`, the key URL-encoded. */
export function parseCopySource(header: string): CopySource {
  const [path, query] = header.split("?", 2);
  const trimmed = path.startsWith("/") ? path.slice(1) : path;
  const slash = trimmed.indexOf("/");
  const bucket = decoded(trimmed.slice(0, slash));
  const key = decoded(trimmed.slice(slash + 1));
  if (slash <= 0 || bucket === "" || key === "")
    throw new S3Error("InvalidArgument", "Copy Source must mention the source bucket and key: sourcebucket/sourcekey.");
  const version = new URLSearchParams(query ?? "").get("versionId");
  return { bucket, key, versionId: version === null ? undefined : parseVersionId(version) };
}

/** A URL-encoded part of the copy source, or "" when it is not valid percent-encoding. */
function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return "";
  }
}

/**
 * The source object, after its x-amz-copy-source-if-* conditions (any failure is a 412), and the
 * x-amz-copy-source-version-id the answer carries (a versioned source bucket's).
 */
export async function readCopySource(
  ctx: RequestContext,
  source: CopySource,
): Promise<{ record: ObjectRecord; manifest: Manifest; versioned: boolean; headers: Record<string, string> }> {
  const found = await existingObject(ctx, source.bucket, source.key, source.versionId);
  const object = found.object;
  if (checkConditions(requestConditions(ctx.request.headers, "x-amz-copy-source-if-"), object)) throw preconditionFailed();
  const version = versionHeader(found)["x-amz-version-id"];
  const headers: Record<string, string> = version === undefined ? {} : { "x-amz-copy-source-version-id": version };
  return { record: object, manifest: ctx.core.decodeManifest(object.manifest), versioned: found.versioned, headers };
}
