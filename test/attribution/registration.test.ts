import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAddress, type Address } from "viem";
import { afterEach, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { registerConfiguredWallets } from "../../src/attribution/registerWallets.js";
import {
  createRegistrationClient,
  MAX_REGISTRATION_RESPONSE_BYTES,
  RegistrationRejectedError,
} from "../../src/attribution/registrationClient.js";
import {
  startRegistrationStandIn,
  type RegistrationStandIn,
} from "../../src/devnet/registrationStandIn.js";
import { FatalError, RetryableError, ShutdownError, UsageError } from "../../src/errors/base.js";
import type { Metrics } from "../../src/ops/metrics.js";
import { openDatabase, type Database } from "../../src/store/sqlite/openDatabase.js";
import { createSqliteRegistrations } from "../../src/store/sqlite/registrations.js";
import { createSqliteStore } from "../../src/store/sqlite/sqliteStore.js";
import { runCli, writeConfig } from "../helpers/cli.js";
import { testConfig, testDeps } from "../helpers/context.js";

const GENERATED_CODE = /^bc_[0-9a-z]{8}$/;
const randomWallet = (): Address => getAddress(`0x${randomBytes(20).toString("hex")}`);
/** A checksummed address with one letter's case flipped: right length and digits, wrong checksum. */
const withBadChecksum = (wallet: Address): string => {
  const i = [...wallet].findIndex((c, index) => index > 1 && /[a-fA-F]/.test(c));
  const c = wallet[i]!;
  return (
    wallet.slice(0, i) +
    (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) +
    wallet.slice(i + 1)
  );
};
const mixedCaseWallet = (): Address => {
  for (;;) {
    const wallet = randomWallet();
    if (/[a-f]/.test(wallet.slice(2)) && /[A-F]/.test(wallet.slice(2))) return wallet;
  }
};

let standIn: RegistrationStandIn;
beforeEach(async () => {
  standIn = await startRegistrationStandIn();
});
afterEach(async () => {
  await standIn.close();
});

const client = (timeoutMs = 2_000) => createRegistrationClient({ baseUrl: standIn.url, timeoutMs });

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a rejection");
}

