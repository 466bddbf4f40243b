// PutObject: one parallel wave of shard uploads, then one metadata commit (services/objects.ts
// commitObject, shared with CopyObject and CompleteMultipartUpload). Nothing is visible until the
// commit; a failed or refused write removes its shard files; an overwrite removes the superseded
// object's shard files after the new manifest is committed.
import { writePart } from "../storage/write-part";
import { checksumHeaders, RequestChecksums } from "./checksums";
import type { RequestContext } from "./context";
import { storedHeaders, userMetadata } from "./object-headers";
import { hex } from "../bytes";
import { parseTaggingHeader } from "./tags";
import { commitObject, partOf, writtenHeaders } from "../services/objects";
import { writeCondition } from "./conditions";
import { checkAclHeaders } from "./acl-policy";
import { checkKey, parseContentMd5, requestSize, verifyWritten } from "./object-request";

export async function putObject(ctx: RequestContext, bucket: string, key: string): Promise<Response> {
  const headers = ctx.request.headers;
  checkKey(key);
  checkAclHeaders(headers);
  const size = requestSize(ctx);
  const contentMd5 = parseContentMd5(headers.get("content-md5"));
  const condition = writeCondition(headers);
  const checksums = RequestChecksums.fromRequest(ctx.core, headers);
  const fields = { headers: storedHeaders(headers), userMetadata: userMetadata(headers), tags: parseTaggingHeader(headers.get("x-amz-tagging")) };

  const written = await writePart(ctx.config, ctx.core, ctx.auth.body, size, (b) => checksums.update(b));
  const etag = hex(written.md5);
  const verified = await verifyWritten(ctx, written, contentMd5, checksums);
  const committed = await commitObject(ctx, bucket, { key, size, etag, ...fields, checksums: verified, parts: [partOf(written, etag, [])] }, condition, [
    written,
  ]);
  return new Response(null, { status: 200, headers: { ETag: `"${etag}"`, ...checksumHeaders(verified), ...writtenHeaders(committed) } });
}
