import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { SettleError, VerifyError } from "@x402/core/types";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  buyerLine,
  refusalStatus,
  settleForBuyer,
  settleRefused,
  settleSucceeded,
  verifyAccepted,
  verifyForBuyer,
  verifyRefused,
} from "../../src/settle/answers.js";
import { INVALID_REASONS, refuse } from "../../src/settle/invalidReasons.js";
import { paymentIdentifierConflict } from "../../src/settle/paymentIdentifier.js";

const PAYER: Address = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const TX = `0x${"ab".repeat(32)}` as const;
const NETWORK = "eip155:8453";
const requirements = {
  scheme: "exact",
  network: NETWORK,
  amount: "1",
  asset: PAYER,
  payTo: PAYER,
  maxTimeoutSeconds: 60,
  extra: {},
} as const;
const payload = { x402Version: 2, accepted: requirements, payload: {} };

/** What the server answers next: a status and a body, as a facilitator built on answers.ts would. */
let next: { status: number; body: unknown } = { status: 200, body: {} };
let url = "";
const server = createServer((request, response) => {
  request.resume();
  request.on("end", () =>
    response
      .writeHead(next.status, { "content-type": "application/json" })
      .end(JSON.stringify(next.body)),
  );
});
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const client = () => new HTTPFacilitatorClient({ url });

describe("facilitator answers", () => {
  test("HTTPFacilitatorClient reads an accepted and a refused verify as results", async () => {
    next = { status: 200, body: verifyAccepted(PAYER) };
    await expect(client().verify(payload as never, requirements as never)).resolves.toMatchObject({
      isValid: true,
      payer: PAYER,
    });
    const refusal = refuse(
      INVALID_REASONS.valueMismatch,
      "authorization.value 1 is not the required amount 2",
    );
    next = { status: refusalStatus(refusal), body: verifyRefused(refusal, PAYER) };
    await expect(client().verify(payload as never, requirements as never)).resolves.toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_payload_authorization_value_mismatch",
      invalidMessage: refusal.message,
      payer: PAYER,
    });
  });

  test("HTTPFacilitatorClient reads a settlement and a refused settle as results", async () => {
    next = {
      status: 200,
      body: settleSucceeded({ transaction: TX, network: NETWORK, payer: PAYER, amount: 10_000n }),
    };
    await expect(client().settle(payload as never, requirements as never)).resolves.toMatchObject({
      success: true,
      transaction: TX,
      network: NETWORK,
      payer: PAYER,
      amount: "10000",
    });
    const refusal = refuse(
      INVALID_REASONS.nonceAlreadyUsed,
      "the authorization's nonce is already used",
    );
    next = { status: refusalStatus(refusal), body: settleRefused(refusal, NETWORK) };
    await expect(client().settle(payload as never, requirements as never)).resolves.toEqual({
      success: false,
      errorReason: "invalid_exact_evm_nonce_already_used",
      errorMessage: refusal.message,
      transaction: "",
      network: NETWORK,
    });
  });

  test("a payment-identifier conflict goes out as 409, which the client raises with its reason", async () => {
    const refusal = paymentIdentifierConflict("pay_7d5d747be160e280504c099d");
    expect(refusalStatus(refusal)).toBe(409);
    next = { status: refusalStatus(refusal), body: settleRefused(refusal, NETWORK, PAYER) };
    const settled = client().settle(payload as never, requirements as never);
    await expect(settled).rejects.toBeInstanceOf(SettleError);
    await expect(settled).rejects.toMatchObject({
      statusCode: 409,
      errorReason: "payment_identifier_conflict",
    });
    next = { status: refusalStatus(refusal), body: verifyRefused(refusal, PAYER) };
    await expect(client().verify(payload as never, requirements as never)).rejects.toMatchObject({
      constructor: VerifyError,
      statusCode: 409,
      invalidReason: "payment_identifier_conflict",
    });
  });

  test("a buyer reads one fixed line per reason, whatever detail the refusal carried; unexpected ones name the request id", () => {
    const lines = new Map<string, string>();
    for (const reason of Object.values(INVALID_REASONS)) {
      const line = buyerLine(reason, "req-1");
      expect(line, reason).toMatch(/^[^\n]{10,120}$/);
      lines.set(reason, line);
    }
    expect(lines.get("unexpected_settle_error")).toContain("req-1");
    expect(lines.get("invalid_exact_evm_nonce_already_used")).not.toContain("req-1");
    expect(buyerLine("not_a_reason", "req-1")).toBe("The payment was refused.");

    const leaky = refuse(
      INVALID_REASONS.unexpectedSettleError,
      "eth_call failed after 2 attempts (last from https://rpc.example/***): have 12345 (order 7)",
    );
    const settled = settleForBuyer(settleRefused(leaky, NETWORK, PAYER), "req-2", {
      named: "eip155:84532",
      sameChain: false,
    });
    expect(settled).toEqual({
      success: false,
      errorReason: "unexpected_settle_error",
      errorMessage: buyerLine("unexpected_settle_error", "req-2"),
      transaction: "",
      network: "eip155:84532",
      payer: PAYER,
    });
    const verified = verifyForBuyer(verifyRefused(leaky, PAYER), "req-3");
    expect(verified.invalidMessage).toBe(buyerLine("unexpected_settle_error", "req-3"));
  });

  test("a success names the request's network only when it is the same chain (v1's base for eip155:8453)", () => {
    const success = settleSucceeded({
      transaction: TX,
      network: NETWORK,
      payer: PAYER,
      amount: 1n,
    });
    expect(settleForBuyer(success, "r", { named: "base", sameChain: true }).network).toBe("base");
    expect(settleForBuyer(success, "r", { named: "eip155:1", sameChain: false }).network).toBe(
      NETWORK,
    );
    expect(settleForBuyer(success, "r", { named: undefined, sameChain: false })).toEqual(success);
  });
});
