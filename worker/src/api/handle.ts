// One S3 request, start to finish: the middleware in order (api/middleware.ts), then the operation
// the request names (api/operations.ts).
import type { Env } from "../config";
import { core } from "../core";
import { S3Error } from "../s3-error";
import type { RequestContext } from "./http/context";
import type { Endpoint } from "./http/router";
import {
  answerErrors,
  authenticate,
  authorize,
  bucketCors,
  checkHost,
  consoleCors,
  crossSite,
  type Exchange,
  exchange,
  type Middleware,
  observe,
  route,
  settleBody,
} from "./middleware";
import { OPERATIONS, type OperationName } from "./operations";

/** Outermost first: each may answer itself or pass on to the next, and sees the answer on its way back. */
const PIPELINE: readonly Middleware[] = [observe, settleBody, answerErrors, checkHost, route, consoleCors, crossSite, bucketCors, authenticate, authorize];

/** `url`: the request's URL, when the caller has parsed it already. */
export function handleS3(request: Request, env: Env, exec: { waitUntil(promise: Promise<unknown>): void }, url?: URL): Promise<Response> {
  const x = exchange(request, env, exec, url);
  const step = (i: number): Promise<Response> => (i < PIPELINE.length ? PIPELINE[i](x, () => step(i + 1)) : dispatch(x));
  return step(0);
}

/** The operation, with the request's context: who sent it, the configuration, the core. */
function dispatch(x: Exchange): Promise<Response> {
  const endpoint = x.endpoint as Endpoint<OperationName>;
  if (endpoint.op === "NotImplemented") throw new S3Error("NotImplemented", `${endpoint.name} is not implemented.`);
  if (x.config === null || x.auth === null) throw new Error("dispatch before routing and authentication");
  const ctx: RequestContext = {
    request: x.request,
    url: x.url,
    env: x.env,
    config: x.config,
    core,
    auth: x.auth,
    principal: x.principal,
    credentialsExpire: x.credentialsExpire,
    requestId: x.requestId,
    waitUntil: (p) => x.exec.waitUntil(p),
  };
  return OPERATIONS[endpoint.op].run(ctx, endpoint);
}
