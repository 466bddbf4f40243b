// The background scrub's walk: every object of every bucket, in (bucket, key) order, a bounded
// step at a time. A step is what one run of the scheduler's alarm (jobs/scheduler.ts) or
// `POST /_shardgate/admin/scrub` runs: it continues from the cursor the last step saved in the
// BucketRegistry, checks objects (storage/verify-part.ts: shallow or deep; what is bad is healed by
// services/heal.ts's healObject, which also moves shard files off nodes that are gone) until its
// object or time budget is spent or the pass ends, and saves the cursor and results as it goes. An object whose check
// fails is recorded and passed; a run that dies while checking one (a CPU or wall-time limit) has
// that object recorded as failed by the next run, which goes on after it. Nothing ever sends the
// walk back to the start of a pass.
import { bucketIndex, bucketRegistry, metricsStore } from "../meta/stubs";
import type { ListVersionsPage } from "../meta/types";
import { healObject } from "./heal";
import type { Env, GatewayConfig } from "../config";
import { core } from "../core";
import { metrics } from "../observability/metrics";
import { misplacedShards } from "../storage/rebuild-part";
import { isSharded, shardFileBytes } from "../storage/layout";
import { scrubPart, type ScrubMode, type ShardProblem } from "../storage/verify-part";
import { addCounters, addUsage, initialScrubState, recordError, zeroCounters, type ScrubCounters, type ScrubRunSummary, type ScrubState } from "./scrub-state";

/** The scrub's vars (wrangler.toml [vars]); all optional. */
interface ScrubVars {
  SHARDGATE_SCRUB_MODE?: string;
  SHARDGATE_SCRUB_OBJECTS_PER_RUN?: string;
  SHARDGATE_SCRUB_MS_PER_RUN?: string;
  SHARDGATE_SCRUB_MOVE_MIB_PER_RUN?: string;
}

export interface ScrubSettings {
  mode: ScrubMode;
  maxObjects: number;
  maxMs: number;
  /** Rebalancing's rate limit: once a run has written this many MiB of shard files, it moves no
   *  more misplaced ones (bad ones are still rebuilt); the next run goes on. */
  moveMiB: number;
  /** Rebuild what is found bad (false: only report it; `POST /_shardgate/admin/scrub?heal=false`). */
  heal: boolean;
}

export const SCRUB_DEFAULTS: ScrubSettings = { mode: "deep", maxObjects: 1000, maxMs: 20_000, moveMiB: 1024, heal: true };
const LIST_PAGE = 100;
/** How long a run's lease outlives its last save: a run that died frees the walk after this. */
const LEASE_GRACE_MS = 5 * 60_000;
/** Objects without shard files are cheap: their progress is saved at most this often. */
const SAVE_EVERY_MS = 1000;
/** At most this many objects with findings are listed in a run's report. */
const MAX_FINDINGS = 100;
const MIB = 1 << 20;

export function scrubSettings(env: Env): ScrubSettings {
  const vars = env as unknown as ScrubVars;
  const positive = (raw: string | undefined, name: string, fallback: number) => {
    if (raw === undefined || raw === "") return fallback;
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`configuration: ${name} must be a positive integer, got ${raw}`);
    return n;
  };
  const mode = vars.SHARDGATE_SCRUB_MODE || SCRUB_DEFAULTS.mode;
  if (!isScrubMode(mode)) throw new Error(`configuration: SHARDGATE_SCRUB_MODE must be deep or shallow, got ${mode}`);
  return {
    mode,
    maxObjects: positive(vars.SHARDGATE_SCRUB_OBJECTS_PER_RUN, "SHARDGATE_SCRUB_OBJECTS_PER_RUN", SCRUB_DEFAULTS.maxObjects),
    maxMs: positive(vars.SHARDGATE_SCRUB_MS_PER_RUN, "SHARDGATE_SCRUB_MS_PER_RUN", SCRUB_DEFAULTS.maxMs),
    moveMiB: positive(vars.SHARDGATE_SCRUB_MOVE_MIB_PER_RUN, "SHARDGATE_SCRUB_MOVE_MIB_PER_RUN", SCRUB_DEFAULTS.moveMiB),
    heal: true,
  };
}

