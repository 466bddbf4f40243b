// The server-side encryption headers of S3 (docs/s3-compatibility.md, "Encryption"): what a write
// asks for (x-amz-server-side-encryption: AES256, or the three x-amz-server-side-encryption-customer-*
// headers of SSE-C), the customer's key a read or a copy's source brings, and what answers carry.
import { fromBase64, toBase64 } from "../../shared/bytes";
import type { Encryption } from "../../shared/core-api";
import { S3Error, invalidArgument } from "../../s3-error";
import type { SseRequest } from "../../services/encryption";

const decoded = (text: string): Uint8Array | null => {
  try {
    return fromBase64(text);
  } catch {
    return null;
  }
};

/** The customer's key of SSE-C headers (the copy source's with `copySource`), checked; null when none are sent. */
export async function customerKey(headers: Headers, copySource = false): Promise<{ key: Uint8Array; keyMd5: string } | null> {
  const prefix = copySource ? "x-amz-copy-source-server-side-encryption-customer-" : "x-amz-server-side-encryption-customer-";
  const algorithm = headers.get(`${prefix}algorithm`);
  const key = headers.get(`${prefix}key`);
  const md5 = headers.get(`${prefix}key-md5`);
  if (algorithm === null && key === null && md5 === null) return null;
  if (algorithm === null || key === null || md5 === null) {
    throw invalidArgument("Requests specifying Server Side Encryption with Customer provided keys must provide the algorithm, the key and the key's MD5.");
  }
  if (algorithm !== "AES256") throw invalidArgument("The encryption algorithm specified is not valid: only AES256 is supported.");
  const bytes = decoded(key);
  if (bytes?.length !== 32) throw invalidArgument("The secret key was invalid for the specified algorithm: it must be 256 bits, base64.");
  const digest = toBase64(new Uint8Array(await crypto.subtle.digest("MD5", bytes)));
  if (digest !== md5) throw invalidArgument("The calculated MD5 hash of the key did not match the hash that was provided.");
  return { key: bytes, keyMd5: md5 };
}

/** SSE-KMS's own headers: S3 takes them only with `x-amz-server-side-encryption: aws:kms`. */
const KMS_HEADERS = ["x-amz-server-side-encryption-aws-kms-key-id", "x-amz-server-side-encryption-context", "x-amz-server-side-encryption-bucket-key-enabled"];

/** What a write asks for: SSE-S3, SSE-C, or nothing (the bucket's default then decides). */
export async function sseRequest(headers: Headers): Promise<(SseRequest & { keyMd5?: string }) | null> {
  const asked = headers.get("x-amz-server-side-encryption");
  const kms = KMS_HEADERS.find((name) => headers.has(name));
  // S3's 400 for SSE-KMS's headers without it (rather than ignoring what the client asked for).
  if (kms !== undefined && !asked?.startsWith("aws:kms"))
    throw invalidArgument(
      `Server Side Encryption with AWS KMS managed key requires HTTP header x-amz-server-side-encryption : aws:kms (${kms} was sent without it).`,
    );
  const customer = await customerKey(headers);
  if (asked !== null && customer)
    throw invalidArgument("Server Side Encryption with Customer provided keys cannot be combined with x-amz-server-side-encryption.");
  if (customer) return { mode: "SSE-C", key: customer.key, keyMd5: customer.keyMd5 };
  if (asked === null) return null;
  if (asked === "AES256") return { mode: "SSE-S3" };
  if (asked.startsWith("aws:kms")) throw new S3Error("NotImplemented", "SSE-KMS is not supported: use AES256 (SSE-S3) or customer-provided keys (SSE-C).");
  throw invalidArgument(`The encryption method specified is not supported: ${asked}`);
}

/**
 * A read (GetObject, HeadObject) names the encryption of what it reads only by SSE-C's headers: S3
 * answers 400 to the headers of a write's encryption on it.
 */
export function refuseWriteEncryptionHeaders(headers: Headers): void {
  for (const name of ["x-amz-server-side-encryption", "x-amz-server-side-encryption-aws-kms-key-id"])
    if (headers.has(name)) throw invalidArgument(`${name} header is not supported for this operation.`);
}

/** The headers an answer about an object encrypted with `encryption` carries (SSE-C: with the key's MD5 as sent). */
export function sseHeaders(encryption: Pick<Encryption, "mode"> | undefined | null, keyMd5?: string | null): Record<string, string> {
  if (!encryption) return {};
  if (encryption.mode === "SSE-S3") return { "x-amz-server-side-encryption": "AES256" };
  return {
    "x-amz-server-side-encryption-customer-algorithm": "AES256",
    ...(keyMd5 ? { "x-amz-server-side-encryption-customer-key-MD5": keyMd5 } : {}),
  };
}
