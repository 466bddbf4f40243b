// The orphan sweep: shard files on nodes that nothing names (no object's manifest, no part of an
// upload in progress, no garbage entry) and that are older than a grace period are deleted. They
// are what a crash between writing a part's shard files and committing its manifest leaves, or a
// delete that failed after its object was already gone.
//
// The sweep lists every node first and reads what every bucket references after, so a part
// committed in between is seen as referenced. The grace period covers writes still in progress:
// files younger than it are never touched (a part whose upload takes longer than the grace period
// could lose its files, so it is a day by default). Cost: one listing of every node and one read
// of every manifest per sweep; the scheduler runs it once per SHARDGATE_ORPHAN_SWEEP_MS.
import type { Env, GatewayConfig } from "../config";
import type { Core, ManifestPart } from "../shared/core-api";
import { bucketIndex, bucketRegistry } from "../meta/stubs";
import { metrics } from "../observability/metrics";
import type { StorageNode } from "../shared/nodes";

/** Objects' manifests read from a bucket per call. */
const REFS_PAGE = 500;

export interface SweepOptions {
  /** Files younger than this are left alone (ms). */
  graceMs: number;
  /** Now, as the sweep sees it (ms since the epoch). */
  now: number;
}

export interface SweepReport {
  filesListed: number;
  /** Files older than the grace period that nothing references. */
  orphans: number;
  removed: number;
  failed: number;
  /** Nodes whose listing failed: their files were not swept this time. */
  nodesSkipped: string[];
}

interface NodeFile {
  node: StorageNode;
  key: string;
}

/** Deletes every orphan shard file older than the grace period, on every node. */
export async function sweepOrphans(env: Env, config: GatewayConfig, core: Core, opts: SweepOptions): Promise<SweepReport> {
  const report: SweepReport = { filesListed: 0, orphans: 0, removed: 0, failed: 0, nodesSkipped: [] };
  const old = new Map<string, NodeFile[]>(); // by storage id
  for (const node of config.nodes) {
    try {
      for (let cursor: string | null = null, first = true; first || cursor !== null; first = false) {
        const page = await node.list(cursor);
        report.filesListed += page.files.length;
        for (const f of page.files) {
          const storageId = storageIdOf(f.key);
          if (storageId === null || f.modified > opts.now - opts.graceMs) continue;
          old.set(storageId, [...(old.get(storageId) ?? []), { node, key: f.key }]);
        }
        cursor = page.cursor;
      }
    } catch {
      report.nodesSkipped.push(node.id);
    }
  }
  if (old.size === 0) return report;
  for (const id of await referencedStorageIds(env, core)) old.delete(id);
  for (const files of old.values()) {
    for (const f of files) {
      report.orphans += 1;
      try {
        await f.node.delete([f.key]);
        report.removed += 1;
      } catch {
        report.failed += 1;
      }
    }
  }
  if (report.removed) metrics.add("shardgate_orphan_files_total", report.removed, { result: "removed" });
  if (report.failed) metrics.add("shardgate_orphan_files_total", report.failed, { result: "failed" });
  return report;
}

/** Every storage id some bucket references: objects, uploads in progress, garbage. */
async function referencedStorageIds(env: Env, core: Core): Promise<Set<string>> {
  const ids = new Set<string>();
  await eachReferencedPart(env, core, (part) => {
    if (part.layout.type === "sharded") ids.add(part.layout.storageId);
  });
  return ids;
}

/** How many referenced parts (objects of every version, uploads in progress, garbage) place a shard file on `nodeId`. */
export async function partsOnNode(env: Env, core: Core, nodeId: string): Promise<number> {
  let count = 0;
  await eachReferencedPart(env, core, (part) => {
    if (part.layout.type === "sharded" && part.layout.placement.includes(nodeId)) count += 1;
  });
  return count;
}

/** Calls `add` with every part some bucket references: objects of every version, uploads in progress, garbage. */
async function eachReferencedPart(env: Env, core: Core, add: (part: ManifestPart) => void): Promise<void> {
  for (const { name } of await bucketRegistry(env).list()) {
    const index = bucketIndex(env, name);
    for (let after: string | null = null, first = true; first || after !== null; first = false) {
      const page: { manifests: Uint8Array[]; parts: ManifestPart[]; next: string | null } = await index.storageRefs(after, REFS_PAGE);
      page.parts.forEach(add);
      for (const m of page.manifests) core.decodeManifest(m).parts.forEach(add);
      after = page.next;
    }
  }
}

/** The storage id of a shard file's key (`DAY/UUID/SHARD`, shared/nodes.ts shardKey), or null for a key that is not one. */
export function storageIdOf(key: string): string | null {
  const m = /^(\d{8}\/[0-9a-f-]{36})\/\d+$/.exec(key);
  return m ? (m[1] as string) : null;
}
