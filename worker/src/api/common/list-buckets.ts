// ListBuckets (`GET /`): S3's ListAllMyBucketsResult XML. Pure, no I/O.
import type { BucketInfo } from "../../meta/types";
import { ownerXml, type Owner } from "./list-objects";
import { element, s3Date, S3_XMLNS, XML_DECLARATION } from "./xml";

/** The buckets in the order given (the registry lists them sorted by name). */
export function renderListBuckets(buckets: readonly BucketInfo[], owner: Owner): string {
  const items = buckets.map((b) => `<Bucket>${element("Name", b.name)}${element("CreationDate", s3Date(b.created))}</Bucket>`).join("");
  return `${XML_DECLARATION}<ListAllMyBucketsResult xmlns="${S3_XMLNS}">${ownerXml(owner)}<Buckets>${items}</Buckets></ListAllMyBucketsResult>`;
}
