// `npm start`'s safe defaults (docs/self-hosting.md): no fixed default secret (issue #39): started
// with no credentials, the gateway makes a random root key, keeps it 0600 in its data directory,
// prints it, keeps it across restarts, and the CLI finds it; the old public secret signs nothing
// there, and set by hand it is refused on any address but loopback, with one line naming the
// setting to change; the data directory is the owner's alone (directories 0700, files 0600: shard
// files, the metadata SQLite, the config, the master key); and HTTPS is served from a certificate
// and key named in shardgate.json.
import { execFileSync, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { Agent, get } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import { AwsClient } from "aws4fetch";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, Gateway } from "./gateway";
import { startServe } from "./tools";

const root = fileURLToPath(new URL("../..", import.meta.url));
const serve = join(root, "scripts/serve.mjs");
const REAL_KEYS = { SHARDGATE_ACCESS_KEY_ID: "safe-defaults-test", SHARDGATE_SECRET_ACCESS_KEY: "a-secret-nobody-else-knows-1234" };
/** The secret that was the local default once, set by hand. */
const PUBLIC_KEY = { SHARDGATE_ACCESS_KEY_ID: "shardgate", SHARDGATE_SECRET_ACCESS_KEY: "shardgate-secret" };
const scratch = mkdtempSync(join(tmpdir(), "shardgate-safe-"));
const running: ChildProcess[] = [];

afterAll(() => {
  for (const child of running) if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, "SIGTERM");
  rmSync(scratch, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 }); // a gateway just sent SIGTERM may still be writing there
});

/** serve.mjs run to its end (a refusal exits at once): status and output. */
function refused(args: string[]): { status: number | null; stderr: string } {
  const run = spawnSync(process.execPath, [serve, "--quiet", ...args], {
    cwd: root,
    env: { ...process.env, ...PUBLIC_KEY },
    encoding: "utf8",
    timeout: 60_000,
  });
  return { status: run.status, stderr: run.stderr };
}

/** Starts serve.mjs and waits until `ready` (a health probe) says it answers; its output so far. */
function started(args: string[], env: Record<string, string>, ready: () => Promise<boolean>): Promise<{ child: ChildProcess; output: () => string }> {
  return startServe(args, env, ready, running);
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.pid === undefined) return resolve();
    child.once("exit", () => resolve());
    process.kill(-child.pid, "SIGTERM");
  });
}

const mode = (path: string) => statSync(path).mode & 0o777;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

function dirsUnder(dir: string): string[] {
  return [
    dir,
    ...readdirSync(dir, { withFileTypes: true, recursive: true })
      .filter((e) => e.isDirectory())
      .map((e) => join(e.parentPath, e.name)),
  ];
}

