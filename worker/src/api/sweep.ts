// `POST /_shardgate/admin/sweep[?grace-seconds=N]`: the orphan sweep now (services/orphans.ts),
// answered with its report. The grace period defaults to SHARDGATE_ORPHAN_GRACE_MS (a day).
import { orphanGraceMs } from "../config";
import { S3Error } from "../s3-error";
import { sweepOrphans } from "../services/orphans";
import { json } from "./admin";
import type { RequestContext } from "./context";

export async function adminSweep(ctx: RequestContext): Promise<Response> {
  const raw = ctx.url.searchParams.get("grace-seconds");
  let graceMs = orphanGraceMs(ctx.env);
  if (raw !== null) {
    const n = Number(raw);
    if (raw === "" || !Number.isSafeInteger(n) || n < 0) throw new S3Error("InvalidArgument", "grace-seconds must be a whole number of seconds, 0 or more.");
    graceMs = n * 1000;
  }
  return json(await sweepOrphans(ctx.env, ctx.config, ctx.core, { graceMs, now: Date.now() }));
}
