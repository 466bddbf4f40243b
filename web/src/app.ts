// What the console's views share: the signed-in app they render into, and its hash routes. Its
// own module, so the views never import main.ts (which imports them).
import type { S3Client } from "./s3";
import type { Uploads } from "./upload";

export interface App {
  s3: S3Client;
  uploads: Uploads;
  accessKeyId: string;
  /** Where the current view renders. */
  main: HTMLElement;
  navigate(hash: string): void;
}

export type Route = { view: "buckets" } | { view: "browser"; bucket: string; prefix: string } | { view: "nodes" } | { view: "keys" };

export function routeOf(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/");
  if (parts[0] === "b" && parts[1]) return { view: "browser", bucket: decodeURIComponent(parts[1]), prefix: decodeURIComponent(parts.slice(2).join("/")) };
  if (parts[0] === "nodes") return { view: "nodes" };
  if (parts[0] === "keys") return { view: "keys" };
  return { view: "buckets" };
}

export function hashOf(route: Route): string {
  if (route.view === "browser") return `#/b/${encodeURIComponent(route.bucket)}/${encodeURIComponent(route.prefix)}`;
  if (route.view === "nodes") return "#/nodes";
  if (route.view === "keys") return "#/keys";
  return "#/";
}
