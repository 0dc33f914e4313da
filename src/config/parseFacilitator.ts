import { ConfigError } from "../errors/base.js";
import { integerBoundsAt, keysAt } from "./configSchema.js";
import {
  join,
  optional,
  readAddress,
  readBoolean,
  readEnum,
  readInteger,
  readObject,
  readString,
} from "./fields.js";
import { DEFAULTS, type FacilitatorConfig, type RelayerKeySource } from "./types.js";

/** An environment variable name as POSIX shells accept it. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** ERC-8021 builder codes as the x402 builder-code extension writes them. */
const BUILDER_CODE = /^[a-z0-9_]{1,32}$/;
/** Hosts that only this machine reaches: there, anyone local may spend the relayer's gas. */
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "::1", "localhost"]);

/**
 * `facilitator`: the x402 facilitator served by `start`. Off loopback it is closed by default:
 * `/verify` and `/settle` need the bearer token `authTokenEnv` names, and the relayer's gas is
 * spent only for the listed payees (`payTo` must not be empty there). Without both, anyone who
 * reaches the port could make the relayer pay gas for 1-unit payments to any listed payee.
 */
export function parseFacilitator(value: unknown): FacilitatorConfig {
  const d = DEFAULTS.facilitator;
  const section =
    value === undefined ? {} : readObject("facilitator", value, keysAt("facilitator"));
  const path = (key: string) => join("facilitator", key);
  const int = (key: "port" | "settleTimeoutMs" | "maxBodyBytes" | "relayerStuckAfterMs") =>
    optional(section[key], (v) => readInteger(path(key), v, integerBoundsAt(path(key))));
  const envName = (key: "relayerKeyEnv" | "authTokenEnv") =>
    optional(section[key], (v) => {
      const name = readString(path(key), v);
      if (!ENV_NAME.test(name))
        throw new ConfigError(
          path(key),
          "expected an environment variable name (letters, digits, _), not the secret itself",
        );
      return name;
    });
  const payTo = section.payTo ?? [];
  if (!Array.isArray(payTo)) throw new ConfigError(path("payTo"), "expected an array of addresses");
  const config: FacilitatorConfig = {
    enabled: optional(section.enabled, (v) => readBoolean(path("enabled"), v)) ?? d.enabled,
    host: optional(section.host, (v) => readString(path("host"), v)) ?? d.host,
    port: int("port") ?? d.port,
    relayerKeyEnv: envName("relayerKeyEnv") ?? d.relayerKeyEnv,
    relayerKeyFile: optional(section.relayerKeyFile, (v) => readString(path("relayerKeyFile"), v)),
    minAmount: parseMinAmounts(section.minAmount),
    relayers: parseRelayers(section.relayers),
    relayerStuckAfterMs: int("relayerStuckAfterMs") ?? d.relayerStuckAfterMs,
    settleWaitsFor:
      optional(section.settleWaitsFor, (v) =>
        readEnum(path("settleWaitsFor"), v, ["preconfirmed", "confirmed"] as const),
      ) ?? d.settleWaitsFor,
    payTo: [
      ...new Set(payTo.map((entry, i) => readAddress(join(path("payTo"), i), entry).toLowerCase())),
    ],
    authTokenEnv: envName("authTokenEnv"),
    builderCode: optional(section.builderCode, (v) => {
      const code = readString(path("builderCode"), v);
      if (!BUILDER_CODE.test(code))
        throw new ConfigError(
          path("builderCode"),
          `expected a builder code of 1 to 32 characters a-z, 0-9 and _, got ${JSON.stringify(code)}`,
        );
      return code;
    }),
    settleTimeoutMs: int("settleTimeoutMs") ?? d.settleTimeoutMs,
    maxBodyBytes: int("maxBodyBytes") ?? d.maxBodyBytes,
  };
  if (config.relayers.length > 0 && config.relayerKeyFile !== undefined)
    throw new ConfigError(
      path("relayers"),
      "and facilitator.relayerKeyFile are both set: list that key's file in relayers instead (a pool of one is one entry)",
    );
  if (config.enabled && !isLoopback(config.host) && config.authTokenEnv === undefined)
    throw new ConfigError(
      path("authTokenEnv"),
      `is required while the facilitator listens on ${config.host}: name the environment variable holding the bearer token /verify and /settle require, or listen on 127.0.0.1`,
    );
  if (config.enabled && !isLoopback(config.host) && config.payTo.length === 0)
    throw new ConfigError(
      path("payTo"),
      `is empty while the facilitator listens on ${config.host}: anyone who reaches it could spend the relayer's gas on any payment. List the payees (and set authTokenEnv), or listen on 127.0.0.1`,
    );
  return config;
}

