// The background scrub's admin endpoints (SigV4-signed like every S3 request):
//   POST /_shardgate/admin/scrub[?mode=deep|shallow][&max-objects=N][&max-ms=T][&move-mib=M][&heal=false]
//     runs one bounded scrub step now (what the scheduler runs; heal=false only reports) and
//     answers its report and the scrub's status as JSON;
//   GET /_shardgate/admin/heal
//     answers the scrub's progress and results, and the heal queue.
import { healQueueStatus } from "../../services/heal";
import { json } from "../http/json";
import type { ScrubSettings } from "../../config";
import { scrubStatus, scrubStep } from "../../services/scrub";
import type { ScrubState } from "../../services/scrub-state";
import { S3Error } from "../../s3-error";
import type { RequestContext } from "../http/context";

/** The scrub's status: its saved state, whether a run is walking now, and its settings. */
export interface ScrubStatusView extends ScrubState {
  running: boolean;
  settings: ScrubSettings;
}

async function statusView(ctx: RequestContext): Promise<ScrubStatusView> {
  const { state, running } = await scrubStatus(ctx.env);
  return { ...state, running, settings: ctx.config.scrub };
}

/** `GET /_shardgate/admin/heal`: `{ scrub: <status>, queue: { pending, objects } }`. */
export async function getHealStatus(ctx: RequestContext): Promise<Response> {
  const [scrub, queue] = await Promise.all([statusView(ctx), healQueueStatus(ctx)]);
  return json({ scrub, queue });
}

/** `POST /_shardgate/admin/scrub`: one scrub step now; `{ run: <report>, status: <status> }`. */
export async function adminScrub(
  ctx: RequestContext,
  q: { mode: ScrubSettings["mode"] | null; "max-objects": number | null; "max-ms": number | null; "move-mib": number | null; heal: "true" | "false" | null },
): Promise<Response> {
  const settings = { ...ctx.config.scrub };
  if (q.mode !== null) settings.mode = q.mode;
  if (q["max-objects"] !== null) settings.maxObjects = q["max-objects"];
  if (q["max-ms"] !== null) settings.maxMs = q["max-ms"];
  if (q["move-mib"] !== null) settings.moveMiB = q["move-mib"];
  if (q.heal !== null) settings.heal = q.heal === "true";
  const result = await scrubStep(ctx.env, ctx.config, settings, "admin");
  if (!result.ok) throw new S3Error("OperationAborted", `Another scrub run is in progress (its lease ends at ${result.busyUntil}).`);
  return json({ run: result.run, status: { ...result.state, running: false, settings: ctx.config.scrub } satisfies ScrubStatusView });
}
