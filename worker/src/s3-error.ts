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
