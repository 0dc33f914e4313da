import type { Address } from "viem";
import { ConfigError } from "../errors/base.js";
import {
  describe,
  join,
  optional,
  readAddress,
  readBoolean,
  readDatabaseUrl,
  readEnum,
  readInteger,
  readObject,
  readString,
  readUrl,
  type JsonObject,
} from "./fields.js";
import { integerBoundsAt, keysAt } from "./configSchema.js";
import { parseWebhookDelivery, parseWebhooks } from "./parseWebhooks.js";
import { parseFacilitator } from "./parseFacilitator.js";
import {
  DEFAULTS,
  LOG_LEVELS,
  MAX_WATCHED_ADDRESSES,
  type Config,
  type ConfigSettings,
  type DevnetEndpoints,
  type Finality,
  type RpcConfig,
  type RpcTuning,
  type TokenConfig,
} from "./types.js";

const HTTP = ["http:", "https:"] as const;
const WS = ["ws:", "wss:"] as const;

/**
 * Validates a parsed config file into a frozen Config; throws ConfigError naming the first bad field.
 * A config that runs the bundled devnet without an `rpc` section is complete only with the devnet's
 * endpoints (see parseSettings and withDevnetEndpoints).
 */
export function parseConfig(raw: unknown, source: string): Config {
  return requireRpc(parseSettings(raw, source));
}

/**
 * Validates a parsed config file. `rpc` is undefined exactly when the config runs the bundled devnet
 * and names no RPC: its URLs exist only once the devnet runs (withDevnetEndpoints fills them in).
 */
export function parseSettings(raw: unknown, source: string): ConfigSettings {
  const root = readObject("", raw, keysAt(""));
  if (root.chainId === undefined) throw new ConfigError("chainId", "is required");
  const chainId = readInteger("chainId", root.chainId, integerBoundsAt("chainId"));
  const devnet = parseDevnet(root.devnet);
  const config: ConfigSettings = {
    chainId,
    // The devnet supplies its own URLs once it runs; a config that runs it needs no rpc section.
    rpc: devnet?.enabled === true ? parseDevnetRpc(root.rpc) : parseRpc(root.rpc),
    tokens: parseTokens(root.tokens),
    backfill: parseBackfill(root.backfill),
    finality: parseFinality(root.finality),
    realtime: parseRealtime(root.realtime),
    database: parseDatabase(root.database),
    metrics: parseMetrics(root.metrics),
    logLevel:
      optional(root.logLevel, (v) => readEnum("logLevel", v, LOG_LEVELS)) ?? DEFAULTS.logLevel,
    registration: parseRegistration(root.registration),
    attribution: parseAttribution(root.attribution),
    cancel: parseCancel(root.cancel),
    facilitator: parseFacilitator(root.facilitator),
    webhooks: parseWebhooks(root.webhooks),
    webhookDelivery: parseWebhookDelivery(root.webhookDelivery),
    devnet,
    source,
  };
  if (devnet?.enabled === true && config.database.url !== undefined)
    throw new ConfigError(
      "database.url",
      "the bundled devnet keeps its chain beside a SQLite file (database.path), not in Postgres: remove this key (or unset FLASHINDEX_DATABASE_URL), or point rpc.http at a node and set devnet.enabled to false",
    );
  return deepFreeze(config);
}

/** True when the config runs the bundled devnet and takes its RPC (and registration API) from it. */
export function runsDevnet(settings: ConfigSettings): boolean {
  return settings.devnet?.enabled === true;
}

/** The settings pointed at a running devnet: its RPC and WebSocket, and its registration stand-in. */
export function withDevnetEndpoints(settings: ConfigSettings, endpoints: DevnetEndpoints): Config {
  const rpc: RpcConfig = {
    ...settings.rpc,
    http: [endpoints.httpUrl],
    ws: endpoints.wsUrl,
    preconfWs: endpoints.wsUrl,
  };
  const registration = {
    ...settings.registration,
    baseUrl: endpoints.registrationUrl.replace(/\/+$/, ""),
  };
  return deepFreeze({ ...settings, rpc, registration });
}

