// S3's additional checksums (x-amz-checksum-*): which ones a request asks for, computing them
// while the body streams through, and checking them against the header or the aws-chunked trailer.
import type { Core, ObjectChecksum, StreamingChecksum } from "../core-api";
import { S3Error } from "../s3-error";
import { toBase64 } from "../storage/write-part";

const ALGORITHMS = ["CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"] as const;
type Algorithm = (typeof ALGORITHMS)[number];

const headerName = (a: Algorithm) => `x-amz-checksum-${a.toLowerCase()}`;

interface Pending {
  algorithm: Algorithm;
  /** The base64 value the client sent in a header, or null when it comes in the trailer. */
  expected: string | null;
  compute: Hasher;
}

interface Hasher {
  update(bytes: Uint8Array): void;
  digest(): Promise<Uint8Array>;
}

function crcHasher(c: StreamingChecksum): Hasher {
  return { update: (b) => c.update(b), digest: async () => c.digest() };
}

/** SHA via WebCrypto's DigestStream (the core does not duplicate it). */
function shaHasher(name: "SHA-1" | "SHA-256"): Hasher {
  const stream = new crypto.DigestStream(name);
  const writer = stream.getWriter();
  let queue: Promise<void> = Promise.resolve();
  return {
    // The caller reuses its buffer: copy, and keep writes in order.
    update: (b) => {
      const copy = b.slice();
      queue = queue.then(() => writer.write(copy));
    },
    digest: async () => {
      await queue;
      await writer.close();
      return new Uint8Array(await stream.digest);
    },
  };
}

export class RequestChecksums {
  private constructor(private readonly pending: Pending[]) {}

  /** Reads what the request asks for: x-amz-checksum-<alg> headers, or x-amz-trailer naming one. */
  static fromRequest(core: Core, headers: Headers): RequestChecksums {
    const pending: Pending[] = [];
    const trailer = (headers.get("x-amz-trailer") ?? "").toLowerCase().trim();
    const sdkAlgorithm = (headers.get("x-amz-sdk-checksum-algorithm") ?? "").toUpperCase();
    if (sdkAlgorithm && !ALGORITHMS.includes(sdkAlgorithm as Algorithm)) {
      throw new S3Error(400, "InvalidRequest", `Checksum algorithm ${sdkAlgorithm} is not supported.`);
    }
    for (const algorithm of ALGORITHMS) {
      const expected = headers.get(headerName(algorithm));
      if (expected === null && trailer !== headerName(algorithm)) continue;
      const compute = algorithm === "SHA1" ? shaHasher("SHA-1") : algorithm === "SHA256" ? shaHasher("SHA-256") : crcHasher(core.checksum(algorithm));
      pending.push({ algorithm, expected, compute });
    }
    if (pending.length > 1) throw new S3Error(400, "InvalidRequest", "Expecting a single x-amz-checksum- header.");
    return new RequestChecksums(pending);
  }

  update(bytes: Uint8Array): void {
    for (const p of this.pending) p.compute.update(bytes);
  }

  /** Compares with what the client sent (header or trailer); throws BadDigest on a mismatch. */
  async verify(trailers: Promise<Headers>): Promise<ObjectChecksum[]> {
    const result: ObjectChecksum[] = [];
    for (const p of this.pending) {
      const value = toBase64(await p.compute.digest());
      const expected = p.expected ?? (await trailers).get(headerName(p.algorithm));
      if (expected === null) {
        throw new S3Error(400, "InvalidRequest", `The ${headerName(p.algorithm)} trailer was announced but not sent.`);
      }
      if (expected !== value) {
        throw new S3Error(400, "BadDigest", `The ${p.algorithm} you specified did not match the calculated checksum.`);
      }
      result.push({ algorithm: p.algorithm, kind: "FULL_OBJECT", value });
    }
    return result;
  }
}

/** Response headers for stored checksums (GET/HEAD with x-amz-checksum-mode: ENABLED). */
export function checksumHeaders(checksums: readonly ObjectChecksum[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of checksums) {
    out[`x-amz-checksum-${c.algorithm.toLowerCase()}`] = c.value;
    out["x-amz-checksum-type"] = c.kind;
  }
  return out;
}
