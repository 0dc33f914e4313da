// Writes config/flashindex.schema.json from src/config/configSchema.ts (the declarations parseConfig
// checks against). test/config/configSchema.test.ts fails when the committed file is not current.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { CONFIG_SCHEMA_PATH, configJsonSchemaText } from "../src/config/jsonSchema.js";

const path = join(import.meta.dirname, "..", CONFIG_SCHEMA_PATH);
writeFileSync(path, configJsonSchemaText());
console.error(`flashindex: wrote ${CONFIG_SCHEMA_PATH}`);
