// PostObject: a browser form upload (presigned POST). The form's fields are read first and checked
// (the signature of its POST policy with SigV4 or V2, the policy's expiration and conditions, the
// signer's right to write the key, the file's size against content-length-range) before a byte of
// the file is stored; the file then streams into the same write path as a PutObject.
import { checkPostLength, checkPostPolicy, parsePostPolicy, type PostPolicy } from "../../auth/post-policy";
import { postPolicySignatureV2 } from "../../auth/sigv2";
import { invalidAccessKey, postPolicySignatureV4, signatureMismatch, unsupportedMechanism } from "../../auth/sigv4";
import { constantTimeEqual } from "../../auth/crypto";
import { S3Error } from "../../s3-error";
import { type Principal, signerOf } from "../../services/access-keys";
import { bucketPolicy } from "../../services/bucket-policy";
import { commitObject, partOf, writtenHeaders } from "../../services/objects";
import { encryptionOf, newCipher, objectEtag, writeObjectPart } from "../../services/encryption";
import { checkAclHeaders } from "../format/acls";
import { RequestChecksums } from "../format/checksums";
import { owner, type RequestContext, type BucketAt } from "../http/context";
import { type FormUpload, readFormUpload } from "./post-object.form";
import { storedHeaders, userMetadata } from "../format/object-headers";
import { checkKey } from "../format/object-request";
import { sseHeaders, sseRequest } from "../format/sse-headers";
import { authorize, WRITE_OBJECT } from "../http/permissions";
import { element, xmlResponse, xmlDocument } from "../format/xml";

/** Form fields that become the object's headers (and every x-amz-meta-* field), as a PUT's request headers would. */
const HEADER_FIELDS = ["content-type", "cache-control", "content-disposition", "content-encoding", "expires", "x-amz-acl"];

const MAX_OBJECT_BYTES = 5 * 1024 ** 3;

/** What the key field may contain to take the uploaded file's name (S3's `${filename}`). */
const FILENAME = ["$", "{filename}"].join("");

export async function postObject(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const form = await readFormUpload(ctx.request.body, ctx.request.headers.get("content-type") ?? "", ctx.auth.contentLength);
  try {
    return await store(ctx, bucket, form);
  } catch (e) {
    await form.file.cancel().catch(() => {});
    throw e;
  }
}

async function store(ctx: RequestContext, bucket: string, form: FormUpload): Promise<Response> {
  const fields = form.fields;
  const rawKey = fields.get("key");
  if (rawKey === undefined || rawKey === "") throw new S3Error("InvalidArgument", "Bucket POST must contain a field named 'key'.");
  const key = rawKey.replaceAll(FILENAME, form.filename);
  checkKey(key);
  const { principal, policy } = await signer(ctx, fields, new Map([...fields, ["bucket", bucket], ["key", key]]));
  // What PutObject takes, checked with the key that signed the form.
  await authorize(principal, WRITE_OBJECT, { bucket, key }, new Headers(), (b) => bucketPolicy(ctx.env, b));
  if (form.size > MAX_OBJECT_BYTES) throw new S3Error("EntityTooLarge", "Your proposed upload exceeds the maximum allowed size");
  checkPostLength(policy, form.size);

  const headers = new Headers([...fields].filter(([name]) => HEADER_FIELDS.includes(name) || name.startsWith("x-amz-meta-")));
  if (!headers.has("content-type") && form.fileType) headers.set("content-type", form.fileType);
  checkAclHeaders(headers, owner(ctx).id);
  // success_action_status: 200, 201 or 204 (the default, also for any other value, as S3 does).
  const asked = fields.get("success_action_status");
  const status = asked === "200" ? 200 : asked === "201" ? 201 : 204;
  const redirect = fields.get("success_action_redirect") ?? fields.get("redirect") ?? null;

  // Encryption fields (x-amz-server-side-encryption, …-customer-*) as a PUT's headers, else the bucket's default.
  const sseFields = new Headers([...fields].filter(([name]) => name.startsWith("x-amz-server-side-encryption")));
  const sse = await sseRequest(sseFields);
  const cipher = await newCipher(ctx.env, ctx.config, bucket, sse);

  const checksums = RequestChecksums.fromRequest(ctx.core, new Headers());
  const part = await writeObjectPart(ctx.config, ctx.core, form.file, form.size, (b) => checksums.update(b), cipher);
  const { written, salt } = part;
  await form.finish();
  const etag = objectEtag(cipher, part);
  const encryption = cipher ? { encryption: encryptionOf(cipher, [salt as string]) } : {};
  const stored = { headers: storedHeaders(headers), userMetadata: userMetadata(headers), tags: [], checksums: [] };
  const object = { key, size: form.size, etag, ...stored, parts: [partOf(written, etag, [])], ...encryption };
  const committed = await commitObject(ctx, bucket, object, { event: "Post" }, [written]);
  const location = `${new URL(ctx.request.url).origin}/${bucket}/${encodeURIComponent(key).replaceAll("%2F", "/")}`;
  const answer = { ETag: `"${etag}"`, Location: location, ...writtenHeaders(committed), ...sseHeaders(cipher?.encryption, sse?.keyMd5) };
  if (redirect !== null) {
    const to = new URL(redirect);
    for (const [name, value] of Object.entries({ bucket, key, etag: `"${etag}"` })) to.searchParams.set(name, value);
    return new Response(null, { status: 303, headers: { ...answer, Location: to.toString() } });
  }
  if (status === 201) {
    const fields = `${element("Location", location)}${element("Bucket", bucket)}${element("Key", key)}${element("ETag", `"${etag}"`)}`;
    const res = xmlResponse(xmlDocument("PostResponse", fields), 201);
    for (const [name, value] of Object.entries(answer)) res.headers.set(name, value);
    return res;
  }
  return new Response(null, { status, headers: answer });
}

