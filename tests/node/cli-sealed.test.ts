// `shardgate get` and `shardgate put` (bin/lib/objects.mjs, docs/cli.md "Objects") with sealed
// objects (issue #43; docs/storage-format.md "Client-side encryption"): the real bin run with
// child_process against `npm start`'s gateway. The CLI opens what @shardgate/client sealed and the
// other way round, byte for byte (sha256), whole and ranged; a wrong passphrase or key file, a
// tampered object and a plain object passed off as sealed are refused with one line, a non-zero exit
// and no output file; the passphrase is never an argument; S3 clients (the AWS CLI, a plain signed
// GET) get the ciphertext and the marker metadata.
import { createHash } from "node:crypto";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Encryption, ShardgateClient } from "../../client/src/index";
import { decodeHeader, SEGMENT_BYTES, storedSize } from "../../client/src/sealed";
import * as bindings from "../../core/pkg/shardgate_core.js";
import { Core } from "../../worker/src/shared/core-api";
import { randomBytes } from "../shared/core-suite";
import { CREDENTIALS, Gateway } from "./gateway";
import { clientEnv, oneLineError, pythonTool, ROOT, run, type RunResult } from "./tools";

const BIN = join(ROOT, "bin/shardgate.mjs");
const memory = bindings.initSync({ module: readFileSync(new URL("../../core/pkg/shardgate_core_bg.wasm", import.meta.url)) }).memory;
const core = new Core(bindings, memory);
const gateway = new Gateway();
const aws = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
const ROOT_KEYS = { AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey };
const MARKER = Buffer.from("CLI-SEALED-PLAINTEXT-MARKER:5b1d");
const PASSPHRASE = "a passphrase only the CLI's user knows";
let dir: string;
let client: ShardgateClient;

const s3 = (path: string, init: RequestInit = {}) => aws.fetch(`${gateway.base}${path}`, init);
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const at = (name: string) => join(dir, name);

/** `n` random bytes with MARKER every 64 KiB. */
function marked(n: number, seed: number): Buffer {
  const data = Buffer.from(randomBytes(n, seed));
  for (let i = 0; i + MARKER.length <= n; i += 64 * 1024) MARKER.copy(data, i);
  return data;
}

/** `shardgate ARGS…` against the gateway, with the root key (and `env` over it), in the temp folder. */
function cli(
  args: string[],
  opts: { env?: Record<string, string>; input?: string; timeoutMs?: number; endpoint?: string; node?: string } = {},
): Promise<RunResult> {
  const env = clientEnv({ HOME: dir, ...ROOT_KEYS });
  delete env.SHARDGATE_ENDPOINT;
  delete env.SHARDGATE_PASSPHRASE;
  Object.assign(env, opts.env ?? {});
  const argv = [BIN, "--endpoint", opts.endpoint ?? gateway.base, ...args];
  return run(opts.node ?? process.execPath, argv, { env, input: opts.input, cwd: dir, timeoutMs: opts.timeoutMs ?? 60_000 });
}

async function ok(args: string[], opts: Parameters<typeof cli>[1] = {}): Promise<RunResult> {
  const res = await cli(args, opts);
  if (res.code !== 0) throw new Error(`shardgate ${args.join(" ")} exited with ${res.code}\n--- stdout\n${res.stdout}\n--- stderr\n${res.stderr}`);
  return res;
}