describe("createRegistrationClient()", () => {
  test("register() posts the checksummed wallet as JSON and returns a generated code", async () => {
    const wallet = mixedCaseWallet();
    const sent: RequestInit[] = [];
    const recording = createRegistrationClient({
      baseUrl: `${standIn.url}/`,
      timeoutMs: 2_000,
      fetch: (url, init) => {
        sent.push(init ?? {});
        return fetch(url, init);
      },
    });
    const registration = await recording.register(wallet.toLowerCase());
    expect(registration).toEqual({
      walletAddress: wallet,
      builderCode: expect.stringMatching(GENERATED_CODE),
    });
    expect(JSON.parse(sent[0]!.body as string)).toEqual({ walletAddress: wallet });
    expect((sent[0]!.headers as Record<string, string>)["content-type"]).toBe("application/json");
    expect(standIn.calls).toEqual([
      { method: "POST", path: "/v1/agents/builder-codes", status: 200 },
    ]);
  });

  test("a 429 or 503 is retryable and carries the service's Retry-After for the retry to wait", async () => {
    for (const [status, header, waitMs] of [
      [429, "3", 3_000],
      [503, new Date(Date.now() + 60_000).toUTCString(), 60_000],
    ] as const) {
      const refusing = createRegistrationClient({
        baseUrl: standIn.url,
        timeoutMs: 2_000,
        // The stand-in's own answer, its status and Retry-After replaced as a busy service would send them.
        fetch: async (url, init) => {
          const served = await fetch(url, init);
          return new Response(await served.text(), {
            status,
            headers: { "content-type": "application/json", "retry-after": header },
          });
        },
      });
      const error = (await refusing
        .register(randomWallet())
        .catch((e: unknown) => e)) as RetryableError;
      expect(error).toBeInstanceOf(RetryableError);
      expect(error.retryAfterMs).toBeGreaterThan(waitMs - 2_000);
      expect(error.retryAfterMs).toBeLessThanOrEqual(waitMs);
    }
  });

  test("the same wallet, in any case, gets the same code; another wallet another", async () => {
    const wallet = mixedCaseWallet();
    const first = await client().register(wallet);
    const again = await client().register(wallet.toLowerCase());
    const other = await client().register(randomWallet());
    expect(again.builderCode).toBe(first.builderCode);
    expect(other.builderCode).not.toBe(first.builderCode);
  });

  test("both response shapes are read: camelCase and Base's script's snake_case", async () => {
    const wallet = randomWallet();
    const camel = await client().register(wallet);
    standIn.setSnakeCase(true);
    const snake = await client().register(wallet);
    expect(snake).toEqual(camel);
    // A custom code (1–32 of [a-z0-9_]) without an echoed wallet is accepted too.
    standIn.failNext(201, 1, JSON.stringify({ builder_code: "baseapp" }));
    expect((await client().register(wallet)).builderCode).toBe("baseapp");
  });

  test.each([
    ["a short address", "0x1234"],
    ["non-hex digits", `0x${"g".repeat(40)}`],
    ["a missing 0x", "d8dA6BF26964aF9D7eEd9e03E53415D37aA96045"],
    ["a bad checksum", withBadChecksum(mixedCaseWallet())],
  ])("refuses %s before any request", async (_name, wallet) => {
    const error = await failure(client().register(wallet));
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).shortMessage).toMatch(/^walletAddress: /);
    expect(standIn.calls).toHaveLength(0);
  });

  test("a 4xx is a rejection (exit 1) naming the status and the body's message, on one short line", async () => {
    standIn.failNext(400, 1, JSON.stringify({ message: "wallet is blocked" }));
    const rejected = await failure(client().register(randomWallet()));
    expect(rejected).toBeInstanceOf(RegistrationRejectedError);
    expect(rejected).toBeInstanceOf(FatalError);
    expect((rejected as FatalError).exitCode).toBe(1);
    expect((rejected as FatalError).shortMessage).toBe(
      `Registration API ${standIn.url} answered HTTP 400: "wallet is blocked"`,
    );

    // Hostile text: newlines and escapes flattened, length capped.
    standIn.failNext(
      403,
      1,
      JSON.stringify({ error: { message: `line one\nline two\u001b[31m${"x".repeat(5_000)}` } }),
    );
    const hostile = (await failure(client().register(randomWallet()))) as FatalError;
    expect(hostile.shortMessage).toContain('HTTP 403: "line one line two [31mxxx');
    expect(hostile.shortMessage).not.toMatch(/[\n\u001b]/);
    expect(hostile.shortMessage.length).toBeLessThan(300);
  });

  test.each([429, 500, 503])("HTTP %i is retryable (exit 75)", async (status) => {
    standIn.failNext(status);
    const error = (await failure(client().register(randomWallet()))) as RetryableError;
    expect(error).toBeInstanceOf(RetryableError);
    expect(error.exitCode).toBe(75);
    expect(error.shortMessage).toContain(`answered HTTP ${status}`);
  });

  test("a timeout and a refused connection are retryable", async () => {
    standIn.setLatencyMs(5_000);
    const slow = (await failure(client(200).register(randomWallet()))) as RetryableError;
    expect(slow).toBeInstanceOf(RetryableError);
    expect(slow.shortMessage).toBe(`Registration API ${standIn.url} timed out after 200 ms`);

    const closed = createRegistrationClient({ baseUrl: standIn.url, timeoutMs: 2_000 });
    await standIn.close();
    const refused = (await failure(closed.register(randomWallet()))) as RetryableError;
    expect(refused).toBeInstanceOf(RetryableError);
    expect(refused.shortMessage).toMatch(/unreachable: .*ECONNREFUSED/);
  });

  test.each([
    ["a body that is not JSON", "<html>gateway</html>", /with a body that is not JSON/],
    ["an empty body", "", /not JSON \(empty\)/],
    [
      "a missing code",
      JSON.stringify({ walletAddress: "0x0000000000000000000000000000000000000001" }),
      /without a builder code/,
    ],
    [
      "a malformed code",
      JSON.stringify({ builderCode: "BC_Not-Valid" }),
      /malformed builder code "BC_Not-Valid"/,
    ],
    [
      "a code over 32 characters",
      JSON.stringify({ builderCode: "a".repeat(33) }),
      /malformed builder code/,
    ],
    [
      "a body over the cap",
      JSON.stringify({
        builderCode: "bc_abcdefgh",
        pad: "x".repeat(MAX_REGISTRATION_RESPONSE_BYTES),
      }),
      /body over 64 KiB/,
    ],
  ])("a 2xx with %s is a retryable failure", async (_name, body, message) => {
    standIn.failNext(200, 1, body);
    const error = (await failure(client().register(randomWallet()))) as RetryableError;
    expect(error).toBeInstanceOf(RetryableError);
    expect(error.shortMessage).toMatch(message);
  });

  test("an answer about another wallet is refused, not stored", async () => {
    standIn.failNext(
      200,
      1,
      JSON.stringify({ builderCode: "bc_abcdefgh", walletAddress: randomWallet() }),
    );
    const error = (await failure(client().register(randomWallet()))) as FatalError;
    expect(error).toBeInstanceOf(RegistrationRejectedError);
    expect(error.shortMessage).toContain("the code of another wallet");
  });

  test("shutdown aborts a request in flight with ShutdownError", async () => {
    standIn.setLatencyMs(5_000);
    const controller = new AbortController();
    const pending = failure(client().register(randomWallet(), { signal: controller.signal }));
    setTimeout(() => controller.abort(new ShutdownError()), 50);
    expect(await pending).toBeInstanceOf(ShutdownError);
  });
});

