// ACLs as S3 answers them for a bucket whose Object Ownership is BucketOwnerEnforced (the default
// for new AWS buckets since 2023): ACLs are disabled. Every bucket and object belongs to the
// gateway's owner with FULL_CONTROL (GetBucketAcl and GetObjectAcl say so); a request may still
// name that ACL (the canned `private` or `bucket-owner-full-control`, `x-amz-grant-full-control`
// naming the owner, an AccessControlPolicy granting the owner FULL_CONTROL alone) and is served;
// any other ACL is refused with S3's 400 AccessControlListNotSupported, and nothing of the request
// is done. Access is given with access keys and bucket policies (docs/access.md).
import { S3Error } from "../../s3-error";
import { owner, type RequestContext } from "./context";
import { element, S3_XMLNS, XML_DECLARATION } from "./xml";
import { childrenNamed, childText, malformedXml, parseXmlBytes } from "./xml-parse";

const OWNER_ONLY = new Set(["private", "bucket-owner-full-control"]);

const aclsDisabled = (what: string) =>
  new S3Error("AccessControlListNotSupported", `The bucket does not allow ACLs (${what}): grant access with access keys or a bucket policy.`);

/**
 * The x-amz-acl and x-amz-grant-* headers of a request that sets an ACL (or writes with one):
 * served when they give the owner (`ownerId`) FULL_CONTROL and nobody anything, else refused.
 */
export function checkAclHeaders(headers: Headers, ownerId: string): void {
  const acl = headers.get("x-amz-acl")?.trim();
  if (acl !== undefined && !OWNER_ONLY.has(acl)) throw aclsDisabled(`the canned ACL "${acl.slice(0, 64)}"`);
  for (const [name, value] of headers) {
    if (!name.startsWith("x-amz-grant-")) continue;
    if (name !== "x-amz-grant-full-control" || !ownerAlone(value, ownerId)) throw aclsDisabled(name.slice(0, 64));
  }
}

/** Whether a grant header's grantees (`id="…"`, comma-separated) are all the owner. */
function ownerAlone(value: string, ownerId: string): boolean {
  return value.split(",").every((grantee) => {
    const at = grantee.indexOf("=");
    const kind = grantee.slice(0, Math.max(at, 0)).trim().toLowerCase();
    const id = grantee
      .slice(at + 1)
      .trim()
      .replace(/^"(.*)"$/, "$1");
    return at > 0 && kind === "id" && id === ownerId;
  });
}

/** An <AccessControlPolicy> body: served only when it grants FULL_CONTROL to the owner alone. */
export function checkAclBody(ctx: RequestContext, bytes: Uint8Array): void {
  if (bytes.length === 0) return;
  const doc = parseXmlBytes(bytes);
  if (doc.name !== "AccessControlPolicy") throw malformedXml();
  const list = childrenNamed(doc, "AccessControlList")[0];
  const grants = list ? childrenNamed(list, "Grant") : [];
  const id = owner(ctx).id;
  for (const grant of grants) {
    const grantee = childrenNamed(grant, "Grantee")[0];
    if (!grantee || childText(grantee, "ID") !== id || childText(grant, "Permission") !== "FULL_CONTROL") throw aclsDisabled("a grant to someone else");
  }
}

/** The ACL every bucket and object has: the owner, with FULL_CONTROL. */
export function ownerAclXml(ctx: RequestContext): string {
  const { id, displayName } = owner(ctx);
  const who = element("ID", id) + element("DisplayName", displayName);
  const grantee = `<Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser">${who}</Grantee>`;
  return (
    `${XML_DECLARATION}<AccessControlPolicy xmlns="${S3_XMLNS}"><Owner>${who}</Owner>` +
    `<AccessControlList><Grant>${grantee}${element("Permission", "FULL_CONTROL")}</Grant></AccessControlList></AccessControlPolicy>`
  );
}
