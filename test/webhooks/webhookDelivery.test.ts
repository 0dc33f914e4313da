import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hex } from "viem";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { Config } from "../../src/config/types.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { BACKENDS, stopFileBackends, type TestBackend } from "../helpers/backends.js";
import { runCli, spawnCli, writeConfig } from "../helpers/cli.js";
import { createPayer, waitFor } from "../helpers/devnetPayments.js";
import { startWebhookReceiver, type Receipt } from "../helpers/webhookReceiver.js";

const SECRET = "whsec_test_3f9a";
const SECRET_ENV = { FLASHINDEX_TEST_HOOK_SECRET: SECRET };
const SHOP = "0x000000000000000000000000000000000000c0de";

let devnet: Devnet;
let dir: string;
beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 600, flashblockIntervalMs: 150 });
  dir = mkdtempSync(join(tmpdir(), "flashindex-webhooks-"));
}, 60_000);
afterAll(async () => {
  await devnet?.stop();
  await stopFileBackends();
});

function daemonConfig(
  name: string,
  database: Record<string, unknown>,
  webhooks: unknown[],
  delivery: Record<string, number>,
) {
  return writeConfig(
    dir,
    {
      chainId: devnet.chainId,
      rpc: {
        http: [devnet.httpUrl],
        ws: devnet.wsUrl,
        preconfWs: devnet.wsUrl,
        retry: { maxAttempts: 4, initialDelayMs: 20, maxDelayMs: 200 },
      },
      tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
      finality: { depth: 3 },
      realtime: { headPollIntervalMs: 200, pendingPollIntervalMs: 200 },
      database,
      metrics: { enabled: false },
      logLevel: "info",
      webhooks,
      webhookDelivery: delivery,
    },
    `${name}.json`,
  );
}

/** Daemons a failed test left running: killed after each test. */
const running = new Set<ReturnType<typeof spawnCli>>();
afterEach(() => {
  for (const daemon of running) daemon.kill("SIGKILL");
  running.clear();
});

async function startDaemon(config: string) {
  const daemon = spawnCli(["start", "--config", config], SECRET_ENV);
  running.add(daemon);
  daemon.on("exit", () => running.delete(daemon));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    daemon.on("exit", (code, signal) => resolve({ code, signal })),
  );
  await waitFor(
    () => daemon.output().stdout.includes("Caught up with the head"),
    30_000,
    "catch-up",
  );
  return { daemon, exited };
}

/** The outbox's deliveries, read beside the daemon through a connection of the test's own. */
async function deliveries(
  backend: TestBackend,
  database: Record<string, unknown>,
): Promise<Array<{ event_id: number; state: string; type: string; tx_hash: string | null }>> {
  const reader = await backend.reader(database as Config["database"]);
  try {
    return await reader.all(
      "SELECT d.event_id, d.state, e.type, e.tx_hash FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id ORDER BY d.event_id",
    );
  } finally {
    await reader.close();
  }
}

const typesFor = (receipts: readonly Receipt[], tx: Hex) =>
  new Set(receipts.filter((r) => r.body.log?.tx_hash === tx).map((r) => r.type));

/** A fresh database of the backend; SQLite's in the test's directory. */
async function freshDatabase(backend: TestBackend, name: string): Promise<Record<string, unknown>> {
  return backend.name === "sqlite" ? { path: join(dir, `${name}.db`) } : backend.freshDatabase();
}