describe("registration stand-in", () => {
  test("refuses malformed requests with 400 JSON, other paths with 404, other methods with 405", async () => {
    const post = (body: string, path = "/v1/agents/builder-codes") =>
      fetch(`${standIn.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
    for (const body of [
      "",
      "not json",
      "[]",
      "{}",
      JSON.stringify({ walletAddress: "0x1234" }),
      JSON.stringify({ walletAddress: withBadChecksum(mixedCaseWallet()) }),
    ]) {
      const response = await post(body);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: expect.any(String) });
    }
    expect((await post("{}", "/v1/other")).status).toBe(404);
    const get = await fetch(`${standIn.url}/v1/agents/builder-codes`);
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    expect(standIn.codes.size).toBe(0);
  });
});

describe("saveRegistration()", () => {
  let db: Database;
  beforeEach(() => {
    db = openDatabase(":memory:", 8453);
  });
  afterEach(() => db.close());

  test("is idempotent: a repeat keeps registered_at and moves last_confirmed_at; a new code is recorded", () => {
    const wallet = mixedCaseWallet();
    expect(createSqliteRegistrations(db).save(wallet, "bc_aaaaaaaa", 1_000).status).toBe("new");
    expect(
      createSqliteRegistrations(db).save(getAddress(wallet), "bc_aaaaaaaa", 2_000).status,
    ).toBe("confirmed");
    expect(createSqliteRegistrations(db).list()).toEqual([
      {
        walletAddress: wallet.toLowerCase(),
        builderCode: "bc_aaaaaaaa",
        registeredAt: 1_000,
        lastConfirmedAt: 2_000,
      },
    ]);
    expect(createSqliteRegistrations(db).save(wallet, "bc_bbbbbbbb", 3_000)).toEqual({
      status: "changed",
      previousCode: "bc_aaaaaaaa",
      row: {
        walletAddress: wallet.toLowerCase(),
        builderCode: "bc_bbbbbbbb",
        registeredAt: 3_000,
        lastConfirmedAt: 3_000,
      },
    });
    expect(createSqliteRegistrations(db).list()).toHaveLength(1);
  });
});

describe("registerConfiguredWallets()", () => {
  let db: Database;
  beforeEach(() => {
    db = openDatabase(":memory:", 8453);
  });
  afterEach(() => db.close());

  const setUp = (wallets: Address[]) => {
    const config = testConfig({
      rpc: { http: ["http://127.0.0.1:9"] },
      registration: { baseUrl: standIn.url, wallets },
    });
    const deps = testDeps(config);
    return {
      ...deps,
      store: createSqliteStore({ db, chainId: config.chainId, metrics: deps.metrics }),
    };
  };
  const outcomes = async (metrics: Metrics) =>
    Object.fromEntries(
      (await metrics.registrationRequests.get()).values.map((v) => [v.labels.outcome, v.value]),
    );

  test("retries while the service is down, without blocking, and stores the code once it is up", async () => {
    const wallets = [randomWallet(), randomWallet()];
    const deps = setUp(wallets);
    standIn.failNext(503, 3);
    const run = registerConfiguredWallets(deps, client(), { initialDelayMs: 5, maxDelayMs: 20 });
    // Returned before any answer arrived: the caller (the daemon) goes on indexing.
    expect(createSqliteRegistrations(db).list()).toEqual([]);
    await run.done;
    const rows = createSqliteRegistrations(db).list();
    expect(rows.map((r) => r.walletAddress).sort()).toEqual(
      wallets.map((w) => w.toLowerCase()).sort(),
    );
    for (const row of rows) expect(row.builderCode).toBe(standIn.codes.get(row.walletAddress));
    expect(await outcomes(deps.metrics)).toEqual({ retryable: 3, ok: 2 });
    const retries = deps.lines.filter((l) => l.msg === "Failed to register wallet, retrying");
    expect(retries).toHaveLength(3);
    expect(retries[0]).toMatchObject({
      level: "warn",
      component: "registration",
      attempt: 1,
      error: expect.stringContaining("HTTP 503"),
    });
    expect(deps.lines.filter((l) => l.msg === "Registered wallet")).toHaveLength(2);
  });

  test("a refusal is not retried", async () => {
    const deps = setUp([randomWallet()]);
    standIn.failNext(400, 1, JSON.stringify({ error: "unsupported wallet" }));
    await registerConfiguredWallets(deps, client(), { initialDelayMs: 1, maxDelayMs: 1 }).done;
    expect(standIn.calls).toHaveLength(1);
    expect(createSqliteRegistrations(db).list()).toEqual([]);
    expect(await outcomes(deps.metrics)).toEqual({ rejected: 1 });
    expect(deps.lines.find((l) => l.msg === "Failed to register wallet, giving up")).toMatchObject({
      level: "error",
      error: expect.stringContaining("unsupported wallet"),
    });
  });

  test("shutdown ends the retries of a service that stays down", async () => {
    const deps = setUp([randomWallet()]);
    standIn.failNext(500, 10_000);
    const run = registerConfiguredWallets(deps, client(), { initialDelayMs: 10, maxDelayMs: 20 });
    while (standIn.calls.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    await deps.shutdown.kill();
    await run.done;
    // A request sent just before the kill may reach the stand-in after `done` (it counts arrivals):
    // let it land, then no further attempt may come (the retry delay is at most 20 ms).
    await new Promise((resolve) => setTimeout(resolve, 50));
    const calls = standIn.calls.length;
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(standIn.calls.length).toBe(calls);
    expect(createSqliteRegistrations(db).list()).toEqual([]);
  });

  test("a code that changed for a known wallet is recorded and logged as an error", async () => {
    const wallet = randomWallet();
    createSqliteRegistrations(db).save(wallet, "bc_00000000", 1);
    const deps = setUp([wallet]);
    await registerConfiguredWallets(deps, client()).done;
    const code = standIn.codes.get(wallet.toLowerCase());
    expect(createSqliteRegistrations(db).list()[0]?.builderCode).toBe(code);
    expect(deps.lines.find((l) => l.level === "error")).toMatchObject({
      msg: "Detected a changed builder code for a registered wallet",
      previous_code: "bc_00000000",
      builder_code: code,
    });
  });
});

describe("flashindex register", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "flashindex-register-"));
  });

  /** A config whose RPC is unreachable: register must not need it. */
  const configFile = (registration: Record<string, unknown> = {}) => {
    const name = `${randomBytes(6).toString("hex")}`;
    const database = join(dir, `${name}.db`);
    const path = writeConfig(
      dir,
      {
        chainId: 8453,
        rpc: { http: ["http://127.0.0.1:9"] },
        tokens: [{ address: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", startBlock: 0 }],
        database: { path: database },
        registration: { baseUrl: standIn.url, ...registration },
      },
      `${name}.json`,
    );
    return { path, database };
  };
  const rowsOf = (database: string) => {
    const db = openDatabase(database, 8453);
    try {
      return createSqliteRegistrations(db).list();
    } finally {
      db.close();
    }
  };

  test("stores and prints a code; a repeat (--json) returns the same code and keeps one row", async () => {
    const wallet = mixedCaseWallet();
    const { path, database } = configFile();
    const first = await runCli(["register", wallet, "--config", path]);
    expect(first).toMatchObject({ code: 0, stderr: "" });
    const code = first.stdout.trim();
    expect(code).toMatch(GENERATED_CODE);

    const again = await runCli(["register", wallet.toLowerCase(), "--config", path, "--json"]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      wallet_address: wallet,
      builder_code: code,
      status: "confirmed",
      previous_code: null,
    });
    expect(rowsOf(database)).toEqual([
      {
        walletAddress: wallet.toLowerCase(),
        builderCode: code,
        registeredAt: expect.any(Number),
        lastConfirmedAt: expect.any(Number),
      },
    ]);
    expect(standIn.calls).toHaveLength(2);
  });

  test("--base-url overrides the config, and a snake_case answer is stored the same way", async () => {
    const other = await startRegistrationStandIn({ snakeCase: true });
    try {
      const wallet = randomWallet();
      const { path, database } = configFile({ baseUrl: "http://127.0.0.1:9" });
      const result = await runCli([
        "register",
        wallet,
        "--config",
        path,
        "--base-url",
        `${other.url}/`,
      ]);
      expect(result.code).toBe(0);
      expect(result.stdout.trim()).toBe(other.codes.get(wallet.toLowerCase()));
      expect(rowsOf(database)[0]?.builderCode).toBe(result.stdout.trim());
    } finally {
      await other.close();
    }
  });

  test.each([
    ["a short address", "0x1234"],
    ["non-hex digits", `0x${"z".repeat(40)}`],
    ["a bad checksum", withBadChecksum(mixedCaseWallet())],
  ])("exits 2 with one line for %s, before any request", async (_name, wallet) => {
    const { path } = configFile();
    const result = await runCli(["register", wallet, "--config", path]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^flashindex: error: <wallet>: /);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stdout).toBe("");
    expect(standIn.calls).toHaveLength(0);
  });

  test("a refusal exits 1 with its message; a 5xx and a timeout exit 75; nothing is stored", async () => {
    const { path, database } = configFile({ timeoutMs: 2_000 });
    standIn.failNext(422, 1, JSON.stringify({ error: "wallet not eligible" }));
    const refused = await runCli(["register", randomWallet(), "--config", path]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe(
      `flashindex: failed: Registration API ${standIn.url} answered HTTP 422: "wallet not eligible"`,
    );

    standIn.failNext(502);
    const down = await runCli(["register", randomWallet(), "--config", path]);
    expect(down.code).toBe(75);
    expect(down.stderr).toContain("answered HTTP 502");

    standIn.setLatencyMs(6_000);
    const slow = await runCli(["register", randomWallet(), "--config", path]);
    expect(slow.code).toBe(75);
    expect(slow.stderr).toContain("timed out after 2000 ms");
    expect(rowsOf(database)).toEqual([]);
  }, 60_000);

  test("--help describes the command; a missing wallet is a usage error", async () => {
    const help = await runCli(["register", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: flashindex register <wallet>");
    const missing = await runCli(["register", "--config", configFile().path]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("expected one wallet address");
  });
});