/** The settings as a Config: only when they name their RPC (not a devnet config before its devnet runs). */
export function requireRpc(settings: ConfigSettings): Config {
  if (runsDevnet(settings) || !("http" in settings.rpc))
    throw new ConfigError(
      "rpc.http",
      "unknown until the bundled devnet runs (devnet.enabled): start it, or give rpc.http",
    );
  return settings as Config;
}

function parseRpc(value: unknown): RpcConfig {
  if (value === undefined) throw new ConfigError("rpc", "is required (at least rpc.http)");
  const rpc = readObject("rpc", value, keysAt("rpc"));
  const httpList = typeof rpc.http === "string" ? [rpc.http] : rpc.http;
  if (!Array.isArray(httpList) || httpList.length === 0)
    throw new ConfigError("rpc.http", "expected a URL or a non-empty array of URLs");
  return {
    http: httpList.map((url, i) => readUrl(join("rpc.http", i), url, HTTP)),
    ws: optional(rpc.ws, (v) => readUrl("rpc.ws", v, WS)),
    preconfWs: optional(rpc.preconfWs, (v) => readUrl("rpc.preconfWs", v, WS)),
    ...parseRpcTuning(rpc),
  };
}

/** The rpc section of a config that runs the devnet: its tuning only, the URLs are the devnet's. */
function parseDevnetRpc(value: unknown): RpcTuning {
  const rpc = value === undefined ? {} : readObject("rpc", value, keysAt("rpc"));
  const envNames = {
    http: "FLASHINDEX_RPC_URL",
    ws: "FLASHINDEX_WS_URL",
    preconfWs: "FLASHINDEX_PRECONF_WS_URL",
  } as const;
  for (const [key, envName] of Object.entries(envNames)) {
    if (rpc[key] !== undefined)
      throw new ConfigError(
        join("rpc", key),
        `the bundled devnet gives its own URLs (devnet.enabled): remove this key (or unset ${envName}), or set devnet.enabled to false`,
      );
  }
  return parseRpcTuning(rpc);
}

function parseRpcTuning(rpc: JsonObject): RpcTuning {
  const retry =
    rpc.retry === undefined ? {} : readObject("rpc.retry", rpc.retry, keysAt("rpc.retry"));
  const d = DEFAULTS.rpc;
  const initialDelayMs = int(retry, "rpc.retry", "initialDelayMs") ?? d.retry.initialDelayMs;
  const maxDelayMs = int(retry, "rpc.retry", "maxDelayMs") ?? d.retry.maxDelayMs;
  if (maxDelayMs < initialDelayMs)
    throw new ConfigError(
      "rpc.retry.maxDelayMs",
      `must be at least rpc.retry.initialDelayMs (${initialDelayMs})`,
    );
  return {
    timeoutMs: int(rpc, "rpc", "timeoutMs") ?? d.timeoutMs,
    requestsPerSecond: int(rpc, "rpc", "requestsPerSecond") ?? d.requestsPerSecond,
    maxResponseBytes: int(rpc, "rpc", "maxResponseBytes") ?? d.maxResponseBytes,
    retry: {
      maxAttempts: int(retry, "rpc.retry", "maxAttempts") ?? d.retry.maxAttempts,
      initialDelayMs,
      maxDelayMs,
    },
  };
}

function parseTokens(value: unknown): TokenConfig[] {
  if (!Array.isArray(value) || value.length === 0)
    throw new ConfigError(
      "tokens",
      "expected a non-empty array of { address, startBlock, label? }",
    );
  const seen = new Set<string>();
  return value.map((entry, i) => {
    const path = join("tokens", i);
    const token = readObject(path, entry, keysAt("tokens[]"));
    const address = readAddress(join(path, "address"), token.address);
    if (seen.has(address.toLowerCase()))
      throw new ConfigError(join(path, "address"), `${address} is listed twice`);
    seen.add(address.toLowerCase());
    if (token.startBlock === undefined)
      throw new ConfigError(join(path, "startBlock"), "is required");
    return {
      address,
      key: address.toLowerCase() as Address,
      startBlock: readInteger(
        join(path, "startBlock"),
        token.startBlock,
        integerBoundsAt("tokens[].startBlock"),
      ),
      label: optional(token.label, (v) => readString(join(path, "label"), v)),
      watch: optional(token.watch, (v) => parseWatch(join(path, "watch"), v)),
    };
  });
}

