// S3's additional checksums (x-amz-checksum-*): which ones a request asks for, computing them
// while the body streams through, and checking them against the header or the aws-chunked trailer.
import type { ChecksumKind, Core, ObjectChecksum, StreamingChecksum } from "../../shared/core-api";
import { S3Error } from "../../s3-error";
import { fromBase64, toBase64 } from "../../shared/bytes";

export const ALGORITHMS = ["CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"] as const;
export type Algorithm = (typeof ALGORITHMS)[number];
/** The algorithms a FULL_OBJECT multipart checksum can be built for (CRCs combine; SHAs do not). */
const COMBINABLE: readonly Algorithm[] = ["CRC32", "CRC32C", "CRC64NVME"];

const headerName = (a: Algorithm) => `x-amz-checksum-${a.toLowerCase()}`;

/** An algorithm name as a client sends it (any case), or null for none; InvalidRequest if unknown. */
export function parseAlgorithm(name: string | null): Algorithm | null {
  if (name === null || name === "") return null;
  const upper = name.toUpperCase();
  if (!ALGORITHMS.includes(upper as Algorithm)) throw new S3Error("InvalidRequest", `Checksum algorithm ${name} is not supported.`);
  return upper as Algorithm;
}

interface Pending {
  algorithm: Algorithm;
  /** Where the client's value is: a header (`expected`), the aws-chunked trailer, or nowhere
   *  (computed only: the upload's algorithm on a part sent without it, or a copy). */
  source: "header" | "trailer" | "computed";
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

function hasher(core: Core, algorithm: Algorithm): Hasher {
  if (algorithm === "SHA1") return shaHasher("SHA-1");
  if (algorithm === "SHA256") return shaHasher("SHA-256");
  return crcHasher(core.checksum(algorithm));
}

/** The checksum of a whole buffer at once (multipart COMPOSITE checksums). */
async function digestOf(core: Core, algorithm: Algorithm, bytes: Uint8Array): Promise<Uint8Array> {
  const h = hasher(core, algorithm);
  h.update(bytes);
  return h.digest();
}

export class RequestChecksums {
  private constructor(private readonly pending: Pending[]) {}

  /**
   * Reads what the request asks for: x-amz-checksum-<alg> headers, or x-amz-trailer naming one.
   * `also` is computed even when the client sends no value for it (an upload's algorithm).
   */
  static fromRequest(core: Core, headers: Headers, also: Algorithm | null = null): RequestChecksums {
    const pending: Pending[] = [];
    const trailer = (headers.get("x-amz-trailer") ?? "").toLowerCase().trim();
    parseAlgorithm(headers.get("x-amz-sdk-checksum-algorithm"));
    for (const algorithm of ALGORITHMS) {
      const expected = headers.get(headerName(algorithm));
      const inTrailer = trailer === headerName(algorithm);
      if (expected === null && !inTrailer) continue;
      pending.push({ algorithm, source: expected !== null ? "header" : "trailer", expected, compute: hasher(core, algorithm) });
    }
    if (pending.length > 1) throw new S3Error("InvalidRequest", "Expecting a single x-amz-checksum- header.");
    if (also !== null && pending.length === 1 && pending[0].algorithm !== also) {
      throw new S3Error(
        "InvalidRequest",
        `Checksum Type mismatch occurred, expected checksum Type: ${also.toLowerCase()}, actual checksum Type: ${pending[0].algorithm.toLowerCase()}`,
      );
    }
    if (also !== null && pending.length === 0) pending.push({ algorithm: also, source: "computed", expected: null, compute: hasher(core, also) });
    return new RequestChecksums(pending);
  }

  /** Computes `algorithm` over bytes that come with no client checksum (a copy); none: nothing. */
  static computing(core: Core, algorithm: Algorithm | null): RequestChecksums {
    return new RequestChecksums(algorithm === null ? [] : [{ algorithm, source: "computed", expected: null, compute: hasher(core, algorithm) }]);
  }

  /** Whether the request carries a checksum (header or trailer) or one is computed. */
  get isEmpty(): boolean {
    return this.pending.length === 0;
  }

  update(bytes: Uint8Array): void {
    for (const p of this.pending) p.compute.update(bytes);
  }

