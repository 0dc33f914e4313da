#!/usr/bin/env node
// Compiles src/devnet/contracts/*.sol with the npm solc package (pinned in package.json) and writes one
// TypeScript artifact per contract into src/devnet/contracts/generated/ (a folder formatters, linters
// and readers skip): an `as const` ABI (so viem infers types) and the creation bytecode.
// The artifacts are committed: tests never compile at run time. Fixed settings, sorted inputs and
// fixed source keys make the output byte-for-byte reproducible.
// Run: npm run compile:contracts
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import solc from "solc";

const CONTRACTS_DIR = fileURLToPath(new URL("../src/devnet/contracts/", import.meta.url));
const GENERATED_DIR = join(CONTRACTS_DIR, "generated");

// cancun: anvil 1.7.1 defaults to a later hardfork (prague) and runs cancun code; Base runs it too.
const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: "cancun",
  outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
};

const files = readdirSync(CONTRACTS_DIR)
  .filter((f) => f.endsWith(".sol"))
  .sort();
const sources = Object.fromEntries(
  files.map((f) => [f, { content: readFileSync(join(CONTRACTS_DIR, f), "utf8") }]),
);
const output = JSON.parse(
  solc.compile(JSON.stringify({ language: "Solidity", sources, settings: SETTINGS })),
);

const diagnostics = output.errors ?? [];
for (const d of diagnostics) console.error(d.formattedMessage);
if (diagnostics.some((d) => d.severity === "error")) process.exit(1);

mkdirSync(GENERATED_DIR, { recursive: true });
for (const file of files) {
  for (const [name, artifact] of Object.entries(output.contracts[file] ?? {})) {
    // Interfaces (no bytecode) are only there for the compiler.
    if (artifact.evm.bytecode.object === "") continue;
    const base = name.charAt(0).toLowerCase() + name.slice(1);
    const text = [
      `// Generated from ${file} by scripts/compileContracts.mjs (npm run compile:contracts). Do not edit.`,
      `// solc ${solc.version()}, optimizer ${SETTINGS.optimizer.runs} runs, evmVersion ${SETTINGS.evmVersion}.`,
      `import type { Hex } from "viem";`,
      ``,
      `export const ${base}Abi = ${JSON.stringify(artifact.abi, null, 2)} as const;`,
      ``,
      `export const ${base}Bytecode: Hex = "0x${artifact.evm.bytecode.object}";`,
      ``,
    ].join("\n");
    writeFileSync(join(GENERATED_DIR, `${base}.ts`), text);
    console.log(
      `Wrote generated/${base}.ts (${artifact.evm.bytecode.object.length / 2} bytes of bytecode)`,
    );
  }
}
