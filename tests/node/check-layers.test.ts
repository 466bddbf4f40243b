// scripts/check-layers.mjs sees every kind of import: a wrong-way import planted in a small tree
// shaped like worker/src fails the check once for each kind (static, re-export, side-effect,
// dynamic import(), require(), a folder import through its index.ts, a path that names no module,
// an import circle), and the same tree without them passes. With --repo, a small repository with
// every package (worker/src and its shared/, web/src, client/src, bench, scripts): each kind of
// import that leaves a package the wrong way, in each package, fails naming the package's rule.
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

function check(dir: string, mode: "--root" | "--repo" = "--root"): { status: number | null; out: string } {
  const run = spawnSync(process.execPath, [join(root, "scripts/check-layers.mjs"), mode, dir], { encoding: "utf8" });
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

  it("lets config.ts alone read the Worker's SHARDGATE_* variables (bindings it names apart)", () => {
    const readers = {
      "config.ts": 'export const region = (env: { SHARDGATE_REGION?: string }) => env.SHARDGATE_REGION ?? "us-east-1";\n',
      "config-vars.ts": 'export const names = (v: Record<string, string>) => v["SHARDGATE_NODES"];\n',
      // A binding ENV_BINDINGS allows; a message naming a variable; a comment about one.
      "meta/stubs.ts": "export const meta = (env: { SHARDGATE_META?: unknown }) => env.SHARDGATE_META;\n",
      "api/message.ts": 'export const m = "set env.SHARDGATE_MASTER_KEY";\n',
      "api/commented.ts": "// env.SHARDGATE_REGION is read by config.ts\nexport const c = 1;\n",
    };
    expect(check(tree({ ...base, ...readers })).status).toBe(0);
    const planted = {
      "api/direct.ts": "export const t = (env: { SHARDGATE_METRICS_TOKEN?: string }) => env.SHARDGATE_METRICS_TOKEN;\n",
      "services/nested.ts": "export const q = (ctx: { env: { SHARDGATE_QUEUES?: string } }) => ctx.env?.SHARDGATE_QUEUES;\n",
      "meta/indexed.ts": 'export const r = (env: Record<string, string>) => env["SHARDGATE_NOTIFY_ATTEMPTS"];\n',
      "meta/other-binding.ts": "export const g = (env: { SHARDGATE_META?: unknown }) => env.SHARDGATE_META;\n",
    };
    const { status, out } = check(tree({ ...base, ...readers, ...planted }));
    expect(status).toBe(1);
    for (const line of [
      "api/direct.ts:1: SHARDGATE_METRICS_TOKEN read directly",
      "services/nested.ts:1: SHARDGATE_QUEUES read directly",
      "meta/indexed.ts:1: SHARDGATE_NOTIFY_ATTEMPTS read directly",
      "meta/other-binding.ts:1: SHARDGATE_META read directly",
    ])
      expect(out).toContain(line);
    expect(out).toContain("4 problem(s)");
  });

  it("reads api/'s rooms from the folder: operations share only api/http/, api/format/ and their own parts", () => {
    const rooms = {
      "api/http/help.ts": 'import { f } from "../format/shape";\nexport const h = f;\n',
      "api/format/shape.ts": "export const f = 1;\n",
      "api/s3/one.ts": 'import { h } from "../http/help";\nimport { p } from "./one.part";\nexport const one = h + p;\n',
      "api/s3/one.part.ts": 'import { f } from "../format/shape";\nexport const p = f;\n',
      "api/admin/two.ts": 'import { h } from "../http/help";\nexport const two = h;\n',
      "api/dispatch.ts": 'import { one } from "./s3/one";\nimport { two } from "./admin/two";\nexport const all = [one, two];\n',
    };
    expect(check(tree({ ...base, ...rooms })).status).toBe(0);
    const planted = {
      "api/s3/sibling.ts": 'import { one } from "./one";\nexport const s = one;\n',
      "api/s3/borrow.ts": 'import { p } from "./one.part";\nexport const b = p;\n',
      "api/s3/across.ts": 'import { two } from "../admin/two";\nexport const t = two;\n',
      "api/s3/up.ts": 'import { all } from "../dispatch";\nexport const u = all;\n',
      "api/format/reach.ts": 'export { one } from "../s3/one";\n',
    };
    const { status, out } = check(tree({ ...base, ...rooms, ...planted }));
    expect(status).toBe(1);
    for (const line of [
      "api/s3/sibling.ts -> api/s3/one.ts: an api/ operation imports another operation",
      "api/s3/borrow.ts -> api/s3/one.part.ts: an api/ operation imports another operation",
      "api/s3/across.ts -> api/admin/two.ts: an api/ operation imports another operation",
      "api/s3/up.ts -> api/dispatch.ts: an api/ operation imports another operation or a dispatcher",
      "api/format/reach.ts -> api/s3/one.ts: api/http/ and api/format/ import only each other",
    ])
      expect(out).toContain(line);
    expect(out).toContain("5 problem(s)");
  });

  describe("across packages (--repo)", () => {
    /** A repository whose imports all go the allowed ways. */
    const repo: Record<string, string> = {
      "worker/package.json": '{ "name": "@shardgate/worker", "version": "0.0.0" }\n',
      "worker/src/index.ts": 'import pkg from "../package.json";\nimport { api } from "./api";\nexport const v = [pkg, api];\n',
      "worker/src/api/index.ts": 'import { s } from "../storage/s";\nexport const api = s;\n',
      "worker/src/storage/s.ts": 'import { read } from "../shared/read";\nexport const s = read;\n',
      "worker/src/shared/read.ts":
        'import { hex } from "./bytes";\nimport type * as B from "../../../core/pkg/core.js";\nexport const read = (b?: typeof B) => hex + String(b);\n',
      "worker/src/shared/bytes.ts": "export const hex = 1;\n",
      "worker/src/shared/index.ts": 'export { hex } from "./bytes";\n',
      "client/package.json": '{ "name": "@shardgate/client", "exports": { ".": "./src/index.ts" } }\n',
      "client/src/index.ts": 'export { Client } from "./client";\n',
      "client/src/client.ts": 'import { read } from "../../worker/src/shared/read";\nexport class Client {\n  r = read;\n}\n',
      "web/package.json": '{ "name": "@shardgate/web" }\n',
      "web/src/main.ts": 'import "./style.css";\nimport { app } from "./app";\nexport const m = app;\n',
      "web/src/style.css": "body {}\n",
      "web/src/app.ts":
        'import { Client } from "../../client/src/index";\nimport type { Client as C } from "@shardgate/client";\nimport { hex } from "../../worker/src/shared";\nimport wasm from "../../core/pkg/core_bg.wasm?url";\nexport const app = [Client, hex, wasm] as unknown as C;\nexport const w = () => new Worker(new URL("./checksum-worker.ts", import.meta.url), { type: "module" });\n',
      "web/src/checksum-worker.ts": 'import { hex } from "../../worker/src/shared/bytes";\nexport const c = hex;\n',
      "web/src/views/index.ts": 'import { app } from "../app";\nexport const views = app;\n',
      "bench/run.mjs":
        'import { freePort } from "../scripts/lib/free-port.mjs";\nimport { rows } from "./lib/rows.mjs";\nimport { hex } from "../worker/src/shared/bytes.ts";\nexport const all = () => [freePort, rows, hex, import("./lib/rows.mjs")];\n',
      "bench/lib/rows.mjs": "export const rows = 1;\n",
      "bench/legacy.cjs": 'const { rows } = require("./lib/rows.mjs");\nmodule.exports = rows;\n',
      "scripts/serve.mjs":
        'import { freePort } from "./lib/free-port.mjs";\nimport { AwsClient } from "aws4fetch";\nimport { readFileSync } from "node:fs";\nexport const s = [freePort, AwsClient, readFileSync];\n',
      "scripts/lib/free-port.mjs": "export const freePort = 1;\n",
      "scripts/lib/config.mts": 'import { freePort } from "./free-port.mjs";\nexport const c: number = freePort;\n',
      "scripts/workerd/assets.js": 'export default { fetch: () => import("../lib/free-port.mjs") };\n',
    };

    /** Where each package's wrong-way imports lead (a module, and a folder with an index) and the
     *  rule its failures name; and the file extension its planted modules get. */
    const packages = [
      {
        pkg: "web/src",
        ext: "ts",
        to: "worker/src/storage/s",
        folder: "worker/src/api",
        rule: "web/src may import from outside its tree only worker/src/shared/",
      },
      {
        pkg: "client/src",
        ext: "ts",
        to: "worker/src/storage/s",
        folder: "worker/src/api",
        rule: "client/src may import from outside its tree only worker/src/shared/",
      },
      {
        pkg: "bench",
        ext: "mjs",
        to: "worker/src/storage/s",
        folder: "worker/src/api",
        rule: "bench may import from outside its tree only worker/src/shared/",
      },
      { pkg: "scripts", ext: "mts", to: "web/src/app", folder: "web/src/views", rule: "scripts may import from outside its tree only worker/src/shared/" },
      {
        pkg: "worker/src/shared",
        ext: "ts",
        to: "worker/src/storage/s",
        folder: "worker/src/api",
        rule: "worker/src/shared/ imports only itself and core/pkg/",
      },
      {
        pkg: "worker/src/storage",
        ext: "ts",
        to: "web/src/app",
        folder: "web/src/views",
        rule: "worker/src may import from outside its tree only worker/package.json",
      },
    ];
    const kinds = {
      static: (spec: string) => `import { x } from "${spec}";\nexport const a = x;\n`,
      reexport: (spec: string) => `export { x } from "${spec}";\n`,
      "side-effect": (spec: string) => `import "${spec}";\n`,
      dynamic: (spec: string) => `export const load = () => import("${spec}");\n`,
      required: (spec: string) => `export const x = require("${spec}");\n`,
      folder: (spec: string) => `import { x } from "${spec}";\nexport const b = x;\n`,
    };

    /** The specifier from `from` (a repo path) to `to` (a repo path). */
    function spec(from: string, to: string): string {
      const up = from.split("/").length - 1;
      return `${"../".repeat(up)}${to}`;
    }

    it("passes a repository whose packages import each other only the allowed ways", () => {
      const { status, out } = check(tree(repo), "--repo");
      expect(out).toContain("in worker/src, web/src, client/src, bench, scripts: imports go one way");
      expect(status).toBe(0);
    });

    it("fails each kind of import that leaves a package the wrong way, in each package, naming its rule", () => {
      const planted: Record<string, string> = {};
      const expected: string[] = [];
      for (const { pkg, ext, to, folder, rule } of packages)
        for (const [kind, text] of Object.entries(kinds)) {
          const file = `${pkg}/wrong-${kind}.${kind === "required" && ext === "mjs" ? "cjs" : ext}`;
          const target = kind === "folder" ? folder : to;
          planted[file] = text(spec(file, target));
          expected.push(`${file} -> ${kind === "folder" ? `${folder}/index.ts` : `${to}.ts`}: ${rule}`);
        }
      const { status, out } = check(tree({ ...repo, ...planted }), "--repo");
      expect(status).toBe(1);
      for (const line of expected) expect(out).toContain(line);
      expect(out).toContain(`${expected.length} problem(s)`);
    });

    it("sees a package's internals however they are named, and circles and entries in every package", () => {
      const planted = {
        // The client's internals, by path and by package name; a Web Worker's module.
        "web/src/internals.ts": 'import { Client } from "../../client/src/client";\nexport const i = Client;\n',
        "web/src/by-name.ts": 'import { Client } from "@shardgate/client/src/client";\nexport const n = Client;\n',
        "web/src/worker.ts": 'export const w = new Worker(new URL("../../worker/src/storage/s.ts", import.meta.url));\n',
        "bench/console.mjs": 'import { app } from "../web/src/app.ts";\nexport const c = app;\n',
        "scripts/bench.mjs": 'import { rows } from "../bench/lib/rows.mjs";\nexport const r = rows;\n',
        "web/src/missing.ts": 'import { gone } from "./nowhere";\nexport const g = gone;\n',
        // Nothing imports a package's entry from inside it.
        "web/src/up.ts": 'import { m } from "./main";\nexport const u = m;\n',
        "client/src/up.ts": 'import { Client } from "./index";\nexport const u = Client;\n',
        // A circle in each package.
        "worker/src/shared/ring-a.ts": 'import type { B } from "./ring-b";\nexport type A = { b?: B };\n',
        "worker/src/shared/ring-b.ts": 'import type { A } from "./ring-a";\nexport type B = { a?: A };\n',
        "web/src/ring-a.ts": 'export { b } from "./ring-b";\nexport const a = 1;\n',
        "web/src/ring-b.ts": 'import { a } from "./ring-a";\nexport const b = a;\n',
        "client/src/ring-a.ts": 'import "./ring-b";\n',
        "client/src/ring-b.ts": 'import "./ring-a";\n',
        "bench/ring-a.mjs": 'export const a = () => import("./ring-b.mjs");\n',
        "bench/ring-b.mjs": 'import { a } from "./ring-a.mjs";\nexport const b = a;\n',
        "scripts/ring-a.cjs": 'module.exports = require("./ring-b.cjs");\n',
        "scripts/ring-b.cjs": 'module.exports = require("./ring-a.cjs");\n',
      };
      const { status, out } = check(tree({ ...repo, ...planted }), "--repo");
      expect(status).toBe(1);
      for (const line of [
        "web/src/internals.ts -> client/src/client.ts: web/src may import from outside its tree only",
        "web/src/by-name.ts -> client/src/client.ts: web/src may import from outside its tree only",
        "web/src/worker.ts -> worker/src/storage/s.ts: web/src may import from outside its tree only",
        "bench/console.mjs -> web/src/app.ts: bench may import from outside its tree only",
        "scripts/bench.mjs -> bench/lib/rows.mjs: scripts may import from outside its tree only",
        "web/src/missing.ts -> web/src/nowhere.ts: names no module",
        "web/src/up.ts -> web/src/main.ts: the console's entry imports its views, never the other way",
        "client/src/up.ts -> client/src/index.ts: the client library's entry re-exports its modules",
        "worker/src: import circle shared/ring-a.ts -> shared/ring-b.ts -> shared/ring-a.ts",
        "web/src: import circle ring-a.ts -> ring-b.ts -> ring-a.ts",
        "client/src: import circle ring-a.ts -> ring-b.ts -> ring-a.ts",
        "bench: import circle ring-a.mjs -> ring-b.mjs -> ring-a.mjs",
        "scripts: import circle ring-a.cjs -> ring-b.cjs -> ring-a.cjs",
      ])
        expect(out).toContain(line);
      expect(out).toContain("13 problem(s)");
    });

    it("checks that docs/architecture.md names every worker module, when the repository has it", () => {
      const docs =
        "## The worker (`worker/src/`)\n\n| module | what it does |\n|---|---|\n| `index.ts` | entry |\n| `api/index.ts` | dispatch |\n| `storage/s.ts` | storage |\n| `shared/read.ts`, `bytes.ts`, `index.ts` | shared |\n";
      expect(check(tree({ ...repo, "docs/architecture.md": docs }), "--repo").status).toBe(0);
      const { status, out } = check(tree({ ...repo, "docs/architecture.md": docs, "worker/src/shared/new.ts": "export const n = 1;\n" }), "--repo");
      expect(status).toBe(1);
      expect(out).toContain("worker/src/shared/new.ts: not named in docs/architecture.md's table of the worker");
    });
  });
});
