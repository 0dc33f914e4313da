import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { CONFIG_FIELDS, type Field } from "../../src/config/configSchema.js";
import { CONFIG_SCHEMA_PATH, configJsonSchemaText } from "../../src/config/jsonSchema.js";
import { parseSettings } from "../../src/config/parseConfig.js";

const ROOT = join(import.meta.dirname, "..", "..");

/** Every key a user sets, as the README names them: objects are walked, an array of objects is `name[]`. */
function schemaKeys(fields: Record<string, Field>, prefix = ""): string[] {
  return Object.entries(fields).flatMap(([key, field]) => {
    const path = prefix === "" ? key : `${prefix}.${key}`;
    if (key === "$schema") return [];
    if (field.type === "object") return schemaKeys(field.properties, path);
    if (field.type === "array" && field.items.type === "object") return [`${path}[]`];
    return [path];
  });
}

const CONFIG_TABLE_HEADER = "| key | type | default | meaning |";

/**
 * The keys of the README's configuration table, and of such tables in docs/ (a feature's notes in
 * docs/notes/ document its keys until they are folded in): `a.b.c` / `d` names a.b.c and a.b.d.
 */
function readmeKeys(): string[] {
  const docs = readdirSync(join(ROOT, "docs"), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".md"))
    .map((file) => join("docs", file));
  const keys = ["README.md", ...docs].flatMap((file) => {
    const text = readFileSync(join(ROOT, file), "utf8");
    return text.includes(CONFIG_TABLE_HEADER) ? tableKeys(text) : [];
  });
  return [...new Set(keys)];
}

function tableKeys(markdown: string): string[] {
  const table = markdown.slice(markdown.indexOf(CONFIG_TABLE_HEADER)).split("\n\n")[0]!;
  return table
    .split("\n")
    .slice(2)
    .flatMap((row) => {
      const names = [...(row.split("|")[1] ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
      const [first, ...rest] = names;
      if (first === undefined) return [];
      const parent = first.includes(".") ? first.slice(0, first.lastIndexOf(".") + 1) : "";
      return [first, ...rest.map((name) => `${parent}${name}`)];
    });
}

describe("the config's JSON Schema", () => {
  test("the committed config/flashindex.schema.json is the one the validator's declarations produce (npm run schema)", () => {
    expect(readFileSync(join(ROOT, CONFIG_SCHEMA_PATH), "utf8")).toBe(configJsonSchemaText());
  });

  test("every README config key is in the schema, and every schema key is in the README", () => {
    expect(readmeKeys().sort()).toEqual(schemaKeys(CONFIG_FIELDS).sort());
  });

  test("the bundled configs name the schema and validate", () => {
    for (const file of [
      "indexer.config.json",
      "config/base-mainnet.json",
      "config/base-sepolia.json",
    ]) {
      const raw = JSON.parse(readFileSync(join(ROOT, file), "utf8")) as Record<string, unknown>;
      expect(raw.$schema, file).toMatch(/flashindex\.schema\.json$/);
      expect(() => parseSettings(raw, file)).not.toThrow();
    }
  });

  test("a key the schema does not declare is refused by the validator with the schema's keys", () => {
    expect(() =>
      parseSettings(
        {
          chainId: 8453,
          devnet: {},
          tokens: [{ address: "0x5FbDB2315678afecb367f032d93F642f64180aa3", startBlock: 0 }],
          metrics: { prot: 1 },
        },
        "t",
      ),
    ).toThrow("metrics.prot: unknown key (allowed here: enabled, host, port, statusPage)");
  });
});
