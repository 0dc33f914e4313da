import {
  concat,
  createPublicClient,
  createWalletClient,
  http,
  keccak256,
  stringToHex,
  toHex,
  type Address,
  type Hex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { compareAuthorization } from "../../src/cli/commands/authCommand.js";
import {
  assertTransition,
  ORDER_STATES,
  ORDER_TRANSITIONS,
  OrderStateError,
  type TransitionActor,
} from "../../src/store/orderStates.js";
import {
  BadSignatureError,
  toTokenEcdsaSignature,
  verifyTransferAuthorization,
  WrongSignerError,
} from "../../src/authorization/verifyAuthorization.js";
import { EXIT_BAD_SIGNATURE, EXIT_WRONG_SIGNER } from "../../src/errors/cancel.js";
import * as cancelErrors from "../../src/errors/cancel.js";
import { createRpcClient, type RpcClient } from "../../src/chain/rpcClient.js";
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from "../../src/devnet/anvil.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { deployTestToken } from "../../src/devnet/deployToken.js";
import { delegationCode, deployMiniWallet } from "../../src/devnet/deployWallet.js";
import {
  readTokenDomain,
  signReceiveAuthorization,
  signTransferAuthorization,
  type TokenDomain,
  type TransferAuthorization,
} from "../../src/authorization/eip3009.js";
import { testConfig, testDeps } from "../helpers/context.js";

const buyer = privateKeyToAccount(ANVIL_PRIVATE_KEYS[1]);
const other = privateKeyToAccount(ANVIL_PRIVATE_KEYS[4]);
/** An EOA delegated to the MiniWallet's code (EIP-7702): it has code, so the token asks it through ERC-1271. */
const delegated = privateKeyToAccount(ANVIL_PRIVATE_KEYS[8]);
const relayer = privateKeyToAccount(ANVIL_PRIVATE_KEYS[3]);
/** secp256k1 group order: (r, n − s, v ^ 1) recovers the same signer, but FiatToken refuses the high s. */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
/** Bytes a real smart wallet appends to the owner's signature (authenticator data, an owner index). */
const WALLET_DATA = `ab`.repeat(96);

let anvil: Anvil;
let client: RpcClient;
let domain: TokenDomain;
let token: Address;
let wallet: Address;
let counter = 0;
const message = (overrides: Partial<TransferAuthorization> = {}): TransferAuthorization => ({
  from: buyer.address,
  to: "0x0000000000000000000000000000000000005409" as Address,
  value: 1_000_000n,
  validAfter: 0n,
  validBefore: 1_900_000_000n,
  nonce: keccak256(stringToHex(`verify ${++counter}`)),
  ...overrides,
});

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 8453 });
  ({ address: token } = await deployTestToken({
    rpcUrl: anvil.httpUrl,
    privateKey: ANVIL_PRIVATE_KEYS[0],
    mint: [{ to: buyer.address, amount: 10n ** 12n }],
  }));
  wallet = await deployMiniWallet({
    rpcUrl: anvil.httpUrl,
    privateKey: ANVIL_PRIVATE_KEYS[0],
    owner: buyer.address,
  });
  await createPublicClient({ transport: http(anvil.httpUrl) }).request({
    method: "anvil_setCode",
    params: [delegated.address, delegationCode(wallet)],
  } as never);
  domain = await readTokenDomain(createPublicClient({ transport: http(anvil.httpUrl) }), token);
  const deps = testDeps(testConfig({ rpc: { http: [anvil.httpUrl] }, logLevel: "silent" }));
  client = createRpcClient(deps);
});

afterAll(async () => {
  await anvil?.stop();
});

