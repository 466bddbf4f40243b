// `POST /_shardgate/admin/lifecycle[?bucket=NAME][&now=ISO-8601]`: applies the lifecycle rules now
// (services/lifecycle.ts) instead of waiting for the scheduler, as of `now` when given (to catch up,
// or in tests to move the clock forward), then deletes the shard files of what they expired. `now`
// moves only when rules fall due: object lock is judged by the real clock (meta/lifecycle-rules.ts),
// so no `now` removes a version under retention or legal hold.
import { drainBucketGarbage, drainGarbage } from "../../services/garbage";
import { runLifecycle } from "../../services/lifecycle";
import type { RequestContext } from "../http/context";
import { json } from "../http/json";

/** The longest one admin call applies rules (the pass goes on in the next call). */
const BUDGET_MS = 60_000;
/** Garbage entries deleted right after. */
const GARBAGE_LIMIT = 10_000;

export async function adminLifecycle(ctx: RequestContext, q: { bucket: string | null; now: number }): Promise<Response> {
  const report = await runLifecycle(ctx.env, { now: q.now, budgetMs: BUDGET_MS, ...(q.bucket === null ? {} : { bucket: q.bucket }) });
  const garbage =
    q.bucket === null ? await drainGarbage(ctx.env, ctx.config, GARBAGE_LIMIT) : await drainBucketGarbage(ctx.env, ctx.config, q.bucket, GARBAGE_LIMIT);
  return json({ now: new Date(q.now).toISOString(), ...report, garbage });
}
