// The shardgate CLI's entry: reads the command line, finds the command (or says which one was
// meant), runs it, prints its answer (a table, or JSON with --json) and exits 0; errors are one
// line on stderr with exit status 1 (the request failed) or 2 (the command line is wrong).
import { nearest, readFlags, split } from "./args.mjs";
import { Client } from "./client.mjs";
import { COMMANDS, GLOBAL_FLAGS } from "./commands.mjs";
import { resolveCredentials } from "./credentials.mjs";
import { isLoopback, localDataDir, ROOT_KEY_FILE, readLocalEndpoint, readRootKey } from "./local-key.mjs";
import { clean, UsageError } from "./errors.mjs";

const DEFAULT_ENDPOINT = "http://127.0.0.1:8787";
const DEFAULT_TIMEOUT_S = 30;

const VALUED = new Set(
  [GLOBAL_FLAGS, ...COMMANDS.map((c) => c.flags ?? {})].flatMap((spec) =>
    Object.entries(spec)
      .filter(([, f]) => f.type !== "boolean")
      .map(([n]) => n),
  ),
);

const KNOWN = new Set([GLOBAL_FLAGS, ...COMMANDS.map((c) => c.flags ?? {})].flatMap((spec) => Object.keys(spec)));

const startsWith = (words, prefix) => prefix.every((w, i) => words[i] === w);

function usageLine(c) {
  const flags = Object.entries(c.flags ?? {}).map(([n, f]) => (f.type === "boolean" ? `[--${n}]` : `[--${n} ${f.metavar ?? "VALUE"}]`));
  return ["shardgate", ...c.words, ...(c.args ?? []), ...flags].join(" ");
}

function flagLines(spec) {
  const rows = Object.entries(spec).map(([n, f]) => [f.type === "boolean" ? `--${n}` : `--${n} ${f.metavar ?? "VALUE"}`, f.desc]);
  const width = Math.max(...rows.map(([a]) => a.length));
  return rows.map(([a, d]) => `  ${a.padEnd(width)}  ${d}`);
}

function commandList(commands) {
  const rows = commands.map((c) => [[...c.words, ...(c.args ?? [])].join(" "), c.summary]);
  const width = Math.max(...rows.map(([a]) => a.length));
  return rows.map(([a, d]) => `  ${a.padEnd(width)}  ${d}`);
}

const EXIT_STATUS = "Exit status: 0 done; 1 the request failed (one line: the S3 error code and message); 2 a wrong command line.";

function topHelp() {
  return [
    "shardgate: the command line of a shardgate gateway (docs/cli.md).",
    "",
    "Usage: shardgate COMMAND [ARGUMENTS] [FLAGS]",
    "",
    "Commands:",
    ...commandList(COMMANDS),
    "",
    "Flags of every command:",
    ...flagLines(GLOBAL_FLAGS),
    "",
    "Credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN), or a profile of ~/.aws/credentials",
    "and ~/.aws/config (--profile, AWS_PROFILE; AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE); with none named and a",
    "loopback endpoint, the root key a gateway here made (DATA/credentials: --data-dir, ./shardgate.json's dataDir,",
    "./.shardgate), before the default profile. Admin commands need the root key.",
    EXIT_STATUS,
  ].join("\n");
}

function groupHelp(prefix) {
  return [
    `Usage: shardgate ${prefix.join(" ")} COMMAND …`,
    "",
    ...commandList(COMMANDS.filter((c) => startsWith(c.words, prefix))),
    "",
    "shardgate COMMAND --help: a command's flags.",
  ].join("\n");
}

function commandHelp(c) {
  return [
    `Usage: ${usageLine(c)}`,
    "",
    c.summary,
    ...(c.flags ? ["", "Flags:", ...flagLines(c.flags)] : []),
    "",
    "Flags of every command:",
    ...flagLines(GLOBAL_FLAGS),
    "",
    `Example: ${c.example}`,
  ].join("\n");
}

/** The command the words name: { command, rest } or { group } (a prefix of commands); UsageError otherwise. */
function find(words) {
  let best = null;
  for (const c of COMMANDS) if (startsWith(words, c.words) && (!best || c.words.length > best.words.length)) best = c;
  if (best) {
    const rest = words.slice(best.words.length);
    const extensions = COMMANDS.filter((c) => c !== best && startsWith(c.words, best.words));
    if (rest.length > (best.args?.length ?? 0) && extensions.length > 0 && (best.args?.length ?? 0) === 0) {
      const subs = extensions.map((c) => c.words[best.words.length]);
      const near = nearest(rest[0], subs);
      throw new UsageError(
        `unknown command "${clean([...best.words, rest[0]].join(" "), 60)}"; ${near ? `did you mean "${[...best.words, near].join(" ")}"?` : `"${best.words.join(" ")}" takes no argument; its commands: ${subs.join(", ")}`}`,
      );
    }
    return { command: best, rest };
  }
  // The longest prefix of the words that some commands start with.
  let depth = 0;
  while (depth < words.length && COMMANDS.some((c) => startsWith(c.words, words.slice(0, depth + 1)))) depth++;
  const prefix = words.slice(0, depth);
  if (depth === words.length && depth > 0) return { group: prefix };
  const next = [...new Set(COMMANDS.filter((c) => startsWith(c.words, prefix) && c.words.length > depth).map((c) => c.words[depth]))];
  const near = nearest(words[depth], next);
  throw new UsageError(
    `unknown command "${clean([...prefix, words[depth]].join(" "), 60)}"${near ? `; did you mean "${[...prefix, near].join(" ")}"?` : `; the commands${prefix.length ? ` of "${prefix.join(" ")}"` : ""}: ${next.join(", ")}`}`,
  );
}

