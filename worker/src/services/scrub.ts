// The background scrub's walk: every object of every bucket, in (bucket, key) order, a bounded
// step at a time. A step is what one run of the scheduler's alarm (jobs/scheduler.ts) or
// `POST /_shardgate/admin/scrub` runs: it continues from the cursor the last step saved in the
// BucketRegistry, checks objects (storage/verify-part.ts: shallow or deep; what is bad is healed by
// services/heal.ts's healObject, which also moves shard files off nodes that are gone) until its
// object or time budget is spent or the pass ends, and saves the cursor and results as it goes. An object whose check
// fails is recorded and passed; a run that dies while checking one (a CPU or wall-time limit) has
// that object recorded as failed by the next run, which goes on after it. Nothing ever sends the
// walk back to the start of a pass.
import { errorText } from "../errors";
import { bucketIndex, bucketRegistry, metricsStore, orNullWithoutBucket } from "../meta/stubs";
import type { ListVersionsPage, ObjectRecord, VersionSummary } from "../meta/types";
import { healObject } from "./heal";
import type { Env, GatewayConfig, ScrubSettings } from "../config";
import { core } from "../core";
import { metrics } from "../observability/metrics";
import { misplacedShards } from "../storage/rebuild-part";
import { isSharded, shardFileBytes } from "../storage/layout";
import { scrubPart, type ShardProblem } from "../storage/verify-part";
import { addCounters, addUsage, initialScrubState, recordError, zeroCounters, type ScrubCounters, type ScrubRunSummary, type ScrubState } from "./scrub-state";

const LIST_PAGE = 100;
/** How long a run's lease outlives its last save: a run that died frees the walk after this. */
const LEASE_GRACE_MS = 5 * 60_000;
/** Objects without shard files are cheap: their progress is saved at most this often. */
const SAVE_EVERY_MS = 1000;
/** At most this many objects with findings are listed in a run's report. */
const MAX_FINDINGS = 100;
const MIB = 1 << 20;

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

/** The object version a check is about: where it is, and its record as the walk found it. */
interface ScrubTarget {
  index: BucketIndexStub;
  bucket: string;
  key: string;
  versionId: string | null;
  object: ObjectRecord;
}

type BucketIndexStub = ReturnType<typeof bucketIndex>;
type ManifestParts = ReturnType<typeof core.decodeManifest>["parts"];

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
  const run = new ScrubRun(env, config, settings, (lease.state as ScrubState | null) ?? initialScrubState(), reg, runId, started);
  resumePass(run);
  try {
    await walk(run);
  } catch (e) {
    // Not an object's failure (those are recorded and passed): save what was done, free the lease.
    const { cursor } = run.state;
    recordError(run.state, cursor?.bucket ?? "", cursor?.after ?? "", `scrub step failed: ${errorText(e)}`);
    run.stoppedBy = "error";
  }
  return { ok: true, run: await finishRun(run, trigger), state: run.state };
}

/** One step in progress: the state it moves on (saved under its lease), its counters and findings. */
class ScrubRun {
  /** This run's counters (each count also goes to the pass's and the all-time ones). */
  readonly counters = zeroCounters();
  readonly findings: ScrubFinding[] = [];
  /** The last object checked. */
  last: ScrubRunReport["last"] = null;
  /** Why the walk stopped; null while it goes on. */
  stoppedBy: ScrubRunSummary["stoppedBy"] | null = null;
  /** A save found another run holding the lease: this one saves nothing more. */
  leaseLost = false;
  private lastSave: number;

  constructor(
    readonly env: Env,
    readonly config: GatewayConfig,
    readonly settings: ScrubSettings,
    readonly state: ScrubState,
    readonly reg: ReturnType<typeof bucketRegistry>,
    private readonly runId: string,
    readonly started: number,
  ) {
    this.lastSave = started;
  }

  count(delta: Partial<ScrubCounters>): void {
    addCounters(delta, this.counters, this.state.current, this.state.totals);
  }

  /** Records an object whose check failed; the walk goes on after it. */
  fail(bucket: string, key: string, error: string): void {
    this.count({ objectsFailed: 1 });
    recordError(this.state, bucket, key, error);
  }

  /** Saves the state and extends the lease (`release`: frees it); sets leaseLost if another run holds it. */
  async save(release: boolean): Promise<void> {
    this.lastSave = Date.now();
    if (!(await this.reg.scrubSave(this.runId, this.state, release ? null : this.lastSave + this.settings.maxMs + LEASE_GRACE_MS))) this.leaseLost = true;
  }

  /** Saves if the last save is SAVE_EVERY_MS old. */
  async saveNow(): Promise<void> {
    if (Date.now() - this.lastSave >= SAVE_EVERY_MS) await this.save(false);
  }

  /** Sets stoppedBy if the object or time budget is spent (at least one object is always checked). */
  budgetSpent(): boolean {
    const checked = this.counters.objectsChecked;
    if (checked >= this.settings.maxObjects) this.stoppedBy = "max-objects";
    else if (checked > 0 && Date.now() - this.started >= this.settings.maxMs) this.stoppedBy = "time";
    return this.stoppedBy !== null;
  }
}

