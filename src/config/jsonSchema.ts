import { CONFIG_FIELDS, type Field } from "./configSchema.js";

/** Where the committed schema lives; a config file may name it in `$schema`. */
export const CONFIG_SCHEMA_PATH = "config/flashindex.schema.json";

const FORMATS: Record<string, Record<string, unknown>> = {
  "http-url": { format: "uri", pattern: "^https?://" },
  "ws-url": { format: "uri", pattern: "^wss?://" },
  address: { pattern: "^0x[0-9a-fA-F]{40}$" },
  path: { minLength: 1 },
  text: { minLength: 1 },
};

/** The JSON Schema (draft 2020-12) of the config file, from the same declarations parseConfig checks against. */
export function configJsonSchema(): Record<string, unknown> {
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    title: "flashindex config",
    description:
      "The config file of flashindex (indexer.config.json). Generated from src/config/configSchema.ts by `npm run schema`; do not edit.",
    ...objectSchema(CONFIG_FIELDS, ["chainId", "tokens"]),
  };
}

function objectSchema(
  properties: Record<string, Field>,
  required: readonly string[] = [],
): Record<string, unknown> {
  return {
    type: "object",
    properties: Object.fromEntries(
      Object.entries(properties).map(([key, field]) => [key, fieldSchema(field)]),
    ),
    ...(required.length > 0 ? { required: [...required] } : {}),
    additionalProperties: false,
  };
}

function fieldSchema(field: Field): Record<string, unknown> {
  const base = {
    description: field.description,
    ...("default" in field && field.default !== undefined ? { default: field.default } : {}),
  };
  switch (field.type) {
    case "integer":
      return { type: "integer", minimum: field.min, maximum: field.max, ...base };
    case "boolean":
      return { type: "boolean", ...base };
    case "string":
      return { type: "string", ...FORMATS[field.format ?? "text"], ...base };
    case "enum":
      return { enum: [...field.values], ...base };
    case "object":
      return { ...objectSchema(field.properties, field.required), ...base };
    case "array":
      return {
        type: "array",
        items: fieldSchema(field.items),
        ...(field.minItems === undefined ? {} : { minItems: field.minItems }),
        ...base,
      };
    case "anyOf":
      return { anyOf: field.options.map(fieldSchema), ...base };
  }
}

/** The schema file's text: stable key order, two-space indent, a final newline. */
export function configJsonSchemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}