/**
 * The flag of `flags` that `word` (a first word such as `--prot`) looks like a typo of, when it is
 * not one of the commands' own flags; else null. (The binary serves on such a word, and serving's
 * flag check names the flag.)
 */
export function nearFlag(word, flags) {
  const name = word.split("=")[0];
  return name.startsWith("--") && !Object.hasOwn(GLOBAL_FLAGS, name.slice(2)) ? nearest(name, flags) : null;
}

/**
 * The root key a gateway on this machine made (bin/lib/local-key.mjs), for an endpoint on loopback
 * only: no other server gets requests signed with it. Null when there is none.
 */
function localKey(endpoint, dataDirFlag) {
  let host;
  try {
    host = new URL(endpoint).hostname;
  } catch {
    return null; // the Client names a bad endpoint
  }
  if (!isLoopback(host)) return null;
  const dir = localDataDir(dataDirFlag);
  let key = null;
  try {
    key = readRootKey(dir);
  } catch {
    // not ours to read (another user's gateway): as if there were none
  }
  return key && { ...key, source: `the local gateway's ${dir}/${ROOT_KEY_FILE}` };
}

async function write(stream, text) {
  await new Promise((resolve) => stream.write(text, () => resolve()));
}

/**
 * Runs the CLI on argv (without node and the script); resolves with the exit status. `coreDir`: the
 * URL of core/pkg/ (the WASM core, for sealed objects' passphrases), which bin/shardgate.mjs names.
 */
export async function main(argv, env = process.env, { coreDir = null } = {}) {
  let json = argv.includes("--json");
  try {
    const { words: all, flags } = split(argv, VALUED, KNOWN);
    const helpWord = all[0] === "help";
    const words = helpWord ? all.slice(1) : all;
    // A flag no command knows is named first: its command's own flags are the candidates when the words name one.
    const stranger = flags.find((f) => !KNOWN.has(f.name));
    if (stranger) {
      let command = null;
      try {
        command = find(words).command ?? null;
      } catch {
        // the words are wrong too: the flag is said first
      }
      const spec = command ? { ...GLOBAL_FLAGS, ...(command.flags ?? {}) } : Object.fromEntries([...KNOWN].map((n) => [n, {}]));
      readFlags([stranger], spec, command ? `shardgate ${command.words.join(" ")}` : "shardgate");
    }
    const wantsHelp = helpWord || flags.some((f) => f.name === "help");
    if (words.length === 0) {
      if (wantsHelp) {
        await write(process.stdout, `${topHelp()}\n`);
        return 0;
      }
      throw new UsageError("name a command (shardgate --help lists them), e.g. shardgate status");
    }
    const found = find(words);
    if (found.group) {
      if (wantsHelp) {
        await write(process.stdout, `${groupHelp(found.group)}\n`);
        return 0;
      }
      const subs = [...new Set(COMMANDS.filter((c) => startsWith(c.words, found.group)).map((c) => c.words[found.group.length]))];
      throw new UsageError(`"shardgate ${found.group.join(" ")}" needs a command: ${subs.join(", ")} (add --help for what they do).`);
    }
    const { command, rest } = found;
    const where = `shardgate ${command.words.join(" ")}`;
    if (wantsHelp) {
      await write(process.stdout, `${commandHelp(command)}\n`);
      return 0;
    }
    const spec = { ...GLOBAL_FLAGS, ...(command.flags ?? {}) };
    const values = readFlags(flags, spec, where);
    json = values.json;
    const names = command.args ?? [];
    if (rest.length < names.length) throw new UsageError(`${where}: missing ${names.slice(rest.length).join(" ")} (usage: ${usageLine(command)})`);
    if (rest.length > names.length) throw new UsageError(`${where}: unexpected argument "${clean(rest[names.length], 60)}" (usage: ${usageLine(command)})`);
    const args = Object.fromEntries(names.map((n, i) => [n, rest[i]]));
    let client = null;
    const out = [];
    const ctx = {
      args,
      flags: values,
      env,
      coreDir,
      client() {
        if (client) return client;
        const endpoint = values.endpoint ?? (env.SHARDGATE_ENDPOINT || readLocalEndpoint(localDataDir(values["data-dir"])) || DEFAULT_ENDPOINT);
        const { credentials, region } = resolveCredentials({ profile: values.profile, region: values.region }, env, undefined, () =>
          localKey(endpoint, values["data-dir"]),
        );
        client = new Client({
          endpoint,
          credentials,
          region,
          timeoutMs: (values.timeout ?? DEFAULT_TIMEOUT_S) * 1000,
        });
        return client;
      },
      print(data, render) {
        out.push(values.json ? JSON.stringify(data, null, 2) : render());
      },
    };
    await command.run(ctx);
    if (out.length > 0) await write(process.stdout, `${out.join("\n")}\n`);
    return 0;
  } catch (e) {
    const known = typeof e?.exitCode === "number";
    const message = known
      ? e.message
      : `internal error: ${clean(e?.message ?? String(e), 300)}${env.SHARDGATE_DEBUG ? `\n${e?.stack}` : " (SHARDGATE_DEBUG=1 shows where)"}`;
    if (json && known && e.code)
      await write(process.stderr, `${JSON.stringify({ error: { code: e.code, message: e.detail ?? e.message, status: e.status } })}\n`);
    else await write(process.stderr, `shardgate: ${message}\n`);
    return known ? e.exitCode : 1;
  }
}
