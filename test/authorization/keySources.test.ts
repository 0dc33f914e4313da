import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, describe, expect, test } from "vitest";
import {
  readRelayerAccount,
  readRelayerPool,
  relayerKeyHint,
} from "../../src/authorization/keySources.js";
import { ANVIL_PRIVATE_KEYS } from "../../src/devnet/anvil.js";
import { ConfigError } from "../../src/errors/base.js";
import { runCli, writeConfig } from "../helpers/cli.js";

const dir = mkdtempSync(join(tmpdir(), "flashindex-key-sources-"));
const [flagKey, fileKey, envKey] = [
  ANVIL_PRIVATE_KEYS[6]!,
  ANVIL_PRIVATE_KEYS[7]!,
  ANVIL_PRIVATE_KEYS[8]!,
];
const keyFile = (name: string, key: string) => {
  const path = join(dir, name);
  writeFileSync(path, `${key}\n`, { mode: 0o600 });
  return path;
};
const address = (key: string) => privateKeyToAccount(key as `0x${string}`).address;

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("readRelayerAccount()", () => {
  const env = { SHOP_RELAYER: envKey };
  const configured = {
    relayerKeyEnv: "SHOP_RELAYER",
    relayerKeyFile: keyFile("configured.key", fileKey),
  };

  test("takes the flag's file first, then facilitator.relayerKeyFile, then the variable relayerKeyEnv names", () => {
    expect(readRelayerAccount(configured, keyFile("flag.key", flagKey), env)?.address).toBe(
      address(flagKey),
    );
    expect(readRelayerAccount(configured, undefined, env)?.address).toBe(address(fileKey));
    expect(
      readRelayerAccount({ ...configured, relayerKeyFile: undefined }, undefined, env)?.address,
    ).toBe(address(envKey));
    expect(
      readRelayerAccount({ ...configured, relayerKeyFile: undefined }, undefined, {}),
    ).toBeUndefined();
  });

  test("names the source that failed, never the key", () => {
    const bad = () =>
      readRelayerAccount({ relayerKeyEnv: "SHOP_RELAYER", relayerKeyFile: undefined }, undefined, {
        SHOP_RELAYER: "0x1234",
      });
    expect(bad).toThrow(ConfigError);
    expect(bad).toThrow(/SHOP_RELAYER/);
    expect(() =>
      readRelayerAccount({
        relayerKeyEnv: "SHOP_RELAYER",
        relayerKeyFile: join(dir, "absent.key"),
      }),
    ).toThrow(/facilitator\.relayerKeyFile/);
    expect(relayerKeyHint({ relayerKeyEnv: "SHOP_RELAYER", relayerKeyFile: undefined })).toContain(
      "SHOP_RELAYER",
    );
  });
});

describe("order capture and cancel take the relayer key as the facilitator does", () => {
  const configPath = writeConfig(dir, {
    chainId: 8453,
    rpc: { http: ["http://127.0.0.1:9"] },
    tokens: [{ address: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", startBlock: 0 }],
    database: { path: join(dir, "index.db") },
    facilitator: { relayerKeyEnv: "SHOP_RELAYER" },
  });

  test("without a key, both name the configured variable; with a bad one there, both refuse it by that name (exit 2)", async () => {
    const env = { FLASHINDEX_RELAYER_KEY: flagKey };
    const capture = await runCli(["order", "capture", "1", "--config", configPath], env);
    expect(capture.code, capture.stderr).toBe(2);
    expect(capture.stderr).toContain("SHOP_RELAYER");
    const cancel = await runCli(
      [
        "cancel",
        "--config",
        configPath,
        "--authorizer",
        address(envKey),
        "--nonce",
        `0x${"11".repeat(32)}`,
        "--signature",
        `0x${"22".repeat(65)}`,
      ],
      env,
    );
    expect(cancel.code, cancel.stderr).toBe(2);
    expect(cancel.stderr).toContain("SHOP_RELAYER");
    const bad = await runCli(["order", "capture", "1", "--config", configPath], {
      SHOP_RELAYER: "not a key",
    });
    expect(bad.code, bad.stderr).toBe(2);
    expect(bad.stderr).toMatch(/SHOP_RELAYER.*not shown/);
    for (const output of [capture, cancel, bad])
      expect(output.stdout + output.stderr).not.toContain(flagKey.slice(2));
  }, 60_000);
});

describe("readRelayerPool()", () => {
  const single = { relayerKeyEnv: "SHOP_RELAYER", relayerKeyFile: undefined, relayers: [] };

  test("reads every relayer of facilitator.relayers; without it, the one key is a pool of one; the flag's file wins", () => {
    const relayers = [{ keyFile: keyFile("pool-1.key", fileKey) }, { keyEnv: "POOL_2" }];
    expect(
      readRelayerPool({ ...single, relayers }, undefined, { POOL_2: envKey }).map((a) => a.address),
    ).toEqual([address(fileKey), address(envKey)]);
    expect(
      readRelayerPool(single, undefined, { SHOP_RELAYER: envKey }).map((a) => a.address),
    ).toEqual([address(envKey)]);
    expect(readRelayerPool(single, undefined, {})).toEqual([]);
    expect(
      readRelayerPool({ ...single, relayers }, keyFile("flag-pool.key", flagKey), {}).map(
        (a) => a.address,
      ),
    ).toEqual([address(flagKey)]);
  });

  test("a listed relayer without its key, or one key in two places, is refused, naming the entry and never the key", () => {
    const missing = () =>
      readRelayerPool(
        { ...single, relayers: [{ keyEnv: "POOL_1" }, { keyEnv: "POOL_2" }] },
        undefined,
        { POOL_1: envKey },
      );
    expect(missing).toThrow(ConfigError);
    expect(missing).toThrow(/facilitator\.relayers\[1\]\.keyEnv.*POOL_2 is not set/);
    const twice = () =>
      readRelayerPool(
        { ...single, relayers: [{ keyEnv: "POOL_1" }, { keyFile: keyFile("same.key", envKey) }] },
        undefined,
        { POOL_1: envKey },
      );
    expect(twice).toThrow(
      /facilitator\.relayers\[1\]: holds the same key as facilitator\.relayers\[0\]/,
    );
    expect(() => twice()).not.toThrow(new RegExp(envKey.slice(2, 20)));
  });
});
