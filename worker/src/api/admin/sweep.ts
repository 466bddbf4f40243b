// `POST /_shardgate/admin/sweep[?grace-seconds=N]`: the orphan sweep now (services/orphans.ts),
// answered with its report. The grace period defaults to SHARDGATE_ORPHAN_GRACE_MS (a day).
import { orphanGraceMs } from "../../config";
import { sweepOrphans } from "../../services/orphans";
import { json } from "../http/json";
import type { RequestContext } from "../http/context";

export async function adminSweep(ctx: RequestContext, q: { "grace-seconds": number | null }): Promise<Response> {
  const graceMs = q["grace-seconds"] === null ? orphanGraceMs(ctx.env) : q["grace-seconds"] * 1000;
  return json(await sweepOrphans(ctx.env, ctx.config, ctx.core, { graceMs, now: Date.now() }));
}
