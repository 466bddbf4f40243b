// PutObject: one parallel wave of shard uploads, then one metadata commit (services/objects.ts
// commitObject, shared with CopyObject and CompleteMultipartUpload). Nothing is visible until the
// commit; a failed or refused write removes its shard files; an overwrite removes the superseded
// object's shard files after the new manifest is committed.
import { checksumHeaders, RequestChecksums } from "../format/checksums";
import { owner, type RequestContext, type ObjectAt } from "../http/context";
import { storedHeaders, userMetadata } from "../format/object-headers";
import { encryptionOf, newCipher, objectEtag, writeObjectPart } from "../../services/encryption";
import { sseHeaders, sseRequest } from "../format/sse-headers";
import { parseTaggingHeader } from "../format/tags";
import { commitObject, partOf, refuseEarly, writeRefused, writtenHeaders } from "../../services/objects";
import { lockFromHeaders } from "../format/object-lock-headers";
import { writeCondition } from "../format/conditions";
import { checkAclHeaders } from "../format/acls";
import { checkKey, parseContentMd5, replicaRequest, requestSize, verifyWritten } from "../format/object-request";

export async function putObject(ctx: RequestContext, { bucket, key }: ObjectAt): Promise<Response> {
  const headers = ctx.request.headers;
  checkKey(key);
  checkAclHeaders(headers, owner(ctx).id);
  const size = requestSize(ctx);
  const contentMd5 = parseContentMd5(headers.get("content-md5"));
  const condition = writeCondition(headers);
  const replica = replicaRequest(headers);
  const checksums = RequestChecksums.fromRequest(ctx.core, headers);
  const fields = { headers: storedHeaders(headers), userMetadata: userMetadata(headers), tags: parseTaggingHeader(headers.get("x-amz-tagging")) };
  const lock = lockFromHeaders(headers);
  // Object lock wants the body's integrity proven when a retention applies (the index decides).
  const integrity = contentMd5 !== null || !checksums.isEmpty;
  // Asked for in the headers: refused before a byte is stored.
  if (lock?.mode !== undefined && !integrity) throw writeRefused("IntegrityRequired");

  // A body of more than one block is not stored for a condition that already fails.
  if (condition && size > ctx.config.blockBytes) await refuseEarly(ctx, bucket, key, condition);

  const sse = await sseRequest(headers);
  const cipher = await newCipher(ctx.env, ctx.config, bucket, sse);

  const part = await writeObjectPart(ctx.config, ctx.core, ctx.auth.body, size, (b) => checksums.update(b), cipher, "request", contentMd5 !== null);
  const { written, salt } = part;
  const etag = objectEtag(cipher, part);
  const verified = await verifyWritten(ctx, { ...written, md5: part.md5 ?? written.md5 }, contentMd5, checksums);
  const encryption = cipher ? { encryption: encryptionOf(cipher, [salt as string]) } : {};
  const object = { key, size, etag, ...fields, checksums: verified, parts: [partOf(written, etag, [])], ...encryption, ...(lock ? { lock } : {}) };
  const committed = await commitObject(ctx, bucket, object, { ...condition, integrity, ...(replica ? { replica } : {}) }, [written]);
  const answer = { ETag: `"${etag}"`, ...checksumHeaders(verified), ...writtenHeaders(committed), ...sseHeaders(cipher?.encryption, sse?.keyMd5) };
  return new Response(null, { status: 200, headers: answer });
}
