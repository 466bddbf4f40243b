// scripts/check-layers.mjs sees every kind of import: a wrong-way import planted in a small tree
// shaped like worker/src fails the check once for each kind (static, re-export, side-effect,
// dynamic import(), require(), a folder import through its index.ts, a path that names no module,
// an import circle), and the same tree without them passes.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const trees: string[] = [];
afterAll(() => {
  for (const t of trees) rmSync(t, { recursive: true, force: true });
});

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "check-layers-"));
  trees.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

function check(dir: string): { status: number | null; out: string } {
  const run = spawnSync(process.execPath, [join(root, "scripts/check-layers.mjs"), "--root", dir], { encoding: "utf8" });
  return { status: run.status, out: run.stdout + run.stderr };
}

const base = {
  "api/op.ts": "export const x = 1;\n",
  "api/index.ts": "export const x = 2;\n",
  "storage/s.ts": "export const s = 1;\n",
  "meta/m.ts": "export const m = 1;\n",
  "services/ok.ts": 'import { m } from "../meta/m";\nimport { s } from "../storage/s";\nexport const ok = m + s;\n',
};

describe("the layer check", () => {
  it("passes a tree whose imports go one way", () => {
    const { status, out } = check(tree(base));
    expect(out).toContain("imports go one way");
    expect(status).toBe(0);
  });

  it("fails each kind of wrong-way import, once each", () => {
    const planted = {
      "services/static.ts": 'import { x } from "../api/op";\nexport const a = x;\n',
      "services/reexport.ts": 'export { x } from "../api/op";\n',
      "services/dynamic.ts": 'export const load = () => import("../api/op");\n',
      "services/required.ts": 'export const op = require("../api/op");\n',
      "services/folder.ts": 'import { x } from "../api";\nexport const b = x;\n',
      "meta/side-effect.ts": 'import "../storage/s";\n',
      "storage/missing.ts": 'import { gone } from "./nowhere";\nexport const c = gone;\n',
      // Two modules that import each other, if only their types.
      "services/ring-a.ts": 'import type { B } from "./ring-b";\nexport type A = { b?: B };\n',
      "services/ring-b.ts": 'import type { A } from "./ring-a";\nexport type B = { a?: A };\n',
      // A comment that mentions an import is not one.
      "services/commented.ts": '// import { x } from "../api/op";\nexport const d = 1;\n',
    };
    const { status, out } = check(tree({ ...base, ...planted }));
    expect(status).toBe(1);
    for (const line of [
      "services/static.ts -> api/op.ts: services may not import api",
      "services/reexport.ts -> api/op.ts: services may not import api",
      "services/dynamic.ts -> api/op.ts: services may not import api",
      "services/required.ts -> api/op.ts: services may not import api",
      "services/folder.ts -> api/index.ts: services may not import api",
      "meta/side-effect.ts -> storage/s.ts: meta/ and storage/ never import each other",
      "storage/missing.ts -> storage/nowhere.ts: names no module",
      "worker/src: import circle services/ring-a.ts -> services/ring-b.ts -> services/ring-a.ts",
    ])
      expect(out).toContain(line);
    expect(out).not.toContain("services/commented.ts");
    expect(out).toContain("8 problem(s)");
  });

  it("reads api/'s rooms from the folder: operations share only api/common/", () => {
    const rooms = {
      "api/common/help.ts": "export const h = 1;\n",
      "api/s3/one.ts": 'import { h } from "../common/help";\nexport const one = h;\n',
      "api/admin/two.ts": 'import { h } from "../common/help";\nexport const two = h;\n',
      "api/dispatch.ts": 'import { one } from "./s3/one";\nimport { two } from "./admin/two";\nexport const all = [one, two];\n',
    };
    expect(check(tree({ ...base, ...rooms })).status).toBe(0);
    const planted = {
      "api/s3/sibling.ts": 'import { one } from "./one";\nexport const s = one;\n',
      "api/s3/across.ts": 'import { two } from "../admin/two";\nexport const t = two;\n',
      "api/s3/up.ts": 'import { all } from "../dispatch";\nexport const u = all;\n',
      "api/common/reach.ts": 'export { one } from "../s3/one";\n',
    };
    const { status, out } = check(tree({ ...base, ...rooms, ...planted }));
    expect(status).toBe(1);
    for (const line of [
      "api/s3/sibling.ts -> api/s3/one.ts: an api/ operation imports another operation",
      "api/s3/across.ts -> api/admin/two.ts: an api/ operation imports another operation",
      "api/s3/up.ts -> api/dispatch.ts: an api/ operation imports another operation or a dispatcher",
      "api/common/reach.ts -> api/s3/one.ts: api/common/ imports only api/common/",
    ])
      expect(out).toContain(line);
    expect(out).toContain("4 problem(s)");
  });
});
