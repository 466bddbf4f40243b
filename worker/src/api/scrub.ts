// The background scrub's admin endpoints (SigV4-signed like every S3 request):
//   POST /_shardgate/admin/scrub[?mode=deep|shallow][&max-objects=N][&max-ms=T][&heal=false]
//     runs one bounded scrub step now (what the Cron Trigger runs; heal=false only reports) and
//     answers its report and the scrub's status as JSON;
//   GET /_shardgate/admin/heal
//     answers the scrub's progress and results, and the heal queue.
import { healQueueStatus } from "../services/heal";
import { json } from "./admin";
import { scrubSettings, scrubStatus, scrubStep, isScrubMode, type ScrubSettings } from "../services/scrub";
import type { ScrubState } from "../services/scrub-state";
import { S3Error } from "../s3-error";
import type { RequestContext } from "./context";

const MAX_OBJECTS = 100_000;
const MAX_MS = 15 * 60_000;

/** The scrub's status: its saved state, whether a run is walking now, and its settings. */
export interface ScrubStatusView extends ScrubState {
  running: boolean;
  settings: ScrubSettings;
}

async function statusView(ctx: RequestContext): Promise<ScrubStatusView> {
  const { state, running } = await scrubStatus(ctx.env);
  return { ...state, running, settings: scrubSettings(ctx.env) };
}

/** `GET /_shardgate/admin/heal`: `{ scrub: <status>, queue: { pending, objects } }`. */
export async function getHealStatus(ctx: RequestContext): Promise<Response> {
  const [scrub, queue] = await Promise.all([statusView(ctx), healQueueStatus(ctx)]);
  return json({ scrub, queue });
}

/** `POST /_shardgate/admin/scrub`: one scrub step now; `{ run: <report>, status: <status> }`. */
export async function adminScrub(ctx: RequestContext): Promise<Response> {
  const params = ctx.url.searchParams;
  const settings = { ...scrubSettings(ctx.env) };
  const mode = params.get("mode");
  if (mode !== null) {
    if (!isScrubMode(mode)) throw new S3Error("InvalidArgument", "mode must be deep or shallow.");
    settings.mode = mode;
  }
  settings.maxObjects = bounded(params.get("max-objects"), "max-objects", settings.maxObjects, MAX_OBJECTS);
  settings.maxMs = bounded(params.get("max-ms"), "max-ms", settings.maxMs, MAX_MS);
  const heal = params.get("heal");
  if (heal !== null) {
    if (heal !== "true" && heal !== "false") throw new S3Error("InvalidArgument", "heal must be true or false.");
    settings.heal = heal === "true";
  }
  const result = await scrubStep(ctx.env, settings, "admin");
  if (!result.ok) throw new S3Error("OperationAborted", `Another scrub run is in progress (its lease ends at ${result.busyUntil}).`);
  return json({ run: result.run, status: { ...result.state, running: false, settings: scrubSettings(ctx.env) } satisfies ScrubStatusView });
}

function bounded(raw: string | null, name: string, fallback: number, max: number): number {
  if (raw === null) return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0) throw new S3Error("InvalidArgument", `${name} must be a positive integer.`);
  return Math.min(n, max);
}
