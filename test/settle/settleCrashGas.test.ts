import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CRASH_AT_ENV } from "../../src/ops/crashPoint.js";
import { waitFor } from "../helpers/fixtures.js";
import {
  createSettleCrashHarness,
  STEP_TIMEOUT_MS,
  type SettleCrashHarness,
} from "../helpers/settleCrashHarness.js";
import { referencePaymentBody } from "../helpers/x402.js";

/*
 * Gas accounting across a kill -9 (schema 17): a settle whose process dies right after handing its
 * transaction to the node never had its wait see the receipt. The daemon started next on the same
 * database records the capture's gas from the receipt when its driver finds the order paid,
 * whether the indexer moved the order to captured first or not.
 */

let h: SettleCrashHarness;

beforeAll(async () => {
  h = await createSettleCrashHarness({
    dirPrefix: "flashindex-crash-gas-",
    relayerKeys: { FLASHINDEX_RELAYER_KEY: 6 },
    // Six blocks to finality: the intent stays `sent` a little while after its event.
    finalityDepth: 6,
  });
}, 60_000);

afterAll(() => h?.tearDown());

describe("gas of a capture finished after a restart", () => {
  test("killed right after the send: the next daemon records the capture's gas used and price from its receipt", async () => {
    const body = await referencePaymentBody(privateKeyToAccount(h.devnet.privateKeys[1]!), h.offer);
    const nonce = (body.paymentPayload.payload.authorization as { nonce: Hex }).nonce;

    const first = await h.startDaemon({ [CRASH_AT_ENV]: "sent" });
    const exited = h.exitOf(first.daemon, STEP_TIMEOUT_MS);
    await h.settle(first.url, body).catch(() => undefined);
    await exited;
    expect(first.daemon.signalCode).toBe("SIGKILL");
    expect(first.daemon.output().stderr).toContain("test crash point sent");
    type Row = {
      state: string;
      tx_hash: Hex;
      gas_used: string | null;
      effective_gas_price: string | null;
      gas_tx_hash: string | null;
    };
    const row = () =>
      h.query<Row>(
        `SELECT o.state, c.tx_hash, c.gas_used, c.effective_gas_price, c.gas_tx_hash
         FROM orders o JOIN order_captures c ON c.order_id = o.id WHERE o.nonce = ?`,
        nonce.toLowerCase(),
      )[0];
    // Broadcast, and the process that sent it gone before its wait saw anything.
    expect(row()).toMatchObject({ state: "capturing", gas_used: null });

    const second = await h.startDaemon();
    try {
      const recorded = await waitFor(
        () => {
          const r = row();
          return r?.state === "captured" && r.gas_used !== null ? r : undefined;
        },
        STEP_TIMEOUT_MS,
        `the capture's gas recorded\n${second.daemon.output().stdout.slice(-3_000)}`,
        100,
      );
      const receipt = await h.client.getTransactionReceipt({ hash: recorded.tx_hash });
      expect(receipt.status).toBe("success");
      expect(recorded).toMatchObject({
        gas_used: receipt.gasUsed.toString(),
        effective_gas_price: receipt.effectiveGasPrice.toString(),
        gas_tx_hash: recorded.tx_hash.toLowerCase(),
      });
    } finally {
      await h.stop(second.daemon);
    }
  }, 180_000);
});
