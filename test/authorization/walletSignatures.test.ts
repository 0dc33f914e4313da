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
import {
  BadSignatureError,
  verifyTransferAuthorization,
  WrongSignerError,
} from "../../src/authorization/verifyAuthorization.js";
import { EXIT_BAD_SIGNATURE } from "../../src/errors/cancel.js";
import { createRpcClient, type RpcClient } from "../../src/chain/rpcClient.js";
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from "../../src/devnet/anvil.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { deployTestToken } from "../../src/devnet/deployToken.js";
import { delegationCode, deployQuirkyWallet } from "../../src/devnet/deployWallet.js";
import {
  readTokenDomain,
  signTransferAuthorization,
  type TokenDomain,
  type TransferAuthorization,
} from "../../src/authorization/eip3009.js";
import { testConfig, testDeps } from "../helpers/context.js";

const owner = privateKeyToAccount(ANVIL_PRIVATE_KEYS[1]);
/** An EOA delegated (EIP-7702) to a QuirkyWallet that pads its answer with 0xff. */
const delegated = privateKeyToAccount(ANVIL_PRIVATE_KEYS[8]);
const relayer = privateKeyToAccount(ANVIL_PRIVATE_KEYS[3]);
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

let anvil: Anvil;
let client: RpcClient;
let domain: TokenDomain;
let token: Address;
/** Answers 0x1626ba7e followed by zeros, as FiatToken wants. */
let zeroPadded: Address;
/** Answers 0x1626ba7e followed by 0xff bytes: FiatToken refuses it. */
let ffPadded: Address;
let counter = 0;
const message = (from: Address): TransferAuthorization => ({
  from,
  to: "0x0000000000000000000000000000000000005409" as Address,
  value: 1_000n,
  validAfter: 0n,
  validBefore: 1_900_000_000n,
  nonce: keccak256(stringToHex(`wallet signature ${++counter}`)),
});

/** What the token does with `signature` for `m`: submits it through the bytes overload and reports the outcome. */
async function tokenAccepts(m: TransferAuthorization, signature: Hex): Promise<boolean> {
  const publicClient = createPublicClient({ transport: http(anvil.httpUrl) });
  try {
    await publicClient.simulateContract({
      account: relayer,
      address: token,
      abi: flashTestTokenAbi,
      functionName: "transferWithAuthorization",
      args: [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, signature],
    });
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 8453 });
  const rpcUrl = anvil.httpUrl;
  ({ address: token } = await deployTestToken({
    rpcUrl,
    privateKey: ANVIL_PRIVATE_KEYS[0],
    mint: [],
  }));
  zeroPadded = await deployQuirkyWallet({
    rpcUrl,
    privateKey: ANVIL_PRIVATE_KEYS[0],
    owner: owner.address,
    padsWithFf: false,
  });
  ffPadded = await deployQuirkyWallet({
    rpcUrl,
    privateKey: ANVIL_PRIVATE_KEYS[0],
    owner: owner.address,
    padsWithFf: true,
  });
  const publicClient = createPublicClient({ transport: http(rpcUrl) });
  await publicClient.request({
    method: "anvil_setCode",
    params: [delegated.address, delegationCode(ffPadded)],
  } as never);
  // Funds for the captures below; the token mints to anyone its deployer names.
  const deployer = createWalletClient({
    account: privateKeyToAccount(ANVIL_PRIVATE_KEYS[0]),
    transport: http(rpcUrl),
  });
  for (const to of [zeroPadded, ffPadded, delegated.address]) {
    const hash = await deployer.writeContract({
      address: token,
      abi: flashTestTokenAbi,
      functionName: "mint",
      args: [to, 10n ** 9n],
      chain: null,
    });
    await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 20 });
  }
  domain = await readTokenDomain(publicClient, token);
  client = createRpcClient(testDeps(testConfig({ rpc: { http: [rpcUrl] }, logLevel: "silent" })));
});

afterAll(async () => {
  await anvil?.stop();
});

