// The lifecycle job: each bucket's rules applied by its Durable Object a bounded step at a time
// (meta/lifecycle-rules.ts), bucket after bucket, within a time budget. A bucket's pass resumes where it
// stopped (the cursor is kept with the bucket), so a big bucket takes several runs, never one long
// one. What a step deletes for good goes to the bucket's garbage queue, which the garbage job
// (services/garbage.ts) drains right after. Runs on the scheduler's alarm and from the admin API,
// which may name the time to apply the rules as of (tests move the clock forward that way).
import type { Env } from "../config";
import type { LifecycleCounts } from "../meta/lifecycle-rules";
import { bucketIndex, bucketRegistry } from "../meta/stubs";
import { metrics } from "../observability/metrics";

export interface LifecycleReport {
  /** Buckets that have rules and were visited. */
  buckets: number;
  /** Buckets whose pass reached their last key in this run. */
  passesFinished: number;
  expired: LifecycleCounts;
  stoppedBy: "done" | "time";
  ms: number;
}

/** The labels of shardgate_lifecycle_expired_total, by counter. */
const ACTIONS: Record<keyof LifecycleCounts, string> = {
  current: "current",
  noncurrent: "noncurrent",
  deleteMarkers: "delete-marker",
  uploads: "upload",
};

/** Applies every bucket's (or one bucket's) rules as of `now`, until all passes end or `budgetMs` runs out. */
export async function runLifecycle(env: Env, opts: { now: number; budgetMs: number; bucket?: string }): Promise<LifecycleReport> {
  const started = Date.now();
  const report: LifecycleReport = {
    buckets: 0,
    passesFinished: 0,
    expired: { current: 0, noncurrent: 0, deleteMarkers: 0, uploads: 0 },
    stoppedBy: "done",
    ms: 0,
  };
  const names = opts.bucket === undefined ? (await bucketRegistry(env).list()).map((b) => b.name) : [opts.bucket];
  for (const name of names) {
    const index = bucketIndex(env, name);
    let visited = false;
    for (;;) {
      if (Date.now() - started > opts.budgetMs) {
        report.stoppedBy = "time";
        break;
      }
      const step = await index.runLifecycle(opts.now);
      if (step === null) break;
      visited = true;
      for (const [k, n] of Object.entries(step.counts) as [keyof LifecycleCounts, number][]) {
        report.expired[k] += n;
        if (n > 0) metrics.add("shardgate_lifecycle_expired_total", n, { action: ACTIONS[k] });
      }
      if (step.done) {
        report.passesFinished++;
        break;
      }
    }
    if (visited) report.buckets++;
    if (report.stoppedBy === "time") break;
  }
  report.ms = Date.now() - started;
  return report;
}
