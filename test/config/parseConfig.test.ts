import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { loadConfig, loadSettings } from "../../src/config/loadConfig.js";
import {
  parseConfig,
  requireRpc,
  runsDevnet,
  withDevnetEndpoints,
} from "../../src/config/parseConfig.js";
import { ConfigError } from "../../src/errors/base.js";

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const valid = () => ({
  chainId: 8453,
  rpc: { http: "https://mainnet.base.org" },
  tokens: [{ address: USDC, startBlock: 100, label: "USDC" }],
});

/** The ConfigError thrown by parseConfig, asserted to be one line naming the field. */
function configError(raw: unknown): ConfigError {
  try {
    parseConfig(raw, "test.json");
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(2);
    expect((error as ConfigError).shortMessage).not.toContain("\n");
    return error as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("parseConfig()", () => {
  test("fills defaults and freezes the result", () => {
    const config = parseConfig(valid(), "test.json");
    expect(config.backfill).toEqual({ windowBlocks: 1_000, concurrency: 4 });
    expect(config.finality).toEqual({ tag: "finalized" });
    expect(config.rpc.http).toEqual(["https://mainnet.base.org"]);
    expect(config.tokens[0]).toEqual({
      address: USDC,
      key: USDC.toLowerCase(),
      startBlock: 100,
      label: "USDC",
    });
    expect(Object.isFrozen(config.rpc.retry)).toBe(true);
    expect(config.cancel).toEqual({ confirmations: 2, receiptTimeoutMs: 120_000 });
  });

  test("reads a token's watch list: checked, lower-cased, sorted; empty or absent watches everything", () => {
    const shop = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
    const till = "0x0000000000000000000000000000000000000aBc".toLowerCase();
    const watching = (watch: unknown) =>
      parseConfig({ ...valid(), tokens: [{ address: USDC, startBlock: 100, watch }] }, "t")
        .tokens[0]!.watch;
    expect(watching({ addresses: [shop, till] })).toEqual([till, shop.toLowerCase()].sort());
    expect(watching({ addresses: [] })).toBeUndefined();
    expect(watching({})).toBeUndefined();
    expect(parseConfig(valid(), "t").tokens[0]!.watch).toBeUndefined();
    const tokenWith = (watch: unknown) => ({
      ...valid(),
      tokens: [{ address: USDC, startBlock: 100, watch }],
    });
    expect(configError(tokenWith({ addresses: [shop, shop.toLowerCase()] })).shortMessage).toMatch(
      /^tokens\[0\]\.watch\.addresses\[1\]: .* is listed twice/,
    );
    expect(configError(tokenWith({ addresses: ["0x1234"] })).field).toBe(
      "tokens[0].watch.addresses[0]",
    );
    expect(configError(tokenWith({ addresses: shop })).shortMessage).toMatch(
      /^tokens\[0\]\.watch\.addresses: expected an array of addresses/,
    );
    expect(configError(tokenWith({ address: [shop] })).field).toBe("tokens[0].watch.address");
    const many = Array.from(
      { length: 101 },
      (_, i) => `0x${(i + 1).toString(16).padStart(40, "0")}`,
    );
    expect(configError(tokenWith({ addresses: many })).shortMessage).toMatch(
      /lists 101 addresses, at most 100/,
    );
  });

  test("reads the cancel relay's confirmations and receipt timeout", () => {
    expect(
      parseConfig({ ...valid(), cancel: { confirmations: 5, receiptTimeoutMs: 3_000 } }, "t")
        .cancel,
    ).toEqual({ confirmations: 5, receiptTimeoutMs: 3_000 });
  });

  test("off loopback the facilitator is closed by default: without authTokenEnv the config is refused in one line naming it", () => {
    const shop = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
    for (const host of ["0.0.0.0", "::", "192.168.1.20", "facilitator.example"]) {
      const error = configError({
        ...valid(),
        facilitator: { enabled: true, host, payTo: [shop] },
      });
      expect(error.field).toBe("facilitator.authTokenEnv");
      expect(error.shortMessage).toMatch(
        new RegExp(
          `^facilitator\\.authTokenEnv: is required while the facilitator listens on ${host.replaceAll(".", "\\.")}:`,
        ),
      );
      expect(error.shortMessage).not.toContain("\n");
    }
    for (const host of ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
      expect(
        parseConfig({ ...valid(), facilitator: { enabled: true, host } }, "t").facilitator
          .authTokenEnv,
      ).toBeUndefined();
    // Disabled, the host is not listened on: nothing to close.
    expect(
      parseConfig({ ...valid(), facilitator: { host: "0.0.0.0" } }, "t").facilitator.enabled,
    ).toBe(false);
  });

  test("reads the facilitator: off by default; off loopback it needs payees; env names, codes and payees checked", () => {
    expect(parseConfig(valid(), "t").facilitator).toMatchObject({
      enabled: false,
      host: "127.0.0.1",
      port: 4021,
      relayerKeyEnv: "FLASHINDEX_RELAYER_KEY",
      settleWaitsFor: "preconfirmed",
      payTo: [],
    });
    const shop = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
    expect(
      parseConfig(
        {
          ...valid(),
          facilitator: {
            enabled: true,
            host: "0.0.0.0",
            payTo: [shop, shop.toLowerCase()],
            authTokenEnv: "FACILITATOR_TOKEN",
            builderCode: "my_app",
            settleWaitsFor: "confirmed",
          },
        },
        "t",
      ).facilitator,
    ).toMatchObject({
      enabled: true,
      host: "0.0.0.0",
      payTo: [shop.toLowerCase()],
      authTokenEnv: "FACILITATOR_TOKEN",
      builderCode: "my_app",
      settleWaitsFor: "confirmed",
    });
    expect(
      configError({
        ...valid(),
        facilitator: { enabled: true, host: "0.0.0.0", authTokenEnv: "FACILITATOR_TOKEN" },
      }).shortMessage,
    ).toMatch(/^facilitator\.payTo: is empty while the facilitator listens on 0\.0\.0\.0/);
    expect(
      configError({ ...valid(), facilitator: { authTokenEnv: "s3cr3t token" } }).shortMessage,
    ).toBe(
      "facilitator.authTokenEnv: expected an environment variable name (letters, digits, _), not the secret itself",
    );
    expect(configError({ ...valid(), facilitator: { builderCode: "Not-A-Code" } }).field).toBe(
      "facilitator.builderCode",
    );
    expect(configError({ ...valid(), facilitator: { payTo: ["0x1234"] } }).field).toBe(
      "facilitator.payTo[0]",
    );
    expect(configError({ ...valid(), facilitator: { settleWaitsFor: "mined" } }).field).toBe(
      "facilitator.settleWaitsFor",
    );
    expect(configError({ ...valid(), facilitator: { maxBodyBytes: 10 } }).field).toBe(
      "facilitator.maxBodyBytes",
    );
  });

  test("reads facilitator.minAmount: one floor per token, whole base units as a decimal string", () => {
    expect(parseConfig(valid(), "t").facilitator.minAmount).toEqual([]);
    expect(
      parseConfig(
        { ...valid(), facilitator: { minAmount: [{ token: USDC, amount: "1000" }] } },
        "t",
      ).facilitator.minAmount,
    ).toEqual([{ token: USDC.toLowerCase(), amount: 1000n }]);
    expect(
      configError({ ...valid(), facilitator: { minAmount: [{ token: USDC, amount: "0.001" }] } })
        .shortMessage,
    ).toMatch(/^facilitator\.minAmount\[0\]\.amount: expected a whole number of base units/);
    expect(
      configError({ ...valid(), facilitator: { minAmount: [{ token: USDC, amount: 1000 }] } })
        .field,
    ).toBe("facilitator.minAmount[0].amount");
    expect(configError({ ...valid(), facilitator: { minAmount: [{ token: USDC }] } }).field).toBe(
      "facilitator.minAmount[0]",
    );
    expect(
      configError({ ...valid(), facilitator: { minAmount: [{ token: "0x12", amount: "1" }] } })
        .field,
    ).toBe("facilitator.minAmount[0].token");
    expect(
      configError({
        ...valid(),
        facilitator: {
          minAmount: [
            { token: USDC, amount: "1" },
            { token: USDC.toLowerCase(), amount: "2" },
          ],
        },
      }).field,
    ).toBe("facilitator.minAmount[1].token");
    expect(configError({ ...valid(), facilitator: { minAmount: { [USDC]: "1" } } }).field).toBe(
      "facilitator.minAmount",
    );
  });

  test("reads a relayer pool: each entry a key file or a variable, never a key; one place once; not beside relayerKeyFile", () => {
    expect(parseConfig(valid(), "t").facilitator).toMatchObject({
      relayers: [],
      relayerStuckAfterMs: 5_000,
    });
    const pool = {
      relayers: [{ keyFile: "/etc/flashindex/relayer-1.key" }, { keyEnv: "RELAYER_2" }],
      relayerStuckAfterMs: 2_000,
    };
    expect(parseConfig({ ...valid(), facilitator: pool }, "t").facilitator).toMatchObject(pool);
    expect(configError({ ...valid(), facilitator: { relayers: [] } }).field).toBe(
      "facilitator.relayers",
    );
    expect(configError({ ...valid(), facilitator: { relayers: [{}] } }).shortMessage).toBe(
      "facilitator.relayers[0]: expected exactly one of keyFile (a file holding the key) and keyEnv (the variable holding it)",
    );
    expect(
      configError({ ...valid(), facilitator: { relayers: [{ keyFile: "a", keyEnv: "B" }] } }).field,
    ).toBe("facilitator.relayers[0]");
    expect(configError({ ...valid(), facilitator: { relayers: [{ key: "0x12" }] } }).field).toBe(
      "facilitator.relayers[0].key",
    );
    expect(
      configError({ ...valid(), facilitator: { relayers: [{ keyEnv: "0xabc def" }] } })
        .shortMessage,
    ).toMatch(/^facilitator\.relayers\[0\]\.keyEnv: expected an environment variable name/);
    expect(
      configError({ ...valid(), facilitator: { relayers: [{ keyEnv: "R" }, { keyEnv: "R" }] } })
        .shortMessage,
    ).toMatch(/^facilitator\.relayers\[1\]: names the env R a previous entry names/);
    expect(
      configError({
        ...valid(),
        facilitator: { relayers: [{ keyEnv: "R" }], relayerKeyFile: "/k" },
      }).field,
    ).toBe("facilitator.relayers");
    expect(configError({ ...valid(), facilitator: { relayerStuckAfterMs: 10 } }).field).toBe(
      "facilitator.relayerStuckAfterMs",
    );
  });

  test("accepts a depth or a tag as finality", () => {
    expect(parseConfig({ ...valid(), finality: { depth: 10 } }, "t").finality).toEqual({
      depth: 10,
    });
    expect(parseConfig({ ...valid(), finality: 5 }, "t").finality).toEqual({ depth: 5 });
    expect(parseConfig({ ...valid(), finality: "safe" }, "t").finality).toEqual({ tag: "safe" });
  });

  test.each([
    ["an unknown top-level key", { ...valid(), chainID: 1 }, "chainID", "unknown key"],
    [
      "an unknown nested key",
      { ...valid(), backfill: { window: 5 } },
      "backfill.window",
      "unknown key",
    ],
    ["a missing chain id", { rpc: valid().rpc, tokens: valid().tokens }, "chainId", "required"],
    ["a chain id of the wrong type", { ...valid(), chainId: "8453" }, "chainId", "whole number"],
    [
      "a window over 1,999 blocks",
      { ...valid(), backfill: { windowBlocks: 2_000 } },
      "backfill.windowBlocks",
      "at most 1999",
    ],
    [
      "a zero window",
      { ...valid(), backfill: { windowBlocks: 0 } },
      "backfill.windowBlocks",
      "at least 1",
    ],
    [
      "a fractional concurrency",
      { ...valid(), backfill: { concurrency: 1.5 } },
      "backfill.concurrency",
      "whole number",
    ],
    [
      "a malformed address",
      { ...valid(), tokens: [{ address: "0x1234", startBlock: 0 }] },
      "tokens[0].address",
      "40 hex",
    ],
    [
      "a bad checksum",
      { ...valid(), tokens: [{ address: USDC.replace("fCD", "fcD"), startBlock: 0 }] },
      "tokens[0].address",
      "checksum",
    ],
    [
      "a duplicate token",
      {
        ...valid(),
        tokens: [
          { address: USDC, startBlock: 0 },
          { address: USDC.toLowerCase(), startBlock: 1 },
        ],
      },
      "tokens[1].address",
      "twice",
    ],
    ["no tokens", { ...valid(), tokens: [] }, "tokens", "non-empty"],
    [
      "a negative start block",
      { ...valid(), tokens: [{ address: USDC, startBlock: -1 }] },
      "tokens[0].startBlock",
      "at least 0",
    ],
    [
      "a missing start block",
      { ...valid(), tokens: [{ address: USDC }] },
      "tokens[0].startBlock",
      "required",
    ],
    [
      "an RPC URL that is not http",
      { ...valid(), rpc: { http: ["wss://x.example"] } },
      "rpc.http[0]",
      "http",
    ],
    [
      "an RPC URL that does not parse",
      { ...valid(), rpc: { http: "not a url" } },
      "rpc.http[0]",
      "not a valid URL",
    ],
    [
      "a WebSocket URL that is http",
      { ...valid(), rpc: { http: "http://a", ws: "http://b" } },
      "rpc.ws",
      "ws",
    ],
    ["an empty RPC list", { ...valid(), rpc: { http: [] } }, "rpc.http", "non-empty"],
    ["an unknown finality tag", { ...valid(), finality: "latest" }, "finality", "finalized, safe"],
    ["an unknown log level", { ...valid(), logLevel: "verbose" }, "logLevel", "one of"],
    [
      "a metrics port out of range",
      { ...valid(), metrics: { port: 70_000 } },
      "metrics.port",
      "at most 65535",
    ],
    [
      "retry delays in the wrong order",
      { ...valid(), rpc: { http: "http://a", retry: { initialDelayMs: 10, maxDelayMs: 5 } } },
      "rpc.retry.maxDelayMs",
      "at least",
    ],
    ["a config that is not an object", [1, 2], "", "object"],
    [
      "an unknown cancel key (keys never live in the config)",
      { ...valid(), cancel: { relayerKey: "0x00" } },
      "cancel.relayerKey",
      "unknown key",
    ],
    [
      "zero cancel confirmations",
      { ...valid(), cancel: { confirmations: 0 } },
      "cancel.confirmations",
      "at least 1",
    ],
  ])("rejects %s with exit code 2 naming the field", (_name, raw, field, problem) => {
    const error = configError(raw);
    expect(error.field).toBe(field);
    expect(error.shortMessage).toContain(problem);
  });

  test("never echoes an RPC URL, which may hold an API key", () => {
    const error = configError({ ...valid(), rpc: { http: "ftp://user:secret@host/key123" } });
    expect(error.shortMessage).not.toContain("secret");
    expect(error.shortMessage).not.toContain("key123");
  });
});

describe("loadConfig()", () => {
  const dir = mkdtempSync(join(tmpdir(), "flashindex-config-"));
  const write = (content: string) => {
    const path = join(dir, `${Math.random()}.json`);
    writeFileSync(path, content);
    return path;
  };

  test("lets the environment override the file and the command line override both", () => {
    const path = write(
      JSON.stringify({ ...valid(), database: { path: "file.db" }, logLevel: "info" }),
    );
    const env = {
      FLASHINDEX_RPC_URL: "https://a.example/key1, https://b.example/key2",
      FLASHINDEX_WS_URL: "wss://c.example",
      FLASHINDEX_DB_PATH: "env.db",
      FLASHINDEX_LOG_LEVEL: "debug",
    };
    const fromEnv = loadConfig(path, {}, env);
    expect(fromEnv.rpc.http).toEqual(["https://a.example/key1", "https://b.example/key2"]);
    expect(fromEnv.rpc.ws).toBe("wss://c.example");
    expect(fromEnv.database.path).toBe("env.db");
    expect(fromEnv.logLevel).toBe("debug");
    const fromCli = loadConfig(path, { databasePath: "cli.db", logLevel: "warn" }, env);
    expect(fromCli.database.path).toBe("cli.db");
    expect(fromCli.logLevel).toBe("warn");
  });

  test("names the environment variable when its value is bad", () => {
    const path = write(JSON.stringify(valid()));
    expect(() => loadConfig(path, {}, { FLASHINDEX_RPC_URL: "localhost:8545" })).toThrow(
      /FLASHINDEX_RPC_URL/,
    );
    expect(() => loadConfig(path, {}, { FLASHINDEX_LOG_LEVEL: "loud" })).toThrow(
      /FLASHINDEX_LOG_LEVEL/,
    );
  });

  test("reports a missing file and invalid JSON as config errors", () => {
    expect(() => loadConfig(join(dir, "absent.json"), {}, {})).toThrow(ConfigError);
    expect(() => loadConfig(write("{ nope"), {}, {})).toThrow(/not valid JSON/);
  });

  test("a devnet config has no RPC URLs until its devnet runs: its rpc tuning is kept, URLs are refused, the endpoints fill them in", () => {
    const devnet = {
      chainId: 8453,
      devnet: { port: 0 },
      tokens: [{ address: "0x5FbDB2315678afecb367f032d93F642f64180aa3", startBlock: 0 }],
      rpc: { timeoutMs: 5_000 },
    };
    const path = write(JSON.stringify(devnet));
    const settings = loadSettings(path, {}, {});
    expect(runsDevnet(settings)).toBe(true);
    expect(() => requireRpc(settings)).toThrow("rpc.http: unknown until the bundled devnet runs");
    expect(() => loadConfig(path, {}, {})).toThrow(ConfigError);
    expect(() => loadSettings(path, {}, { FLASHINDEX_RPC_URL: "http://127.0.0.1:8545" })).toThrow(
      "rpc.http: the bundled devnet gives its own URLs (devnet.enabled): remove this key (or unset FLASHINDEX_RPC_URL), or set devnet.enabled to false",
    );
    expect(() =>
      loadSettings(path, {}, { FLASHINDEX_DATABASE_URL: "postgres://u:secret@127.0.0.1/db" }),
    ).toThrow(
      "database.url: the bundled devnet keeps its chain beside a SQLite file (database.path), not in Postgres: remove this key (or unset FLASHINDEX_DATABASE_URL), or point rpc.http at a node and set devnet.enabled to false",
    );
    const config = withDevnetEndpoints(settings, {
      httpUrl: "http://127.0.0.1:1234",
      wsUrl: "ws://127.0.0.1:1234",
      registrationUrl: "http://127.0.0.1:5678/",
    });
    expect(config.rpc).toMatchObject({
      http: ["http://127.0.0.1:1234"],
      ws: "ws://127.0.0.1:1234",
      preconfWs: "ws://127.0.0.1:1234",
      timeoutMs: 5_000,
    });
    expect(config.registration.baseUrl).toBe("http://127.0.0.1:5678");
    expect(Object.isFrozen(config.rpc)).toBe(true);
  });
});

describe("the database section", () => {
  test("selects Postgres by database.url or FLASHINDEX_DATABASE_URL, with a schema; bad values name the field and never echo the password", () => {
    const parsed = parseConfig(
      { ...valid(), database: { url: "postgres://u:pw@db:5432/payments", schema: "team_a" } },
      "test.json",
    );
    expect(parsed.database).toEqual({
      path: "data/flashindex.db",
      url: "postgres://u:pw@db:5432/payments",
      schema: "team_a",
    });
    expect(parseConfig(valid(), "test.json").database).toEqual({
      path: "data/flashindex.db",
      url: undefined,
      schema: "flashindex",
    });
    expect(parsed.tokens[0]!.key).toBe(USDC.toLowerCase());

    const dir = mkdtempSync(join(tmpdir(), "flashindex-config-db-"));
    const path = join(dir, "c.json");
    writeFileSync(path, JSON.stringify(valid()));
    expect(
      loadConfig(path, {}, { FLASHINDEX_DATABASE_URL: "postgresql://u:pw@db/payments" }).database
        .url,
    ).toBe("postgresql://u:pw@db/payments");

    expect(
      configError({ ...valid(), database: { url: "mysql://u:secret@db/x" } }).shortMessage,
    ).toMatch(/^database\.url: must use postgres:\/\//);
    expect(
      configError({ ...valid(), database: { url: "postgres://u:secret@db" } }).shortMessage,
    ).toContain("names no database");
    expect(
      configError({ ...valid(), database: { url: "postgres://u:secret@db/x", schema: "Bad-Name" } })
        .shortMessage,
    ).toMatch(/^database\.schema: /);
    for (const url of ["mysql://u:secret@db/x", "postgres://u:secret@db", "not a url secret"]) {
      try {
        loadConfig(path, {}, { FLASHINDEX_DATABASE_URL: url });
        throw new Error("expected a ConfigError");
      } catch (error) {
        expect((error as ConfigError).shortMessage).toMatch(/^FLASHINDEX_DATABASE_URL: /);
        expect((error as ConfigError).shortMessage).not.toContain("secret");
      }
    }
  });
});
