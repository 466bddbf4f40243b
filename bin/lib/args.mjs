// The command line: the command's words, its positional arguments and its flags (`--name value`,
// `--name=value`, booleans bare), global flags anywhere. Unknown words and flags are UsageErrors
// naming the nearest valid one.
import { clean, UsageError } from "./errors.mjs";

/** Levenshtein distance (small strings only). */
function distance(a, b) {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const here = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = here;
    }
  }
  return row[b.length];
}

/** The candidate nearest `word` (a prefix match first, then the smallest edit distance), null when none is near. */
export function nearest(word, candidates) {
  const w = word.toLowerCase();
  const prefixed = candidates.filter((c) => c.toLowerCase().startsWith(w) || w.startsWith(c.toLowerCase()));
  if (prefixed.length > 0) return prefixed[0];
  let best = null;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const d = distance(w, c.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  // Nothing is near a word that shares less than half its letters with every candidate.
  return bestDistance <= Math.max(2, Math.floor(w.length / 2)) ? best : null;
}

/**
 * Splits argv into words (positionals) and flag tokens. `valued` is the set of flag names that take
 * a value (in any command), so their values are not taken for words; `known` every flag name.
 */
export function split(argv, valued, known) {
  const words = [];
  const flags = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i];
    if (token === "--") {
      words.push(...argv.slice(i + 1));
      break;
    }
    if (token === "-h") {
      flags.push({ name: "help", value: null, token });
      continue;
    }
    if (token.startsWith("--") && token.length > 2) {
      const eq = token.indexOf("=");
      const name = eq < 0 ? token.slice(2) : token.slice(2, eq);
      if (eq >= 0) flags.push({ name, value: token.slice(eq + 1), token });
      else if (valued.has(name) && i + 1 < argv.length) flags.push({ name, value: argv[++i], token });
      // A flag no command knows takes the next word with it (it is refused anyway, by name).
      else if (!known.has(name) && i + 1 < argv.length && !argv[i + 1].startsWith("-")) flags.push({ name, value: argv[++i], token });
      else flags.push({ name, value: null, token });
      continue;
    }
    if (token.startsWith("-") && token.length > 1 && !/^-\d/.test(token))
      throw new UsageError(`unknown flag ${clean(token, 40)}: flags are spelled --name (see --help).`);
    words.push(token);
  }
  return { words, flags };
}

/**
 * The flag values for `spec` (name → { type: "string" | "boolean" | "integer", … }): an object of
 * name → value (booleans false, others undefined when absent). `where` names the command in errors.
 */
export function readFlags(flags, spec, where) {
  const out = {};
  for (const [name, f] of Object.entries(spec)) out[name] = f.type === "boolean" ? false : undefined;
  for (const { name, value } of flags) {
    const f = spec[name];
    if (!f) {
      const near = nearest(name, Object.keys(spec));
      throw new UsageError(`unknown flag --${clean(name, 40)} for \`${where}\`${near ? `; did you mean --${near}?` : ""}`);
    }
    if (f.type === "boolean") {
      if (value === null || value === "true") out[name] = true;
      else if (value === "false") out[name] = false;
      else throw new UsageError(`--${name} takes no value (or =true / =false).`);
      continue;
    }
    if (value === null) throw new UsageError(`--${name} needs a value: --${name} ${f.metavar ?? "VALUE"}`);
    if (f.type === "integer") {
      if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value)) || Number(value) < (f.min ?? 0))
        throw new UsageError(`--${name} must be a whole number${f.min ? ` of ${f.min} or more` : ""}, not "${clean(value, 40)}".`);
      out[name] = Number(value);
    } else if (f.choices) {
      if (!f.choices.includes(value)) throw new UsageError(`--${name} must be one of ${f.choices.join(", ")}; not "${clean(value, 40)}".`);
      out[name] = value;
    } else out[name] = value;
  }
  return out;
}
