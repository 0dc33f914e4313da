import { ConfigError } from "../errors.js";
import {
  join,
  optional,
  readAddress,
  readBoolean,
  readEnum,
  readInteger,
  readObject,
  readString,
  readUrl,
  type JsonObject,
} from "./fields.js";
import {
  DEFAULTS,
  LOG_LEVELS,
  MAX_WINDOW_BLOCKS,
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
  const root = readObject("", raw, [
    "$schema",
    "chainId",
    "rpc",
    "tokens",
    "backfill",
    "finality",
    "realtime",
    "database",
    "metrics",
    "logLevel",
    "devnet",
    "registration",
    "attribution",
    "cancel",
  ]);
  if (root.chainId === undefined) throw new ConfigError("chainId", "is required");
  const chainId = readInteger("chainId", root.chainId, { min: 1, max: 2 ** 53 - 1 });
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
    logLevel: optional(root.logLevel, (v) => readEnum("logLevel", v, LOG_LEVELS)) ?? DEFAULTS.logLevel,
    registration: parseRegistration(root.registration),
    attribution: parseAttribution(root.attribution),
    cancel: parseCancel(root.cancel),
    devnet,
    source,
  };
  return deepFreeze(config);
}

/** True when the config runs the bundled devnet and takes its RPC (and registration API) from it. */
export function runsDevnet(settings: ConfigSettings): boolean {
  return settings.devnet?.enabled === true;
}

/** The settings pointed at a running devnet: its RPC and WebSocket, and its registration stand-in. */
export function withDevnetEndpoints(settings: ConfigSettings, endpoints: DevnetEndpoints): Config {
  const rpc: RpcConfig = { ...settings.rpc, http: [endpoints.httpUrl], ws: endpoints.wsUrl, preconfWs: endpoints.wsUrl };
  const registration = { ...settings.registration, baseUrl: endpoints.registrationUrl.replace(/\/+$/, "") };
  return deepFreeze({ ...settings, rpc, registration });
}

/** The settings as a Config: only when they name their RPC (not a devnet config before its devnet runs). */
export function requireRpc(settings: ConfigSettings): Config {
  if (runsDevnet(settings) || !("http" in settings.rpc))
    throw new ConfigError("rpc.http", "unknown until the bundled devnet runs (devnet.enabled): start it, or give rpc.http");
  return settings as Config;
}

const RPC_KEYS = ["http", "ws", "preconfWs", "timeoutMs", "requestsPerSecond", "maxResponseBytes", "retry"] as const;

function parseRpc(value: unknown): RpcConfig {
  if (value === undefined) throw new ConfigError("rpc", "is required (at least rpc.http)");
  const rpc = readObject("rpc", value, RPC_KEYS);
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
  const rpc = value === undefined ? {} : readObject("rpc", value, RPC_KEYS);
  for (const key of ["http", "ws", "preconfWs"] as const) {
    if (rpc[key] !== undefined)
      throw new ConfigError(join("rpc", key), "the bundled devnet gives its own URLs (devnet.enabled): remove this key, or set devnet.enabled to false");
  }
  return parseRpcTuning(rpc);
}

function parseRpcTuning(rpc: JsonObject): RpcTuning {
  const retry = rpc.retry === undefined ? {} : readObject("rpc.retry", rpc.retry, ["maxAttempts", "initialDelayMs", "maxDelayMs"]);
  const d = DEFAULTS.rpc;
  const initialDelayMs = int(retry, "rpc.retry", "initialDelayMs", { min: 0, max: 600_000 }) ?? d.retry.initialDelayMs;
  const maxDelayMs = int(retry, "rpc.retry", "maxDelayMs", { min: 0, max: 3_600_000 }) ?? d.retry.maxDelayMs;
  if (maxDelayMs < initialDelayMs)
    throw new ConfigError("rpc.retry.maxDelayMs", `must be at least rpc.retry.initialDelayMs (${initialDelayMs})`);
  return {
    timeoutMs: int(rpc, "rpc", "timeoutMs", { min: 100, max: 600_000 }) ?? d.timeoutMs,
    requestsPerSecond: int(rpc, "rpc", "requestsPerSecond", { min: 1, max: 100_000 }) ?? d.requestsPerSecond,
    maxResponseBytes: int(rpc, "rpc", "maxResponseBytes", { min: 1024, max: 2 ** 31 }) ?? d.maxResponseBytes,
    retry: {
      maxAttempts: int(retry, "rpc.retry", "maxAttempts", { min: 1, max: 100 }) ?? d.retry.maxAttempts,
      initialDelayMs,
      maxDelayMs,
    },
  };
}

