// The root key a local gateway made for itself at its first start, when none was configured
// (scripts/lib/serving.mjs rootKey), and how the CLI finds it for the local user. It lives in the
// gateway's data directory as DATA/credentials, readable by its owner only, in the format of the
// AWS CLI's credentials file ([default] with aws_access_key_id and aws_secret_access_key): the AWS
// CLI and SDKs read it as it is when AWS_SHARED_CREDENTIALS_FILE names it.
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { join, resolve } from "node:path";
import { parseIni } from "./credentials.mjs";

/** The file's name in the data directory. */
export const ROOT_KEY_FILE = "credentials";
/** Where a gateway serving this data directory answers (its base URL), written once it is up. */
export const ENDPOINT_FILE = "endpoint";

/** The endpoint of the gateway that last served `dataDir`, or null (none, or not a URL). */
export function readLocalEndpoint(dataDir) {
  try {
    const text = readFileSync(join(dataDir, ENDPOINT_FILE), "utf8").slice(0, 1024).trim();
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:" ? text : null;
  } catch {
    return null;
  }
}

/** The text of the file holding `key`. */
export function rootKeyText({ accessKeyId, secretAccessKey }) {
  return [
    "# The root key this gateway made at its first start, as no SHARDGATE_ACCESS_KEY_ID /",
    '# SHARDGATE_SECRET_ACCESS_KEY nor "credentials" in shardgate.json set one. It stays until removed.',
    "# npx shardgate finds it; for the AWS CLI and SDKs: export AWS_SHARED_CREDENTIALS_FILE=<this file>",
    "[default]",
    `aws_access_key_id = ${accessKeyId}`,
    `aws_secret_access_key = ${secretAccessKey}`,
    "",
  ].join("\n");
}

/** The key kept in `dataDir`, or null when there is none (a file without both halves holds none). */
export function readRootKey(dataDir) {
  let text;
  try {
    text = readFileSync(join(dataDir, ROOT_KEY_FILE), "utf8");
  } catch (e) {
    if (e.code === "ENOENT" || e.code === "ENOTDIR") return null;
    throw e;
  }
  const key = parseIni(text.slice(0, 64 * 1024)).get("default");
  return key?.aws_access_key_id && key.aws_secret_access_key ? { accessKeyId: key.aws_access_key_id, secretAccessKey: key.aws_secret_access_key } : null;
}

/**
 * The data directory of a gateway started in `cwd` as far as the CLI can know it: `flag`
 * (--data-dir), else the dataDir of `cwd`/shardgate.json, else `cwd`/.shardgate (npm start's and
 * the binary's default).
 * @param {string | undefined} flag @param {string} [cwd]
 */
export function localDataDir(flag, cwd = process.cwd()) {
  if (flag) return resolve(cwd, flag);
  try {
    const { dataDir } = JSON.parse(readFileSync(join(cwd, "shardgate.json"), "utf8").slice(0, 1024 * 1024));
    if (typeof dataDir === "string" && dataDir !== "") return resolve(cwd, dataDir);
  } catch {
    // no file, or not one to read: the default
  }
  return resolve(cwd, ".shardgate");
}

/** Whether `host` (an address or host name, IPv6 with or without brackets) is reachable from this machine only. */
export function isLoopback(host) {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) === 6) return h === "::1" || /^(0:){7}1$/.test(h) || (h.startsWith("::ffff:") && h.slice(7).startsWith("127."));
  return false; // a wildcard ("0.0.0.0", "::", "*"), a LAN or public address, or a host name
}
