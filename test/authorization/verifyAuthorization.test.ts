import { keccak256, stringToHex, type Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, test } from "vitest";
import { compareAuthorization } from "../../src/cli/commands/authCommand.js";
import { assertTransition, ORDER_STATES, ORDER_TRANSITIONS, OrderStateError, type TransitionActor } from "../../src/authorization/orders.js";
import { BadSignatureError, verifyTransferAuthorization, WrongSignerError } from "../../src/authorization/verifyAuthorization.js";
import { ANVIL_PRIVATE_KEYS } from "../../src/devnet/anvil.js";
import { signReceiveAuthorization, signTransferAuthorization, type TokenDomain, type TransferAuthorization } from "../../src/authorization/eip3009.js";

const buyer = privateKeyToAccount(ANVIL_PRIVATE_KEYS[1]);
const other = privateKeyToAccount(ANVIL_PRIVATE_KEYS[4]);
const domain: TokenDomain = { name: "USD Coin", version: "2", chainId: 8453, verifyingContract: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" };
const message: TransferAuthorization = {
  from: buyer.address,
  to: "0x0000000000000000000000000000000000005409" as Address,
  value: 1_000_000n,
  validAfter: 0n,
  validBefore: 1_900_000_000n,
  nonce: keccak256(stringToHex("verify")),
};

describe("verifyTransferAuthorization()", () => {
  test("accepts the buyer's signature as 65 bytes and as v, r, s, for transfer and receive", async () => {
    const transfer = await signTransferAuthorization(buyer, domain, message);
    expect((await verifyTransferAuthorization(domain, "transfer", message, transfer.signature)).signer).toBe(buyer.address);
    expect((await verifyTransferAuthorization(domain, "transfer", message, { v: transfer.v, r: transfer.r, s: transfer.s })).signature).toBe(transfer.signature.toLowerCase());
    const receive = await signReceiveAuthorization(buyer, domain, message);
    expect((await verifyTransferAuthorization(domain, "receive", message, receive.signature)).signer).toBe(buyer.address);
    // A receive signature is no transfer signature: the type hash differs.
    await expect(verifyTransferAuthorization(domain, "transfer", message, receive.signature)).rejects.toThrow(WrongSignerError);
  });

  test("refuses a signer that is not from, another domain, and malformed signatures", async () => {
    const byOther = await signTransferAuthorization(other, domain, message);
    await expect(verifyTransferAuthorization(domain, "transfer", message, byOther.signature)).rejects.toThrow(`signature was made by ${other.address}, not by from ${buyer.address}`);
    const good = await signTransferAuthorization(buyer, domain, message);
    await expect(verifyTransferAuthorization({ ...domain, name: "USDC" }, "transfer", message, good.signature)).rejects.toThrow(WrongSignerError);
    await expect(verifyTransferAuthorization({ ...domain, chainId: 84532 }, "transfer", message, good.signature)).rejects.toThrow(WrongSignerError);
    await expect(verifyTransferAuthorization(domain, "transfer", message, "0x1234")).rejects.toThrow(BadSignatureError);
    await expect(verifyTransferAuthorization(domain, "transfer", message, { v: 1, r: good.r, s: good.s })).rejects.toThrow(/v must be 27 or 28/);
  });
});

describe("order transitions", () => {
  test("assertTransition() allows exactly the rows of ORDER_TRANSITIONS for each actor and refuses every other pair", () => {
    const actors: TransitionActor[] = ["merchant", "expiry", "chain"];
    let allowed = 0;
    for (const from of ORDER_STATES)
      for (const to of ORDER_STATES)
        for (const by of actors) {
          const listed = ORDER_TRANSITIONS.some((t) => t.from === from && t.to === to && t.by === by);
          if (listed) {
            expect(() => assertTransition(from, to, by)).not.toThrow();
            allowed++;
          } else expect(() => assertTransition(from, to, by), `${from} -> ${to} by ${by}`).toThrow(OrderStateError);
        }
    expect(allowed).toBe(ORDER_TRANSITIONS.length);
    // Nothing leaves captured or canceled except the chain.
    expect(ORDER_TRANSITIONS.filter((t) => (t.from === "captured" || t.from === "canceled") && t.by !== "chain")).toEqual([]);
  });
});

describe("compareAuthorization()", () => {
  const indexed = (status: "preconfirmed" | "confirmed" | "finalized") => ({ state: "captured" as const, status, block_number: 1, tx_hash: "0x01" as const, captured_from: null, captured_to: null, captured_value: null });
  test("a confirmed or finalized event must match a used nonce; pre-confirmed and not-indexed cannot disagree", () => {
    expect(compareAuthorization(indexed("confirmed"), true)).toBe("agree");
    expect(compareAuthorization(indexed("finalized"), false)).toBe("disagree");
    expect(compareAuthorization(indexed("confirmed"), false)).toBe("disagree");
    expect(compareAuthorization(indexed("preconfirmed"), false)).toBe("pending");
    expect(compareAuthorization(undefined, false)).toBe("agree");
    expect(compareAuthorization(undefined, true)).toBe("not_indexed");
  });
});
