import { readFileSync } from "node:fs";
import { ConfigError } from "../errors/base.js";
import { readDatabaseUrl, readEnum, readString, readUrl, type JsonObject } from "./fields.js";
import { parseSettings, requireRpc } from "./parseConfig.js";
import { LOG_LEVELS, type Config, type ConfigSettings } from "./types.js";

export const DEFAULT_CONFIG_PATH = "indexer.config.json";

/** Settings given on the command line; they win over the environment, which wins over the file. */
export type ConfigOverrides = {
  databasePath?: string | undefined;
  logLevel?: string | undefined;
};

/**
 * Reads the config file once at start-up, applies environment then CLI overrides,
 * validates, and returns one frozen object. Secrets (RPC URLs with keys) belong in the environment.
 */
export function loadConfig(
  path: string = DEFAULT_CONFIG_PATH,
  overrides: ConfigOverrides = {},
  env: NodeJS.ProcessEnv = process.env,
): Config {
  return requireRpc(loadSettings(path, overrides, env));
}

/** Like loadConfig, but a config that runs the bundled devnet comes back without its RPC (see parseSettings). */
export function loadSettings(
  path: string = DEFAULT_CONFIG_PATH,
  overrides: ConfigOverrides = {},
  env: NodeJS.ProcessEnv = process.env,
): ConfigSettings {
  const raw = readJsonFile(path);
  applyEnvironment(raw, env);
  if (overrides.databasePath !== undefined)
    raw.database = { ...asObject(raw.database), path: readString("--db", overrides.databasePath) };
  if (overrides.logLevel !== undefined)
    raw.logLevel = readEnum("--log-level", overrides.logLevel, LOG_LEVELS);
  return parseSettings(raw, path);
}

function readJsonFile(path: string): JsonObject {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ConfigError(
      "--config",
      code === "ENOENT" ? `file ${path} does not exist` : `cannot read ${path} (${code})`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError("--config", `${path} is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new ConfigError("--config", `${path} must hold a JSON object`);
  return raw as JsonObject;
}

/** Environment variables that override the file; each is validated under its own name. */
function applyEnvironment(raw: JsonObject, env: NodeJS.ProcessEnv): void {
  // A wrong type in the file stays for parseConfig to report rather than being papered over.
  if (raw.rpc !== undefined && !isObject(raw.rpc)) return;
  const rpc = asObject(raw.rpc);
  const httpUrls = nonEmpty(env.FLASHINDEX_RPC_URL);
  if (httpUrls !== undefined) {
    rpc.http = httpUrls
      .split(",")
      .map((url) => url.trim())
      .map((url) => readUrl("FLASHINDEX_RPC_URL", url, ["http:", "https:"]));
  }
  const ws = nonEmpty(env.FLASHINDEX_WS_URL);
  if (ws !== undefined) rpc.ws = readUrl("FLASHINDEX_WS_URL", ws, ["ws:", "wss:"]);
  const preconfWs = nonEmpty(env.FLASHINDEX_PRECONF_WS_URL);
  if (preconfWs !== undefined)
    rpc.preconfWs = readUrl("FLASHINDEX_PRECONF_WS_URL", preconfWs, ["ws:", "wss:"]);
  if (Object.keys(rpc).length > 0) raw.rpc = rpc;

  const dbPath = nonEmpty(env.FLASHINDEX_DB_PATH);
  if (dbPath !== undefined && (raw.database === undefined || isObject(raw.database)))
    raw.database = { ...asObject(raw.database), path: dbPath };
  // The way to keep a database password out of files.
  const dbUrl = nonEmpty(env.FLASHINDEX_DATABASE_URL);
  if (dbUrl !== undefined && (raw.database === undefined || isObject(raw.database)))
    raw.database = {
      ...asObject(raw.database),
      url: readDatabaseUrl("FLASHINDEX_DATABASE_URL", dbUrl),
    };
  const metricsHost = nonEmpty(env.FLASHINDEX_METRICS_HOST);
  if (metricsHost !== undefined && (raw.metrics === undefined || isObject(raw.metrics)))
    raw.metrics = { ...asObject(raw.metrics), host: metricsHost };
  const logLevel = nonEmpty(env.FLASHINDEX_LOG_LEVEL);
  if (logLevel !== undefined) raw.logLevel = readEnum("FLASHINDEX_LOG_LEVEL", logLevel, LOG_LEVELS);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A copy of a JSON object, or a fresh one when absent. */
function asObject(value: unknown): JsonObject {
  return isObject(value) ? { ...value } : {};
}