describe.each(BACKENDS)("webhooks on $name", (backend) => {
  test("start refuses a webhook whose secret variable is not set, naming the variable (exit 2)", async () => {
    const config = daemonConfig(
      `nosecret-${backend.name}`,
      await freshDatabase(backend, `nosecret-${backend.name}`),
      [
        {
          url: "http://127.0.0.1:9/hook",
          secretEnv: "FLASHINDEX_TEST_MISSING_SECRET",
          allowPrivateTargets: true,
        },
      ],
      {},
    );
    const { code, stderr } = await runCli(["start", "--config", config]);
    expect(code).toBe(2);
    expect(stderr).toContain(
      "webhooks[0].secretEnv: the environment variable FLASHINDEX_TEST_MISSING_SECRET is not set",
    );
  });

  test("every event reaches the receiver at least once, in order and signed, through 500s, timeouts, resets and a kill -9 between commit and delivery", async () => {
    // Scripted failures: every 3rd request answers 500, every 7th hangs past the timeout, every 11th is reset.
    const mixed = (n: number) =>
      n % 3 === 1 ? "fail" : n % 7 === 2 ? "hang" : n % 11 === 5 ? "reset" : "ok";
    const receiver = await startWebhookReceiver(SECRET, mixed);
    const database = await freshDatabase(backend, `delivery-${backend.name}`);
    const config = daemonConfig(
      `delivery-${backend.name}`,
      database,
      [{ url: receiver.url, secretEnv: "FLASHINDEX_TEST_HOOK_SECRET", allowPrivateTargets: true }],
      {
        initialDelayMs: 20,
        maxDelayMs: 150,
        timeoutMs: 300,
        maxAttempts: 1_000,
      },
    );
    const payer = createPayer(devnet);
    try {
      let { daemon, exited } = await startDaemon(config);
      const before = [await payer.pay(SHOP), await payer.pay(SHOP, 2)];
      await waitFor(
        () => before.every((tx) => typesFor(receiver.delivered(), tx).has("payment.confirmed")),
        30_000,
        "first payments delivered",
      );

      // The receiver goes down; payments are committed (outbox rows written) but cannot be delivered; then kill -9.
      receiver.setAnswer(() => "fail");
      const during = [await payer.pay(SHOP), await payer.pay(SHOP)];
      await waitFor(
        async () => {
          const rows = await deliveries(backend, database);
          return during.every((tx) =>
            rows.some((d) => d.tx_hash === tx && d.type === "payment.confirmed"),
          );
        },
        30_000,
        "outbox rows committed",
      );
      const undelivered = (await deliveries(backend, database)).filter(
        (d) => d.state === "pending",
      ).length;
      expect(undelivered).toBeGreaterThan(0);
      daemon.kill("SIGKILL");
      await exited;

      receiver.setAnswer(mixed);
      ({ daemon, exited } = await startDaemon(config));
      const after = [await payer.pay(SHOP, 3)];
      await waitFor(
        () =>
          [...before, ...during, ...after].every((tx) =>
            typesFor(receiver.delivered(), tx).has("payment.finalized"),
          ),
        60_000,
        "every payment finalized at the receiver",
      ).catch(async (error: Error) => {
        // What a timeout needs to be understood: the outbox's states and the daemon's webhook lines.
        const states = (await deliveries(backend, database))
          .map((d) => `${d.event_id}:${d.type}:${d.state}`)
          .join(" ");
        const lines = daemon
          .output()
          .stdout.split("\n")
          .filter((l) => /webhook|error|fatal/i.test(l))
          .slice(-20)
          .join("\n");
        throw new Error(`${error.message}\noutbox: ${states}\ndaemon:\n${lines}`);
      });
      await waitFor(
        async () => (await deliveries(backend, database)).every((d) => d.state === "delivered"),
        30_000,
        "every delivery settled",
      );

      const outbox = await deliveries(backend, database);
      const deliveredIds = new Set(receiver.delivered().map((r) => r.seq));
      expect(outbox.filter((d) => !deliveredIds.has(d.event_id))).toEqual([]);
      // In order: head-of-line per subscription; a re-send only ever repeats the event at the head.
      const sequence = receiver.receipts.map((r) => r.seq);
      expect(sequence.filter((seq, i) => i > 0 && seq < sequence[i - 1]!)).toEqual([]);
      expect(receiver.receipts.filter((r) => !r.signatureValid)).toEqual([]);
      expect(new Set(receiver.receipts.map((r) => r.answer))).toEqual(
        new Set(["ok", "fail", "hang", "reset"]),
      );
      // Every payment event the outbox holds reached the receiver: confirmed and finalized always; the
      // pre-confirmation too whenever the daemon saw one (a payment mined while it was down, or before
      // its pending subscription was back, is first seen confirmed, and no pre-confirmed event exists).
      for (const tx of [...before, ...during, ...after]) {
        const enqueued = new Set(outbox.filter((d) => d.tx_hash === tx).map((d) => d.type));
        expect([...enqueued].filter((t) => t !== "payment.preconfirmed").sort()).toEqual([
          "payment.confirmed",
          "payment.finalized",
        ]);
        expect(typesFor(receiver.delivered(), tx)).toEqual(enqueued);
      }
      expect(outbox.some((d) => d.type === "payment.preconfirmed")).toBe(true);
      const confirmed = receiver
        .delivered()
        .find((r) => r.type === "payment.confirmed" && r.body.log.tx_hash === after[0])!;
      expect(confirmed.body).toMatchObject({
        id: confirmed.id,
        type: "payment.confirmed",
        chain_id: devnet.chainId,
        status: "confirmed",
        payment: {
          token: devnet.token.toLowerCase(),
          from: payer.address.toLowerCase(),
          to: SHOP,
          value: expect.stringMatching(/^[1-3]$/),
        },
        builder_codes: [],
      });
      daemon.kill("SIGTERM");
      expect(await exited).toEqual({ code: 0, signal: null });
    } finally {
      await receiver.close();
    }
  }, 180_000);

  test("a reorg that removes a delivered payment sends payment.removed; a failing subscription parks its events, `webhooks list` shows them and `webhooks retry --all` delivers them", async () => {
    const good = await startWebhookReceiver(SECRET);
    const down = await startWebhookReceiver(SECRET, () => "fail");
    const config = daemonConfig(
      `reorg-${backend.name}`,
      await freshDatabase(backend, `reorg-${backend.name}`),
      [
        { url: good.url, secretEnv: "FLASHINDEX_TEST_HOOK_SECRET", allowPrivateTargets: true },
        {
          url: down.url,
          secretEnv: "FLASHINDEX_TEST_HOOK_SECRET",
          events: ["payment.confirmed"],
          addresses: [SHOP],
          allowPrivateTargets: true,
        },
      ],
      { initialDelayMs: 10, maxDelayMs: 50, timeoutMs: 500, maxAttempts: 2 },
    );
    const payer = createPayer(devnet);
    try {
      const { daemon, exited } = await startDaemon(config);
      const other = "0x000000000000000000000000000000000000beef";
      const tx = await payer.pay(SHOP);
      const elsewhere = await payer.pay(other);
      await waitFor(
        () =>
          typesFor(good.delivered(), tx).has("payment.confirmed") &&
          typesFor(good.delivered(), elsewhere).has("payment.confirmed"),
        30_000,
        "payments confirmed at the receiver",
      );
      const receipt = await payer.publicClient.getTransactionReceipt({ hash: tx });
      const head = await payer.publicClient.getBlockNumber();
      // A reorg below the payment's block whose new branch leaves the orphaned transactions out.
      await payer.rpc("devnet_reorg", [Number(head - receipt.blockNumber) + 1, []]);
      payer.resync();
      const removed = await waitFor(
        () =>
          good.delivered().find((r) => r.type === "payment.removed" && r.body.log.tx_hash === tx),
        30_000,
        "payment.removed",
      );
      expect(removed.body.status).toBe("removed");
      const order = good
        .delivered()
        .filter((r) => r.body.log?.tx_hash === tx)
        .map((r) => r.type);
      // The pre-confirmation comes first whenever the daemon saw one: a block applied before the
      // flashblock's notification was committed makes it stale, and the payment is first seen confirmed.
      const seenPreconfirmed = order[0] === "payment.preconfirmed" ? ["payment.preconfirmed"] : [];
      expect(order.slice(0, seenPreconfirmed.length + 1)).toEqual([
        ...seenPreconfirmed,
        "payment.confirmed",
      ]);
      expect(order.at(-1)).toBe("payment.removed");

      // The second subscription only wanted payment.confirmed to SHOP, and every attempt failed: parked.
      await waitFor(() => down.receipts.length >= 2, 30_000, "two failed attempts");
      const listed = await waitFor(
        async () => {
          const { code, stdout } = await runCli(["webhooks", "list", "--json", "--config", config]);
          expect(code).toBe(0);
          const rows = (
            JSON.parse(stdout) as {
              deliveries: Array<{
                state: string;
                type: string;
                event_id: string;
                url: string;
                attempts: number;
              }>;
            }
          ).deliveries;
          return rows.some((r) => r.state === "parked") && rows;
        },
        30_000,
        "a parked delivery listed",
      );
      const parked = listed.filter((r) => r.state === "parked");
      expect(parked.map((r) => [r.type, r.attempts, r.url])).toEqual([
        ["payment.confirmed", 2, down.url.replace("/hooks", "/***")],
      ]);
      expect(new Set(down.receipts.map((r) => r.type))).toEqual(new Set(["payment.confirmed"]));
      expect(down.receipts.every((r) => r.body.payment.to === SHOP)).toBe(true);

      down.setAnswer(() => "ok");
      const retried = await runCli(["webhooks", "retry", "--all", "--config", config]);
      expect([retried.code, retried.stdout.trim()]).toEqual([0, "re-queued 1 parked delivery"]);
      await waitFor(
        () => down.delivered().some((r) => r.id === parked[0]!.event_id),
        15_000,
        "the parked event delivered after retry",
      );
      daemon.kill("SIGTERM");
      expect(await exited).toEqual({ code: 0, signal: null });
    } finally {
      await good.close();
      await down.close();
    }
  }, 120_000);
});