describe("the old public secret, set by hand, stays on loopback", () => {
  it("refuses --ip 0.0.0.0, --ip :: and a LAN address in shardgate.json with one line naming the settings", async () => {
    const port = String(await freePort());
    for (const args of [
      ["--ip", "0.0.0.0", "--port", port],
      ["--ip", "::", "--port", port],
    ]) {
      const run = refused([...args, "--data-dir", join(scratch, "refused")]);
      expect(run.status).toBe(1);
      const lines = run.stderr.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('the root key with the public secret "shardgate-secret"');
      expect(lines[0]).toContain("SHARDGATE_SECRET_ACCESS_KEY");
      expect(lines[0]).toContain('"credentials" in shardgate.json');
    }
    const config = join(scratch, "lan.json");
    writeFileSync(config, JSON.stringify({ listen: `192.168.77.5:${port}`, dataDir: join(scratch, "refused") }));
    const lan = refused(["--config", config]);
    expect(lan.status).toBe(1);
    expect(lan.stderr).toContain("on 192.168.77.5, which is not a loopback address");
    // Nothing was started: not even the data directory's workerd config was written.
    expect(readdirSync(scratch)).not.toContain("refused");
  });

  it("refuses it on 0.0.0.0 from the data directory's credentials file too (edited by hand)", () => {
    const data = join(scratch, "edited");
    mkdirSync(data, { mode: 0o700 });
    writeFileSync(join(data, "credentials"), "[default]\naws_access_key_id = shardgate\naws_secret_access_key = shardgate-secret\n", { mode: 0o600 });
    const run = spawnSync(process.execPath, [serve, "--quiet", "--ip", "0.0.0.0", "--port", "1", "--data-dir", data], {
      cwd: root,
      env: { ...process.env, SHARDGATE_ACCESS_KEY_ID: "", SHARDGATE_SECRET_ACCESS_KEY: "" },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect([run.status, run.stderr.trim()]).toEqual([
      1,
      expect.stringMatching(
        /^shardgate: refusing to serve the root key with the public secret "shardgate-secret" on 0\.0\.0\.0, which is not a loopback address/,
      ),
    ]);
    expect(readdirSync(data)).not.toContain("workerd.capnp");
  });

  it("serves on 0.0.0.0 with keys of its own, and keeps its data directory private (0700 / 0600)", async () => {
    const port = await freePort();
    const data = join(scratch, "private");
    // A data directory left open by an earlier version is closed at start.
    mkdirSync(join(data, "nodes", "NODE_0"), { recursive: true });
    chmodSync(data, 0o755);
    chmodSync(join(data, "nodes", "NODE_0"), 0o755);
    const base = `http://127.0.0.1:${port}`;
    const { child } = await started(
      ["--quiet", "--ip", "0.0.0.0", "--port", String(port), "--data-dir", data],
      REAL_KEYS,
      async () => (await fetch(`${base}/_shardgate/health`)).ok,
    );
    const aws = new AwsClient({
      accessKeyId: REAL_KEYS.SHARDGATE_ACCESS_KEY_ID,
      secretAccessKey: REAL_KEYS.SHARDGATE_SECRET_ACCESS_KEY,
      service: "s3",
      region: "us-east-1",
    });
    expect((await aws.fetch(`${base}/private`, { method: "PUT" })).status).toBe(200);
    const body = new Uint8Array(300_000).map((_, i) => (i * 7) & 255); // sharded: above the inline limit
    expect((await aws.fetch(`${base}/private/o.bin`, { method: "PUT", body })).status).toBe(200);
    expect((await aws.fetch(`${base}/private/small.txt`, { method: "PUT", body: "inline, in the metadata SQLite" })).status).toBe(200);
    const got = new Uint8Array(await (await aws.fetch(`${base}/private/o.bin`)).arrayBuffer());
    expect(Buffer.compare(got, body)).toBe(0);

    const shardFiles = filesUnder(join(data, "nodes"));
    expect(shardFiles.length).toBeGreaterThanOrEqual(6);
    const sqlite = filesUnder(join(data, "meta")).filter((f) => f.endsWith(".sqlite"));
    expect(sqlite.length).toBeGreaterThan(0);
    for (const file of [...shardFiles, ...sqlite, join(data, "workerd.capnp"), join(data, "master.key")])
      expect([file, mode(file).toString(8)]).toEqual([file, "600"]);
    for (const dir of dirsUnder(data)) expect([dir, mode(dir).toString(8)]).toEqual([dir, "700"]);
    await stop(child);
  }, 120_000);
});

describe("HTTPS from shardgate.json", () => {
  it("serves PUT and GET over TLS with a self-signed certificate, and the banner says https://", async () => {
    const cert = join(scratch, "cert.pem");
    const key = join(scratch, "key.pem");
    execFileSync("openssl", [
      ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"],
      ...["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", cert],
    ]);
    const port = await freePort();
    const config = join(scratch, "tls.json");
    writeFileSync(config, JSON.stringify({ listen: `127.0.0.1:${port}`, dataDir: join(scratch, "tls-data"), tls: { cert: "cert.pem", key: "key.pem" } }));
    // A client that trusts this certificate, and checks it (host name included) as any would.
    const agent = new Agent({ ca: [readFileSync(cert)], keepAlive: false });
    const base = `https://127.0.0.1:${port}`;
    const health = () =>
      new Promise<boolean>((resolve, reject) => {
        get(`${base}/_shardgate/health`, { agent }, (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        }).on("error", reject);
      });
    const { child, output } = await started(["--config", config], REAL_KEYS, health);
    for (let waited = 0; !output().includes("S3 endpoint") && waited < 10_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    expect(output()).toContain(`S3 endpoint   ${base}`);
    expect(output()).not.toMatch(/http:\/\/127\.0\.0\.1/);

    const s3 = new S3Client({
      endpoint: base,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: { accessKeyId: REAL_KEYS.SHARDGATE_ACCESS_KEY_ID, secretAccessKey: REAL_KEYS.SHARDGATE_SECRET_ACCESS_KEY },
      requestHandler: new NodeHttpHandler({ httpsAgent: agent }),
    });
    await s3.send(new CreateBucketCommand({ Bucket: "tls" }));
    const body = new Uint8Array(200_000).map((_, i) => (i * 13) & 255);
    await s3.send(new PutObjectCommand({ Bucket: "tls", Key: "o.bin", Body: body }));
    const got = await s3.send(new GetObjectCommand({ Bucket: "tls", Key: "o.bin" }));
    expect(Buffer.compare(Buffer.from((await got.Body?.transformToByteArray()) ?? []), Buffer.from(body))).toBe(0);
    // Plain HTTP is not served on that port, and a client that does not trust the certificate is refused.
    await expect(fetch(`http://127.0.0.1:${port}/_shardgate/health`)).rejects.toThrow();
    await expect(fetch(`${base}/_shardgate/health`)).rejects.toThrow();
    s3.destroy();
    await stop(child);
  }, 120_000);
});

describe("no fixed default secret (issue #39)", () => {
  const gateway = new Gateway({ runtime: "workerd", ownKey: true });
  afterAll(() => gateway.dispose());
  const bin = join(root, "bin/shardgate.mjs");

  /** The banner of the gateway's last start (it follows the health check): the secret it shows and the file it names. */
  async function banner(): Promise<{ text: string; secret: string; file: string }> {
    for (let waited = 0; !gateway.log.includes("Try it") && waited < 10_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    const m = /secret key {4}(\S+) {3}\(made at the first start, kept in (\S+);/.exec(gateway.log);
    if (!m?.[1] || !m[2]) throw new Error(`no secret in the banner:\n${gateway.log}`);
    return { text: gateway.log, secret: m[1], file: m[2] };
  }
  const s3 = (secretAccessKey: string) => new AwsClient({ accessKeyId: "shardgate", secretAccessKey, service: "s3", region: "us-east-1", retries: 0 });

  it("makes a random root key at the first start, keeps it 0600 in the data directory, prints it, reuses it; the old public secret signs nothing", async () => {
    await gateway.start();
    const first = await banner();
    expect(first.file).toBe(join(gateway.persist, "credentials"));
    expect(first.secret).toMatch(/^[A-Za-z0-9_-]{40}$/);
    expect(mode(first.file).toString(8)).toBe("600");
    const kept = readFileSync(first.file, "utf8");
    expect(kept).toContain(`[default]\naws_access_key_id = shardgate\naws_secret_access_key = ${first.secret}\n`);
    expect(first.text).toContain(`export AWS_SHARED_CREDENTIALS_FILE=${first.file} AWS_DEFAULT_REGION=us-east-1`);

    expect((await s3(first.secret).fetch(`${gateway.base}/own-key`, { method: "PUT" })).status).toBe(200);
    // What a web page could sign with the public secret: listing, writing, creating a key. All refused.
    const publicKey = s3("shardgate-secret");
    for (const [method, path, body] of [
      ["GET", "/", undefined],
      ["PUT", "/own-key/planted.html", "<script>1</script>"],
      ["POST", "/_shardgate/admin/keys", JSON.stringify({ name: "attacker" })],
    ] as const) {
      const res = await publicKey.fetch(`${gateway.base}${path}`, { method, body });
      expect([method, path, res.status, await res.text()]).toEqual([method, path, 403, expect.stringContaining("SignatureDoesNotMatch")]);
    }

    // A second start keeps the key: the file is as it was, the banner shows the same secret.
    await gateway.stop();
    await gateway.start();
    const second = await banner();
    expect(second.secret).toBe(first.secret);
    expect(readFileSync(first.file, "utf8")).toBe(kept);
    expect((await s3(first.secret).fetch(`${gateway.base}/own-key`, { method: "HEAD" })).status).toBe(200);

    // Each data directory makes its own.
    const { rootKey } = (await import(join(root, "scripts/lib/serving.mjs"))) as { rootKey(dir: string): { secretAccessKey: string } };
    const other = [rootKey(join(scratch, "key-a")).secretAccessKey, rootKey(join(scratch, "key-b")).secretAccessKey];
    expect(new Set([first.secret, ...other]).size).toBe(3);
  }, 120_000);

  it("is found by the CLI with no flags (the working directory's shardgate.json or .shardgate), for a loopback endpoint only", async () => {
    await banner();
    /** `shardgate ARGS` in `cwd` with no credentials in the environment, HOME `cwd` (no ~/.aws there until the last checks). */
    const cli = (cwd: string, args: string[], env: Record<string, string> = {}) =>
      spawnSync(process.execPath, [bin, ...args], {
        cwd,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd, SHARDGATE_ENDPOINT: gateway.base, ...env },
        encoding: "utf8",
        timeout: 30_000,
      });
    const withConfig = join(scratch, "cli-config");
    mkdirSync(withConfig);
    writeFileSync(join(withConfig, "shardgate.json"), JSON.stringify({ dataDir: gateway.persist }));
    const keys = cli(withConfig, ["key", "list", "--json"]); // the root key's alone
    expect(keys.stderr).toBe("");
    expect(keys.status).toBe(0);
    expect(JSON.parse(keys.stdout)).toHaveProperty("keys");
    const withDefault = join(scratch, "cli-default");
    mkdirSync(withDefault);
    symlinkSync(gateway.persist, join(withDefault, ".shardgate"));
    expect(cli(withDefault, ["status"]).status).toBe(0);
    // --data-dir names it from anywhere.
    expect(cli(scratch, ["status", "--data-dir", gateway.persist]).status).toBe(0);
    // Named credentials win over it; an endpoint elsewhere never gets requests signed with it.
    const named = cli(withConfig, ["status"], { AWS_ACCESS_KEY_ID: "shardgate", AWS_SECRET_ACCESS_KEY: "shardgate-secret" });
    expect([named.status, named.stderr]).toEqual([1, expect.stringContaining("SignatureDoesNotMatch")]);
    const elsewhere = cli(withConfig, ["status", "--endpoint", "http://192.0.2.1:9"]);
    expect([elsewhere.status, elsewhere.stderr]).toEqual([2, expect.stringContaining("no credentials")]);
    // It comes before the default profile (usually an AWS account's key), not before a named one.
    mkdirSync(join(withConfig, ".aws"));
    writeFileSync(join(withConfig, ".aws", "credentials"), "[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = aws-account-secret\n");
    expect(cli(withConfig, ["status"]).status).toBe(0);
    expect(cli(withConfig, ["status", "--profile", "default"]).stderr).toContain("InvalidAccessKeyId");
  }, 60_000);
});