describe("verifyTransferAuthorization()", () => {
  test("accepts the buyer's signature as 65 bytes and as v, r, s, for transfer and receive", async () => {
    const m = message();
    const transfer = await signTransferAuthorization(buyer, domain, m);
    expect(
      await verifyTransferAuthorization(client, domain, "transfer", m, transfer.signature),
    ).toMatchObject({ scheme: "ecdsa", signature: transfer.signature.toLowerCase() });
    expect(
      (
        await verifyTransferAuthorization(client, domain, "transfer", m, {
          v: transfer.v,
          r: transfer.r,
          s: transfer.s,
        })
      ).signature,
    ).toBe(transfer.signature.toLowerCase());
    const receive = await signReceiveAuthorization(buyer, domain, m);
    expect(
      (await verifyTransferAuthorization(client, domain, "receive", m, receive.signature)).scheme,
    ).toBe("ecdsa");
    // A receive signature is no transfer signature: the type hash differs.
    await expect(
      verifyTransferAuthorization(client, domain, "transfer", m, receive.signature),
    ).rejects.toThrow(WrongSignerError);
  });

  test("refuses a signer that is not from, another domain, and malformed signatures", async () => {
    const m = message();
    const byOther = await signTransferAuthorization(other, domain, m);
    await expect(
      verifyTransferAuthorization(client, domain, "transfer", m, byOther.signature),
    ).rejects.toThrow(`signature was made by ${other.address}, not by from ${buyer.address}`);
    const good = await signTransferAuthorization(buyer, domain, m);
    await expect(
      verifyTransferAuthorization(
        client,
        { ...domain, name: "USDC" },
        "transfer",
        m,
        good.signature,
      ),
    ).rejects.toThrow(WrongSignerError);
    await expect(
      verifyTransferAuthorization(
        client,
        { ...domain, chainId: 84532 },
        "transfer",
        m,
        good.signature,
      ),
    ).rejects.toThrow(WrongSignerError);
    await expect(
      verifyTransferAuthorization(client, domain, "transfer", m, "0x1234"),
    ).rejects.toThrow(BadSignatureError);
    await expect(
      verifyTransferAuthorization(client, domain, "transfer", m, { v: 29, r: good.r, s: good.s }),
    ).rejects.toThrow(/v must be 27 or 28/);
  });

  test("refuses what the token refuses from an EOA: a high s, or more than 65 bytes; v 0/1 comes back as the 27/28 the token accepts", async () => {
    const m = message();
    const good = await signTransferAuthorization(buyer, domain, m);
    const highS = toHex(SECP256K1_N - BigInt(good.s), { size: 32 });
    // The malleable twin recovers to the buyer too (viem accepts it), but FiatToken's ECRecover refuses it.
    await expect(
      verifyTransferAuthorization(client, domain, "transfer", m, {
        v: good.v === 27 ? 28 : 27,
        r: good.r,
        s: highS,
      }),
    ).rejects.toThrow(/upper half/);
    await expect(
      verifyTransferAuthorization(client, domain, "transfer", m, `${good.signature}00` as Hex),
    ).rejects.toThrow(/exactly 65 bytes/);

    const yParity = concat([good.r, good.s, toHex(good.v - 27, { size: 1 })]);
    const verified = await verifyTransferAuthorization(client, domain, "transfer", m, yParity);
    expect(verified.signature).toBe(good.signature.toLowerCase());
    // What is returned (and stored by `order add`) is what the token accepts on chain, through the bytes overload.
    const hash = await createWalletClient({
      account: relayer,
      transport: http(anvil.httpUrl),
    }).writeContract({
      address: token,
      abi: flashTestTokenAbi,
      functionName: "transferWithAuthorization",
      chain: null,
      args: [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, verified.signature],
    });
    expect(
      (
        await createPublicClient({ transport: http(anvil.httpUrl) }).waitForTransactionReceipt({
          hash,
          pollingInterval: 20,
        })
      ).status,
    ).toBe("success");
    expect(() => toTokenEcdsaSignature(yParity)).not.toThrow();
  });

  test("a smart-contract wallet (ERC-1271) is asked, whatever the length: its owner's signature passes, a stranger's is a wrong signer", async () => {
    const m = message({ from: wallet });
    const byOwner = await signTransferAuthorization(buyer, domain, m);
    const long = `${byOwner.signature}${WALLET_DATA}` as Hex;
    expect(await verifyTransferAuthorization(client, domain, "transfer", m, long)).toEqual({
      scheme: "erc1271",
      signature: long.toLowerCase(),
    });
    expect(
      (await verifyTransferAuthorization(client, domain, "transfer", m, byOwner.signature)).scheme,
    ).toBe("erc1271");
    const byStranger = await signTransferAuthorization(other, domain, m);
    await expect(
      verifyTransferAuthorization(client, domain, "transfer", m, byStranger.signature),
    ).rejects.toThrow(/is a smart-contract wallet and its isValidSignature refuses/);
    await expect(
      verifyTransferAuthorization(client, domain, "transfer", m, "0x1234"),
    ).rejects.toThrow(WrongSignerError);
  });

  test("an EIP-7702 delegated EOA takes the ERC-1271 path: its own key signs, and more than 65 bytes pass", async () => {
    const m = message({ from: delegated.address });
    const own = await signTransferAuthorization(delegated, domain, m);
    const long = `${own.signature}${WALLET_DATA}` as Hex;
    expect((await verifyTransferAuthorization(client, domain, "transfer", m, long)).scheme).toBe(
      "erc1271",
    );
    const byOwnerOfWallet = await signTransferAuthorization(buyer, domain, m);
    await expect(
      verifyTransferAuthorization(client, domain, "transfer", m, byOwnerOfWallet.signature),
    ).rejects.toThrow(/delegated to .* under EIP-7702/);
  });

  test("the signature errors have one definition each, with cancel's exit codes", () => {
    expect(BadSignatureError).toBe(cancelErrors.BadSignatureError);
    expect(WrongSignerError).toBe(cancelErrors.WrongSignerError);
    expect(new BadSignatureError("x").exitCode).toBe(EXIT_BAD_SIGNATURE);
    expect(new WrongSignerError("x").exitCode).toBe(EXIT_WRONG_SIGNER);
  });
});