function parseTokens(value: unknown): TokenConfig[] {
  if (!Array.isArray(value) || value.length === 0)
    throw new ConfigError("tokens", "expected a non-empty array of { address, startBlock, label? }");
  const seen = new Set<string>();
  return value.map((entry, i) => {
    const path = join("tokens", i);
    const token = readObject(path, entry, ["address", "startBlock", "label"]);
    const address = readAddress(join(path, "address"), token.address);
    if (seen.has(address.toLowerCase())) throw new ConfigError(join(path, "address"), `${address} is listed twice`);
    seen.add(address.toLowerCase());
    if (token.startBlock === undefined) throw new ConfigError(join(path, "startBlock"), "is required");
    return {
      address,
      startBlock: readInteger(join(path, "startBlock"), token.startBlock, { min: 0 }),
      label: optional(token.label, (v) => readString(join(path, "label"), v)),
    };
  });
}

function parseBackfill(value: unknown): Config["backfill"] {
  const backfill = value === undefined ? {} : readObject("backfill", value, ["windowBlocks", "concurrency"]);
  return {
    windowBlocks:
      int(backfill, "backfill", "windowBlocks", { min: 1, max: MAX_WINDOW_BLOCKS }) ?? DEFAULTS.backfill.windowBlocks,
    concurrency: int(backfill, "backfill", "concurrency", { min: 1, max: 64 }) ?? DEFAULTS.backfill.concurrency,
  };
}

/** `"finalized"`, `"safe"`, or a depth in blocks below the head (`{ "depth": 64 }` or just `64`). */
function parseFinality(value: unknown): Finality {
  if (value === undefined) return DEFAULTS.finality;
  if (typeof value === "string") return { tag: readEnum("finality", value, ["finalized", "safe"] as const) };
  if (typeof value === "number") return { depth: readInteger("finality", value, { min: 0, max: 100_000 }) };
  const finality = readObject("finality", value, ["depth"]);
  if (finality.depth === undefined) throw new ConfigError("finality.depth", "is required");
  return { depth: readInteger("finality.depth", finality.depth, { min: 0, max: 100_000 }) };
}

function parseRealtime(value: unknown): Config["realtime"] {
  const keys = ["enabled", "headPollIntervalMs", "pendingPollIntervalMs", "requestTimeoutMs", "reconnectInitialDelayMs", "reconnectMaxDelayMs"] as const;
  const realtime = value === undefined ? {} : readObject("realtime", value, keys);
  const d = DEFAULTS.realtime;
  const reconnectInitialDelayMs = int(realtime, "realtime", "reconnectInitialDelayMs", { min: 1, max: 600_000 }) ?? d.reconnectInitialDelayMs;
  const reconnectMaxDelayMs = int(realtime, "realtime", "reconnectMaxDelayMs", { min: 1, max: 3_600_000 }) ?? d.reconnectMaxDelayMs;
  if (reconnectMaxDelayMs < reconnectInitialDelayMs)
    throw new ConfigError("realtime.reconnectMaxDelayMs", `must be at least realtime.reconnectInitialDelayMs (${reconnectInitialDelayMs})`);
  return {
    enabled: optional(realtime.enabled, (v) => readBoolean("realtime.enabled", v)) ?? d.enabled,
    headPollIntervalMs: int(realtime, "realtime", "headPollIntervalMs", { min: 50, max: 600_000 }) ?? d.headPollIntervalMs,
    pendingPollIntervalMs: int(realtime, "realtime", "pendingPollIntervalMs", { min: 0, max: 600_000 }) ?? d.pendingPollIntervalMs,
    requestTimeoutMs: int(realtime, "realtime", "requestTimeoutMs", { min: 100, max: 600_000 }) ?? d.requestTimeoutMs,
    reconnectInitialDelayMs,
    reconnectMaxDelayMs,
  };
}