export function isScrubMode(mode: string): mode is ScrubMode {
  return mode === "deep" || mode === "shallow";
}

/** One object the run found something wrong with, and what healing it did. */
export interface ScrubFinding {
  bucket: string;
  key: string;
  /** The bad shard files of each part (1-based part numbers). */
  parts: { part: number; problems: ShardProblem[] }[];
  rebuilt: number;
  moved: number;
  failed: number;
  healError?: string;
  /** Shard files on unavailable nodes were put in the heal queue instead. */
  queued?: boolean;
}

export interface ScrubRunReport extends ScrubRunSummary {
  pass: number;
  passCompleted: boolean;
  cursor: ScrubState["cursor"];
  /** The last object this run checked. */
  last: { bucket: string; key: string } | null;
  findings: ScrubFinding[];
}

export type ScrubStepResult = { ok: true; run: ScrubRunReport; state: ScrubState } | { ok: false; busyUntil: string };

/** The scrub's saved state and whether a run holds the lease right now. */
export async function scrubStatus(env: Env): Promise<{ state: ScrubState; running: boolean }> {
  const { state, running } = await bucketRegistry(env).scrubStatus(Date.now());
  return { state: (state as ScrubState | null) ?? initialScrubState(), running };
}

/** Runs one bounded scrub step: the cron's work, and `POST /_shardgate/admin/scrub`'s. */
export async function scrubStep(env: Env, config: GatewayConfig, settings: ScrubSettings, trigger: "cron" | "admin"): Promise<ScrubStepResult> {
  const reg = bucketRegistry(env);
  const runId = crypto.randomUUID();
  const started = Date.now();
  const lease = await reg.scrubBegin(runId, started, settings.maxMs + LEASE_GRACE_MS);
  if (!lease.ok) return { ok: false, busyUntil: new Date(lease.until).toISOString() };
  const state = (lease.state as ScrubState | null) ?? initialScrubState();
  const run = zeroCounters();
  const findings: ScrubFinding[] = [];
  let last: ScrubRunReport["last"] = null;
  const count = (delta: Partial<ScrubCounters>) => addCounters(delta, run, state.current, state.totals);
  const fail = (bucket: string, key: string, error: string) => {
    count({ objectsFailed: 1 });
    recordError(state, { at: new Date().toISOString(), bucket, key, error });
  };

  // The run before died while checking an object: record it, and go on after it.
  if (state.checking) {
    fail(state.checking.bucket, state.checking.key, `a scrub run stopped while checking this object (since ${state.checking.since}); skipped`);
    state.cursor = { bucket: state.checking.bucket, after: state.checking.key };
    state.checking = null;
  }
  if (!state.cursor) {
    state.pass += 1;
    state.passStarted = new Date(started).toISOString();
    state.passFinished = null;
    state.current = zeroCounters();
    state.usage = {};
    state.cursor = { bucket: "", after: null };
  }
  state.usage ??= {}; // a state saved before usage was counted

  let lastSave = started;
  let leaseLost = false;
  const save = async (release: boolean): Promise<void> => {
    lastSave = Date.now();
    if (!(await reg.scrubSave(runId, state, release ? null : lastSave + settings.maxMs + LEASE_GRACE_MS))) leaseLost = true;
  };

  let stoppedBy: ScrubRunSummary["stoppedBy"] | null = null;
  try {
    await walk();
  } catch (e) {
    // Not an object's failure (those are recorded and passed): save what was done, free the lease.
    recordError(state, {
      at: new Date().toISOString(),
      bucket: state.cursor?.bucket ?? "",
      key: state.cursor?.after ?? "",
      error: `scrub step failed: ${e instanceof Error ? e.message : String(e)}`,
    });
    stoppedBy = "error";
  }

  async function walk(): Promise<void> {
    const buckets = (await reg.list()).map((b) => b.name);
    objects: while (stoppedBy === null) {
      const cursor = state.cursor as NonNullable<ScrubState["cursor"]>;
      const bucket = buckets.find((b) => b >= cursor.bucket);
      if (bucket === undefined) {
        stoppedBy = "pass-complete";
        break;
      }
      if (bucket !== cursor.bucket) state.cursor = { bucket, after: null };
      const index = bucketIndex(env, bucket);
      // Every version of every object (noncurrent ones keep shard files too), delete markers aside.
      let page: ListVersionsPage | null;
      try {
        const afterVersion = state.cursor?.afterVersion;
        page = await index.listVersions({
          prefix: "",
          delimiter: null,
          keyMarker: state.cursor?.after ?? null,
          versionIdMarker: afterVersion === undefined ? undefined : afterVersion === "null" ? null : afterVersion,
          maxKeys: Math.min(LIST_PAGE, settings.maxObjects - run.objectsChecked + 1),
        });
      } catch (e) {
        // A bucket that cannot be listed is recorded and passed, like a failed object.
        recordError(state, { at: new Date().toISOString(), bucket, key: "", error: `listing failed: ${e instanceof Error ? e.message : String(e)}` });
        page = null;
      }
      page ??= { versions: [], commonPrefixes: [], isTruncated: false, nextKeyMarker: null, nextVersionIdMarker: null };
      for (const summary of page.versions) {
        if (run.objectsChecked >= settings.maxObjects) stoppedBy = "max-objects";
        else if (run.objectsChecked > 0 && Date.now() - started >= settings.maxMs) stoppedBy = "time";
        if (stoppedBy !== null) break objects;
        const key = summary.key;
        const versionId = summary.versionId;
        if (summary.deleteMarker) {
          state.cursor = { bucket, after: key, afterVersion: versionId ?? "null" };
          continue;
        }
        try {
          const { object } = await index.head(key, versionId);
          if (object) {
            const manifest = core.decodeManifest(object.manifest);
            const parts = manifest.parts;
            if (parts.some(isSharded)) {
              state.checking = { bucket, key, since: new Date().toISOString() };
              await save(false);
              if (leaseLost) {
                stoppedBy = "lease-lost";
                break objects;
              }
            }
            const finding: ScrubFinding = { bucket, key, parts: [], rebuilt: 0, moved: 0, failed: 0 };
            const known = new Map<string, number[]>();
            const unavailable: Record<string, number[]> = {};
            let misplaced = 0;
            for (const [i, part] of parts.entries()) {
              if (!isSharded(part)) continue;
              misplaced += (await misplacedShards(config, part)).length;
              const r = await scrubPart(config, core, part, settings.mode);
              count({
                partsChecked: 1,
                filesChecked: r.files,
                chunksChecked: r.chunks,
                bytesVerified: r.bytes,
                badChunks: r.badChunks,
                badShards: r.problems.filter((p) => p.fault !== "unavailable").length,
              });
              if (r.problems.length === 0) continue;
              finding.parts.push({ part: i + 1, problems: r.problems });
              // A node whose breaker is open likely still has its files: queue them, like a read does.
              const now = r.problems.filter((p) => p.fault !== "unavailable").map((p) => p.shard);
              const later = r.problems.filter((p) => p.fault === "unavailable").map((p) => p.shard);
              if (now.length > 0) known.set(part.layout.storageId, now);
              if (later.length > 0) unavailable[part.layout.storageId] = later;
            }
            if (Object.keys(unavailable).length > 0) {
              await index.queueHeal(key, object.manifest, "scrub: shard files on a node that is unavailable", unavailable);
              finding.queued = true;
            }
            count({ shardsMisplaced: misplaced });
            metrics.add("shardgate_rebalance_shards_total", misplaced, { state: "misplaced" });
            // Misplaced shard files move while the run's move budget lasts (rebalancing's rate limit).
            const rebalance = misplaced > 0 && run.bytesRebuilt < settings.moveMiB * MIB;
            let placed = parts;
            if ((known.size > 0 || rebalance) && settings.heal) {
              // healObject rebuilds them only if the object still has these shard files (an
              // overwrite or delete since removed them on purpose).
              try {
                const heal = await healObject({ env, config, core }, bucket, key, { known, versionId, rebalance });
                Object.assign(finding, heal);
                count({ bytesRebuilt: heal.bytes });
                metrics.add("shardgate_rebalance_shards_total", heal.moved, { state: "moved" });
                if (heal.moved > 0) placed = core.decodeManifest((await index.head(key, versionId)).object?.manifest ?? object.manifest).parts;
              } catch (e) {
                finding.failed = [...known.values()].reduce((n, shards) => n + shards.length, 0);
                finding.healError = e instanceof Error ? e.message : String(e);
                recordError(state, { at: new Date().toISOString(), bucket, key, error: `heal failed: ${finding.healError}` });
              }
              count({ shardsRebuilt: finding.rebuilt, shardsMoved: finding.moved, shardsFailed: finding.failed });
            }
            for (const part of placed) if (isSharded(part)) addUsage(state.usage, part.layout.placement, shardFileBytes(core, part));
            if ((finding.parts.length > 0 || finding.moved > 0) && findings.length < MAX_FINDINGS) findings.push(finding);
          }
        } catch (e) {
          fail(bucket, key, e instanceof Error ? e.message : String(e));
        }
        count({ objectsChecked: 1 });
        state.cursor = { bucket, after: key, afterVersion: versionId ?? "null" };
        last = { bucket, key };
        if (state.checking) {
          state.checking = null;
          await save(false);
        } else if (Date.now() - lastSave >= SAVE_EVERY_MS) {
          await save(false);
        }
        if (leaseLost) {
          stoppedBy = "lease-lost";
          break objects;
        }
      }
      if (!page.isTruncated) {
        // This bucket is done: on to the next one by name (or the end of the pass).
        const next = buckets.find((b) => b > bucket);
        if (next === undefined) {
          stoppedBy = "pass-complete";
          break;
        }
        state.cursor = { bucket: next, after: null };
      }
    }
  }

  const finished = Date.now();
  // (Set inside walk(), which the compiler's narrowing does not follow.)
  const stopped = stoppedBy as ScrubRunSummary["stoppedBy"] | null;
  const passCompleted = stopped === "pass-complete";
  if (passCompleted) {
    state.passFinished = new Date(finished).toISOString();
    state.lastPass = {
      pass: state.pass,
      started: state.passStarted ?? new Date(started).toISOString(),
      finished: state.passFinished,
      counters: { ...state.current },
      usage: state.usage,
    };
    state.cursor = null;
  }
  const seconds = Math.max(finished - started, 1) / 1000;
  const summary: ScrubRunSummary = {
    trigger,
    mode: settings.mode,
    heal: settings.heal,
    started: new Date(started).toISOString(),
    finished: new Date(finished).toISOString(),
    ms: finished - started,
    stoppedBy: stopped ?? "pass-complete",
    counters: run,
    mibPerSecond: round(run.bytesVerified / MIB / seconds),
    objectsPerSecond: round(run.objectsChecked / seconds),
  };
  state.lastRun = summary;
  if (!leaseLost) await save(true);
  return { ok: true, run: { ...summary, pass: state.pass, passCompleted, cursor: state.cursor, last, findings }, state };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

/** The Cron Trigger's work: one scrub step with the configured budget, logged as one JSON line. */
export async function scheduledScrub(env: Env, config: GatewayConfig): Promise<void> {
  try {
    const result = await scrubStep(env, config, scrubSettings(env), "cron");
    if (result.ok) {
      const { findings, ...run } = result.run;
      console.log(JSON.stringify({ scrub: { ...run, objectsWithFindings: findings.length } }));
    } else {
      console.log(JSON.stringify({ scrub: { skipped: `another scrub run holds the lease until ${result.busyUntil}` } }));
    }
  } catch (e) {
    console.error(JSON.stringify({ scrub: { error: String(e), stack: e instanceof Error ? e.stack : undefined } }));
  } finally {
    await metrics.flush(metricsStore(env)).catch((e: unknown) => console.error(JSON.stringify({ metricsFlush: String(e) })));
  }
}