/** `tokens[].watch`: checked addresses, lower-cased and sorted; an empty list means every log (undefined). */
function parseWatch(path: string, value: unknown): readonly Address[] | undefined {
  const watch = readObject(path, value, keysAt("tokens[].watch"));
  if (watch.addresses === undefined) return undefined;
  const listPath = join(path, "addresses");
  if (!Array.isArray(watch.addresses))
    throw new ConfigError(
      listPath,
      `expected an array of addresses, got ${describe(watch.addresses)}`,
    );
  if (watch.addresses.length > MAX_WATCHED_ADDRESSES)
    throw new ConfigError(
      listPath,
      `lists ${watch.addresses.length} addresses, at most ${MAX_WATCHED_ADDRESSES} are allowed (leave it out to index every log of the token)`,
    );
  const seen = new Set<Address>();
  for (const [i, entry] of watch.addresses.entries()) {
    const key = readAddress(join(listPath, i), entry).toLowerCase() as Address;
    if (seen.has(key)) throw new ConfigError(join(listPath, i), `${String(entry)} is listed twice`);
    seen.add(key);
  }
  return seen.size === 0 ? undefined : [...seen].sort();
}

function parseBackfill(value: unknown): Config["backfill"] {
  const backfill = value === undefined ? {} : readObject("backfill", value, keysAt("backfill"));
  return {
    windowBlocks: int(backfill, "backfill", "windowBlocks") ?? DEFAULTS.backfill.windowBlocks,
    concurrency: int(backfill, "backfill", "concurrency") ?? DEFAULTS.backfill.concurrency,
  };
}

/** `"finalized"`, `"safe"`, or a depth in blocks below the head (`{ "depth": 64 }` or just `64`). */
function parseFinality(value: unknown): Finality {
  if (value === undefined) return DEFAULTS.finality;
  if (typeof value === "string")
    return { tag: readEnum("finality", value, ["finalized", "safe"] as const) };
  if (typeof value === "number")
    return { depth: readInteger("finality", value, integerBoundsAt("finality.depth")) };
  const finality = readObject("finality", value, keysAt("finality"));
  if (finality.depth === undefined) throw new ConfigError("finality.depth", "is required");
  return {
    depth: readInteger("finality.depth", finality.depth, integerBoundsAt("finality.depth")),
  };
}

function parseRealtime(value: unknown): Config["realtime"] {
  const realtime = value === undefined ? {} : readObject("realtime", value, keysAt("realtime"));
  const d = DEFAULTS.realtime;
  const reconnectInitialDelayMs =
    int(realtime, "realtime", "reconnectInitialDelayMs") ?? d.reconnectInitialDelayMs;
  const reconnectMaxDelayMs =
    int(realtime, "realtime", "reconnectMaxDelayMs") ?? d.reconnectMaxDelayMs;
  if (reconnectMaxDelayMs < reconnectInitialDelayMs)
    throw new ConfigError(
      "realtime.reconnectMaxDelayMs",
      `must be at least realtime.reconnectInitialDelayMs (${reconnectInitialDelayMs})`,
    );
  return {
    enabled: optional(realtime.enabled, (v) => readBoolean("realtime.enabled", v)) ?? d.enabled,
    headPollIntervalMs: int(realtime, "realtime", "headPollIntervalMs") ?? d.headPollIntervalMs,
    pendingPollIntervalMs:
      int(realtime, "realtime", "pendingPollIntervalMs") ?? d.pendingPollIntervalMs,
    requestTimeoutMs: int(realtime, "realtime", "requestTimeoutMs") ?? d.requestTimeoutMs,
    reconnectInitialDelayMs,
    reconnectMaxDelayMs,
  };
}

function parseAttribution(value: unknown): Config["attribution"] {
  const attribution =
    value === undefined ? {} : readObject("attribution", value, keysAt("attribution"));
  const entryPoints = attribution.entryPoints;
  if (entryPoints !== undefined && !Array.isArray(entryPoints))
    throw new ConfigError("attribution.entryPoints", "expected an array of addresses");
  return {
    enabled: optional(attribution.enabled, (v) => readBoolean("attribution.enabled", v)) ?? true,
    entryPoints: entryPoints?.map((address, i) =>
      readAddress(join("attribution.entryPoints", i), address),
    ),
  };
}

