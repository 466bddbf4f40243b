// The configuration of `npm start` (scripts/serve.mjs, scripts/lib/shardgate-config.mjs, issue #32):
// a hostile or typo'd shardgate.json, flag or Worker variable stops it with ONE line on stderr (no
// stack trace) and exit status 1, naming the path and the nearest valid key or flag; flags override
// the file key by key (--port keeps the file's host); the old spellings of --data-dir still work
// with a notice; a region other than us-east-1 is served end to end (an S3 client signing for it,
// the banner, the console's /config.json and the console in Chromium signing with it); the banner
// prints no secret but the one the gateway made (issue #39).
import { type ChildProcess, spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { AwsClient } from "aws4fetch";
import { chromium } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "./gateway";
import { startServe } from "./tools";

const root = fileURLToPath(new URL("../..", import.meta.url));
const serve = join(root, "scripts/serve.mjs");
const scratch = mkdtempSync(join(tmpdir(), "shardgate-config-"));
const DEFAULTS = { SHARDGATE_ACCESS_KEY_ID: "", SHARDGATE_SECRET_ACCESS_KEY: "" };
const running: ChildProcess[] = [];

afterAll(() => {
  for (const child of running) if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, "SIGTERM");
  rmSync(scratch, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 }); // a gateway just sent SIGTERM may still be writing there
});

let files = 0;
/** A config file in the scratch directory with `text` (an object is written as JSON). */
function configFile(content: unknown): string {
  const path = join(scratch, `config-${files++}.json`);
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

/** serve.mjs run to its end (a refusal exits before workerd starts): status and stderr's lines. */
function refused(args: string[], env: Record<string, string> = {}): { status: number | null; lines: string[]; stdout: string } {
  const run = spawnSync(process.execPath, [serve, "--quiet", "--data-dir", join(scratch, "never"), ...args], {
    cwd: root,
    env: { ...process.env, ...DEFAULTS, ...env },
    encoding: "utf8",
    timeout: 60_000,
  });
  return { status: run.status, lines: run.stderr.trim().split("\n"), stdout: run.stdout };
}

/** Expects one line on stderr, exit status 1, each of `parts` in the line, and no stack trace. */
function expectOneLine(run: ReturnType<typeof refused>, ...parts: string[]): string {
  expect(run.status).toBe(1);
  expect(run.lines, run.lines.join("\n")).toHaveLength(1);
  const line = run.lines[0] ?? "";
  expect(line).toMatch(/^shardgate: /);
  expect(line).not.toMatch(/\n| {4}at |node:internal|\.mjs:\d+/);
  for (const part of parts) expect(line).toContain(part);
  return line;
}

/** Starts serve.mjs and waits for its health check; its output so far. */
async function started(args: string[], env: Record<string, string>, base: string): Promise<{ child: ChildProcess; output: () => string }> {
  const healthy = () => fetch(`${base}/_shardgate/health`).then((r) => r.ok);
  const { child, output } = await startServe(args, env, healthy, running);
  // The banner follows the health check.
  for (let i = 0; i < 50 && !args.includes("--quiet") && !output().includes("Try it"); i++) await new Promise((r) => setTimeout(r, 100));
  return { child, output };
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.pid === undefined) return resolve();
    child.once("exit", () => resolve());
    process.kill(-child.pid, "SIGTERM");
  });
}

