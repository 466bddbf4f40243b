// What the background scrub remembers between runs (kept by the BucketRegistry Durable Object):
// where the walk is, what the pass in progress has found so far, the last finished pass, the last
// run, all-time totals and the latest errors. Plain JSON, so it is stored as one row and answered
// as is by `GET /_shardgate/admin/heal`.
import type { ScrubMode } from "../storage/verify-part";

export interface ScrubCounters {
  /** Objects visited (inline ones included). */
  objectsChecked: number;
  /** Sharded parts and shard files checked. */
  partsChecked: number;
  filesChecked: number;
  /** Deep scrub: chunks checked, and bytes of shard files read and verified (checksums included). */
  chunksChecked: number;
  bytesVerified: number;
  /** Chunks that failed their checksum. */
  badChunks: number;
  /** Shard files found missing, of the wrong length, unreadable, short or rotten. */
  badShards: number;
  shardsRebuilt: number;
  /** Of those rebuilt, shard files that went to another node (theirs is gone or draining, or
   *  placement chooses another one now: a node was added). */
  shardsMoved: number;
  /** Shard files found on a node placement would not choose today (storage/rebuild-part.ts misplacedShards). */
  shardsMisplaced: number;
  /** Bytes of shard files written by the scrub's heals and moves. */
  bytesRebuilt: number;
  shardsFailed: number;
  /** Objects whose check failed (recorded in lastErrors; the walk went on past them). */
  objectsFailed: number;
}

export interface ScrubError {
  at: string;
  bucket: string;
  key: string;
  error: string;
}

/** Where the walk continues: in `bucket`, after key `after` (null: from the bucket's first key). */
export interface ScrubCursor {
  bucket: string;
  after: string | null;
  /** The version of `after` checked last ("null": the null version); absent: all of its versions. */
  afterVersion?: string;
}

export interface ScrubPassSummary {
  pass: number;
  started: string;
  finished: string;
  counters: ScrubCounters;
  /** What every node held at the end of the pass. */
  usage: NodeUsage;
}

/** Shard files and their bytes per node, as the manifests the walk checked place them (after its moves). */
export type NodeUsage = Record<string, { files: number; bytes: number }>;

export interface ScrubRunSummary {
  trigger: "cron" | "admin";
  mode: ScrubMode;
  /** False for a report-only run (nothing rebuilt). */
  heal: boolean;
  started: string;
  finished: string;
  ms: number;
  /** Why the run stopped: its object or time budget, the end of the pass, another run taking
   *  over, or an error outside any one object (recorded in lastErrors). */
  stoppedBy: "max-objects" | "time" | "pass-complete" | "lease-lost" | "error";
  counters: ScrubCounters;
  /** Bytes verified per second of the run, in MiB/s (deep scrub). */
  mibPerSecond: number;
  objectsPerSecond: number;
}

export interface ScrubState {
  /** The pass in progress, or the last one finished (0: no pass yet). */
  pass: number;
  passStarted: string | null;
  /** When pass `pass` finished; null while it is in progress. */
  passFinished: string | null;
  /** Where the pass in progress continues; null when no pass is in progress (the next run starts one). */
  cursor: ScrubCursor | null;
  /** The object a run was checking when it last saved: if that run never finished, the next one
   *  records the object as failed and goes on after it. */
  checking: { bucket: string; key: string; since: string } | null;
  /** Counters of the pass in progress (or of the last pass, once it finished). */
  current: ScrubCounters;
  /** Node usage counted so far by the pass in progress. */
  usage: NodeUsage;
  lastPass: ScrubPassSummary | null;
  lastRun: ScrubRunSummary | null;
  totals: ScrubCounters;
  /** Newest first, at most MAX_ERRORS. */
  lastErrors: ScrubError[];
}

export const MAX_ERRORS = 20;

export function zeroCounters(): ScrubCounters {
  return {
    objectsChecked: 0,
    partsChecked: 0,
    filesChecked: 0,
    chunksChecked: 0,
    bytesVerified: 0,
    badChunks: 0,
    badShards: 0,
    shardsRebuilt: 0,
    shardsMoved: 0,
    shardsMisplaced: 0,
    bytesRebuilt: 0,
    shardsFailed: 0,
    objectsFailed: 0,
  };
}

export function initialScrubState(): ScrubState {
  return {
    pass: 0,
    passStarted: null,
    passFinished: null,
    cursor: null,
    checking: null,
    current: zeroCounters(),
    usage: {},
    lastPass: null,
    lastRun: null,
    totals: zeroCounters(),
    lastErrors: [],
  };
}

/** Adds `delta` to every counter set in `into` (counters a state saved before they existed start at 0). */
export function addCounters(delta: Partial<ScrubCounters>, ...into: ScrubCounters[]): void {
  for (const target of into) {
    for (const [name, value] of Object.entries(delta) as [keyof ScrubCounters, number][]) target[name] = (target[name] ?? 0) + value;
  }
}

/** Counts a part's shard files on their nodes. */
export function addUsage(usage: NodeUsage, placement: readonly string[], fileBytes: number): void {
  for (const node of placement) {
    const u = (usage[node] ??= { files: 0, bytes: 0 });
    u.files += 1;
    u.bytes += fileBytes;
  }
}

/** Records an error about `key` of `bucket` (either "" when it is about neither), dated now, among the latest. */
export function recordError(state: ScrubState, bucket: string, key: string, error: string): void {
  state.lastErrors = [{ at: new Date().toISOString(), bucket, key, error }, ...state.lastErrors].slice(0, MAX_ERRORS);
}