function parseAttribution(value: unknown): Config["attribution"] {
  const attribution = value === undefined ? {} : readObject("attribution", value, ["enabled"]);
  return { enabled: optional(attribution.enabled, (v) => readBoolean("attribution.enabled", v)) ?? true };
}

function parseCancel(value: unknown): Config["cancel"] {
  const cancel = value === undefined ? {} : readObject("cancel", value, ["confirmations", "receiptTimeoutMs"]);
  return {
    confirmations: int(cancel, "cancel", "confirmations", { min: 1, max: 1_000 }) ?? DEFAULTS.cancel.confirmations,
    receiptTimeoutMs: int(cancel, "cancel", "receiptTimeoutMs", { min: 100, max: 3_600_000 }) ?? DEFAULTS.cancel.receiptTimeoutMs,
  };
}

function parseRegistration(value: unknown): Config["registration"] {
  const registration = value === undefined ? {} : readObject("registration", value, ["baseUrl", "wallets", "timeoutMs"]);
  const wallets = registration.wallets ?? [];
  if (!Array.isArray(wallets)) throw new ConfigError("registration.wallets", "expected an array of addresses");
  const baseUrl = optional(registration.baseUrl, (v) => readUrl("registration.baseUrl", v, HTTP)) ?? DEFAULTS.registration.baseUrl;
  return {
    baseUrl: baseUrl.replace(/\/+$/, ""),
    wallets: wallets.map((wallet, i) => readAddress(join("registration.wallets", i), wallet)),
    timeoutMs: int(registration, "registration", "timeoutMs", { min: 100, max: 600_000 }) ?? DEFAULTS.registration.timeoutMs,
  };
}

function parseDevnet(value: unknown): Config["devnet"] {
  if (value === undefined) return undefined;
  const keys = ["enabled", "blockTimeMs", "flashblockIntervalMs", "paymentsPerSecond", "reorgEverySeconds", "dropEverySeconds", "port"] as const;
  const devnet = readObject("devnet", value, keys);
  return {
    enabled: optional(devnet.enabled, (v) => readBoolean("devnet.enabled", v)) ?? true,
    blockTimeMs: int(devnet, "devnet", "blockTimeMs", { min: 0, max: 600_000 }) ?? 2_000,
    flashblockIntervalMs: int(devnet, "devnet", "flashblockIntervalMs", { min: 0, max: 60_000 }) ?? 200,
    paymentsPerSecond: int(devnet, "devnet", "paymentsPerSecond", { min: 0, max: 1_000 }) ?? 2,
    reorgEverySeconds: int(devnet, "devnet", "reorgEverySeconds", { min: 0, max: 86_400 }) ?? 60,
    dropEverySeconds: int(devnet, "devnet", "dropEverySeconds", { min: 0, max: 86_400 }) ?? 45,
    port: int(devnet, "devnet", "port", { min: 0, max: 65_535 }) ?? 8545,
  };
}

function parseDatabase(value: unknown): Config["database"] {
  const database = value === undefined ? {} : readObject("database", value, ["path"]);
  return { path: optional(database.path, (v) => readString("database.path", v)) ?? DEFAULTS.database.path };
}

function parseMetrics(value: unknown): Config["metrics"] {
  const metrics = value === undefined ? {} : readObject("metrics", value, ["enabled", "host", "port"]);
  return {
    enabled: optional(metrics.enabled, (v) => readBoolean("metrics.enabled", v)) ?? DEFAULTS.metrics.enabled,
    host: optional(metrics.host, (v) => readString("metrics.host", v)) ?? DEFAULTS.metrics.host,
    port: int(metrics, "metrics", "port", { min: 0, max: 65_535 }) ?? DEFAULTS.metrics.port,
  };
}

function int(object: JsonObject, path: string, key: string, bounds: { min: number; max?: number }): number | undefined {
  return optional(object[key], (v) => readInteger(join(path, key), v, bounds));
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
