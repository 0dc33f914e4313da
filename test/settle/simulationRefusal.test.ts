import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  http,
  parseAbi,
  parseUnits,
  type Address,
  type Hex,
  type LocalAccount,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  readTokenDomain,
  signTransferAuthorization,
  type TokenDomain,
  type TransferAuthorization,
} from "../../src/authorization/eip3009.js";
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from "../../src/devnet/anvil.js";
import { deployTestToken } from "../../src/devnet/deployToken.js";
import { refusalOfFailedSimulation } from "../../src/settle/simulationRefusal.js";

const ABI = parseAbi([
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)",
]);
const SHOP: Address = "0x000000000000000000000000000000000000c0de";
const [payer, relayer, stranger] = [1, 2, 3].map((index) =>
  privateKeyToAccount(ANVIL_PRIVATE_KEYS[index] as Hex),
);
const AMOUNT = 10_000n;
let anvil: Anvil;
let token: Address;
let domain: TokenDomain;
let nonceSeed = 0;

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 8453 });
  ({ address: token } = await deployTestToken({
    rpcUrl: anvil.httpUrl,
    privateKey: ANVIL_PRIVATE_KEYS[0] as Hex,
    mint: [{ to: payer!.address, amount: parseUnits("1", 6) }],
  }));
  domain = await readTokenDomain(createPublicClient({ transport: http(anvil.httpUrl) }), token);
}, 60_000);
afterAll(() => anvil?.stop());

/** An authorization from `from`, valid now unless changed, signed by `signer`. */
async function authorization(
  from: Address,
  changes: Partial<TransferAuthorization> = {},
  signer: LocalAccount = payer!,
) {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const message = {
    from,
    to: SHOP,
    value: AMOUNT,
    validAfter: 0n,
    validBefore: now + 3600n,
    nonce: `0x${(++nonceSeed).toString(16).padStart(64, "0")}` as Hex,
    ...changes,
  };
  return { message, signed: await signTransferAuthorization(signer, domain, message) };
}

const args = ({ message, signed }: Awaited<ReturnType<typeof authorization>>) =>
  [
    message.from,
    message.to,
    message.value,
    message.validAfter,
    message.validBefore,
    message.nonce,
    signed.v,
    signed.r,
    signed.s,
  ] as const;

/** The token's revert reason for the relayer's eth_call of transferWithAuthorization, as the facilitator's simulation sees it. */
async function revertReasonOf(
  auth: Awaited<ReturnType<typeof authorization>>,
): Promise<string | undefined> {
  try {
    await createPublicClient({ transport: http(anvil.httpUrl) }).simulateContract({
      address: token,
      abi: ABI,
      functionName: "transferWithAuthorization",
      args: args(auth),
      account: relayer!.address,
    });
  } catch (error) {
    const reverted =
      error instanceof BaseError
        ? error.walk((cause) => cause instanceof ContractFunctionRevertedError)
        : undefined;
    if (reverted instanceof ContractFunctionRevertedError) return reverted.reason;
    throw error;
  }
  throw new Error("the simulation did not revert");
}

describe("refusalOfFailedSimulation()", () => {
  test("names the token's own reverts as the reference does", async () => {
    const used = await authorization(payer!.address);
    const wallet = createWalletClient({ account: relayer!, transport: http(anvil.httpUrl) });
    await createPublicClient({ transport: http(anvil.httpUrl) }).waitForTransactionReceipt({
      hash: await wallet.writeContract({
        address: token,
        abi: ABI,
        functionName: "transferWithAuthorization",
        args: args(used),
        chain: null,
      }),
    });
    const highS = await authorization(payer!.address);
    const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const flipped = {
      ...highS,
      signed: {
        ...highS.signed,
        s: `0x${(n - BigInt(highS.signed.s)).toString(16).padStart(64, "0")}` as Hex,
        v: highS.signed.v === 27 ? 28 : 27,
      },
    };
    const cases: Array<[string, Awaited<ReturnType<typeof authorization>>, string]> = [
      ["a used nonce", used, "invalid_exact_evm_nonce_already_used"],
      [
        "a payer without the funds",
        await authorization(stranger!.address, {}, stranger!),
        "invalid_exact_evm_insufficient_balance",
      ],
      [
        "an expired authorization",
        await authorization(payer!.address, { validBefore: 1_000n }),
        "invalid_exact_evm_payload_authorization_valid_before",
      ],
      [
        "an authorization not yet valid",
        await authorization(payer!.address, { validAfter: 2n ** 40n, validBefore: 2n ** 41n }),
        "invalid_exact_evm_payload_authorization_valid_after",
      ],
      [
        "another key's signature",
        await authorization(payer!.address, {}, stranger!),
        "invalid_exact_evm_signature",
      ],
      ["a high-s signature", flipped, "invalid_exact_evm_signature"],
    ];
    for (const [what, auth, reason] of cases) {
      const revertReason = await revertReasonOf(auth);
      expect({
        what,
        revertReason,
        refusal: refusalOfFailedSimulation({ revertReason }, AMOUNT).invalidReason,
      }).toEqual({ what, revertReason: expect.any(String), refusal: reason });
    }
  }, 60_000);

  test("lets the facts read after the revert decide first, as the reference does", () => {
    expect(
      refusalOfFailedSimulation(
        { revertReason: "FiatTokenV2: invalid signature", authorizationUsed: true },
        AMOUNT,
      ).invalidReason,
    ).toBe("invalid_exact_evm_nonce_already_used");
    expect(
      refusalOfFailedSimulation(
        { revertReason: undefined, authorizationUsed: false, balance: AMOUNT - 1n },
        AMOUNT,
      ),
    ).toEqual({
      invalidReason: "invalid_exact_evm_insufficient_balance",
      message: expect.stringMatching(/holds 9999, less than 10000.*without a reason/),
    });
    expect(
      refusalOfFailedSimulation(
        { revertReason: undefined, authorizationUsed: false, balance: AMOUNT },
        AMOUNT,
      ).invalidReason,
    ).toBe("invalid_exact_evm_transaction_simulation_failed");
  });

  test("falls back to simulation_failed with the token's words", () => {
    expect(refusalOfFailedSimulation({ revertReason: "Pausable: paused" }, AMOUNT)).toEqual({
      invalidReason: "invalid_exact_evm_transaction_simulation_failed",
      message: 'the token reverted with "Pausable: paused"',
    });
  });
});
