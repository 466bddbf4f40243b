// S3 errors in words a person understands. The gateway answers S3 XML
// (<Error><Code>…</Code><Message>…</Message></Error>); the console never shows that XML.

const SENTENCES: Record<string, string> = {
  AccessDenied:
    "This key may not do that. Ask the gateway's owner for the right it needs on this bucket (read, write or owner); keys and the admin pages need the root key.",
  InvalidAccessKeyId: "The access key is not known to this gateway. Check it and sign in again.",
  SignatureDoesNotMatch: "The secret key does not match the access key. Check it and sign in again.",
  RequestTimeTooSkewed: "Your computer's clock is more than 15 minutes off. Correct it and try again.",
  NoSuchBucket: "That bucket does not exist (any more).",
  NoSuchKey: "That object does not exist (any more).",
  NoSuchUpload: "That upload is no longer in progress (it was completed, aborted or expired).",
  BucketNotEmpty: "This bucket is not empty. Delete its objects first, then delete the bucket.",
  BucketAlreadyExists: "A bucket with that name already exists.",
  BucketAlreadyOwnedByYou: "You already have a bucket with that name.",
  InvalidBucketName: "That is not a valid bucket name: use 3–63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit.",
  EntityTooSmall: "A part of the upload was too small (every part but the last must be at least 5 MiB).",
  EntityTooLarge: "The file is too large for a single upload.",
  BadDigest: "The data arrived damaged (its checksum did not match). Try again.",
  InvalidPart: "A part of the upload is missing or was changed. Retry the upload.",
  InvalidPartOrder: "The parts of the upload were out of order.",
  InvalidRange: "That byte range is outside the object.",
  PreconditionFailed: "The object changed in the meantime. Reload and try again.",
  SlowDown: "The gateway is busy or restarting. Try again in a moment.",
  ServiceUnavailable: "Not enough storage nodes answered. Try again later.",
  InternalError: "The gateway hit an internal error. Try again.",
  NotImplemented: "The gateway does not support this operation.",
  MethodNotAllowed: "That operation is not allowed here.",
  KeyTooLongError: "That object name is too long (at most 1024 bytes).",
  InvalidArgument: "The gateway rejected a parameter of the request.",
  MalformedXML: "The request was malformed.",
  ExpiredToken: "The session has expired. Sign in again.",
  NoSuchBucketPolicy: "This bucket has no policy.",
};

export class S3Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
  ) {
    super(describe(code, detail, status));
    this.name = "S3Error";
  }
}

/** A sentence for an S3 error code, falling back on the server's own message. */
export function describe(code: string, detail: string, status: number): string {
  const known = SENTENCES[code];
  if (known) return known;
  if (detail) return detail.endsWith(".") ? detail : `${detail}.`;
  if (status === 404) return "Not found.";
  if (status === 403) return "Access denied.";
  if (status >= 500) return `The gateway failed (HTTP ${status}). Try again.`;
  return `The request failed (HTTP ${status}${code ? `, ${code}` : ""}).`;
}

/** Reads an error response: S3 XML, JSON ({error}/{message}) or nothing (HEAD). */
export async function errorFrom(res: Response): Promise<S3Error> {
  let text = "";
  try {
    text = await res.text();
  } catch {
    // body unreadable
  }
  return errorFromText(res.status, text);
}

export function errorFromText(status: number, text: string): S3Error {
  let code = "";
  let message = "";
  if (text.trimStart().startsWith("<")) {
    const doc = new DOMParser().parseFromString(text, "application/xml");
    code = doc.querySelector("Error > Code")?.textContent ?? doc.querySelector("Code")?.textContent ?? "";
    message = doc.querySelector("Error > Message")?.textContent ?? "";
  } else if (text.trimStart().startsWith("{")) {
    try {
      const j = JSON.parse(text) as { code?: unknown; error?: unknown; message?: unknown };
      code = typeof j.code === "string" ? j.code : "";
      message = typeof j.message === "string" ? j.message : typeof j.error === "string" ? j.error : "";
    } catch {
      // not JSON after all
    }
  }
  if (!code) code = status === 404 ? "NotFound" : status === 403 ? "AccessDenied" : "";
  return new S3Error(status, code, message);
}

/** Any thrown value as a sentence. */
export function messageOf(e: unknown): string {
  if (e instanceof S3Error) return e.message;
  if (e instanceof DOMException && e.name === "AbortError") return "Cancelled.";
  if (e instanceof TypeError) return "The gateway could not be reached. Check the connection and try again.";
  // Client-side encryption's refusals (client/src/sealed.ts), by name: they may come from a worker.
  if (e instanceof Error && e.name === "WrongPassphrase") return "Wrong passphrase: it does not open this object's key. Nothing was decrypted.";
  if (e instanceof Error && e.name === "CorruptObject")
    return `This object cannot be decrypted: its stored bytes or its header are not what was encrypted (tampered, truncated, or the wrong key). No byte of it is shown. (${e.message})`;
  if (e instanceof Error) return e.message;
  return String(e);
}

/** A refused configuration in the gateway's own words (InvalidArgument, InvalidRequest: its reason), else as messageOf says. */
export function refusalOf(e: unknown): string {
  const reasoned = e instanceof S3Error && (e.code === "InvalidArgument" || e.code === "InvalidRequest") && e.detail !== "";
  return reasoned ? describe("", (e as S3Error).detail, 400) : messageOf(e);
}