describe("verifyTransferAuthorization() judges a wallet's ERC-1271 answer as FiatToken's SignatureChecker does", () => {
  test("the magic value with zero padding passes; with 0xff padding it is refused, as the token refuses it", async () => {
    const good = message(zeroPadded);
    const signed = await signTransferAuthorization(owner, domain, good);
    expect(
      (await verifyTransferAuthorization(client, domain, "transfer", good, signed.signature))
        .scheme,
    ).toBe("erc1271");
    expect(await tokenAccepts(good, signed.signature)).toBe(true);

    const padded = message(ffPadded);
    const paddedSigned = await signTransferAuthorization(owner, domain, padded);
    expect(await tokenAccepts(padded, paddedSigned.signature)).toBe(false);
    await expect(
      verifyTransferAuthorization(client, domain, "transfer", padded, paddedSigned.signature),
    ).rejects.toThrow(WrongSignerError);
    await expect(
      verifyTransferAuthorization(client, domain, "transfer", padded, paddedSigned.signature),
    ).rejects.toThrow(/0x1626ba7effff/);
  });

  test("an EIP-7702 delegated EOA whose code pads with 0xff is refused too", async () => {
    const m = message(delegated.address);
    const signed = await signTransferAuthorization(delegated, domain, m);
    expect(await tokenAccepts(m, signed.signature)).toBe(false);
    await expect(
      verifyTransferAuthorization(client, domain, "transfer", m, signed.signature),
    ).rejects.toThrow(/delegated to .* under EIP-7702/);
  });
});

describe("verifyTransferAuthorization() hands a payer with code its v, r, s as the token does: abi.encodePacked(r, s, v), unchanged", () => {
  test("a high s is the wallet's business: it passes, byte for byte, and the token captures with it", async () => {
    const m = message(zeroPadded);
    const signed = await signTransferAuthorization(owner, domain, m);
    const highS = toHex(SECP256K1_N - BigInt(signed.s), { size: 32 });
    const v = signed.v === 27 ? 28 : 27;
    const verified = await verifyTransferAuthorization(client, domain, "transfer", m, {
      v,
      r: signed.r,
      s: highS,
    });
    expect(verified).toEqual({
      scheme: "erc1271",
      signature: concat([signed.r, highS, toHex(v, { size: 1 })]).toLowerCase(),
    });
    expect(await tokenAccepts(m, verified.signature)).toBe(true);
  });

  test("v 0/1 is not rewritten to 27/28 for a wallet", async () => {
    const m = message(zeroPadded);
    const signed = await signTransferAuthorization(owner, domain, m);
    const verified = await verifyTransferAuthorization(client, domain, "transfer", m, {
      v: signed.v - 27,
      r: signed.r,
      s: signed.s,
    });
    expect(verified.signature).toBe(
      concat([signed.r, signed.s, toHex(signed.v - 27, { size: 1 })]).toLowerCase(),
    );
    expect(await tokenAccepts(m, verified.signature)).toBe(true);
  });

  test("parts that cannot be packed (r not 32 bytes, v not one byte) are a bad signature", async () => {
    const m = message(zeroPadded);
    const signed = await signTransferAuthorization(owner, domain, m);
    await expect(
      verifyTransferAuthorization(client, domain, "transfer", m, {
        v: 256,
        r: signed.r,
        s: signed.s,
      }),
    ).rejects.toThrow(BadSignatureError);
    await expect(
      verifyTransferAuthorization(client, domain, "transfer", m, {
        v: 27,
        r: "0x1234",
        s: signed.s,
      }),
    ).rejects.toThrow(BadSignatureError);
  });
});

describe("verifyTransferAuthorization() refuses r ≥ n from an EOA as a bad signature", () => {
  test("as parts and as bytes, with the bad-signature exit code", async () => {
    const m = message(owner.address);
    const signed = await signTransferAuthorization(owner, domain, m);
    for (const r of [toHex(SECP256K1_N, { size: 32 }), toHex(SECP256K1_N + 5n, { size: 32 })]) {
      const parts = verifyTransferAuthorization(client, domain, "transfer", m, {
        v: signed.v,
        r,
        s: signed.s,
      });
      await expect(parts).rejects.toThrow(BadSignatureError);
      await expect(parts).rejects.toMatchObject({
        exitCode: EXIT_BAD_SIGNATURE,
        shortMessage: expect.stringMatching(/r must be below the curve order/),
      });
      await expect(
        verifyTransferAuthorization(
          client,
          domain,
          "transfer",
          m,
          concat([r, signed.s, toHex(signed.v, { size: 1 })]),
        ),
      ).rejects.toThrow(BadSignatureError);
    }
  });
});
