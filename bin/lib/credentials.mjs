// Credentials and region as the AWS CLI finds them: --profile names a profile (the environment's
// keys are then not used); otherwise AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and
// AWS_SESSION_TOKEN) win; otherwise the profile AWS_PROFILE names, or "default", from
// ~/.aws/credentials ([name]) and ~/.aws/config ([profile name], [default]);
// AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE move those files. Region: --region, AWS_REGION,
// AWS_DEFAULT_REGION, the profile's `region`, else us-east-1. Before the default profile, when nothing
// above named credentials: the root key a local gateway made (`local`, bin/lib/local-key.mjs), which
// is what a gateway on this machine expects where the default profile is usually someone's AWS key.
import { readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { UsageError } from "./errors.mjs";

/** Larger files than this are not credentials files: not read. */
const MAX_FILE_BYTES = 1024 * 1024;

/** An INI file's sections: name → { key → value } (keys lower-cased; indented sub-settings skipped). */
export function parseIni(text) {
  const sections = new Map();
  let current = null;
  for (const raw of text.split(/\r?\n/)) {
    if (/^\s/.test(raw) && current !== null && raw.trim() !== "") continue; // a nested setting (`s3 =\n  max_… = 4`)
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    // A section header, `[name]`: sliced, not matched (a hostile line costs linear time).
    const name = line.startsWith("[") && line.endsWith("]") ? line.slice(1, -1).trim() : "";
    if (name !== "" && !name.includes("]")) {
      current = sections.get(name) ?? {};
      sections.set(name, current);
      continue;
    }
    const eq = line.indexOf("=");
    if (eq < 0 || current === null) continue;
    current[line.slice(0, eq).trim().toLowerCase()] = line.slice(eq + 1).trim();
  }
  return sections;
}

function expandHome(path, home) {
  return path === "~" || path.startsWith("~/") ? join(home, path.slice(1)) : path;
}

/** An INI file's sections, or an empty map when it does not exist. */
function readIni(path) {
  let size;
  try {
    size = statSync(path).size;
  } catch {
    return new Map();
  }
  if (size > MAX_FILE_BYTES) throw new UsageError(`${path} is larger than 1 MiB: not a credentials file.`);
  try {
    return parseIni(readFileSync(path, "utf8"));
  } catch (e) {
    throw new UsageError(`cannot read ${path}: ${e.code ?? e.message}`);
  }
}

/** The files' settings for a profile (credentials file first), or null when neither has it. */
function profileSettings(name, env, home) {
  const credentialsFile = expandHome(env.AWS_SHARED_CREDENTIALS_FILE || join(home, ".aws", "credentials"), home);
  const configFile = expandHome(env.AWS_CONFIG_FILE || join(home, ".aws", "config"), home);
  const fromCredentials = readIni(credentialsFile).get(name);
  const config = readIni(configFile);
  const fromConfig = config.get(`profile ${name}`) ?? (name === "default" ? config.get("default") : undefined);
  if (!fromCredentials && !fromConfig) return { settings: null, files: [credentialsFile, configFile] };
  return { settings: { ...fromConfig, ...fromCredentials }, files: [credentialsFile, configFile] };
}

/**
 * { credentials: { accessKeyId, secretAccessKey, sessionToken?, source }, region }; throws
 * UsageError naming what is missing. `local()`: the local gateway's root key and where it is kept, or null.
 * @param {{ profile?: string, region?: string }} flags
 * @param {() => ({ accessKeyId: string, secretAccessKey: string, source: string } | null)} [local]
 */
export function resolveCredentials({ profile, region }, env = process.env, home = homedir(), local = () => null) {
  const named = profile ?? null;
  let credentials = null;
  let settings = null;
  if (named === null && (env.AWS_ACCESS_KEY_ID || env.AWS_SECRET_ACCESS_KEY)) {
    if (!env.AWS_ACCESS_KEY_ID) throw new UsageError("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not.");
    if (!env.AWS_SECRET_ACCESS_KEY) throw new UsageError("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not.");
    credentials = {
      accessKeyId: env.AWS_ACCESS_KEY_ID,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
      ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
      source: "environment",
    };
  }
  const name = named ?? (env.AWS_PROFILE || "default");
  const found = profileSettings(name, env, home);
  settings = found.settings;
  if (credentials === null && named === null && !env.AWS_PROFILE) credentials = local();
  if (credentials === null) {
    if (settings === null) {
      if (named !== null || env.AWS_PROFILE) throw new UsageError(`profile "${name}" is in neither ${found.files.join(" nor ")}.`);
      throw new UsageError(
        "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or name a profile (--profile, AWS_PROFILE) of ~/.aws/credentials; a gateway on this machine keeps its root key in DATA/credentials (--data-dir DATA; default ./.shardgate).",
      );
    }
    if (!settings.aws_access_key_id || !settings.aws_secret_access_key)
      throw new UsageError(
        `profile "${name}" has no aws_access_key_id and aws_secret_access_key (credential_process, SSO and role profiles are not supported).`,
      );
    credentials = {
      accessKeyId: settings.aws_access_key_id,
      secretAccessKey: settings.aws_secret_access_key,
      ...(settings.aws_session_token ? { sessionToken: settings.aws_session_token } : {}),
      source: `profile ${name}`,
    };
  }
  const chosen = region || env.AWS_REGION || env.AWS_DEFAULT_REGION || settings?.region || "us-east-1";
  return { credentials, region: chosen };
}
