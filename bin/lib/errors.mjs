// The CLI's errors, each said as one line: exit status 1 for a failed request, 2 for a wrong
// command line.

/** The command line is wrong (unknown command or flag, missing argument): exit status 2. */
export class UsageError extends Error {
  exitCode = 2;
}

/** A request failed: the gateway's S3 error (code and message), or no usable answer. Exit status 1. */
export class RequestError extends Error {
  exitCode = 1;
  /** @param {string} message @param {{ code?: string, status?: number, detail?: string }} [opts] `detail`: the message without its code (for --json) */
  constructor(message, { code, status, detail } = {}) {
    super(message);
    this.code = code ?? null;
    this.status = status ?? null;
    this.detail = detail ?? message;
  }
}

/** Text from the gateway made safe for a terminal: no control characters (escape sequences), at most `max` characters. */
export function clean(text, max = 300) {
  const flat = String(text)
    // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]+/g, " ")
    .trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