function parseCancel(value: unknown): Config["cancel"] {
  const cancel = value === undefined ? {} : readObject("cancel", value, keysAt("cancel"));
  return {
    confirmations: int(cancel, "cancel", "confirmations") ?? DEFAULTS.cancel.confirmations,
    receiptTimeoutMs: int(cancel, "cancel", "receiptTimeoutMs") ?? DEFAULTS.cancel.receiptTimeoutMs,
  };
}

function parseRegistration(value: unknown): Config["registration"] {
  const registration =
    value === undefined ? {} : readObject("registration", value, keysAt("registration"));
  const wallets = registration.wallets ?? [];
  if (!Array.isArray(wallets))
    throw new ConfigError("registration.wallets", "expected an array of addresses");
  const baseUrl =
    optional(registration.baseUrl, (v) => readUrl("registration.baseUrl", v, HTTP)) ??
    DEFAULTS.registration.baseUrl;
  return {
    baseUrl: baseUrl.replace(/\/+$/, ""),
    wallets: wallets.map((wallet, i) => readAddress(join("registration.wallets", i), wallet)),
    timeoutMs: int(registration, "registration", "timeoutMs") ?? DEFAULTS.registration.timeoutMs,
  };
}

function parseDevnet(value: unknown): Config["devnet"] {
  if (value === undefined) return undefined;
  const devnet = readObject("devnet", value, keysAt("devnet"));
  const d = DEFAULTS.devnet;
  return {
    enabled: optional(devnet.enabled, (v) => readBoolean("devnet.enabled", v)) ?? true,
    blockTimeMs: int(devnet, "devnet", "blockTimeMs") ?? d.blockTimeMs,
    flashblockIntervalMs: int(devnet, "devnet", "flashblockIntervalMs") ?? d.flashblockIntervalMs,
    paymentsPerSecond: int(devnet, "devnet", "paymentsPerSecond") ?? d.paymentsPerSecond,
    reorgEverySeconds: int(devnet, "devnet", "reorgEverySeconds") ?? d.reorgEverySeconds,
    dropEverySeconds: int(devnet, "devnet", "dropEverySeconds") ?? d.dropEverySeconds,
    port: int(devnet, "devnet", "port") ?? d.port,
  };
}

/** A Postgres schema name: lower-case letters, digits and underscores (the store quotes it with the driver's escape as well). */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function parseDatabase(value: unknown): Config["database"] {
  const database = value === undefined ? {} : readObject("database", value, keysAt("database"));
  const schema =
    optional(database.schema, (v) => readString("database.schema", v)) ?? DEFAULTS.database.schema;
  if (!SCHEMA_NAME.test(schema))
    throw new ConfigError(
      "database.schema",
      `${JSON.stringify(schema)} is not a plain schema name (lower-case letters, digits, _; at most 63)`,
    );
  return {
    path: optional(database.path, (v) => readString("database.path", v)) ?? DEFAULTS.database.path,
    url: optional(database.url, (v) => readDatabaseUrl("database.url", v)),
    schema,
  };
}

function parseMetrics(value: unknown): Config["metrics"] {
  const metrics = value === undefined ? {} : readObject("metrics", value, keysAt("metrics"));
  return {
    enabled:
      optional(metrics.enabled, (v) => readBoolean("metrics.enabled", v)) ??
      DEFAULTS.metrics.enabled,
    host: optional(metrics.host, (v) => readString("metrics.host", v)) ?? DEFAULTS.metrics.host,
    port: int(metrics, "metrics", "port") ?? DEFAULTS.metrics.port,
    statusPage:
      optional(metrics.statusPage, (v) => readBoolean("metrics.statusPage", v)) ??
      DEFAULTS.metrics.statusPage,
  };
}

/** An optional integer whose bounds are declared in CONFIG_FIELDS. */
function int(object: JsonObject, path: string, key: string): number | undefined {
  return optional(object[key], (v) =>
    readInteger(join(path, key), v, integerBoundsAt(join(path, key))),
  );
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
