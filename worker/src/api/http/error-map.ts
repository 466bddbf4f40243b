// Anything thrown while serving a request, as the S3 error to answer with: S3 errors as they are,
// the storage layer's own errors (shared/storage-errors.ts, storage/errors.ts) by this table,
// anything else a 500.
import { S3Error, type S3ErrorCode } from "../../s3-error";
import { NodesUnavailableError } from "../../shared/storage-errors";
import { BodyLengthError, WriteQuorumError } from "../../storage/errors";

const STORAGE_ERRORS: [new (...args: never[]) => Error, S3ErrorCode][] = [
  [NodesUnavailableError, "ServiceUnavailable"],
  [WriteQuorumError, "ServiceUnavailable"],
  [BodyLengthError, "IncompleteBody"],
];

export function toS3Error(e: unknown): S3Error {
  if (e instanceof S3Error) return e;
  for (const [type, code] of STORAGE_ERRORS) if (e instanceof type) return new S3Error(code, e.message);
  return new S3Error("InternalError", "We encountered an internal error. Please try again.");
}
