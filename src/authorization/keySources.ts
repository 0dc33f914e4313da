import { readFileSync } from "node:fs";
import type { Hex } from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import type { RelayerKeySource } from "../config/types.js";
import { ConfigError } from "../errors/base.js";

export const RELAYER_KEY_ENV = "FLASHINDEX_RELAYER_KEY";
export const BUYER_KEY_ENV = "FLASHINDEX_BUYER_KEY";

/**
 * Loads a private key from a file (the flag wins) or an environment variable, never from an argument.
 * Undefined when neither is set. Messages name the source, never the key or any part of it.
 */
export function readKeyAccount(
  source: { envName: string; fileFlag: string; filePath: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
): PrivateKeyAccount | undefined {
  let text: string;
  let origin: string;
  if (source.filePath !== undefined) {
    origin = `${source.fileFlag} ${source.filePath}`;
    try {
      text = readFileSync(source.filePath, "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new ConfigError(
        source.fileFlag,
        code === "ENOENT"
          ? `file ${source.filePath} does not exist`
          : `cannot read ${source.filePath} (${code})`,
      );
    }
  } else {
    const value = env[source.envName];
    if (value === undefined || value.trim() === "") return undefined;
    origin = source.envName;
    text = value;
  }
  const trimmed = text.trim();
  const hex = (
    trimmed.startsWith("0x") || trimmed.startsWith("0X") ? `0x${trimmed.slice(2)}` : `0x${trimmed}`
  ) as Hex;
  if (!/^0x[0-9a-fA-F]{64}$/.test(hex))
    throw new ConfigError(
      origin,
      "expected a private key of 32 bytes in hex (the value is not shown)",
    );
  try {
    return privateKeyToAccount(hex);
  } catch {
    throw new ConfigError(origin, "not a valid secp256k1 private key (the value is not shown)");
  }
}

/** Where the relayer's key is configured: `facilitator.relayerKeyEnv` and `facilitator.relayerKeyFile`. */
export type RelayerKeyConfig = { relayerKeyEnv: string; relayerKeyFile: string | undefined };

/** The relayer keys of the pool as well: `facilitator.relayers`. */
export type RelayerPoolConfig = RelayerKeyConfig & { relayers: ReadonlyArray<RelayerKeySource> };

/**
 * The relayer's key, by the one rule `cancel`, `order capture`, the capture driver and the
 * facilitator share: a command's `--relayer-key-file` flag, else `facilitator.relayerKeyFile`,
 * else the variable `facilitator.relayerKeyEnv` names (FLASHINDEX_RELAYER_KEY by default).
 * Undefined when none is set.
 */
export function readRelayerAccount(
  config: RelayerKeyConfig,
  flagFile?: string,
  env: NodeJS.ProcessEnv = process.env,
): PrivateKeyAccount | undefined {
  if (flagFile !== undefined)
    return readKeyAccount(
      { envName: config.relayerKeyEnv, fileFlag: "--relayer-key-file", filePath: flagFile },
      env,
    );
  return readKeyAccount(
    {
      envName: config.relayerKeyEnv,
      fileFlag: "facilitator.relayerKeyFile",
      filePath: config.relayerKeyFile,
    },
    env,
  );
}

/** How to give a relayer key, for the message of a command that has none. */
export function relayerKeyHint(config: RelayerKeyConfig): string {
  return `set ${config.relayerKeyEnv} (facilitator.relayerKeyEnv), facilitator.relayerKeyFile, or pass --relayer-key-file`;
}

/**
 * The relayer pool's keys: a command's `--relayer-key-file` (a pool of that one key), else each
 * of `facilitator.relayers` (every one must be set: a listed relayer without its key is an error,
 * not a smaller pool), else the one key of readRelayerAccount. Empty when no key is set at all.
 * Two places holding the same key are refused: one key in the pool twice would share its nonces.
 */
export function readRelayerPool(
  config: RelayerPoolConfig,
  flagFile?: string,
  env: NodeJS.ProcessEnv = process.env,
): PrivateKeyAccount[] {
  if (flagFile !== undefined || config.relayers.length === 0) {
    const one = readRelayerAccount(config, flagFile, env);
    return one === undefined ? [] : [one];
  }
  const accounts = config.relayers.map((source, i) => {
    const at = `facilitator.relayers[${i}]`;
    const account =
      "keyFile" in source
        ? readKeyAccount({ envName: "", fileFlag: `${at}.keyFile`, filePath: source.keyFile }, env)
        : readKeyAccount(
            { envName: source.keyEnv, fileFlag: `${at}.keyEnv`, filePath: undefined },
            env,
          );
    if (account === undefined)
      throw new ConfigError(
        `${at}.keyEnv`,
        `the environment variable ${"keyEnv" in source ? source.keyEnv : ""} is not set`,
      );
    return account;
  });
  accounts.forEach((account, i) => {
    const first = accounts.findIndex((other) => other.address === account.address);
    if (first !== i)
      throw new ConfigError(
        `facilitator.relayers[${i}]`,
        `holds the same key as facilitator.relayers[${first}] (${account.address}): each relayer needs a key of its own`,
      );
  });
  return accounts;
}