/** `facilitator.minAmount`: one floor per token, a whole amount in base units as a decimal string. */
function parseMinAmounts(value: unknown): Array<{ token: string; amount: bigint }> {
  if (value === undefined) return [];
  const at = "facilitator.minAmount";
  if (!Array.isArray(value)) throw new ConfigError(at, "expected an array of { token, amount }");
  const seen = new Set<string>();
  return value.map((entry, i) => {
    const item = readObject(join(at, i), entry, keysAt(`${at}[]`));
    if (item.token === undefined || item.amount === undefined)
      throw new ConfigError(
        join(at, i),
        "expected both token (an address) and amount (base units, a decimal string)",
      );
    const token = readAddress(join(join(at, i), "token"), item.token).toLowerCase();
    const text = readString(join(join(at, i), "amount"), item.amount);
    if (!/^(?:0|[1-9][0-9]{0,77})$/.test(text))
      throw new ConfigError(
        join(join(at, i), "amount"),
        `expected a whole number of base units as a decimal string (USDC: "1000" is $0.001), got ${JSON.stringify(text)}`,
      );
    if (seen.has(token))
      throw new ConfigError(
        join(join(at, i), "token"),
        `${token} has a floor already: one per token`,
      );
    seen.add(token);
    return { token, amount: BigInt(text) };
  });
}

/**
 * `facilitator.relayers`: each entry names exactly one place its key lives, a file (`keyFile`) or
 * an environment variable (`keyEnv`); a key itself is refused. Two entries naming the same place
 * are refused here; two places holding the same key, when the keys are read (keySources.ts).
 */
function parseRelayers(value: unknown): RelayerKeySource[] {
  if (value === undefined) return [];
  const at = "facilitator.relayers";
  if (!Array.isArray(value) || value.length === 0)
    throw new ConfigError(at, "expected a non-empty array of { keyFile } or { keyEnv }");
  const places = new Set<string>();
  return value.map((entry, i) => {
    const item = readObject(join(at, i), entry, keysAt(`${at}[]`));
    const hasFile = item.keyFile !== undefined;
    if (hasFile === (item.keyEnv !== undefined))
      throw new ConfigError(
        join(at, i),
        "expected exactly one of keyFile (a file holding the key) and keyEnv (the variable holding it)",
      );
    const source: RelayerKeySource = hasFile
      ? { keyFile: readString(join(join(at, i), "keyFile"), item.keyFile) }
      : { keyEnv: readString(join(join(at, i), "keyEnv"), item.keyEnv) };
    if ("keyEnv" in source && !ENV_NAME.test(source.keyEnv))
      throw new ConfigError(
        join(join(at, i), "keyEnv"),
        "expected an environment variable name (letters, digits, _), not the secret itself",
      );
    const place = "keyEnv" in source ? `env ${source.keyEnv}` : `file ${source.keyFile}`;
    if (places.has(place))
      throw new ConfigError(
        join(at, i),
        `names the ${place} a previous entry names: each relayer needs a key of its own`,
      );
    places.add(place);
    return source;
  });
}

/** Whether `host` is reachable from this machine only. */
export function isLoopback(host: string): boolean {
  return LOOPBACK_HOSTS.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}