  /** Compares with what the client sent (header or trailer); throws BadDigest on a mismatch. */
  async verify(trailers: Promise<Headers>): Promise<ObjectChecksum[]> {
    const result: ObjectChecksum[] = [];
    for (const p of this.pending) {
      const value = toBase64(await p.compute.digest());
      const expected = p.source === "header" ? p.expected : p.source === "trailer" ? (await trailers).get(headerName(p.algorithm)) : value;
      if (expected === null) throw new S3Error("InvalidRequest", `The ${headerName(p.algorithm)} trailer was announced but not sent.`);
      if (expected !== value) throw new S3Error("BadDigest", `The ${p.algorithm} you specified did not match the calculated checksum.`);
      result.push({ algorithm: p.algorithm, kind: "FULL_OBJECT", value });
    }
    return result;
  }
}

/** The checksum type an upload gets: as asked, else S3's default for the algorithm. */
export function uploadChecksumType(algorithm: Algorithm | null, asked: string | null): ChecksumKind | null {
  const type = asked === null || asked === "" ? null : asked.toUpperCase();
  if (type !== null && type !== "COMPOSITE" && type !== "FULL_OBJECT") throw new S3Error("InvalidRequest", `Value for x-amz-checksum-type header is invalid.`);
  if (algorithm === null) {
    if (type !== null) throw new S3Error("InvalidRequest", "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.");
    return null;
  }
  if (type === "FULL_OBJECT" && !COMBINABLE.includes(algorithm)) {
    throw new S3Error("InvalidRequest", `The FULL_OBJECT checksum type cannot be used with the ${algorithm.toLowerCase()} checksum algorithm.`);
  }
  if (type === "COMPOSITE" && algorithm === "CRC64NVME") {
    throw new S3Error("InvalidRequest", "The COMPOSITE checksum type cannot be used with the crc64nvme checksum algorithm.");
  }
  return (type as ChecksumKind | null) ?? (algorithm === "CRC64NVME" ? "FULL_OBJECT" : "COMPOSITE");
}

/**
 * A multipart object's checksum from its parts' checksums, as S3 defines it: COMPOSITE is the
 * checksum of the concatenated part digests (shown with "-N" appended, see checksumValue);
 * FULL_OBJECT is the CRC of the
 * whole object, combined from the part CRCs and sizes without reading any data.
 */
export async function multipartChecksum(
  core: Core,
  algorithm: Algorithm,
  kind: ChecksumKind,
  parts: readonly { checksum: ObjectChecksum | null; size: number }[],
): Promise<ObjectChecksum | null> {
  const digests = parts.map((p) => (p.checksum?.algorithm === algorithm ? fromBase64(p.checksum.value) : null));
  if (digests.some((d) => d === null)) return null;
  const raw = digests as Uint8Array[];
  if (kind === "COMPOSITE") {
    const joined = new Uint8Array(raw.reduce((n, d) => n + d.length, 0));
    raw.reduce((at, d) => (joined.set(d, at), at + d.length), 0);
    return { algorithm, kind, value: toBase64(await digestOf(core, algorithm, joined)) };
  }
  let acc = raw[0];
  for (let i = 1; i < raw.length; i++) acc = core.combineChecksums(algorithm, acc, raw[i], parts[i].size);
  return { algorithm, kind, value: toBase64(acc) };
}

/** A checksum as S3 shows it: a COMPOSITE one of an object of N parts ends in "-N". */
export function checksumValue(c: ObjectChecksum, partsCount: number): string {
  return c.kind === "COMPOSITE" ? `${c.value}-${partsCount}` : c.value;
}

/** Response headers for stored checksums (GET/HEAD with x-amz-checksum-mode: ENABLED). */
export function checksumHeaders(checksums: readonly ObjectChecksum[], partsCount = 1): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of checksums) {
    out[`x-amz-checksum-${c.algorithm.toLowerCase()}`] = checksumValue(c, partsCount);
    out["x-amz-checksum-type"] = c.kind;
  }
  return out;
}

/** `<ChecksumCRC32>…</ChecksumCRC32>` elements (and ChecksumType) for XML results. */
export function checksumElements(checksums: readonly ObjectChecksum[], partsCount = 1, withType = true): string {
  return checksums
    .map((c) => `<Checksum${c.algorithm}>${checksumValue(c, partsCount)}</Checksum${c.algorithm}>` + (withType ? `<ChecksumType>${c.kind}</ChecksumType>` : ""))
    .join("");
}