/**
 * Who signed the form and its policy: SigV4 (x-amz-credential, x-amz-signature), V2
 * (AWSAccessKeyId, signature), or nobody: a form without any of the key id, the policy and the
 * signature (then only a bucket policy can allow the upload).
 */
async function signer(
  ctx: RequestContext,
  fields: ReadonlyMap<string, string>,
  checked: ReadonlyMap<string, string>,
): Promise<{ principal: Principal; policy: PostPolicy | null }> {
  const byV4 = fields.has("x-amz-credential") || fields.has("x-amz-signature");
  const names = byV4 ? ["X-Amz-Credential", "Policy", "X-Amz-Signature"] : ["AWSAccessKeyId", "Policy", "Signature"];
  const values = names.map((name) => fields.get(name.toLowerCase()));
  if (values.every((value) => value === undefined)) return { principal: { kind: "anonymous" }, policy: null };
  // A form with one of the three must have all of them: S3's 400 names the missing field, before
  // the policy's conditions are checked (a form without a signature is malformed, not denied).
  const missing = names[values.indexOf(undefined)];
  if (missing)
    throw new S3Error("InvalidArgument", `Bucket POST must contain a field named '${missing}'.  If it is specified, please check the order of the fields.`);
  const [keyField, text, given] = values as [string, string, string];
  // The policy is parsed and checked (expiry, conditions) before any key lookup: a stale or
  // forged form costs no Durable Object call.
  const policy = parsePostPolicy(text);
  checkPostPolicy(policy, checked, Date.now());
  const root = ctx.config.credentials as { accessKeyId: string; secretAccessKey: string };
  const [keyId, sign] = byV4 ? v4(ctx, fields, keyField) : [keyField, (secret: string) => v2(ctx, secret, text)];
  const key = await signerOf(ctx.env, ctx.config.masterKey, root, keyId);
  if (!key) throw invalidAccessKey();
  if (!constantTimeEqual(await sign(key.secret, text), given)) throw signatureMismatch();
  return { principal: key.principal, policy };
}

type Signing = [keyId: string, sign: (secret: string, policy: string) => Promise<string>];

/** A SigV4 form: x-amz-algorithm, x-amz-credential (`id/date/region/s3/aws4_request`), x-amz-signature. */
function v4(ctx: RequestContext, fields: ReadonlyMap<string, string>, credential: string): Signing {
  if ((fields.get("x-amz-algorithm") ?? "") !== "AWS4-HMAC-SHA256")
    throw new S3Error("InvalidArgument", "Only AWS4-HMAC-SHA256 is supported as x-amz-algorithm.");
  const [id, date, region, service, terminal] = credential.split("/");
  if (!id || !date || region !== ctx.config.region || service !== "s3" || terminal !== "aws4_request") {
    throw new S3Error("InvalidArgument", `Invalid x-amz-credential: ${credential}`);
  }
  return [id, (secret, policy) => postPolicySignatureV4(secret, date, region, policy)];
}

/** A Signature Version 2 form (AWSAccessKeyId, signature), unless V2 is turned off. */
function v2(ctx: RequestContext, secret: string, policy: string): Promise<string> {
  if (!ctx.config.sigV2) throw unsupportedMechanism();
  return postPolicySignatureV2(secret, policy);
}