describe("a typo'd or hostile shardgate.json", () => {
  it("names an unknown key with its path and the nearest valid key", () => {
    expectOneLine(refused(["--config", configFile({ parityShard: 2 })]), 'parityShard: unknown key (did you mean "parityShards"?)');
    expectOneLine(
      refused([
        "--config",
        configFile({
          nodes: [
            { id: "a", type: "disk", pth: "/x" },
            { id: "b", type: "s3", endpoint: "http://x", bucket: "b", accessKeyId: "k", secretAccessKey: "s", clientURLs: true },
          ],
        }),
      ]),
      'nodes[0].pth: unknown key (did you mean "path"?)',
      'nodes[1].clientURLs: unknown key (did you mean "clientUrls"?)',
    );
    expectOneLine(
      refused(["--config", configFile({ credentials: { accessKeyID: "a", secretAccessKey: "b" } })]),
      'credentials.accessKeyID: unknown key (did you mean "accessKeyId"?)',
      "credentials.accessKeyId: required, missing",
    );
    expectOneLine(
      refused(["--config", configFile({ vars: { SHARDGATE_JOB_INTERVALL_MS: "60000" } })]),
      "vars.SHARDGATE_JOB_INTERVALL_MS: unknown variable (did you mean SHARDGATE_JOB_INTERVAL_MS?)",
    );
    // Every problem of the file, on the one line.
    const line = expectOneLine(refused(["--config", configFile({ dataShard: 4, consolPort: 9000, tsl: {} })]), "dataShard:", "consolPort:", "tsl:");
    expect(line).toContain('(did you mean "consolePort"?)');
  });

  it("names the path, what was expected and what it got for a wrong type", () => {
    const nodes = [
      { id: "a", type: "disk" },
      { id: "b", type: "disk" },
      { id: "c", type: "s3", endpoint: 3, bucket: "b", accessKeyId: "k", secretAccessKey: "s" },
    ];
    expectOneLine(refused(["--config", configFile({ nodes })]), "nodes[2].endpoint: expected a string, got 3");
    expectOneLine(refused(["--config", configFile({ dataShards: "4" })]), 'dataShards: expected a positive integer, got "4"');
    expectOneLine(refused(["--config", configFile({ parityShards: 1.5 })]), "parityShards: expected a positive integer, got 1.5");
    expectOneLine(refused(["--config", configFile({ consolePort: 70000 })]), "consolePort: expected a port number (1-65535), got 70000");
    expectOneLine(refused(["--config", configFile({ processes: 1000 })]), "processes: expected an integer from 1 to 64, got 1000");
    expectOneLine(refused(["--config", configFile({ listen: 8787 })]), "listen: expected a string, got 8787");
    expectOneLine(refused(["--config", configFile({ listen: "127.0.0.1" })]), 'listen: expected HOST:PORT (port 1-65535), got "127.0.0.1"');
    expectOneLine(refused(["--config", configFile({ nodes: "NODE_0" })]), 'nodes: expected an array, got "NODE_0"');
    expectOneLine(refused(["--config", configFile({ nodes: [{ id: "a", type: "nfs" }] })]), 'nodes[0].type: expected "disk" or "s3", got "nfs"');
    expectOneLine(refused(["--config", configFile({ tls: { cert: true, key: "k.pem" } })]), "tls.cert: expected a string, got true");
    expectOneLine(refused(["--config", configFile({ region: "EU (Paris)" })]), 'region: expected a region name such as "us-east-1", got "EU (Paris)"');
    expectOneLine(refused(["--config", configFile({ masterKey: "short" })]), "masterKey: expected 32 characters or more, got 5");
    expectOneLine(
      refused(["--config", configFile({ vars: { SHARDGATE_JOB_INTERVAL_MS: "15m" } })]),
      'vars.SHARDGATE_JOB_INTERVAL_MS: expected a positive integer of milliseconds, got "15m"',
    );
    expectOneLine(refused(["--config", configFile({ vars: { SHARDGATE_SIGV2: false } })]), "vars.SHARDGATE_SIGV2: expected a string, got false");
    expectOneLine(
      refused(["--config", configFile({ vars: { SHARDGATE_DATA_SHARDS: "3" } })]),
      'vars.SHARDGATE_DATA_SHARDS: set by the key "dataShards" of this file',
    );
    expectOneLine(
      refused(["--config", configFile({ vars: { SHARDGATE_WRITE_QUORUM: "9" } })]),
      "SHARDGATE_WRITE_QUORUM: must be between k and k + m (4 and 6), got 9",
    );
  });

  it("survives hostile input with one line: not JSON, not an object, odd keys, huge and deep values", () => {
    expectOneLine(refused(["--config", configFile("{ not json")]), "config file", "JSON");
    expectOneLine(refused(["--config", configFile("[]")]), "expected a JSON object, got an array");
    expectOneLine(refused(["--config", configFile("null")]), "expected a JSON object, got null");
    expectOneLine(
      refused(["--config", configFile('{"__proto__": {"dataShards": 1}, "constructor": 1}')]),
      "__proto__: unknown key",
      "constructor: unknown key",
    );
    const long = expectOneLine(
      refused(["--config", configFile({ [`(a+)+$${"x".repeat(50_000)}\n`]: 1, dataDir: "y".repeat(100_000) + "\u0000" })]),
      "unknown key",
    );
    expect(long.length).toBeLessThan(1000);
    expectOneLine(refused(["--config", configFile(`{"nodes": [${"[".repeat(100_000)}${"]".repeat(100_000)}]}`)]), "nodes[0]: expected an object, got an array");
    expectOneLine(refused(["--config", join(scratch, "missing.json")]), "does not exist");
    expectOneLine(refused(["--config", scratch]), "config file");
    // Nothing was started: not even the data directory.
    expect(readdirSync(scratch)).not.toContain("never");
  });

  it("is refused, as is the data directory, when another user can write it: one line naming the path and the fix (issue #39)", () => {
    const open = configFile({ region: "us-east-1" });
    chmodSync(open, 0o666);
    expectOneLine(refused(["--config", open]), `refusing the config file: other users can write ${open} (mode 0666): chmod go-w ${open}`);
    chmodSync(open, 0o620);
    expectOneLine(refused(["--config", open]), `other users can write ${open} (mode 0620)`);
    const data = join(scratch, "open-data");
    mkdirSync(data);
    chmodSync(data, 0o777);
    expectOneLine(refused(["--data-dir", data]), `refusing the data directory: other users can write ${data} (mode 0777): chmod go-w ${data}`);
    chmodSync(data, 0o700);
    chownSync(data, 4321, 4321);
    expectOneLine(refused(["--data-dir", data]), `refusing the data directory: ${data} belongs to another user (uid 4321)`);
    // Refused before anything was written there.
    expect(readdirSync(data)).toEqual([]);
  });

  it("checks the credentials and the master key from the environment too", () => {
    expectOneLine(refused([], { SHARDGATE_ACCESS_KEY_ID: "only-the-id" }), "SHARDGATE_ACCESS_KEY_ID and SHARDGATE_SECRET_ACCESS_KEY must be set together");
    expectOneLine(refused([], { SHARDGATE_MASTER_KEY: "short" }), "SHARDGATE_MASTER_KEY (environment) must be 32 characters or more");
  });
});

