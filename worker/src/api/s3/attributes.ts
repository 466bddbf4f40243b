// GetObjectAttributes: what S3 tells about an object without its body (ETag, checksum, parts,
// storage class, size), from the manifest alone.
import { S3Error } from "../../s3-error";
import { checksumValue } from "../format/checksums";
import { headerList } from "../format/object-headers";
import type { RequestContext, ObjectAt } from "../http/context";
import { element, xmlResponse, xmlDocument } from "../format/xml";
import { existingObject, partOffsets, versionHeader } from "../../services/objects";

const ATTRIBUTES = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"];

export async function getObjectAttributes(ctx: RequestContext, { bucket, key, versionId }: ObjectAt): Promise<Response> {
  const headers = ctx.request.headers;
  const wanted = new Set(headerList(headers.get("x-amz-object-attributes")));
  if (wanted.size === 0 || [...wanted].some((a) => !ATTRIBUTES.includes(a))) throw new S3Error("InvalidArgument", "Invalid attribute name specified.");
  const maxParts = Math.min(Number(headers.get("x-amz-max-parts") ?? 1000) || 1000, 1000);
  const marker = Number(headers.get("x-amz-part-number-marker") ?? 0) || 0;

  const found = await existingObject(ctx, bucket, key, versionId);
  const manifest = ctx.core.decodeManifest(found.object.manifest);
  const partsCount = manifest.parts.length;

  let body = "";
  if (wanted.has("ETag")) body += element("ETag", manifest.etag);
  if (wanted.has("Checksum") && manifest.checksums.length > 0) {
    const c = manifest.checksums[0];
    body += `<Checksum><Checksum${c.algorithm}>${checksumValue(c, partsCount)}</Checksum${c.algorithm}>${element("ChecksumType", c.kind)}</Checksum>`;
  }
  // S3 describes parts only for objects made by a multipart upload.
  if (wanted.has("ObjectParts") && /-\d+$/.test(manifest.etag)) {
    const spans = partOffsets(manifest);
    const page = manifest.parts.map((p, i) => ({ p, n: i + 1, size: spans[i]?.size ?? p.size })).filter(({ n }) => n > marker);
    const shown = page.slice(0, maxParts);
    const parts = shown
      .map(({ p, n, size }) => {
        const sums =
          p.layout.type === "sharded" ? p.layout.partChecksums.map((c) => `<Checksum${c.algorithm}>${c.value}</Checksum${c.algorithm}>`).join("") : "";
        return `<Part>${element("PartNumber", n)}${element("Size", size)}${sums}</Part>`;
      })
      .join("");
    body +=
      "<ObjectParts>" +
      element("PartsCount", partsCount) +
      element("PartNumberMarker", marker) +
      element("NextPartNumberMarker", shown.length > 0 ? shown[shown.length - 1].n : marker) +
      element("MaxParts", maxParts) +
      element("IsTruncated", page.length > shown.length) +
      parts +
      "</ObjectParts>";
  }
  if (wanted.has("StorageClass")) body += element("StorageClass", "STANDARD");
  if (wanted.has("ObjectSize")) body += element("ObjectSize", manifest.size);
  return xmlResponse(xmlDocument("GetObjectAttributesResponse", body), 200, {
    "Last-Modified": new Date(manifest.lastModifiedMs).toUTCString(),
    ...versionHeader(found),
  });
}
