import { getAddress, type Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, test } from "vitest";
import { ANVIL_PRIVATE_KEYS } from "../../src/devnet/anvil.js";
import { checkExactFields, type ExactPolicy } from "../../src/settle/exactFieldChecks.js";
import { parseFacilitatorRequest } from "../../src/settle/parseRequest.js";
import type { ExactPaymentRequest } from "../../src/settle/wire.js";
import { referencePaymentBody, type ExactOffer } from "../helpers/x402.js";

const payer = privateKeyToAccount(ANVIL_PRIVATE_KEYS[1] as `0x${string}`);
const TOKEN: Address = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const SHOP: Address = "0x000000000000000000000000000000000000c0de";
const OFFER: ExactOffer = {
  chainId: 8453,
  token: TOKEN,
  name: "Flash Test USD",
  version: "2",
  payTo: SHOP,
  amount: 10_000n,
};
const POLICY: ExactPolicy = {
  chainId: 8453,
  tokens: [{ address: TOKEN, name: "Flash Test USD", version: "2" }],
  payTo: [],
};

/** The reference client's payment for `offer`, parsed; `edit` changes the wire body first. */
async function request(
  offer: ExactOffer = OFFER,
  edit: (body: Record<string, any>) => void = () => {},
): Promise<ExactPaymentRequest> {
  const body = (await referencePaymentBody(payer, offer)) as unknown as Record<string, any>;
  edit(body);
  const parsed = parseFacilitatorRequest(body);
  if (!parsed.ok) throw new Error(parsed.refusal.message);
  return parsed.request;
}

const nowOf = (req: ExactPaymentRequest) => req.authorization.validBefore - 300n;

describe("checkExactFields()", () => {
  test("passes the reference client's payment for what was asked", async () => {
    const req = await request();
    expect(checkExactFields(req, POLICY, nowOf(req))).toBeUndefined();
    expect(
      checkExactFields(req, { ...POLICY, payTo: [getAddress(SHOP)] }, nowOf(req)),
    ).toBeUndefined();
  });

  test("refuses another chain, another token, another EIP-712 domain and a payee not allowed", async () => {
    const req = await request();
    const now = nowOf(req);
    expect(checkExactFields(req, { ...POLICY, chainId: 84532 }, now)).toMatchObject({
      invalidReason: "invalid_network",
      message: expect.stringMatching(/eip155:8453 .*eip155:84532/),
    });
    expect(
      checkExactFields(
        req,
        {
          ...POLICY,
          tokens: [{ ...POLICY.tokens[0]!, address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e" }],
        },
        now,
      ),
    ).toMatchObject({
      invalidReason: "invalid_payment_requirements",
      message: expect.stringContaining(TOKEN),
    });
    expect(
      checkExactFields(
        req,
        { ...POLICY, tokens: [{ ...POLICY.tokens[0]!, name: "USD Coin" }] },
        now,
      ),
    ).toMatchObject({ invalidReason: "invalid_exact_evm_token_name_mismatch" });
    expect(
      checkExactFields(req, { ...POLICY, tokens: [{ ...POLICY.tokens[0]!, version: "1" }] }, now),
    ).toMatchObject({ invalidReason: "invalid_exact_evm_token_version_mismatch" });
    expect(
      checkExactFields(
        req,
        { ...POLICY, payTo: ["0x000000000000000000000000000000000000bEEF"] },
        now,
      ),
    ).toMatchObject({
      invalidReason: "invalid_payment_requirements",
      message: expect.stringMatching(/payTo .* not a payee/),
    });
  });

  test("refuses an amount below the token's floor (facilitator.minAmount) with the reference's reason for a value it will not settle", async () => {
    const req = await request();
    const now = nowOf(req);
    const floor = (amount: bigint) => ({
      ...POLICY,
      minAmounts: new Map([[TOKEN.toLowerCase(), amount]]),
    });
    expect(checkExactFields(req, floor(10_000n), now)).toBeUndefined();
    expect(checkExactFields(req, floor(10_001n), now)).toMatchObject({
      invalidReason: "invalid_exact_evm_authorization_value",
      message: expect.stringMatching(/10000 is below this facilitator's minimum 10001/),
    });
    // Another token's floor does not apply.
    expect(
      checkExactFields(
        req,
        {
          ...POLICY,
          minAmounts: new Map([["0x036cbd53842c5426634e7929541ec2318f3dcf7e", 10n ** 9n]]),
        },
        now,
      ),
    ).toBeUndefined();
  });

  test("refuses an authorization to someone other than payTo", async () => {
    const req = await request(OFFER, (body) => {
      body.paymentRequirements.payTo = "0x000000000000000000000000000000000000bEEF";
      body.paymentPayload.accepted.payTo = "0x000000000000000000000000000000000000bEEF";
    });
    expect(checkExactFields(req, POLICY, nowOf(req))).toMatchObject({
      invalidReason: "invalid_exact_evm_recipient_mismatch",
    });
  });

  test("wants validBefore at least 6 s ahead and validAfter not ahead of now", async () => {
    const req = await request();
    const { validBefore } = req.authorization;
    expect(checkExactFields(req, POLICY, validBefore - 6n)).toBeUndefined();
    expect(checkExactFields(req, POLICY, validBefore - 5n)).toMatchObject({
      invalidReason: "invalid_exact_evm_payload_authorization_valid_before",
    });
    expect(checkExactFields(req, POLICY, validBefore + 100n)).toMatchObject({
      invalidReason: "invalid_exact_evm_payload_authorization_valid_before",
    });
    const later = { ...req, authorization: { ...req.authorization, validAfter: nowOf(req) + 1n } };
    expect(checkExactFields(later, POLICY, nowOf(req))).toMatchObject({
      invalidReason: "invalid_exact_evm_payload_authorization_valid_after",
    });
    expect(checkExactFields(later, POLICY, nowOf(req) + 1n)).toBeUndefined();
  });

  test("wants the value to be the amount exactly, neither less nor more", async () => {
    for (const amount of ["9999", "10001"]) {
      const req = await request(OFFER, (body) => {
        body.paymentRequirements.amount = amount;
      });
      expect(checkExactFields(req, POLICY, nowOf(req))).toMatchObject({
        invalidReason: "invalid_exact_evm_payload_authorization_value_mismatch",
        message: expect.stringContaining(`amount ${amount}`),
      });
    }
  });
});
