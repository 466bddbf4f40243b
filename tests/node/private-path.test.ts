// The check of the local paths the gateway trusts (scripts/lib/private-path.mjs, issue #39): a
// shardgate.json, data directory or the binary's runtime directory that another user can write,
// itself or (for the runtime directory) through any directory above it, is refused with one line
// naming the path and the fix. A sticky directory like /tmp may sit above: others cannot move
// what is ours in it.
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT } from "./tools";

type Check = (path: string, what: string, opts?: { parents?: boolean }) => string | null;
const { untrustedPath } = (await import(join(ROOT, "scripts/lib/private-path.mjs"))) as { untrustedPath: Check };

const scratch = mkdtempSync(join(tmpdir(), "shardgate-private-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A directory `name` in the scratch directory with `mode`, and a private data directory in it. */
function under(name: string, mode: number): { parent: string; data: string } {
  const parent = join(scratch, name);
  const data = join(parent, "data");
  mkdirSync(data, { recursive: true, mode: 0o700 });
  chmodSync(parent, mode);
  return { parent, data };
}

describe("untrustedPath", () => {
  it("takes a private path under private parents and under a sticky world-writable one (/tmp)", () => {
    expect(untrustedPath(under("private", 0o700).data, "runtime directory", { parents: true })).toBeNull();
    expect(untrustedPath(under("sticky", 0o1777).data, "runtime directory", { parents: true })).toBeNull();
    expect(untrustedPath(join(scratch, "missing"), "data directory", { parents: true })).toBeNull();
  });

  it("refuses a world-writable parent without the sticky bit, naming it and the fix", () => {
    const { parent, data } = under("open", 0o777);
    // The leaf alone is fine: only the parent chain shows that anyone could swap it.
    expect(untrustedPath(data, "runtime directory")).toBeNull();
    expect(untrustedPath(data, "runtime directory", { parents: true })).toBe(
      `refusing the runtime directory ${data}: other users can write ${parent} (mode 0777): chmod go-w ${parent}`,
    );
    // Group-writable is as bad; so is a parent reached through a symbolic link.
    const group = under("group", 0o770);
    expect(untrustedPath(group.data, "runtime directory", { parents: true })).toContain(`other users can write ${group.parent} (mode 0770)`);
    const link = join(scratch, "link");
    symlinkSync(parent, link);
    expect(untrustedPath(join(link, "data"), "runtime directory", { parents: true })).toContain(`other users can write ${parent} `);
  });

  it("refuses a parent or a path another (non-root) user owns", () => {
    const { parent, data } = under("theirs", 0o755);
    chownSync(parent, 4321, 4321);
    expect(untrustedPath(data, "runtime directory", { parents: true })).toContain(`${parent} belongs to another user (uid 4321)`);
    chownSync(data, 4321, 4321);
    expect(untrustedPath(data, "data directory")).toMatch(/^refusing the data directory: .* belongs to another user \(uid 4321\)/);
  });

  it("refuses a file or directory that others can write itself, sticky or not", () => {
    const file = join(scratch, "shardgate.json");
    writeFileSync(file, "{}");
    chmodSync(file, 0o644);
    expect(untrustedPath(file, "config file")).toBeNull();
    chmodSync(file, 0o666);
    expect(untrustedPath(file, "config file")).toBe(`refusing the config file: other users can write ${file} (mode 0666): chmod go-w ${file}`);
    const dir = join(scratch, "sticky-leaf");
    mkdirSync(dir);
    chmodSync(dir, 0o1777);
    expect(untrustedPath(dir, "data directory")).toContain(`other users can write ${dir} (mode 1777)`);
  });
});
