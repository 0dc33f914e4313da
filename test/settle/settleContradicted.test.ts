import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import type { Hex } from "viem";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { readTokenDomain } from "../../src/authorization/eip3009.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { spawnCli, writeConfig } from "../helpers/cli.js";
import { waitFor } from "../helpers/fixtures.js";
import { startWebhookReceiver } from "../helpers/webhookReceiver.js";
import { referencePaymentBody, type ExactOffer } from "../helpers/x402.js";
import { httpRpc } from "../helpers/httpRpc.js";

/*
 * A pre-confirmed success that the sealed block contradicts (issue 40): the daemon answers /settle
 * at pre-confirmation, the devnet then seals the block without the transaction (a dropped
 * pre-confirmation, which Base never retracts). The settlement is flagged, raised as a signed
 * `settlement.contradicted` webhook and counted in the metric; the order is capturing again, its
 * signed transaction still driven.
 */

const SECRET = "whsec_contradicted_test";
let devnet: Devnet;
let dir: string;
let dbPath: string;
let daemon: ReturnType<typeof spawnCli> | undefined;
let facilitatorUrl: string;
let metricsUrl: string;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let offer: ExactOffer;

const admin = <T = unknown>(method: string, params: unknown[] = []) =>
  httpRpc<T>(devnet.httpUrl, method, params);

function readDb<T>(sql: string, ...params: unknown[]): T | undefined {
  const db = new DatabaseConstructor(dbPath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).get(...params) as T | undefined;
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  // Flashblocks and blocks only when the test makes them.
  devnet = await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0, port: 0 });
  const chain = createPublicClient({ transport: http(devnet.httpUrl) });
  const domain = await readTokenDomain(chain, devnet.token);
  offer = {
    chainId: devnet.chainId,
    token: devnet.token,
    name: domain.name,
    version: domain.version,
    payTo: privateKeyToAccount(devnet.privateKeys[2]!).address,
    amount: 2_500n,
  };
  receiver = await startWebhookReceiver(SECRET);
  dir = mkdtempSync(join(tmpdir(), "flashindex-contradicted-"));
  dbPath = join(dir, "index.db");
  const configPath = writeConfig(dir, {
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl], retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 50 } },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
    finality: { depth: 0 },
    realtime: { headPollIntervalMs: 100, pendingPollIntervalMs: 100 },
    database: { path: dbPath },
    metrics: { enabled: true, port: 0 },
    webhooks: [
      {
        url: receiver.url,
        secretEnv: "CONTRADICTED_TEST_SECRET",
        events: ["settlement.contradicted"],
        allowPrivateTargets: true,
      },
    ],
    facilitator: { enabled: true, port: 0 },
  });
  daemon = spawnCli(["start", "--config", configPath], {
    FLASHINDEX_RELAYER_KEY: devnet.privateKeys[6]!,
    CONTRADICTED_TEST_SECRET: SECRET,
  });
  facilitatorUrl = await waitFor(
    () => /"msg":"Started x402 facilitator","url":"([^"]+)"/.exec(daemon!.output().stdout)?.[1],
    60_000,
    `the facilitator\n${daemon.output().stderr}`,
    50,
  );
  metricsUrl = await waitFor(
    () =>
      /"msg":"Started metrics and health server","url":"([^"]+)"/.exec(
        daemon!.output().stdout,
      )?.[1],
    10_000,
    "the metrics server",
    50,
  );
}, 90_000);

afterAll(async () => {
  if (daemon !== undefined && daemon.exitCode === null) {
    const exited = new Promise((resolve) => daemon!.once("exit", resolve));
    daemon.kill("SIGTERM");
    await exited;
  }
  await receiver?.close();
  await devnet?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("a pre-confirmed success the sealed block contradicts", () => {
  test("is flagged on the settlement, raised as a signed settlement.contradicted webhook and in the metric; the order is capturing again", async () => {
    const body = await referencePaymentBody(privateKeyToAccount(devnet.privateKeys[1]!), offer);
    const answer = fetch(`${facilitatorUrl}/settle`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<Record<string, unknown>>);
    const nonce = (body.paymentPayload.payload.authorization.nonce as string).toLowerCase();
    await waitFor(
      () =>
        readDb(
          "SELECT 1 FROM orders o JOIN order_captures c ON c.order_id = o.id WHERE o.nonce = ? AND c.broadcasts > 0",
          nonce,
        ),
      20_000,
      "the capture sent",
      20,
    );
    await admin("devnet_flashblock");
    const settled = await answer;
    expect(settled, JSON.stringify(settled)).toMatchObject({ success: true });
    const txHash = settled.transaction as Hex;
    const order = await waitFor(
      () =>
        readDb<{ id: number }>(
          "SELECT id FROM orders WHERE nonce = ? AND state = 'captured'",
          nonce,
        ),
      20_000,
      "the pre-confirmed capture indexed",
      50,
    );

    // The block seals without it.
    await admin("devnet_dropPreconfirmed", [txHash]);
    await admin("devnet_mine");
    const hook = await waitFor(
      () => receiver.delivered().find((r) => r.type === "settlement.contradicted"),
      30_000,
      "the settlement.contradicted webhook",
      50,
    );
    expect(hook.signatureValid).toBe(true);
    expect(JSON.stringify(hook.body)).toContain(`"order_id":${order.id}`);
    expect(JSON.stringify(hook.body)).toContain(txHash.toLowerCase());
    expect(
      readDb<{ contradiction: string }>(
        "SELECT contradiction FROM x402_settlements WHERE order_id = ?",
        order.id,
      )?.contradiction,
    ).toMatch(/^captured -> capturing/);
    const metrics = await (await fetch(`${metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(/^flashindex_settle_contradicted_settlements 1$/m);

    // The order is capturing again with its intent live: the daemon keeps sending the same signed
    // transaction (this devnet never lets a dropped hash land, so it stops there).
    expect(
      readDb(
        "SELECT o.state, c.status FROM orders o JOIN order_captures c ON c.order_id = o.id WHERE o.id = ?",
        order.id,
      ),
    ).toEqual({ state: "capturing", status: "sent" });
  }, 120_000);
});