describe("order transitions", () => {
  test("assertTransition() allows exactly the rows of ORDER_TRANSITIONS for each actor and refuses every other pair", () => {
    const actors: TransitionActor[] = ["merchant", "relay", "expiry", "chain"];
    let allowed = 0;
    for (const from of ORDER_STATES)
      for (const to of ORDER_STATES)
        for (const by of actors) {
          const listed = ORDER_TRANSITIONS.some(
            (t) => t.from === from && t.to === to && t.by === by,
          );
          if (listed) {
            expect(() => assertTransition(from, to, by)).not.toThrow();
            allowed++;
          } else
            expect(() => assertTransition(from, to, by), `${from} -> ${to} by ${by}`).toThrow(
              OrderStateError,
            );
        }
    expect(allowed).toBe(ORDER_TRANSITIONS.length);
    // Nothing leaves captured or canceled except the chain.
    expect(
      ORDER_TRANSITIONS.filter(
        (t) => (t.from === "captured" || t.from === "canceled") && t.by !== "chain",
      ),
    ).toEqual([]);
  });
});

describe("compareAuthorization()", () => {
  const indexed = (status: "preconfirmed" | "confirmed" | "finalized") => ({
    state: "captured" as const,
    status,
    block_number: 1,
    tx_hash: "0x01" as const,
    captured_from: null,
    captured_to: null,
    captured_value: null,
  });
  test("a confirmed or finalized event must match a used nonce; pre-confirmed and not-indexed cannot disagree", () => {
    expect(compareAuthorization(indexed("confirmed"), true)).toBe("agree");
    expect(compareAuthorization(indexed("finalized"), false)).toBe("disagree");
    expect(compareAuthorization(indexed("confirmed"), false)).toBe("disagree");
    expect(compareAuthorization(indexed("preconfirmed"), false)).toBe("pending");
    expect(compareAuthorization(undefined, false)).toBe("agree");
    expect(compareAuthorization(undefined, true)).toBe("not_indexed");
  });
});
