// Secrets the CLI is given: a node's secret key piped in, and the passphrase or key file of a sealed
// object. None is taken from the command line alone (it would land in the shell's history and in
// `ps`): a file, standard input, an environment variable, or a prompt that does not echo.
import { readFileSync, statSync } from "node:fs";
import { clean, UsageError } from "./errors.mjs";

/** The most a secret read from stdin or a passphrase file may be. */
const MAX_SECRET_BYTES = 64 * 1024;
/** A key file's bytes (client/src/sealed.ts: the key-encryption key itself). */
const KEY_FILE_BYTES = 32;
/** The environment variable a passphrase may come from. */
export const PASSPHRASE_VAR = "SHARDGATE_PASSPHRASE";

/** Text without its one last line break (what `echo` and editors add). */
const withoutNewline = (text) => text.replace(/\r?\n$/, "");

/** Reads stdin to its end (a secret piped in), without its last line break. */
export async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) {
    chunks.push(chunk);
    if (chunks.reduce((n, c) => n + c.length, 0) > MAX_SECRET_BYTES) throw new UsageError("stdin holds more than 64 KiB: not a secret key.");
  }
  return withoutNewline(Buffer.concat(chunks).toString("utf8"));
}

/** A file's bytes, refused (UsageError) when it is missing, not a file, or larger than `max`. */
function readSmallFile(path, flag, max) {
  let stat;
  try {
    stat = statSync(path);
  } catch (e) {
    throw new UsageError(`--${flag} ${clean(path, 100)}: ${e.code === "ENOENT" ? "no such file" : clean(e.message, 100)}.`);
  }
  if (!stat.isFile()) throw new UsageError(`--${flag} ${clean(path, 100)} is not a file.`);
  if (stat.size > max) throw new UsageError(`--${flag} ${clean(path, 100)} is ${stat.size} bytes: too large for a ${flag.replace(/-/g, " ")}.`);
  return readFileSync(path);
}

/**
 * Asks `questions` on the terminal in turn and reads a line for each, not echoed: the terminal is in
 * raw mode from before the first question shows to after the last answer, so nothing typed ahead is
 * echoed either. Ctrl-C or Ctrl-D cancels.
 */
function ask(questions) {
  const { stdin, stderr } = process;
  stdin.setRawMode(true);
  stdin.resume();
  stderr.write(questions[0]);
  const answers = [];
  let typed = [];
  return new Promise((resolve, reject) => {
    const done = () => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
    };
    const onData = (buffer) => {
      for (const ch of buffer.toString("utf8")) {
        if (ch === "\r" || ch === "\n") {
          answers.push(typed.join(""));
          typed = [];
          stderr.write("\n");
          if (answers.length === questions.length) {
            done();
            return resolve(answers);
          }
          stderr.write(questions[answers.length]);
        } else if (ch === "\u0003" || ch === "\u0004") {
          done();
          stderr.write("\n");
          return reject(new UsageError("no passphrase given (cancelled)."));
        } else if (ch === "\u007f" || ch === "\b") typed = typed.slice(0, -1);
        else typed.push(ch);
      }
    };
    stdin.on("data", onData);
  });
}

/**
 * How a sealed object is opened or sealed (client/src/sealed.ts's Encryption), from the flags:
 * `--key-file FILE` (its 32 bytes), `--passphrase-file FILE` (`-`: standard input; its text without
 * the last line break, or the prompt when it is a terminal), else $SHARDGATE_PASSPHRASE, else a
 * prompt when a terminal is there (twice for `confirm`: a new passphrase). Null when none can be
 * had. `what` names the object in the prompt.
 */
export async function encryptionOf(ctx, what, { confirm = false } = {}) {
  const { "key-file": keyFile, "passphrase-file": passphraseFile } = ctx.flags;
  if (keyFile !== undefined && passphraseFile !== undefined) throw new UsageError("give --key-file or --passphrase-file, not both.");
  if (keyFile !== undefined) {
    const key = readSmallFile(keyFile, "key-file", KEY_FILE_BYTES);
    if (key.length !== KEY_FILE_BYTES)
      throw new UsageError(
        `--key-file ${clean(keyFile, 100)} holds ${key.length} bytes: a key file is exactly ${KEY_FILE_BYTES} (e.g. head -c 32 /dev/urandom > FILE).`,
      );
    return { key: new Uint8Array(key) };
  }
  let passphrase;
  const terminal = process.stdin.isTTY && process.stderr.isTTY;
  // `-` with a terminal as standard input is asked for below: read as lines, what is typed would be echoed.
  if (passphraseFile === "-" && !terminal) passphrase = await readStdin();
  else if (passphraseFile !== undefined && passphraseFile !== "-")
    passphrase = withoutNewline(readSmallFile(passphraseFile, "passphrase-file", MAX_SECRET_BYTES).toString("utf8"));
  else if (passphraseFile === undefined && ctx.env[PASSPHRASE_VAR]) passphrase = ctx.env[PASSPHRASE_VAR];
  else if (terminal) {
    const answers = await ask([`Passphrase for ${clean(what, 100)}: `, ...(confirm ? ["The same passphrase again: "] : [])]);
    passphrase = answers[0];
    if (answers.some((a) => a !== passphrase)) throw new UsageError("the two passphrases differ: nothing was done.");
  } else return null;
  if (passphrase === "") throw new UsageError("the passphrase is empty.");
  return { passphrase };
}
