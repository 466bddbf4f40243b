// The periodic background work (heal queues, lifecycle rules, shard files to delete, then a scrub step), driven by a Durable Object alarm:
// alarms work the same on Cloudflare, on plain workerd and under miniflare, where Cron Triggers
// exist only on Cloudflare. One object (named "main") keeps one alarm; the Worker arms it once per
// isolate, and every run sets the next one before it starts, so a crash mid-run never stops it.
import { DurableObject } from "cloudflare:workers";
import { type Env, freshGatewayConfig, type GatewayConfig, jobIntervalMs, orphanGraceMs, orphanSweepMs } from "../config";
import { core } from "../core";
import { drainGarbage } from "../services/garbage";
import { runLifecycle } from "../services/lifecycle";
import { overlaySource } from "../services/node-overlay";
import { sweepOrphans } from "../services/orphans";
import { scheduledHeal } from "../services/heal";
import { scheduledScrub } from "../services/scrub";

/** Garbage entries (parts whose shard files go) deleted per run. */
const GARBAGE_PER_RUN = 1000;

/** Time one run gives the lifecycle rules (a bucket's pass goes on in the next run). */
const LIFECYCLE_BUDGET_MS = 30_000;

export class JobScheduler extends DurableObject<Env> {
  /** Sets the alarm unless one is set already. */
  async arm(): Promise<void> {
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + intervalMs(this.env));
  }

  /** When the next run is due (ms since the epoch), or null before the first arm(). */
  async nextRun(): Promise<number | null> {
    return this.ctx.storage.getAlarm();
  }

  override async alarm(): Promise<void> {
    await this.ctx.storage.setAlarm(Date.now() + intervalMs(this.env));
    await runJobs(this.env);
    // The orphan sweep reads every node and every manifest: it runs far less often than the rest.
    const now = Date.now();
    const last = this.ctx.storage.kv.get<number>("lastOrphanSweep") ?? 0;
    if (now - last >= orphanSweepMs(this.env)) {
      this.ctx.storage.kv.put("lastOrphanSweep", now);
      await sweepOnce(this.env, now);
    }
  }
}

/** One round of background work; each job logs and swallows its own errors. */
export async function runJobs(env: Env): Promise<void> {
  let config: GatewayConfig;
  try {
    config = await freshGatewayConfig(env, overlaySource(env)); // services receive the configuration (with the node overlay), they never load it
  } catch (e) {
    console.error(JSON.stringify({ jobs: { error: e instanceof Error ? e.message : String(e) } }));
    return;
  }
  await scheduledHeal(env, config);
  await applyLifecycle(env);
  await collectGarbage(env, config);
  await scheduledScrub(env, config);
}

/** The orphan sweep (services/orphans.ts), logged as one JSON line. Never throws. */
async function sweepOnce(env: Env, now: number): Promise<void> {
  try {
    console.log(
      JSON.stringify({ orphanSweep: await sweepOrphans(env, await freshGatewayConfig(env, overlaySource(env)), core, { graceMs: orphanGraceMs(env), now }) }),
    );
  } catch (e) {
    console.error(JSON.stringify({ orphanSweep: { error: e instanceof Error ? e.message : String(e) } }));
  }
}

/** The buckets' lifecycle rules as of now (services/lifecycle.ts), logged as one JSON line. Never throws. */
async function applyLifecycle(env: Env): Promise<void> {
  try {
    console.log(JSON.stringify({ lifecycle: await runLifecycle(env, { now: Date.now(), budgetMs: LIFECYCLE_BUDGET_MS }) }));
  } catch (e) {
    console.error(JSON.stringify({ lifecycle: { error: e instanceof Error ? e.message : String(e) } }));
  }
}

/** Deletes the shard files metadata gave up (services/garbage.ts), logged as one JSON line. Never throws. */
async function collectGarbage(env: Env, config: GatewayConfig): Promise<void> {
  try {
    console.log(JSON.stringify({ garbage: await drainGarbage(env, config, GARBAGE_PER_RUN) }));
  } catch (e) {
    console.error(JSON.stringify({ garbage: { error: e instanceof Error ? e.message : String(e) } }));
  }
}

/** SHARDGATE_JOB_INTERVAL_MS (default 15 minutes): a bad value throws (loadConfig reports it too), never the default in silence. */
function intervalMs(env: Env): number {
  return jobIntervalMs(env);
}

let armed = false;

/** Arms the scheduler once per isolate (a value, not a shared promise: no request awaits another's). */
export function armScheduler(env: Env, waitUntil: (p: Promise<unknown>) => void): void {
  if (armed || !env.JOB_SCHEDULER) return;
  armed = true;
  const stub = env.JOB_SCHEDULER.get(env.JOB_SCHEDULER.idFromName("main"));
  waitUntil(
    stub.arm().catch((e: unknown) => {
      armed = false; // try again with a later request
      console.error(JSON.stringify({ scheduler: { error: String(e) } }));
    }),
  );
}
