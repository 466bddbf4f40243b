// A bucket's quota and usage through the admin API (root key only; docs/operations.md#bucket-quotas),
// and the sizes the console's quota form takes ("10 GiB", "500MB", a number of bytes), binary as
// every size the console shows.
import { adminJson } from "./access";
import { encodeSegment, type S3Client } from "./s3";

export interface Quota {
  maxBytes: number | null;
  maxObjects: number | null;
}

export interface QuotaState {
  quota: Quota | null;
  /** Bytes and objects stored; bytes in the parts of uploads in progress. */
  usage: { bytes: number; objects: number; pending: number };
}

const path = (bucket: string) => `buckets/${encodeSegment(bucket)}/quota`;

export async function getQuota(s3: S3Client, bucket: string): Promise<QuotaState> {
  return (await adminJson<QuotaState>(s3, "GET", path(bucket))) as QuotaState;
}

export async function setQuota(s3: S3Client, bucket: string, quota: Quota): Promise<QuotaState> {
  return (await adminJson<QuotaState>(s3, "PUT", path(bucket), quota)) as QuotaState;
}

export async function clearQuota(s3: S3Client, bucket: string): Promise<void> {
  await adminJson(s3, "DELETE", path(bucket));
}

/** One kind of unit, as the console shows sizes: binary, so 1 MB here is 1 MiB (1,048,576 bytes). */
const UNITS: Record<string, number> = {
  "": 1,
  B: 1,
  KB: 2 ** 10,
  MB: 2 ** 20,
  GB: 2 ** 30,
  TB: 2 ** 40,
  KIB: 2 ** 10,
  MIB: 2 ** 20,
  GIB: 2 ** 30,
  TIB: 2 ** 40,
};

/** A size typed in the form: bytes, or a number and a unit (KiB … TiB; KB … TB mean the same); empty is no limit (null); undefined when it is not a size. */
export function parseSize(text: string): number | null | undefined {
  const t = text.trim();
  if (t === "") return null;
  const m = /^([0-9]{1,16}(?:\.[0-9]{1,6})?) ?([A-Za-z]{0,3})$/.exec(t);
  const unit = m ? UNITS[(m[2] ?? "").toUpperCase()] : undefined;
  if (!m || unit === undefined) return undefined;
  const n = Math.floor(Number(m[1]) * unit);
  return Number.isSafeInteger(n) ? n : undefined;
}
