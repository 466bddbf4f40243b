// Guarantee (docs/security.md): the gateway's files are its user's alone. The data directory is made
// owner-only and checked once it exists, by what reads the secrets in it (scripts/lib/serving.mjs
// ownDataDir, in masterKey and rootKey): a user who can create entries beside it (a sticky /tmp)
// and makes it first, with a credentials file and a master.key of their own, must not have the
// gateway serve their root key (an attack review reproduced that against `npm start --data-dir
// /tmp/x/data`: the banner printed the planted secret). Runs as root only (it gives a directory to
// another uid).
import { chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT } from "./tools";

type Key = { accessKeyId: string; secretAccessKey: string };
const { rootKey, masterKey } = (await import(join(ROOT, "scripts/lib/serving.mjs"))) as { rootKey: (dir: string) => Key; masterKey: (dir: string) => string };

const scratch = mkdtempSync(join(tmpdir(), "shardgate-race-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe.skipIf(process.getuid?.() !== 0)("the root key and the master key of a data directory another user made", () => {
  it("are refused, not served", () => {
    const data = join(scratch, "data");
    mkdirSync(data, { mode: 0o755 });
    writeFileSync(join(data, "credentials"), "[default]\naws_access_key_id = shardgate\naws_secret_access_key = planted-by-another-user-0123456789\n", {
      mode: 0o644,
    });
    writeFileSync(join(data, "master.key"), `${"0".repeat(64)}\n`, { mode: 0o644 });
    chownSync(join(data, "credentials"), 4321, 4321);
    chownSync(join(data, "master.key"), 4321, 4321);
    chownSync(data, 4321, 4321);
    const env = process.env.SHARDGATE_MASTER_KEY;
    delete process.env.SHARDGATE_MASTER_KEY;
    try {
      expect(() => rootKey(data)).toThrow(/another user/);
      expect(() => masterKey(data)).toThrow(/another user/);
    } finally {
      if (env !== undefined) process.env.SHARDGATE_MASTER_KEY = env;
    }
  });
});