/** Where the step starts: after the object the run before died checking (recorded as failed), where
 *  the run before stopped, or at the start of a new pass. */
function resumePass(run: ScrubRun): void {
  const { state } = run;
  // The run before died while checking an object: record it, and go on after it.
  if (state.checking) {
    run.fail(state.checking.bucket, state.checking.key, `a scrub run stopped while checking this object (since ${state.checking.since}); skipped`);
    state.cursor = { bucket: state.checking.bucket, after: state.checking.key };
    state.checking = null;
  }
  if (!state.cursor) {
    state.pass += 1;
    state.passStarted = new Date(run.started).toISOString();
    state.passFinished = null;
    state.current = zeroCounters();
    state.usage = {};
    state.cursor = { bucket: "", after: null };
  }
  state.usage ??= {}; // a state saved before usage was counted
}

/** Walks from the cursor, bucket by bucket in name order, until the budget is spent, the lease is lost or the pass ends. */
async function walk(run: ScrubRun): Promise<void> {
  const { state } = run;
  const buckets = (await run.reg.list()).map((b) => b.name);
  let from = (b: string) => b >= (state.cursor as NonNullable<ScrubState["cursor"]>).bucket;
  while (run.stoppedBy === null) {
    const bucket = buckets.find(from);
    if (bucket === undefined) run.stoppedBy = "pass-complete";
    else {
      if (bucket !== state.cursor?.bucket) state.cursor = { bucket, after: null };
      // A bucket done: on to the next one by name (or the end of the pass).
      if (!(await walkPage(run, bucket))) from = (b) => b > bucket;
    }
  }
}

/** Checks the versions of one page of `bucket`'s listing, from the cursor on; false if the bucket has no more. */
async function walkPage(run: ScrubRun, bucket: string): Promise<boolean> {
  const index = bucketIndex(run.env, bucket);
  const page = await listPage(run, index, bucket);
  for (const version of page.versions) {
    if (run.budgetSpent()) break;
    await visitVersion(run, index, bucket, version);
    if (run.stoppedBy !== null) break;
  }
  return page.isTruncated;
}

/** The next versions after the cursor: every version of every object (noncurrent ones keep shard
 *  files too), delete markers aside; none if the bucket was dropped meanwhile, or cannot be listed
 *  (recorded, and passed like a failed object). */
async function listPage(run: ScrubRun, index: BucketIndexStub, bucket: string): Promise<ListVersionsPage> {
  const { state, settings } = run;
  try {
    const afterVersion = state.cursor?.afterVersion;
    const page = await orNullWithoutBucket(
      index.listVersions({
        prefix: "",
        delimiter: null,
        keyMarker: state.cursor?.after ?? null,
        versionIdMarker: afterVersion === undefined ? undefined : afterVersion === "null" ? null : afterVersion,
        maxKeys: Math.min(LIST_PAGE, settings.maxObjects - run.counters.objectsChecked + 1),
      }),
    );
    if (page) return page;
  } catch (e) {
    recordError(state, bucket, "", `listing failed: ${errorText(e)}`);
  }
  return { versions: [], commonPrefixes: [], isTruncated: false, nextKeyMarker: null, nextVersionIdMarker: null };
}

/** Checks one version (a failure is recorded, and passed), moves the cursor past it and saves as due. */
async function visitVersion(run: ScrubRun, index: BucketIndexStub, bucket: string, version: VersionSummary): Promise<void> {
  const { state } = run;
  const { key, versionId } = version;
  if (version.deleteMarker) {
    state.cursor = { bucket, after: key, afterVersion: versionId ?? "null" };
    return;
  }
  try {
    const { object } = await index.head(key, versionId);
    if (object) {
      const parts = core.decodeManifest(object.manifest).parts;
      if (parts.some(isSharded)) {
        // Should this run die checking it, the next one records it as failed and goes on after it.
        state.checking = { bucket, key, since: new Date().toISOString() };
        await run.save(false);
        if (run.leaseLost) {
          run.stoppedBy = "lease-lost";
          return;
        }
      }
      await checkObject(run, { index, bucket, key, versionId, object }, parts);
    }
  } catch (e) {
    run.fail(bucket, key, errorText(e));
  }
  run.count({ objectsChecked: 1 });
  state.cursor = { bucket, after: key, afterVersion: versionId ?? "null" };
  run.last = { bucket, key };
  if (state.checking) {
    state.checking = null;
    await run.save(false);
  } else {
    await run.saveNow();
  }
  if (run.leaseLost) run.stoppedBy = "lease-lost";
}

/** One object's check: its parts scrubbed, shard files on unavailable nodes queued for healing, bad
 *  or misplaced ones healed, its shard files counted on their nodes, and a finding kept if any. */
