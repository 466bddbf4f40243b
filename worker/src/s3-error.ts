// An S3 error raised by request handling code that has no hono Context at hand (parsers, pure
// helpers); the HTTP layer turns it into the XML <Error> response (errors.ts `s3Error`).
export class S3Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "S3Error";
  }
}

/** The bucket named in the request does not exist (404 NoSuchBucket). */
export function noSuchBucket(bucket: string): S3Error {
  return new S3Error(404, "NoSuchBucket", `The specified bucket does not exist: ${bucket}.`);
}

/** The key named in the request does not exist (404 NoSuchKey). */
export function noSuchKey(): S3Error {
  return new S3Error(404, "NoSuchKey", "The specified key does not exist.");
}
