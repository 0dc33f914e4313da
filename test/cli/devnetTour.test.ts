import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, test } from "vitest";
import { ANVIL_PRIVATE_KEYS } from "../../src/devnet/anvil.js";
import { runCli, spawnCli, writeConfig } from "../helpers/cli.js";
import { quietly, waitFor } from "../helpers/fixtures.js";

const DEVNET_TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const address = (key: number) => privateKeyToAccount(ANVIL_PRIVATE_KEYS[key]!).address;
/** The demo relayers (keys 6-8): the agent wallets the bundled config registers. */
const AGENTS = [address(6), address(7), address(8)];

/** Codes seen per wallet in `wallet_codes`, registered ones apart. */
function walletCodes(dbPath: string, wallet: string): { registered: string[]; used: string[] } {
  const db = new DatabaseConstructor(dbPath, { readonly: true });
  try {
    const rows = db
      .prepare(
        "SELECT code, role FROM wallet_codes WHERE lower(wallet) = lower(?) AND role <> 'app'",
      )
      .all(wallet) as Array<{ code: string; role: string }>;
    return {
      registered: rows.filter((r) => r.role === "registered").map((r) => r.code),
      used: [...new Set(rows.filter((r) => r.role !== "registered").map((r) => r.code))],
    };
  } finally {
    db.close();
  }
}

describe("the five-minute tour on the bundled devnet", () => {
  test("every command finds the devnet the daemon runs (and says when none runs); sign, add, void and cancel work end to end", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flashindex-tour-"));
    const dbPath = join(dir, "devnet.db");
    const config = writeConfig(dir, {
      chainId: 8453,
      devnet: {
        port: 0,
        blockTimeMs: 300,
        flashblockIntervalMs: 100,
        paymentsPerSecond: 8,
        reorgEverySeconds: 0,
        dropEverySeconds: 0,
      },
      tokens: [{ address: DEVNET_TOKEN, startBlock: 0 }],
      finality: { depth: 2 },
      database: { path: dbPath },
      metrics: { enabled: false },
      registration: { wallets: AGENTS },
    });
    const cli = (...args: string[]) => runCli([...args, "--config", config]);

    const before = await cli("status");
    expect(before.code).toBe(75);
    expect(before.stderr.trim()).toMatch(
      /^flashindex: failed: no devnet is running for .*devnet\.db: .* runs the bundled devnet/,
    );

    const daemon = spawnCli(["start", "--config", config]);
    try {
      await waitFor(
        () => daemon.output().stdout.includes('"msg":"Started flashindex"'),
        60_000,
        `the daemon\n${daemon.output().stdout}`,
        100,
      );
      expect(existsSync(join(dir, "devnet.endpoints.json"))).toBe(true);

      const status = await cli("status", "--json");
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({
        chain_id: 8453,
        rpc_error: null,
        head: expect.any(Number),
      });

      // The demo relayers pay with the codes the stand-in registered for them: one code per agent wallet.
      const registered = await cli("register", AGENTS[0]!);
      expect(registered.code, registered.stderr).toBe(0);
      const code = registered.stdout.trim();
      expect(code).toMatch(/^bc_[0-9a-z]{8}$/);
      const seen = await waitFor(
        quietly(() => {
          const c = walletCodes(dbPath, AGENTS[0]!);
          return c.used.length > 0 && c.registered.length > 0 && c;
        }),
        60_000,
        "attributed payments by the first agent",
        200,
      );
      expect(seen).toEqual({ registered: [code], used: [code] });

      // Sign with a devnet key, add the order, void it.
      const signed = await cli(
        "devnet",
        "sign-authorization",
        "--to",
        address(2),
        "--value",
        "1000000",
      );
      expect(signed.code, signed.stderr).toBe(0);
      const addArgs = signed.stdout.trim().split(" ");
      expect(addArgs.slice(0, 2)).toEqual(["order", "add"]);
      const added = await cli(...addArgs, "--json");
      expect(added.code, added.stderr).toBe(0);
      const order = JSON.parse(added.stdout) as { id: number; state: string };
      expect(order.state).toBe("authorized");
      const voided = await cli("order", "void", String(order.id));
      expect(voided.code, voided.stderr).toBe(0);
      expect(voided.stdout).toContain("voided_offchain");

      // Cancel one on chain: the buyer signs the CancelAuthorization with a devnet key, a relayer submits it.
      const cancelSigned = await cli(
        "devnet",
        "sign-authorization",
        "--kind",
        "cancel",
        "--key",
        "3",
      );
      expect(cancelSigned.code, cancelSigned.stderr).toBe(0);
      const cancelArgs = cancelSigned.stdout.trim().split(" ");
      expect(cancelArgs[0]).toBe("cancel");
      const canceled = await runCli([...cancelArgs, "--confirmations", "1", "--config", config], {
        FLASHINDEX_RELAYER_KEY: ANVIL_PRIVATE_KEYS[0],
      });
      expect(canceled.code, canceled.stderr).toBe(0);
      const nonce = cancelArgs[cancelArgs.indexOf("--nonce") + 1]!;
      const auth = await waitFor(
        async () => {
          const r = await cli("auth", DEVNET_TOKEN, address(3), nonce, "--json");
          return (
            r.code === 0 && (JSON.parse(r.stdout) as { state: string }).state === "canceled" && r
          );
        },
        30_000,
        "the cancel indexed",
        250,
      );
      expect(JSON.parse(auth.stdout)).toMatchObject({
        state: "canceled",
        contract_used: true,
        comparison: "agree",
      });
    } finally {
      daemon.kill("SIGTERM");
      await new Promise((resolve) => daemon.once("exit", resolve));
    }
    expect(existsSync(join(dir, "devnet.endpoints.json"))).toBe(false);
    const after = await cli("auth", DEVNET_TOKEN, address(3), `0x${"00".repeat(32)}`);
    expect(after.code).toBe(75);
    expect(after.stderr).toContain("no devnet is running");
  }, 180_000);
});
