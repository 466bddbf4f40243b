#!/usr/bin/env node
// `shardgate`: the command line of a shardgate gateway (docs/cli.md). Plain Node, no dependencies:
// SigV4 with node:crypto, requests with fetch.
import { main } from "./lib/cli.mjs";

// A closed pipe (`shardgate key list | head -1`) ends the CLI quietly.
process.stdout.on("error", (e) => process.exit(e.code === "EPIPE" ? 0 : 1));
// The WASM core (Argon2id for sealed objects' passphrases) is the repository's core/pkg.
process.exit(await main(process.argv.slice(2), process.env, { coreDir: new URL("../core/pkg/", import.meta.url) }));