describe("flags", () => {
  it("refuses an unknown flag naming the nearest valid one, a flag without its value, a bad number", () => {
    expectOneLine(refused(["--prot", "8787"]), "unknown flag --prot (did you mean --port?)");
    expectOneLine(refused(["--data", "x"]), "unknown flag --data (did you mean --data-dir?)");
    expectOneLine(refused(["--consolePort", "8788"]), "unknown flag --consolePort (did you mean --console-port?)");
    expectOneLine(refused(["--port"]), "--port: expects a value");
    expectOneLine(refused(["--port", "80x"]), '--port: expected an integer from 1 to 65535, got "80x"');
    expectOneLine(refused(["--processes", "0"]), '--processes: expected an integer from 1 to 64, got "0"');
    expectOneLine(refused(["stray"]), 'unexpected argument "stray"');
  });

  it("is --data-dir in every script: the old spellings are deprecated aliases with a notice, other typos name it", () => {
    const run = (script: string, args: string[]) => {
      const r = spawnSync(process.execPath, [join(root, "scripts", script), ...args], {
        cwd: root,
        env: { ...process.env, ...DEFAULTS },
        encoding: "utf8",
        timeout: 60_000,
      });
      return { status: r.status, lines: r.stderr.trim().split("\n"), stdout: r.stdout };
    };
    // dev.mjs: --persist-to still taken (the notice), then the bad port stops it before anything starts.
    const dev = run("dev.mjs", ["--persist-to", join(scratch, "dev"), "--port", "http"]);
    expect(dev.status).toBe(1);
    expect(dev.lines).toEqual(["shardgate: --persist-to is deprecated: use --data-dir", 'shardgate: --port: expected an integer from 1 to 65535, got "http"']);
    expectOneLine(run("dev.mjs", ["--data-dr", "x"]), "unknown flag --data-dr (did you mean --data-dir?)");
    const cluster = run("cluster.mjs", ["--dta", "x"]);
    expect(cluster.status).toBe(1);
    expect(cluster.lines).toHaveLength(1);
    expect(cluster.lines[0]).toContain("cluster: unknown flag --dta (did you mean --data-dir?)");
  });

  it("--port changes only the port: the file's host stays (here one that is refused with the old public secret)", async () => {
    const port = await freePort();
    const config = configFile({ listen: "192.168.77.5:9000" });
    const publicKey = { SHARDGATE_ACCESS_KEY_ID: "shardgate", SHARDGATE_SECRET_ACCESS_KEY: "shardgate-secret" };
    expectOneLine(refused(["--config", config, "--port", String(port)], publicKey), "on 192.168.77.5, which is not a loopback address");
  });

  it("--port keeps the file's host; the file's region, a secret from the environment; the banner hides that secret", async () => {
    const port = await freePort();
    const data = join(scratch, "region");
    const config = configFile({ listen: "127.0.0.1:1", region: "eu-west-3", dataDir: join(scratch, "unused") });
    const keys = { SHARDGATE_ACCESS_KEY_ID: "region-test", SHARDGATE_SECRET_ACCESS_KEY: "a-secret-the-banner-must-not-print" };
    const base = `http://127.0.0.1:${port}`;
    const consolePort = await freePort();
    const { child, output } = await started(
      ["--config", config, "--port", String(port), "--console-port", String(consolePort), "--data-dir", data],
      keys,
      base,
    );
    const banner = output();
    expect(banner).toContain(`S3 endpoint   ${base}`);
    expect(banner).toMatch(/region\s+eu-west-3/);
    expect(banner).toContain("AWS_DEFAULT_REGION=eu-west-3");
    expect(banner).toContain("access key    region-test");
    expect(banner).not.toContain(keys.SHARDGATE_SECRET_ACCESS_KEY);
    expect(banner).toContain("from the environment (SHARDGATE_SECRET_ACCESS_KEY)");
    // --data-dir won over the file's dataDir.
    expect(readdirSync(scratch)).not.toContain("unused");

    // An S3 client signing for eu-west-3 works; one signing for us-east-1 is told the region.
    const sdk = new S3Client({
      endpoint: base,
      region: "eu-west-3",
      forcePathStyle: true,
      credentials: { accessKeyId: keys.SHARDGATE_ACCESS_KEY_ID, secretAccessKey: keys.SHARDGATE_SECRET_ACCESS_KEY },
    });
    await sdk.send(new CreateBucketCommand({ Bucket: "paris" }));
    await sdk.send(new PutObjectCommand({ Bucket: "paris", Key: "hello.txt", Body: "bonjour" }));
    expect(await (await sdk.send(new GetObjectCommand({ Bucket: "paris", Key: "hello.txt" }))).Body?.transformToString()).toBe("bonjour");
    sdk.destroy();
    const wrong = new AwsClient({
      accessKeyId: keys.SHARDGATE_ACCESS_KEY_ID,
      secretAccessKey: keys.SHARDGATE_SECRET_ACCESS_KEY,
      service: "s3",
      region: "us-east-1",
      retries: 0,
    });
    const refusedRegion = await wrong.fetch(`${base}/paris/hello.txt`);
    expect(refusedRegion.status).toBe(400);
    expect(await refusedRegion.text()).toContain("expecting &apos;eu-west-3&apos;");

    // The console learns the region from its /config.json and signs with it.
    const consoleBase = `http://127.0.0.1:${consolePort}`;
    expect(await (await fetch(`${consoleBase}/config.json`)).json()).toEqual({ gateway: base, region: "eu-west-3" });
    const browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
    try {
      const page = await browser.newPage();
      const scopes: string[] = [];
      page.on("request", (r) => {
        const scope = /Credential=[^/]+\/\d{8}\/([^/]+)\/([^/]+)\//.exec(r.headers().authorization ?? "");
        if (scope) scopes.push(`${scope[1]}/${scope[2]}`);
      });
      await page.goto(`${consoleBase}/`);
      await page.getByLabel("Access key").fill(keys.SHARDGATE_ACCESS_KEY_ID);
      await page.getByLabel("Secret key").fill(keys.SHARDGATE_SECRET_ACCESS_KEY);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("button", { name: "Create bucket" }).waitFor({ timeout: 30_000 });
      await page.getByText("paris").first().waitFor({ timeout: 30_000 }); // ListBuckets, signed for eu-west-3, answered
      expect(scopes).toContain("eu-west-3/sts");
      expect(scopes).toContain("eu-west-3/s3");
      expect(scopes.filter((s) => !s.startsWith("eu-west-3/"))).toEqual([]);
    } finally {
      await browser.close();
    }
    await stop(child);
  }, 150_000);

  it("prints the secret it made (none configured) with where it is kept, and the default region", async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const data = join(scratch, "defaults");
    const { child, output } = await started(["--port", String(port), "--console-port", String(await freePort()), "--data-dir", data], DEFAULTS, base);
    const secret = /aws_secret_access_key = (\S+)/.exec(readFileSync(join(data, "credentials"), "utf8"))?.[1];
    expect(output()).toContain(`secret key    ${secret}   (made at the first start, kept in ${join(data, "credentials")}`);
    expect(output()).toMatch(/region\s+us-east-1/);
    await stop(child);
  }, 120_000);
});

describe("a Worker variable the gateway is given", () => {
  it("is checked by serve.mjs before workerd starts (one line), as loadConfig checks it", () => {
    expectOneLine(
      refused(["--config", configFile({ vars: { SHARDGATE_READ_STALL_MS: "5s", SHARDGATE_SCRUB_MODE: "full" } })]),
      "vars.SHARDGATE_READ_STALL_MS",
      "vars.SHARDGATE_SCRUB_MODE",
    );
  });
});
