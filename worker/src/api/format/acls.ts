// ACLs as S3 answers them for a bucket whose Object Ownership is BucketOwnerEnforced (the default
// for new AWS buckets since 2023): ACLs are disabled. Every bucket and object belongs to the
// gateway's owner with FULL_CONTROL (GetBucketAcl and GetObjectAcl say so); a request may still
// name that ACL (the canned `private` or `bucket-owner-full-control`, `x-amz-grant-full-control`
// naming the owner, an AccessControlPolicy granting the owner FULL_CONTROL alone) and is served;
// any other ACL is refused with S3's 400 AccessControlListNotSupported, and nothing of the request
// is done. Access is given with access keys and bucket policies (docs/access.md). Object
// Ownership says so too: GetBucketOwnershipControls answers BucketOwnerEnforced, and a request
// for another setting (PutBucketOwnershipControls, `x-amz-object-ownership` on CreateBucket),
// which would enable ACLs, is refused NotImplemented.
import { S3Error } from "../../s3-error";
import { owner, type RequestContext } from "../http/context";
import { element, xmlDocument } from "./xml";
import { childrenNamed, childText, malformedXml, parseXmlBytes, type XmlElement } from "./xml-parse";

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

/** The one Object Ownership setting, and the two S3 has that enable ACLs. */
export const OBJECT_OWNERSHIP = "BucketOwnerEnforced";
const ACLS_ENABLED = new Set(["ObjectWriter", "BucketOwnerPreferred"]);

/** An Object Ownership setting asked for (CreateBucket's header, PutBucketOwnershipControls): served when it is OBJECT_OWNERSHIP. */
export function checkObjectOwnership(value: string, invalid: () => S3Error): void {
  if (value === OBJECT_OWNERSHIP) return;
  if (ACLS_ENABLED.has(value))
    throw new S3Error("NotImplemented", `Object Ownership ${value} enables ACLs, which this gateway does not have: only ${OBJECT_OWNERSHIP} is.`);
  throw invalid();
}

/** CreateBucket's `x-amz-object-ownership`, when given. */
export function checkObjectOwnershipHeader(headers: Headers): void {
  const value = headers.get("x-amz-object-ownership");
  if (value !== null) checkObjectOwnership(value.trim(), () => new S3Error("InvalidArgument", "Invalid x-amz-object-ownership header."));
}

/** GetBucketOwnershipControls' answer. */
export function ownershipControlsXml(): string {
  return xmlDocument("OwnershipControls", `<Rule>${element("ObjectOwnership", OBJECT_OWNERSHIP)}</Rule>`);
}

/** A PutBucketOwnershipControls body: exactly one Rule with one ObjectOwnership, which must be OBJECT_OWNERSHIP. */
export function checkOwnershipControlsBody(bytes: Uint8Array): void {
  const doc = parseXmlBytes(bytes);
  const rules = childrenNamed(doc, "Rule");
  if (doc.name !== "OwnershipControls" || rules.length !== 1 || doc.children.length !== 1) throw malformedXml();
  const settings = childrenNamed(rules[0] as XmlElement, "ObjectOwnership");
  const setting = settings[0];
  if (settings.length !== 1 || (rules[0] as XmlElement).children.length !== 1 || !setting || setting.children.length > 0) throw malformedXml();
  checkObjectOwnership(setting.text.trim(), malformedXml);
}

/** The ACL every bucket and object has: the owner, with FULL_CONTROL. */
export function ownerAclXml(ctx: RequestContext): string {
  const { id, displayName } = owner(ctx);
  const who = element("ID", id) + element("DisplayName", displayName);
  const grantee = `<Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser">${who}</Grantee>`;
  const grant = `<Grant>${grantee}${element("Permission", "FULL_CONTROL")}</Grant>`;
  return xmlDocument("AccessControlPolicy", `<Owner>${who}</Owner><AccessControlList>${grant}</AccessControlList>`);
}