async function checkObject(run: ScrubRun, target: ScrubTarget, parts: ManifestParts): Promise<void> {
  const { settings } = run;
  const finding: ScrubFinding = { bucket: target.bucket, key: target.key, parts: [], rebuilt: 0, moved: 0, failed: 0 };
  const { known, unavailable, misplaced } = await checkParts(run, finding, parts);
  if (Object.keys(unavailable).length > 0) {
    await target.index.queueHeal(target.key, target.object.manifest, "scrub: shard files on a node that is unavailable", unavailable);
    finding.queued = true;
  }
  run.count({ shardsMisplaced: misplaced });
  metrics.add("shardgate_rebalance_shards_total", misplaced, { state: "misplaced" });
  // Misplaced shard files move while the run's move budget lasts (rebalancing's rate limit).
  const rebalance = misplaced > 0 && run.counters.bytesRebuilt < settings.moveMiB * MIB;
  let placed = parts;
  if ((known.size > 0 || rebalance) && settings.heal) placed = (await heal(run, target, finding, known, rebalance)) ?? parts;
  for (const part of placed) if (isSharded(part)) addUsage(run.state.usage, part.layout.placement, shardFileBytes(core, part));
  if ((finding.parts.length > 0 || finding.moved > 0) && run.findings.length < MAX_FINDINGS) run.findings.push(finding);
}

/** Scrubs each sharded part, adding its problems to `finding`: the bad shard files by storage id
 *  (`known`), those on unavailable nodes (`unavailable`), and how many are misplaced. */
async function checkParts(
  run: ScrubRun,
  finding: ScrubFinding,
  parts: ManifestParts,
): Promise<{ known: Map<string, number[]>; unavailable: Record<string, number[]>; misplaced: number }> {
  const { config, settings } = run;
  const known = new Map<string, number[]>();
  const unavailable: Record<string, number[]> = {};
  let misplaced = 0;
  for (const [i, part] of parts.entries()) {
    if (!isSharded(part)) continue;
    misplaced += (await misplacedShards(config, part)).length;
    const r = await scrubPart(config, core, part, settings.mode);
    // A node whose breaker is open likely still has its files: queue them, like a read does.
    const now = r.problems.filter((p) => p.fault !== "unavailable").map((p) => p.shard);
    const later = r.problems.filter((p) => p.fault === "unavailable").map((p) => p.shard);
    run.count({ partsChecked: 1, filesChecked: r.files, chunksChecked: r.chunks, bytesVerified: r.bytes, badChunks: r.badChunks, badShards: now.length });
    if (r.problems.length === 0) continue;
    finding.parts.push({ part: i + 1, problems: r.problems });
    if (now.length > 0) known.set(part.layout.storageId, now);
    if (later.length > 0) unavailable[part.layout.storageId] = later;
  }
  return { known, unavailable, misplaced };
}

/** Rebuilds the `known` bad shard files (and moves misplaced ones if `rebalance`), recording what
 *  was done in `finding`; if shard files moved, the object's parts as they are placed now. */
async function heal(
  run: ScrubRun,
  target: ScrubTarget,
  finding: ScrubFinding,
  known: Map<string, number[]>,
  rebalance: boolean,
): Promise<ManifestParts | null> {
  const { env, config } = run;
  let placed: ManifestParts | null = null;
  // healObject rebuilds them only if the object still has these shard files (an
  // overwrite or delete since removed them on purpose).
  try {
    const healed = await healObject({ env, config, core }, target.bucket, target.key, { known, versionId: target.versionId, rebalance });
    Object.assign(finding, healed);
    run.count({ bytesRebuilt: healed.bytes });
    metrics.add("shardgate_rebalance_shards_total", healed.moved, { state: "moved" });
    if (healed.moved > 0)
      placed = core.decodeManifest((await target.index.head(target.key, target.versionId)).object?.manifest ?? target.object.manifest).parts;
  } catch (e) {
    finding.failed = [...known.values()].reduce((n, shards) => n + shards.length, 0);
    finding.healError = errorText(e);
    recordError(run.state, target.bucket, target.key, `heal failed: ${finding.healError}`);
  }
  run.count({ shardsRebuilt: finding.rebuilt, shardsMoved: finding.moved, shardsFailed: finding.failed });
  return placed;
}

/** Closes the pass if it completed, saves the run's summary and frees the lease; the run's report. */
async function finishRun(run: ScrubRun, trigger: ScrubRunSummary["trigger"]): Promise<ScrubRunReport> {
  const { state, settings, started, counters } = run;
  const finished = Date.now();
  const passCompleted = run.stoppedBy === "pass-complete";
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
    stoppedBy: run.stoppedBy ?? "pass-complete",
    counters,
    mibPerSecond: round(counters.bytesVerified / MIB / seconds),
    objectsPerSecond: round(counters.objectsChecked / seconds),
  };
  state.lastRun = summary;
  if (!run.leaseLost) await run.save(true);
  return { ...summary, pass: state.pass, passCompleted, cursor: state.cursor, last: run.last, findings: run.findings };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

/** The Cron Trigger's work: one scrub step with the configured budget, logged as one JSON line. */
export async function scheduledScrub(env: Env, config: GatewayConfig): Promise<void> {
  try {
    const result = await scrubStep(env, config, config.scrub, "cron");
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
