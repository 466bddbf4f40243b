// Readable output: tables with aligned columns, sizes and times, every cell cleaned of control
// characters (what the gateway answers is never written to the terminal raw).
import { clean } from "./errors.mjs";

/** A value as a cell: "-" for null or undefined, yes/no for booleans. */
export function cell(value) {
  if (value === null || value === undefined || value === "") return "-";
  if (typeof value === "boolean") return value ? "yes" : "no";
  return clean(value, 120);
}

/** Rows (arrays of values) under a header, columns padded to their widest cell. */
export function table(header, rows) {
  const cells = [header, ...rows.map((r) => r.map(cell))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => String(r[i] ?? "").length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? String(c) : String(c).padEnd(widths[i]))).join("  ")).join("\n");
}

/** `label  value` lines, labels padded. */
export function fields(pairs) {
  const width = Math.max(...pairs.map(([label]) => label.length));
  return pairs.map(([label, value]) => `${label.padEnd(width)}  ${typeof value === "string" ? value : cell(value)}`).join("\n");
}

/** Bytes as B / KiB / MiB / GiB / TiB. */
export function bytes(n) {
  if (typeof n !== "number" || !Number.isFinite(n)) return "-";
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = n;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`;
}

/** Milliseconds since the epoch, or an ISO string, as an ISO time to the second. */
export function time(t) {
  if (t === null || t === undefined) return "-";
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? cell(t) : d.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * A report object as `label  value` lines: numbers, strings and booleans as they are, lists as
 * their length (and up to `listed` of their items below), objects as `a=1 b=2`.
 */
export function report(obj, listed = 10) {
  if (obj === null || typeof obj !== "object") return cell(obj);
  const pairs = [];
  const below = [];
  for (const [key, value] of Object.entries(obj)) {
    if (Array.isArray(value)) {
      pairs.push([key, String(value.length)]);
      for (const item of value.slice(0, listed)) below.push(`  ${key}: ${inline(item)}`);
      if (value.length > listed) below.push(`  ${key}: … ${value.length - listed} more (--json shows all)`);
    } else if (value !== null && typeof value === "object") pairs.push([key, inline(value)]);
    else pairs.push([key, cell(value)]);
  }
  return [fields(pairs.length > 0 ? pairs : [["(empty)", ""]]), ...below].join("\n");
}

/** A value on one line: objects as `a=1 b=2`. */
export function inline(value) {
  if (value === null || typeof value !== "object") return cell(value);
  if (Array.isArray(value)) return value.map(inline).join(", ") || "-";
  const parts = Object.entries(value).map(([k, v]) => `${clean(k, 40)}=${v !== null && typeof v === "object" ? `{${inline(v)}}` : cell(v)}`);
  return parts.join(" ") || "-";
}
