// S3's general-purpose bucket naming rules.
import { S3Error } from "../../s3-error";

export function checkBucketName(name: string): void {
  const problem = bucketNameProblem(name);
  if (problem) throw new S3Error("InvalidBucketName", `The specified bucket is not valid: ${problem}.`);
}

function bucketNameProblem(name: string): string | null {
  if (name.length < 3 || name.length > 63) return "it must be 3 to 63 characters long";
  if (!/^[a-z0-9.-]+$/.test(name)) return "only lowercase letters, digits, dots and hyphens are allowed";
  if (!/^[a-z0-9].*[a-z0-9]$/.test(name)) return "it must begin and end with a letter or digit";
  if (name.includes("..")) return "it must not contain two adjacent dots";
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return "it must not be formatted as an IP address";
  if (/^(xn--|sthree-|amzn-s3-demo-)/.test(name)) return "it must not start with a reserved prefix";
  if (/(-s3alias|--ol-s3|\.mrap|--x-s3|--table-s3)$/.test(name)) return "it must not end with a reserved suffix";
  return null;
}
