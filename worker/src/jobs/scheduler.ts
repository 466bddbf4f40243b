// The periodic background work (heal queues, lifecycle rules, shard files to delete, then a scrub step), driven by a Durable Object alarm:
// alarms work the same on Cloudflare, on plain workerd and under miniflare, where Cron Triggers
// exist only on Cloudflare. One object (named "main") keeps one alarm; the Worker arms it once per
// isolate, and every run sets the next one before it starts, so a crash mid-run never stops it.
import { errorText } from "../errors";
import { DurableObject } from "cloudflare:workers";
import { type Env, freshGatewayConfig, type GatewayConfig, jobIntervalMs, orphanGraceMs, orphanSweepMs } from "../config";
import { core } from "../core";
import { drainGarbage } from "../services/garbage";
import { runLifecycle } from "../services/lifecycle";
import { overlaySource } from "../services/node-overlay";
import { sweepOrphans } from "../services/orphans";
import { healQueues } from "../services/heal";
import { scheduledScrub } from "../services/scrub";

/** Queued objects one run heals at most, before its scrub step. */
const HEAL_PER_RUN = 200;

/** Garbage entries (parts whose shard files go) deleted per run. */
const GARBAGE_PER_RUN = 1000;

/** Time one run gives the lifecycle rules (a bucket's pass goes on in the next run). */
const LIFECYCLE_BUDGET_MS = 30_000;

export class JobScheduler extends DurableObject<Env> {
  /** Sets the alarm unless one is set already. */
  async arm(): Promise<void> {
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + jobIntervalMs(this.env));
  }

  /** When the next run is due (ms since the epoch), or null before the first arm(). */
  async nextRun(): Promise<number | null> {
    return this.ctx.storage.getAlarm();
  }

  override async alarm(): Promise<void> {
    await this.ctx.storage.setAlarm(Date.now() + jobIntervalMs(this.env));
    await runJobs(this.env);
    // The orphan sweep reads every node and every manifest: it runs far less often than the rest.
    const now = Date.now();
    const last = this.ctx.storage.kv.get<number>("lastOrphanSweep") ?? 0;
    if (now - last >= orphanSweepMs(this.env)) {
      this.ctx.storage.kv.put("lastOrphanSweep", now);
      const config = () => freshGatewayConfig(this.env, overlaySource(this.env));
      await logged("orphanSweep", async () => sweepOrphans(this.env, await config(), core, { graceMs: orphanGraceMs(this.env), now }));
    }
  }
}

/** One round of background work; each job logs and swallows its own errors. */
export async function runJobs(env: Env): Promise<void> {
  let config: GatewayConfig;
  try {
    config = await freshGatewayConfig(env, overlaySource(env)); // services receive the configuration (with the node overlay), they never load it
  } catch (e) {
    console.error(JSON.stringify({ jobs: { error: errorText(e) } }));
    return;
  }
  await logged("healQueue", () => healQueues({ env, config, core }, HEAL_PER_RUN));
  // The buckets' lifecycle rules as of now (services/lifecycle.ts), then the shard files metadata gave up (services/garbage.ts).
  await logged("lifecycle", () => runLifecycle(env, { now: Date.now(), budgetMs: LIFECYCLE_BUDGET_MS }));
  await logged("garbage", () => drainGarbage(env, config, GARBAGE_PER_RUN));
  await scheduledScrub(env, config);
}

/** Runs one job and logs what it answers, or its error, as one JSON line under `name`. Never throws. */
async function logged(name: string, job: () => Promise<unknown>): Promise<void> {
  try {
    console.log(JSON.stringify({ [name]: await job() }));
  } catch (e) {
    console.error(JSON.stringify({ [name]: { error: errorText(e) } }));
  }
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
