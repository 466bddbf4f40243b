// ACLs the way single-owner S3 services answer them: every bucket and object belongs to the
// gateway's owner with FULL_CONTROL, and only ACLs that say exactly that are accepted (the canned
// `private`, and `bucket-owner-full-control`, which means the same with one owner). Anything that
// would grant access to someone else is refused by name until access keys and policies exist.
import { S3Error } from "../../s3-error";
import { owner, type RequestContext } from "./context";
import { element, S3_XMLNS, XML_DECLARATION } from "./xml";
import { childrenNamed, childText, malformedXml, parseXmlBytes } from "./xml-parse";

const OWNER_ONLY = new Set(["private", "bucket-owner-full-control"]);

/** The x-amz-acl and x-amz-grant-* headers of a request that sets an ACL (or writes with one). */
export function checkAclHeaders(headers: Headers): void {
  const acl = headers.get("x-amz-acl")?.trim();
  if (acl !== undefined && !OWNER_ONLY.has(acl)) {
    throw new S3Error("NotImplemented", `The canned ACL "${acl}" is not supported: buckets and objects are private to the gateway's owner.`);
  }
  for (const name of headers.keys()) {
    if (name.startsWith("x-amz-grant-"))
      throw new S3Error("NotImplemented", `${name} is not supported: buckets and objects are private to the gateway's owner.`);
  }
}

/** An <AccessControlPolicy> body: accepted only when it grants FULL_CONTROL to the owner alone. */
export function checkAclBody(ctx: RequestContext, bytes: Uint8Array): void {
  if (bytes.length === 0) return;
  const doc = parseXmlBytes(bytes);
  if (doc.name !== "AccessControlPolicy") throw malformedXml();
  const list = childrenNamed(doc, "AccessControlList")[0];
  const grants = list ? childrenNamed(list, "Grant") : [];
  const id = owner(ctx).id;
  for (const grant of grants) {
    const grantee = childrenNamed(grant, "Grantee")[0];
    if (!grantee || childText(grantee, "ID") !== id || childText(grant, "Permission") !== "FULL_CONTROL") {
      throw new S3Error("NotImplemented", "Only an ACL that grants FULL_CONTROL to the owner alone is supported.");
    }
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