/** No file of the temp folder is `name` or a partial download of it. */
function noOutput(name: string): void {
  expect(readdirSync(dir).filter((f) => f === name || f.startsWith(`${name}.shardgate-`))).toEqual([]);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "shardgate-cli-sealed-"));
  writeFileSync(at("pass"), `${PASSPHRASE}\n`);
  writeFileSync(at("wrong-pass"), "not the passphrase\n");
  writeFileSync(at("key"), randomBytes(32, 77));
  writeFileSync(at("other-key"), randomBytes(32, 78));
  await gateway.start();
  client = new ShardgateClient({ endpoint: gateway.base, ...CREDENTIALS, core });
  expect((await s3("/vault", { method: "PUT" })).status).toBe(200);
}, 120_000);
afterAll(async () => {
  await gateway.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe("shardgate get and put with sealed objects", () => {
  // 5 segments and a bit: ranges cross segment boundaries.
  const plain = marked(5 * SEGMENT_BYTES + 4321, 11);
  beforeAll(() => writeFileSync(at("plain.bin"), plain));

  it("bin/lib/pkg/sealed.mjs is the build of client/src/sealed.ts (the format has one source)", async () => {
    const res = await run(process.execPath, [join(ROOT, "scripts/build-cli-sealed.mjs"), "--check"], { env: process.env });
    expect(res.code, res.stderr).toBe(0);
  });

  it("put --encrypt sends only ciphertext and the marker; S3 clients get exactly that; get decrypts it byte for byte", async () => {
    const put = JSON.parse((await ok(["put", "plain.bin", "vault/docs/plain.bin", "--encrypt", "--passphrase-file", "pass", "--json"])).stdout);
    expect(put).toMatchObject({ bucket: "vault", key: "docs/plain.bin", size: plain.length, stored: storedSize(plain.length, SEGMENT_BYTES), sealed: true });

    // A plain signed GET: the ciphertext, its length, the header; no plaintext.
    const got = await s3("/vault/docs/plain.bin");
    expect(got.status).toBe(200);
    const header = decodeHeader(got.headers.get("x-amz-meta-shardgate-sealed") ?? "");
    expect(header).toMatchObject({
      size: plain.length,
      segmentBytes: SEGMENT_BYTES,
      kdf: { type: "argon2id", params: { memoryKiB: 65536, passes: 3, lanes: 1 } },
    });
    const cipher = Buffer.from(await got.arrayBuffer());
    expect(cipher.length).toBe(storedSize(plain.length, SEGMENT_BYTES));
    expect(cipher.includes(MARKER)).toBe(false);
    // The AWS CLI: the same ciphertext and the marker in its metadata.
    const awsEnv = clientEnv({ ...ROOT_KEYS, AWS_DEFAULT_REGION: "us-east-1", AWS_CONFIG_FILE: at("none"), AWS_SHARED_CREDENTIALS_FILE: at("none") });
    const awsRun = await run(
      pythonTool("aws"),
      ["--endpoint-url", gateway.base, "s3api", "get-object", "--bucket", "vault", "--key", "docs/plain.bin", at("via-aws")],
      {
        env: awsEnv,
        cwd: dir,
        timeoutMs: 120_000,
      },
    );
    expect(awsRun.code, awsRun.stderr).toBe(0);
    expect(JSON.parse(awsRun.stdout).Metadata["shardgate-sealed"]).toBe(got.headers.get("x-amz-meta-shardgate-sealed"));
    expect(sha256(readFileSync(at("via-aws")))).toBe(sha256(cipher));
    // Neither the passphrase nor the plaintext is in the gateway's log.
    expect(gateway.log).not.toContain(PASSPHRASE);
    expect(Buffer.from(gateway.log).includes(MARKER)).toBe(false);

    const res = await ok(["get", "vault/docs/plain.bin", "out.bin", "--passphrase-file", "pass"]);
    expect(res.stdout).toMatch(/vault\/docs\/plain\.bin → out\.bin: .*sealed: decrypted and authenticated here/);
    expect(sha256(readFileSync(at("out.bin")))).toBe(sha256(plain));
    // Decrypted plaintext is the owner's only.
    expect(statSync(at("out.bin")).mode & 0o077).toBe(0);
    // And the library opens what the CLI sealed.
    const down = await client.download("vault", "docs/plain.bin", { encryption: { passphrase: PASSPHRASE } });
    expect(sha256(Buffer.from(await new Response(down.body).arrayBuffer()))).toBe(sha256(plain));
  }, 180_000);

  it("ranged gets are byte-exact at every kind of boundary, to a file and to stdout", async () => {
    const S = SEGMENT_BYTES;
    const n = plain.length;
    for (const [first, last] of [
      [0, 0],
      [S - 1, S], // across a segment boundary
      [S, 2 * S - 1], // exactly one segment
      [3, 4 * S + 7], // several
      [n - 1, n - 1], // the last byte
      [n - 100, n + 5000], // past the end: to the end, as HTTP
    ]) {
      const res = await ok(["get", "vault/docs/plain.bin", "-", "--range", `${first}-${last}`, "--passphrase-file", "pass"]);
      expect(sha256(res.stdoutBytes), `${first}-${last}`).toBe(sha256(plain.subarray(first, last + 1)));
    }
    const open = await ok(["get", "vault/docs/plain.bin", "tail.bin", "--range", `${2 * S + 5}-`, "--passphrase-file", "pass", "--json"]);
    expect(JSON.parse(open.stdout)).toMatchObject({ range: { start: 2 * S + 5, end: n }, size: n, sealed: true });
    expect(sha256(readFileSync(at("tail.bin")))).toBe(sha256(plain.subarray(2 * S + 5)));
    // A range starting past the end is refused, as S3 does.
    expect(oneLineError(await cli(["get", "vault/docs/plain.bin", "-", "--range", `${n}-`, "--passphrase-file", "pass"]), 1)).toContain("InvalidRange");
    for (const bad of ["5", "9-3", "-5", "a-b", "1-2-3"])
      expect(oneLineError(await cli(["get", "vault/docs/plain.bin", "-", "--range", bad, "--passphrase-file", "pass"]), 2)).toContain("--range");
  }, 180_000);

  it("the passphrase comes from a file, standard input or SHARDGATE_PASSPHRASE, never an argument", async () => {
    const viaStdin = await ok(["get", "vault/docs/plain.bin", "-", "--range", "0-99", "--passphrase-file", "-"], { input: `${PASSPHRASE}\n` });
    expect(viaStdin.stdoutBytes.equals(plain.subarray(0, 100))).toBe(true);
    const viaEnv = await ok(["get", "vault/docs/plain.bin", "-", "--range", "0-99"], { env: { SHARDGATE_PASSPHRASE: PASSPHRASE } });
    expect(viaEnv.stdoutBytes.equals(plain.subarray(0, 100))).toBe(true);
    // No flag takes the passphrase itself.
    expect(oneLineError(await cli(["get", "vault/docs/plain.bin", "x", "--passphrase", PASSPHRASE]), 2)).toContain("unknown flag --passphrase");
    // None at all, and no terminal to ask on: said, exit 2, nothing written.
    expect(oneLineError(await cli(["get", "vault/docs/plain.bin", "none.bin"]), 2)).toMatch(
      /is sealed .*--passphrase-file FILE, --key-file FILE or SHARDGATE_PASSPHRASE/,
    );
    noOutput("none.bin");
    expect(oneLineError(await cli(["put", "plain.bin", "vault/x", "--encrypt"]), 2)).toContain("--encrypt needs a passphrase or key");
    expect(oneLineError(await cli(["get", "vault/docs/plain.bin", "x", "--passphrase-file", "pass", "--key-file", "key"]), 2)).toContain("not both");
    expect(oneLineError(await cli(["get", "vault/docs/plain.bin", "x", "--passphrase-file", "no-such-file"]), 2)).toContain("no such file");
    writeFileSync(at("empty-pass"), "\n");
    expect(oneLineError(await cli(["get", "vault/docs/plain.bin", "x", "--passphrase-file", "empty-pass"]), 2)).toContain("empty");
  }, 120_000);

  it("at a terminal the passphrase is asked for and not echoed (twice for put --encrypt, which stops when the two differ)", async () => {
    /** The CLI on a pseudo-terminal (tests/python/pty_run.py), `answers` typed at its prompts. */
    const atTerminal = (args: string[], answers: string[]) => {
      const env = clientEnv({ HOME: dir, ...ROOT_KEYS, ANSWERS: answers.join("\n") });
      delete env.SHARDGATE_PASSPHRASE;
      const argv = [join(ROOT, "tests/python/pty_run.py"), process.execPath, BIN, "--endpoint", gateway.base, ...args];
      return run(pythonTool("python"), argv, { env, cwd: dir, timeoutMs: 60_000 });
    };
    const differ = await atTerminal(["put", "plain.bin", "vault/tty-put.bin", "--encrypt"], ["one passphrase", "another one"]);
    expect(differ.code, differ.stdout).toBe(2);
    expect(differ.stdout).toContain("the two passphrases differ: nothing was done");
    expect(differ.stdout).not.toContain("one passphrase");
    expect((await s3("/vault/tty-put.bin", { method: "HEAD" })).status).toBe(404);
    const same = await atTerminal(["put", "plain.bin", "vault/tty-put.bin", "--encrypt"], [PASSPHRASE, PASSPHRASE]);
    expect(same.code, same.stdout).toBe(0);
    expect(same.stdout).toContain("Passphrase for vault/tty-put.bin: ");
    expect(same.stdout).not.toContain(PASSPHRASE);
    const got = await atTerminal(["get", "vault/tty-put.bin", "tty.bin"], [PASSPHRASE]);
    expect(got.code, got.stdout).toBe(0);
    expect(got.stdout).not.toContain(PASSPHRASE);
    expect(sha256(readFileSync(at("tty.bin")))).toBe(sha256(plain));
    // --passphrase-file - with a terminal as standard input: asked for without echo too, not read as echoed lines up to Ctrl-D.
    const dash = await atTerminal(["get", "vault/tty-put.bin", "tty-dash.bin", "--passphrase-file", "-"], [PASSPHRASE]);
    expect(dash.code, dash.stdout).toBe(0);
    expect(dash.stdout).toContain("Passphrase for vault/tty-put.bin: ");
    expect(dash.stdout).not.toContain(PASSPHRASE);
    expect(sha256(readFileSync(at("tty-dash.bin")))).toBe(sha256(plain));
    // Ctrl-C at the prompt: nothing asked of the gateway beyond the HEAD, nothing written.
    const cancelled = await atTerminal(["get", "vault/tty-put.bin", "cancelled.bin"], ["\u0003"]);
    expect(cancelled.code, cancelled.stdout).toBe(2);
    expect(cancelled.stdout).toContain("no passphrase given (cancelled)");
    noOutput("cancelled.bin");
  }, 120_000);

  it("a wrong passphrase or key file is refused with one clear line, exit 1, and no output file", async () => {
    const wrong = oneLineError(await cli(["get", "vault/docs/plain.bin", "wrong.bin", "--passphrase-file", "wrong-pass"]), 1);
    expect(wrong).toBe("shardgate: WrongPassphrase: wrong passphrase or key file: the object's data key does not open");
    noOutput("wrong.bin");
    const stdout = await cli(["get", "vault/docs/plain.bin", "-", "--passphrase-file", "wrong-pass"]);
    oneLineError(stdout, 1);
    expect(stdout.stdoutBytes.length).toBe(0);
    // The object is sealed with a passphrase: a key file does not open it.
    expect(oneLineError(await cli(["get", "vault/docs/plain.bin", "k.bin", "--key-file", "key"]), 1)).toContain("sealed with a passphrase, not a key file");
    noOutput("k.bin");
    // --json: the error as JSON.
    const json = await cli(["get", "vault/docs/plain.bin", "-", "--passphrase-file", "wrong-pass", "--json"]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr).error.code).toBe("WrongPassphrase");
  }, 120_000);

  it("key files: put and get with one; another key, a passphrase or a key file of another size are refused", async () => {
    const small = marked(1000, 3);
    writeFileSync(at("small.bin"), small);
    await ok(["put", "small.bin", "vault/small.bin", "--encrypt", "--key-file", "key", "--content-type", "text/x-secret"]);
    const head = await s3("/vault/small.bin", { method: "HEAD" });
    expect(head.headers.get("content-type")).toBe("text/x-secret");
    expect(decodeHeader(head.headers.get("x-amz-meta-shardgate-sealed") ?? "").kdf).toEqual({ type: "key" });
    await ok(["get", "vault/small.bin", "small.out", "--key-file", "key"]);
    expect(readFileSync(at("small.out")).equals(small)).toBe(true);
    expect(oneLineError(await cli(["get", "vault/small.bin", "-", "--key-file", "other-key"]), 1)).toContain("WrongPassphrase");
    expect(oneLineError(await cli(["get", "vault/small.bin", "-", "--passphrase-file", "pass"]), 1)).toContain("sealed with a key file, not a passphrase");
    writeFileSync(at("short-key"), randomBytes(31, 1));
    expect(oneLineError(await cli(["get", "vault/small.bin", "-", "--key-file", "short-key"]), 2)).toContain("exactly 32");
    writeFileSync(at("long-key"), randomBytes(33, 1));
    expect(oneLineError(await cli(["get", "vault/small.bin", "-", "--key-file", "long-key"]), 2)).toContain("too large");
    // An empty object sealed and opened.
    writeFileSync(at("empty.bin"), "");
    await ok(["put", "empty.bin", "vault/empty.bin", "--encrypt", "--key-file", "key"]);
    await ok(["get", "vault/empty.bin", "empty.out", "--key-file", "key"]);
    expect(readFileSync(at("empty.out")).length).toBe(0);
    expect(oneLineError(await cli(["get", "vault/empty.bin", "-", "--range", "0-0", "--key-file", "key"]), 1)).toContain("InvalidRange");
  }, 120_000);

  it("the CLI opens what @shardgate/client sealed by the direct path, whole and ranged", async () => {
    const big = marked(3 * 1024 * 1024 + 777, 5);
    const passphrase: Encryption = { passphrase: PASSPHRASE, kdf: { memoryKiB: 256, passes: 1, lanes: 1 } };
    const up = await client.upload("vault", "from-client.bin", big, { encryption: passphrase });
    expect(up.mode).toBe("direct");
    await ok(["get", "vault/from-client.bin", "fc.bin", "--passphrase-file", "pass"]);
    expect(sha256(readFileSync(at("fc.bin")))).toBe(sha256(big));
    const ranged = await ok(["get", "vault/from-client.bin", "-", "--range", "1048570-2097160", "--passphrase-file", "pass"]);
    expect(sha256(ranged.stdoutBytes)).toBe(sha256(big.subarray(1048570, 2097161)));
  }, 180_000);

  it("a tampered or truncated object, or a plain one in a sealed one's place, is refused: no unauthenticated byte is written", async () => {
    const original = Buffer.from(await (await s3("/vault/docs/plain.bin")).arrayBuffer());
    const header = (await s3("/vault/docs/plain.bin", { method: "HEAD" })).headers.get("x-amz-meta-shardgate-sealed") ?? "";
    const putStored = (key: string, bytes: Uint8Array, meta: Record<string, string>) =>
      s3(`/vault/${key}`, { method: "PUT", body: bytes as Uint8Array<ArrayBuffer>, headers: meta });
    // One byte flipped in the third segment: the first two are written to stdout, then the error.
    const flipped = Buffer.from(original);
    flipped[2 * (SEGMENT_BYTES + 16) + 100] ^= 1;
    expect((await putStored("tampered.bin", flipped, { "x-amz-meta-shardgate-sealed": header })).status).toBe(200);
    const toFile = oneLineError(await cli(["get", "vault/tampered.bin", "t.bin", "--passphrase-file", "pass"]), 1);
    expect(toFile).toContain("CorruptObject: segment 2 fails authentication");
    noOutput("t.bin");
    const toStdout = await cli(["get", "vault/tampered.bin", "-", "--passphrase-file", "pass"]);
    oneLineError(toStdout, 1);
    expect(toStdout.stdoutBytes.length).toBeLessThanOrEqual(2 * SEGMENT_BYTES);
    expect(toStdout.stdoutBytes.equals(plain.subarray(0, toStdout.stdoutBytes.length))).toBe(true);
    // A range that does not touch the tampered segment still reads.
    const before = await ok(["get", "vault/tampered.bin", "-", "--range", "0-999", "--passphrase-file", "pass"]);
    expect(before.stdoutBytes.equals(plain.subarray(0, 1000))).toBe(true);
    // Cut short by a segment: its length no longer matches the header.
    expect((await putStored("short.bin", original.subarray(0, original.length - 100), { "x-amz-meta-shardgate-sealed": header })).status).toBe(200);
    expect(oneLineError(await cli(["get", "vault/short.bin", "s.bin", "--passphrase-file", "pass"]), 1)).toContain("truncated or extended");
    noOutput("s.bin");
    // A garbage header.
    expect((await putStored("garbage.bin", original, { "x-amz-meta-shardgate-sealed": "AAAA" })).status).toBe(200);
    expect(oneLineError(await cli(["get", "vault/garbage.bin", "g.bin", "--passphrase-file", "pass"]), 1)).toContain(
      "CorruptObject: the shardgate-sealed header is invalid",
    );
    // A plain object where a sealed one was expected: not written as if it were the plaintext.
    expect((await putStored("plain-swap.bin", plain, {})).status).toBe(200);
    expect(oneLineError(await cli(["get", "vault/plain-swap.bin", "p.bin", "--passphrase-file", "pass"]), 1)).toContain("it was not sealed");
    noOutput("p.bin");
    // Without a passphrase a plain object downloads as it is (and --passphrase-file seals nothing without --encrypt).
    await ok(["get", "vault/plain-swap.bin", "p.bin"]);
    expect(sha256(readFileSync(at("p.bin")))).toBe(sha256(plain));
    expect(oneLineError(await cli(["put", "plain.bin", "vault/x", "--passphrase-file", "pass"]), 2)).toContain("only with --encrypt");
  }, 180_000);

  it("a gateway that strips the header cannot pass plain bytes off as the plaintext when SHARDGATE_PASSPHRASE gives the passphrase", async () => {
    // What a hostile gateway (or anyone with S3 access) answers in a sealed object's place: bytes of its choosing, no header.
    const forged = Buffer.from("bytes the gateway chose, not what was sealed");
    expect((await s3("/vault/stripped.bin", { method: "PUT", body: forged })).status).toBe(200);
    const env = { SHARDGATE_PASSPHRASE: PASSPHRASE };
    expect(oneLineError(await cli(["get", "vault/stripped.bin", "stripped.out"], { env }), 1)).toContain("it was not sealed");
    noOutput("stripped.out");
    const toStdout = await cli(["get", "vault/stripped.bin", "-", "--range", "0-9"], { env });
    expect(oneLineError(toStdout, 1)).toContain("it was not sealed");
    expect(toStdout.stdoutBytes.length).toBe(0);
    // Without a passphrase from anywhere it is a plain object, downloaded as it is.
    await ok(["get", "vault/stripped.bin", "stripped.out"]);
    expect(readFileSync(at("stripped.out")).equals(forged)).toBe(true);
  }, 120_000);

  it("put with SHARDGATE_PASSPHRASE but without --encrypt sends nothing: the plaintext is not uploaded by a forgotten flag", async () => {
    const res = await cli(["put", "plain.bin", "vault/forgot-encrypt.bin"], { env: { SHARDGATE_PASSPHRASE: PASSPHRASE } });
    expect(oneLineError(res, 2)).toContain("only with --encrypt");
    expect((await s3("/vault/forgot-encrypt.bin", { method: "HEAD" })).status).toBe(404);
  }, 60_000);

  it("plain objects: put and get (whole, ranged), and the errors of a missing object, bucket or file and of a wrong secret key", async () => {
    const data = marked(200_000, 9);
    writeFileSync(at("p2.bin"), data);
    await ok(["put", "p2.bin", "vault/dir//p2.bin"]);
    await ok(["get", "vault/dir//p2.bin", "p2.out"]);
    expect(readFileSync(at("p2.out")).equals(data)).toBe(true);
    const ranged = await ok(["get", "vault/dir//p2.bin", "-", "--range", "100-199"]);
    expect(ranged.stdoutBytes.equals(data.subarray(100, 200))).toBe(true);
    expect(oneLineError(await cli(["get", "vault/nothing-here", "n.bin"]), 1)).toContain("NoSuchKey");
    noOutput("n.bin");
    expect(oneLineError(await cli(["get", "vault", "n.bin"]), 2)).toContain("is not BUCKET/KEY");
    expect(oneLineError(await cli(["get", "vault/a/../b", "n.bin"]), 2)).toContain('"." or ".."');
    expect(oneLineError(await cli(["put", "no-such.bin", "vault/x"]), 2)).toContain("no such file");
    expect(oneLineError(await cli(["put", ".", "vault/x"]), 2)).toContain("not a file");
    expect(oneLineError(await cli(["put", "p2.bin", "no-such-bucket/x"]), 1)).toContain("NoSuchBucket");
    expect(oneLineError(await cli(["get", "no-such-bucket/x", "n.bin"]), 1)).toContain("NoSuchBucket");
    // A wrong secret key: the gateway's error named (a HEAD's has no body), and nothing is written.
    expect(oneLineError(await cli(["get", "vault/dir//p2.bin", "d.bin"], { env: { AWS_SECRET_ACCESS_KEY: "wrong" } }), 1)).toContain("SignatureDoesNotMatch");
    noOutput("d.bin");
    expect(existsSync(at("x"))).toBe(false);
  }, 120_000);

  it("--version-id: after a rewrap the earlier version still opens with the old passphrase, the current one with the new", async () => {
    expect((await s3("/history", { method: "PUT" })).status).toBe(200);
    const versioning = "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
    expect((await s3("/history?versioning", { method: "PUT", body: versioning })).status).toBe(200);
    const v1 = JSON.parse((await ok(["put", "plain.bin", "history/doc.bin", "--encrypt", "--passphrase-file", "pass", "--json"])).stdout).versionId;
    expect(v1).toBeTruthy();
    writeFileSync(at("new-pass"), "the new passphrase\n");
    const v2 = (
      await client.rewrap("history", "doc.bin", { passphrase: PASSPHRASE }, { passphrase: "the new passphrase", kdf: { memoryKiB: 256, passes: 1, lanes: 1 } })
    ).versionId;
    expect(v2).not.toBe(v1);
    const old = await ok(["get", "history/doc.bin", "-", "--version-id", v1, "--range", "0-999", "--passphrase-file", "pass"]);
    expect(old.stdoutBytes.equals(plain.subarray(0, 1000))).toBe(true);
    const current = await ok(["get", "history/doc.bin", "-", "--range", "0-999", "--passphrase-file", "new-pass"]);
    expect(current.stdoutBytes.equals(plain.subarray(0, 1000))).toBe(true);
    expect(oneLineError(await cli(["get", "history/doc.bin", "-", "--passphrase-file", "pass"]), 1)).toContain("WrongPassphrase");
    expect(oneLineError(await cli(["get", "history/doc.bin", "-", "--version-id", v1, "--passphrase-file", "new-pass"]), 1)).toContain("WrongPassphrase");
    expect(oneLineError(await cli(["get", "history/doc.bin", "-", "--version-id", "no-such-version", "--passphrase-file", "pass"]), 1)).toMatch(
      /NoSuchVersion|InvalidArgument/,
    );
  }, 120_000);

  it("put sends a SHA-256 of what it stores in an aws-chunked trailer: kept as the checksum, and the proof object lock's retention asks for", async () => {
    expect((await s3("/locked", { method: "PUT", headers: { "x-amz-bucket-object-lock-enabled": "true" } })).status).toBe(200);
    const config =
      "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days></DefaultRetention></Rule></ObjectLockConfiguration>";
    expect((await s3("/locked?object-lock", { method: "PUT", body: config })).status).toBe(200);
    // A PutObject without a checksum is refused there.
    expect((await s3("/locked/no-proof", { method: "PUT", body: "x" })).status).toBe(400);
    for (const [key, sealed] of [
      ["plain.bin", false],
      ["sealed.bin", true],
    ] as const) {
      await ok(["put", "plain.bin", `locked/${key}`, ...(sealed ? ["--encrypt", "--passphrase-file", "pass"] : [])]);
      const head = await s3(`/locked/${key}`, { method: "HEAD", headers: { "x-amz-checksum-mode": "ENABLED" } });
      expect(head.headers.get("x-amz-object-lock-mode")).toBe("GOVERNANCE");
      expect(head.headers.get("content-encoding")).toBeNull();
      const stored = Buffer.from(await (await s3(`/locked/${key}`)).arrayBuffer());
      expect(stored.length).toBe(sealed ? storedSize(plain.length, SEGMENT_BYTES) : plain.length);
      expect(head.headers.get("x-amz-checksum-sha256")).toBe(createHash("sha256").update(stored).digest("base64"));
    }
    const got = await ok(["get", "locked/sealed.bin", "-", "--passphrase-file", "pass"]);
    expect(sha256(got.stdoutBytes)).toBe(sha256(plain));
  }, 120_000);

  it("a body altered on the way is refused by the gateway (BadDigest against the trailer), one line, exit 1, nothing stored", async () => {
    // A proxy to the gateway that flips one byte of every PUT's body (the Host header, and so the signature, kept as sent).
    const target = new URL(gateway.base);
    const proxy = http.createServer((req, res) => {
      const out = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      let seen = 0;
      req.on("data", (piece: Buffer) => {
        if (req.method === "PUT" && seen <= 200 && seen + piece.length > 200) piece[200 - seen] ^= 1;
        seen += piece.length;
        out.write(piece);
      });
      req.on("end", () => out.end());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const res = await cli(["put", "plain.bin", "vault/altered.bin", "--encrypt", "--passphrase-file", "pass"], { endpoint: base });
      expect(oneLineError(res, 1)).toContain("BadDigest");
      expect((await s3("/vault/altered.bin", { method: "HEAD" })).status).toBe(404);
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  }, 120_000);

  it("runs on the system's Node 20 too (no TypeScript, no build step): seals and opens", async () => {
    const system = ["/usr/bin/node", "/bin/node"].find((p) => existsSync(p));
    if (!system) return; // no system Node on this machine: the test's own Node ran everything above
    await ok(["put", "plain.bin", "vault/node20.bin", "--encrypt", "--passphrase-file", "pass"], { node: system });
    const res = await ok(["get", "vault/node20.bin", "-", "--range", "70000-70099", "--passphrase-file", "pass"], { node: system });
    expect(res.stdoutBytes.equals(plain.subarray(70000, 70100))).toBe(true);
  }, 120_000);

  it("a gateway that stalls mid-download is one line, exit 1, and no output file, never a hang", async () => {
    // A sealed object's HEAD as the real one answers, then a GET that sends its headers, a little, and stops.
    const real = await s3("/vault/docs/plain.bin", { method: "HEAD" });
    const sealed = real.headers.get("x-amz-meta-shardgate-sealed") ?? "";
    const length = real.headers.get("content-length") ?? "0";
    const server = http.createServer((req, res) => {
      res.writeHead(req.method === "HEAD" ? 200 : 206, { "content-length": length, "x-amz-meta-shardgate-sealed": sealed, etag: '"e"' });
      if (req.method === "HEAD") res.end();
      else res.write(Buffer.alloc(1000)); // then nothing
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const stalled = await cli(["get", "vault/stall.bin", "stall.out", "--passphrase-file", "pass", "--timeout", "2"], { endpoint: base });
      expect(oneLineError(stalled, 1)).toMatch(/nothing sent or received for 2 s \(--timeout\)/);
      noOutput("stall.out");
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 120_000);

  it("a download stopped by a signal (Ctrl-C, kill) leaves no partial file of decrypted plaintext behind", async () => {
    // 40 segments: the first batches are authenticated and written to the partial file before the gateway stalls.
    const big = marked(40 * SEGMENT_BYTES, 9);
    const encryption: Encryption = { passphrase: PASSPHRASE, kdf: { memoryKiB: 256, passes: 1, lanes: 1 } };
    await client.upload("vault", "interrupted.bin", big, { encryption });
    const stored = Buffer.from(await (await s3("/vault/interrupted.bin")).arrayBuffer());
    const real = await s3("/vault/interrupted.bin", { method: "HEAD" });
    const server = http.createServer((req, res) => {
      res.writeHead(req.method === "HEAD" ? 200 : 206, {
        "content-length": String(stored.length),
        "x-amz-meta-shardgate-sealed": real.headers.get("x-amz-meta-shardgate-sealed") ?? "",
        etag: '"e"',
      });
      if (req.method === "HEAD") res.end();
      else res.write(stored.subarray(0, stored.length / 2)); // then nothing
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      for (const signal of ["SIGINT", "SIGTERM"] as const) {
        const env = clientEnv({ HOME: dir, ...ROOT_KEYS });
        delete env.SHARDGATE_ENDPOINT;
        delete env.SHARDGATE_PASSPHRASE;
        const argv = [BIN, "--endpoint", base, "get", "vault/interrupted.bin", "interrupted.out", "--passphrase-file", "pass", "--timeout", "60"];
        const child = spawn(process.execPath, argv, { env, cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
        const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
        const partial = () => readdirSync(dir).filter((f) => f.startsWith("interrupted.out.shardgate-"));
        // Until plaintext is in the partial file (the CLI then waits on the stalled gateway).
        for (let i = 0; i < 600 && !partial().some((f) => statSync(at(f)).size > 0); i++) await new Promise((r) => setTimeout(r, 50));
        expect(partial().map((f) => statSync(at(f)).size)).toEqual([expect.any(Number)]);
        expect(statSync(at(partial()[0])).size).toBeGreaterThan(0);
        child.kill(signal);
        expect(await exited).toBe(signal === "SIGINT" ? 130 : 143);
        noOutput("interrupted.out");
      }
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 120_000);
});
