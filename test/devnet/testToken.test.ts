import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  getAddress,
  hashDomain,
  http,
  keccak256,
  numberToHex,
  pad,
  parseEventLogs,
  stringToHex,
  toFunctionSelector,
  toHex,
  type Address,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
  zeroAddress,
} from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from "../../src/devnet/anvil.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { deployTestToken } from "../../src/devnet/deployToken.js";
import { delegationCode, deployMiniWallet } from "../../src/devnet/deployWallet.js";
import {
  AUTHORIZATION_CANCELED_TOPIC,
  AUTHORIZATION_TYPES,
  AUTHORIZATION_USED_TOPIC,
  readTokenDomain,
  signCancelAuthorization,
  signReceiveAuthorization,
  signTransferAuthorization,
  TRANSFER_TOPIC,
  type TokenDomain,
  type TransferAuthorization,
} from "../../src/authorization/eip3009.js";

const abi = flashTestTokenAbi;
const payer = privateKeyToAccount(ANVIL_PRIVATE_KEYS[1]);
const payee = privateKeyToAccount(ANVIL_PRIVATE_KEYS[2]);
const relayer = privateKeyToAccount(ANVIL_PRIVATE_KEYS[3]);
const stranger = privateKeyToAccount(ANVIL_PRIVATE_KEYS[4]);
const MINTED = 1_000_000_000_000n; // 1,000,000 tokens at 6 decimals
/** secp256k1 group order: (r, n − s, v ^ 1) recovers the same signer, so FiatToken rejects the high s. */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
/** Explicit gas skips eth_estimateGas, so a transaction that will revert is still mined. */
const GAS = 300_000n;

let anvil: Anvil;
let token: Address;
let deployBlock: number;
let domain: TokenDomain;
let publicClient: PublicClient;
let nonceCounter = 0;

const nextNonce = (): Hex => keccak256(stringToHex(`testToken nonce ${++nonceCounter}`));
const walletOf = (account: PrivateKeyAccount) =>
  createWalletClient({ account, transport: http(anvil.httpUrl) });
const latestTimestamp = async () => (await publicClient.getBlock()).timestamp;
const mined = async (hash: Hex): Promise<TransactionReceipt> =>
  publicClient.waitForTransactionReceipt({ hash, pollingInterval: 20 });
const balanceOf = (owner: Address) =>
  publicClient.readContract({ address: token, abi, functionName: "balanceOf", args: [owner] });
const authorizationState = (authorizer: Address, nonce: Hex) =>
  publicClient.readContract({
    address: token,
    abi,
    functionName: "authorizationState",
    args: [authorizer, nonce],
  });

/** A payer → payee authorization valid for the next hour of chain time, with a fresh nonce. */
async function authorization(
  overrides: Partial<TransferAuthorization> = {},
): Promise<TransferAuthorization> {
  const validBefore = (await latestTimestamp()) + 3600n;
  return {
    from: payer.address,
    to: payee.address,
    value: 1_500_000n,
    validAfter: 0n,
    validBefore,
    nonce: nextNonce(),
    ...overrides,
  };
}

function submitTransfer(
  sender: PrivateKeyAccount,
  m: TransferAuthorization,
  v: number,
  r: Hex,
  s: Hex,
  gas?: bigint,
) {
  const args = [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, v, r, s] as const;
  return walletOf(sender).writeContract({
    address: token,
    abi,
    functionName: "transferWithAuthorization",
    args,
    chain: null,
    ...(gas === undefined ? {} : { gas }),
  });
}

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 8453 });
  publicClient = createPublicClient({ transport: http(anvil.httpUrl) });
  ({ address: token, blockNumber: deployBlock } = await deployTestToken({
    rpcUrl: anvil.httpUrl,
    privateKey: ANVIL_PRIVATE_KEYS[0],
    mint: [{ to: payer.address, amount: MINTED }],
  }));
  domain = await readTokenDomain(publicClient, token);
});

afterAll(async () => {
  await anvil?.stop();
});

describe("event signatures", () => {
  test("the exported topic0 values are keccak256 of the three event signatures", () => {
    expect(TRANSFER_TOPIC).toBe(keccak256(stringToHex("Transfer(address,address,uint256)")));
    expect(AUTHORIZATION_USED_TOPIC).toBe(
      keccak256(stringToHex("AuthorizationUsed(address,bytes32)")),
    );
    expect(AUTHORIZATION_CANCELED_TOPIC).toBe(
      keccak256(stringToHex("AuthorizationCanceled(address,bytes32)")),
    );
  });

  test("the contract has FiatToken's cancelAuthorization and authorizationState selectors", async () => {
    const code = await publicClient.getCode({ address: token });
    // The dispatcher compares calldata against PUSH4 <selector>.
    for (const selector of ["5a049a70", "b7b72899", "e94a0102"])
      expect(code).toContain(`63${selector}`);
  });

  test("the bytes-signature overloads have FiatToken v2.2's selectors (circlefin/stablecoin-evm), and the contract dispatches them", async () => {
    const selectors = {
      "function transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)":
        "0xcf092995",
      "function receiveWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)":
        "0x88b7ab63",
      "function cancelAuthorization(address,bytes32,bytes)": "0xb7b72899",
    };
    const code = await publicClient.getCode({ address: token });
    for (const [signature, selector] of Object.entries(selectors)) {
      expect(toFunctionSelector(signature)).toBe(selector);
      expect(code).toContain(`63${selector.slice(2)}`);
    }
  });
});

describe("deployTestToken()", () => {
  test("deploys at a checksummed address in the returned block and mints the balances", async () => {
    expect(getAddress(token)).toBe(token);
    expect(
      await publicClient.getCode({ address: token, blockNumber: BigInt(deployBlock) }),
    ).toMatch(/^0x[0-9a-f]{100,}$/);
    expect(
      await publicClient.getCode({ address: token, blockNumber: BigInt(deployBlock - 1) }),
    ).toBeUndefined();
    expect(
      await publicClient.readContract({ address: token, abi, functionName: "totalSupply" }),
    ).toBe(MINTED);
    expect(await publicClient.readContract({ address: token, abi, functionName: "decimals" })).toBe(
      6,
    );
  });

  test("readTokenDomain() reads USDC's domain and DOMAIN_SEPARATOR() matches it", async () => {
    expect(domain).toEqual({
      name: "USD Coin",
      version: "2",
      chainId: 8453,
      verifyingContract: token,
    });
    const separator = await publicClient.readContract({
      address: token,
      abi,
      functionName: "DOMAIN_SEPARATOR",
    });
    expect(separator).toBe(
      hashDomain({
        domain: { ...domain, chainId: BigInt(domain.chainId) },
        types: { EIP712Domain: eip712DomainFields },
      }),
    );
  });

  test("the contract's typehashes match the typed-data definitions", async () => {
    const typehash = (primaryType: keyof typeof AUTHORIZATION_TYPES) =>
      keccak256(
        stringToHex(
          `${primaryType}(${AUTHORIZATION_TYPES[primaryType].map((f) => `${f.type} ${f.name}`).join(",")})`,
        ),
      );
    const read = (
      functionName:
        | "TRANSFER_WITH_AUTHORIZATION_TYPEHASH"
        | "RECEIVE_WITH_AUTHORIZATION_TYPEHASH"
        | "CANCEL_AUTHORIZATION_TYPEHASH",
    ) => publicClient.readContract({ address: token, abi, functionName });
    expect(await read("TRANSFER_WITH_AUTHORIZATION_TYPEHASH")).toBe(
      typehash("TransferWithAuthorization"),
    );
    expect(await read("RECEIVE_WITH_AUTHORIZATION_TYPEHASH")).toBe(
      typehash("ReceiveWithAuthorization"),
    );
    expect(await read("CANCEL_AUTHORIZATION_TYPEHASH")).toBe(typehash("CancelAuthorization"));
    expect(typehash("CancelAuthorization")).toMatch(/^0x158b0a9e.*7429$/);
  });
});

const eip712DomainFields = [
  { name: "name", type: "string" },
  { name: "version", type: "string" },
  { name: "chainId", type: "uint256" },
  { name: "verifyingContract", type: "address" },
] as const;

describe("transferWithAuthorization()", () => {
  test("a capture emits AuthorizationUsed then Transfer and moves the value", async () => {
    const m = await authorization();
    const { v, r, s } = await signTransferAuthorization(payer, domain, m);
    const [payerBefore, payeeBefore] = [
      await balanceOf(payer.address),
      await balanceOf(payee.address),
    ];
    const receipt = await mined(await submitTransfer(relayer, m, v, r, s));

    expect(receipt.status).toBe("success");
    expect(receipt.logs.map((log) => log.topics)).toEqual([
      [AUTHORIZATION_USED_TOPIC, pad(payer.address.toLowerCase() as Hex), m.nonce],
      [
        TRANSFER_TOPIC,
        pad(payer.address.toLowerCase() as Hex),
        pad(payee.address.toLowerCase() as Hex),
      ],
    ]);
    expect(receipt.logs[1]?.data).toBe(numberToHex(m.value, { size: 32 }));
    expect(receipt.logs[0]!.logIndex).toBeLessThan(receipt.logs[1]!.logIndex);
    expect(await balanceOf(payer.address)).toBe(payerBefore - m.value);
    expect(await balanceOf(payee.address)).toBe(payeeBefore + m.value);
    expect(await authorizationState(payer.address, m.nonce)).toBe(true);
  });

  test("the bytes-signature overload captures too, and a replay reverts", async () => {
    const m = await authorization();
    const { signature, v, r, s } = await signTransferAuthorization(payer, domain, m);
    const args = [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, signature] as const;
    const receipt = await mined(
      await walletOf(relayer).writeContract({
        address: token,
        abi,
        functionName: "transferWithAuthorization",
        args,
        chain: null,
      }),
    );
    expect(parseEventLogs({ abi, logs: receipt.logs }).map((log) => log.eventName)).toEqual([
      "AuthorizationUsed",
      "Transfer",
    ]);
    await expect(submitTransfer(relayer, m, v, r, s)).rejects.toThrow(
      "FiatTokenV2: authorization is used or canceled",
    );
  });

  test("a signature by another key reverts with an invalid signature", async () => {
    const m = await authorization();
    const { v, r, s } = await signTransferAuthorization(stranger, domain, m);
    await expect(submitTransfer(relayer, m, v, r, s)).rejects.toThrow(
      "FiatTokenV2: invalid signature",
    );
    expect(await authorizationState(payer.address, m.nonce)).toBe(false);
  });

  test("the malleable twin of a valid signature (high s) is rejected", async () => {
    const m = await authorization();
    const { v, r, s } = await signTransferAuthorization(payer, domain, m);
    const highS = toHex(SECP256K1_N - BigInt(s), { size: 32 });
    await expect(submitTransfer(relayer, m, v === 27 ? 28 : 27, r, highS)).rejects.toThrow(
      "ECRecover: invalid signature 's' value",
    );
  });

  test("expired and not-yet-valid authorizations revert", async () => {
    const now = await latestTimestamp();
    const expired = await authorization({ validBefore: now - 1n });
    const early = await authorization({ validAfter: now + 3600n, validBefore: now + 7200n });
    const e = await signTransferAuthorization(payer, domain, expired);
    const n = await signTransferAuthorization(payer, domain, early);
    await expect(submitTransfer(relayer, expired, e.v, e.r, e.s)).rejects.toThrow(
      "FiatTokenV2: authorization is expired",
    );
    await expect(submitTransfer(relayer, early, n.v, n.r, n.s)).rejects.toThrow(
      "FiatTokenV2: authorization is not yet valid",
    );
  });

  test("validAfter and validBefore are both strict bounds on the block timestamp", async () => {
    const testClient = createTestClient({ mode: "anvil", transport: http(anvil.httpUrl) });
    const base = (await latestTimestamp()) + 100n;
    const cases = [
      { at: base, validAfter: base, validBefore: base + 3600n, status: "reverted" },
      { at: base + 10n, validAfter: 0n, validBefore: base + 10n, status: "reverted" },
      { at: base + 20n, validAfter: base + 19n, validBefore: base + 21n, status: "success" },
    ] as const;
    for (const c of cases) {
      const m = await authorization({ validAfter: c.validAfter, validBefore: c.validBefore });
      const { v, r, s } = await signTransferAuthorization(payer, domain, m);
      await testClient.setNextBlockTimestamp({ timestamp: c.at });
      const receipt = await mined(await submitTransfer(relayer, m, v, r, s, GAS));
      expect({ at: c.at, status: receipt.status }).toEqual({ at: c.at, status: c.status });
    }
  });
});

describe("receiveWithAuthorization()", () => {
  test("reverts unless the caller is the payee, then succeeds for the payee", async () => {
    const m = await authorization();
    const { v, r, s } = await signReceiveAuthorization(payer, domain, m);
    const args = [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, v, r, s] as const;
    const call = (account: PrivateKeyAccount) =>
      walletOf(account).writeContract({
        address: token,
        abi,
        functionName: "receiveWithAuthorization",
        args,
        chain: null,
      });

    await expect(call(relayer)).rejects.toThrow("FiatTokenV2: caller must be the payee");
    const receipt = await mined(await call(payee));
    expect(receipt.logs.map((log) => log.topics[0])).toEqual([
      AUTHORIZATION_USED_TOPIC,
      TRANSFER_TOPIC,
    ]);
  });

  test("a transfer signature cannot be used to receive (different typehash)", async () => {
    const m = await authorization();
    const { signature } = await signTransferAuthorization(payer, domain, m);
    const args = [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, signature] as const;
    await expect(
      walletOf(payee).writeContract({
        address: token,
        abi,
        functionName: "receiveWithAuthorization",
        args,
        chain: null,
      }),
    ).rejects.toThrow("FiatTokenV2: invalid signature");
  });
});

describe("cancelAuthorization()", () => {
  test.each(["v,r,s", "65-byte signature"] as const)(
    "with %s emits AuthorizationCanceled, burns the nonce, and a later capture reverts",
    async (overload) => {
      const m = await authorization();
      const cancel = await signCancelAuthorization(payer, domain, {
        authorizer: payer.address,
        nonce: m.nonce,
      });
      const hash =
        overload === "v,r,s"
          ? await walletOf(relayer).writeContract({
              address: token,
              abi,
              functionName: "cancelAuthorization",
              args: [payer.address, m.nonce, cancel.v, cancel.r, cancel.s],
              chain: null,
            })
          : await walletOf(relayer).writeContract({
              address: token,
              abi,
              functionName: "cancelAuthorization",
              args: [payer.address, m.nonce, cancel.signature],
              chain: null,
            });
      const receipt = await mined(hash);

      expect(receipt.logs.map((log) => log.topics)).toEqual([
        [AUTHORIZATION_CANCELED_TOPIC, pad(payer.address.toLowerCase() as Hex), m.nonce],
      ]);
      expect(await authorizationState(payer.address, m.nonce)).toBe(true);
      const { v, r, s } = await signTransferAuthorization(payer, domain, m);
      await expect(submitTransfer(relayer, m, v, r, s)).rejects.toThrow(
        "FiatTokenV2: authorization is used or canceled",
      );
    },
  );

  test("a cancel signed by someone other than the authorizer reverts", async () => {
    const nonce = nextNonce();
    const cancel = await signCancelAuthorization(stranger, domain, {
      authorizer: payer.address,
      nonce,
    });
    const args = [payer.address, nonce, cancel.v, cancel.r, cancel.s] as const;
    await expect(
      walletOf(relayer).writeContract({
        address: token,
        abi,
        functionName: "cancelAuthorization",
        args,
        chain: null,
      }),
    ).rejects.toThrow("FiatTokenV2: invalid signature");
  });
});

describe("emitTransfers()", () => {
  test("emits one Transfer per recipient, in order, from the caller", async () => {
    const count = 50;
    const recipients = Array.from({ length: count }, (_, i) =>
      getAddress(pad(toHex(0x1000 + i), { size: 20 })),
    );
    const values = recipients.map((_, i) => BigInt(i + 1));
    const hash = await walletOf(payer).writeContract({
      address: token,
      abi,
      functionName: "emitTransfers",
      args: [recipients, values],
      chain: null,
    });
    const receipt = await mined(hash);

    const logs = parseEventLogs({ abi, logs: receipt.logs, eventName: "Transfer" });
    expect(logs).toHaveLength(count);
    expect(logs.map((log) => log.args)).toEqual(
      recipients.map((to, i) => ({ from: payer.address, to, value: values[i] })),
    );
    const fetched = await publicClient.getLogs({ address: token, blockHash: receipt.blockHash });
    expect(fetched.filter((log) => log.topics[0] === TRANSFER_TOPIC)).toHaveLength(count);
  });

  test("reverts when the arrays differ in length", async () => {
    const args = [[payee.address], [1n, 2n]] as const;
    await expect(
      walletOf(payer).writeContract({
        address: token,
        abi,
        functionName: "emitTransfers",
        args,
        chain: null,
      }),
    ).rejects.toThrow("length mismatch");
  });
});

describe("emitTransferEvents()", () => {
  test("emits one Transfer per entry, from whoever is given (a mint from 0x0 included), moving no balance", async () => {
    const from = [
      zeroAddress,
      getAddress(pad(toHex(0x2001), { size: 20 })),
      getAddress(pad(toHex(0x2002), { size: 20 })),
    ];
    const to = [
      getAddress(pad(toHex(0x3001), { size: 20 })),
      getAddress(pad(toHex(0x3002), { size: 20 })),
      payee.address,
    ];
    const values = [10n ** 12n, 7n, 2n ** 200n];
    const before = await balanceOf(payee.address);
    const hash = await walletOf(payer).writeContract({
      address: token,
      abi,
      functionName: "emitTransferEvents",
      args: [from, to, values],
      chain: null,
    });
    const receipt = await mined(hash);

    const logs = parseEventLogs({ abi, logs: receipt.logs, eventName: "Transfer" });
    expect(logs.map((log) => log.args)).toEqual(
      from.map((sender, i) => ({ from: sender, to: to[i], value: values[i] })),
    );
    expect(await balanceOf(payee.address)).toBe(before);
  });

  test("reverts when the arrays differ in length", async () => {
    const args = [[payer.address], [payee.address, payee.address], [1n, 2n]] as const;
    await expect(
      walletOf(payer).writeContract({
        address: token,
        abi,
        functionName: "emitTransferEvents",
        args,
        chain: null,
      }),
    ).rejects.toThrow("length mismatch");
  });
});

describe("startAnvil()", () => {
  test("serves the requested chain id over HTTP and stop() leaves no process behind", async () => {
    const other = await startAnvil({ chainId: 84532 });
    const pid = other.process.pid!;
    expect(await createPublicClient({ transport: http(other.httpUrl) }).getChainId()).toBe(84532);
    expect(other.wsUrl).toBe(`ws://127.0.0.1:${other.port}`);
    expect(isAlive(pid)).toBe(true);

    await other.stop();
    expect(isAlive(pid)).toBe(false);
    await other.stop(); // idempotent
  });

  // How the owner dies: a normal exit runs the "exit" hook; signals skip it and rely on the watchdog.
  test.skipIf(process.platform !== "linux").each(["process.exit", "SIGTERM", "SIGKILL"] as const)(
    "an owner that ends by %s takes its anvil with it",
    async (ending) => {
      const anvilModule = pathToFileURL(
        new URL("../../src/devnet/anvil.ts", import.meta.url).pathname,
      ).href;
      const script = [
        `const { startAnvil } = await import(${JSON.stringify(anvilModule)});`,
        `const a = await startAnvil();`,
        `console.log(a.process.pid);`,
        ending === "process.exit"
          ? `setTimeout(() => process.exit(0), 200);`
          : `setInterval(() => {}, 1000);`,
      ].join("\n");
      const owner = spawn(
        process.execPath,
        ["--import", "tsx", "--input-type=module", "-e", script],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      const pid = await new Promise<number>((resolve, reject) => {
        owner.stdout.once("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
        owner.once("exit", (code) => reject(new Error(`owner exited early with ${code}`)));
      });
      expect(isAlive(pid)).toBe(true);
      if (ending !== "process.exit") owner.kill(ending);

      const deadline = Date.now() + 5_000;
      while (isAlive(pid) && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(isAlive(pid)).toBe(false);
    },
  );
});

/** True while the process runs; a zombie waiting for init to reap it counts as gone. */
function isAlive(pid: number): boolean {
  const stat = `/proc/${pid}/stat`;
  if (process.platform === "linux") {
    if (!existsSync(stat)) return false;
    try {
      // Field 3 is the state; the command name in field 2 is parenthesised and may hold spaces.
      return readFileSync(stat, "utf8").split(") ")[1]?.[0] !== "Z";
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("smart-contract authorizers (ERC-1271) and EIP-7702 delegated EOAs", () => {
  let wallet: Address;
  /** An EOA delegated to the MiniWallet code: it has code, so the token asks it through ERC-1271. */
  let delegated: PrivateKeyAccount;
  /** Bytes a real smart wallet appends (authenticator data, owner index); the MiniWallet ignores them. */
  const WALLET_DATA: Hex = `0x${"ab".repeat(96)}`;

  beforeAll(async () => {
    wallet = await deployMiniWallet({
      rpcUrl: anvil.httpUrl,
      privateKey: ANVIL_PRIVATE_KEYS[0],
      owner: payer.address,
    });
    delegated = privateKeyToAccount(ANVIL_PRIVATE_KEYS[8]);
    await publicClient.request({
      method: "anvil_setCode",
      params: [delegated.address, delegationCode(wallet)],
    } as never);
    for (const to of [wallet, delegated.address])
      await mined(
        await walletOf(payer).writeContract({
          address: token,
          abi,
          functionName: "transfer",
          args: [to, 100_000_000n],
          chain: null,
        }),
      );
  });

  const submitBytes = (
    functionName: "transferWithAuthorization" | "receiveWithAuthorization",
    sender: PrivateKeyAccount,
    m: TransferAuthorization,
    signature: Hex,
  ) =>
    walletOf(sender).writeContract({
      address: token,
      abi,
      functionName,
      args: [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, signature],
      chain: null,
    });

  test("a wallet's owner signs for it: a long signature through the bytes overload and a 65-byte one through v,r,s", async () => {
    const long = await authorization({ from: wallet });
    const signed = await signTransferAuthorization(payer, domain, long);
    const receipt = await mined(
      await submitBytes(
        "transferWithAuthorization",
        relayer,
        long,
        `${signed.signature}${WALLET_DATA.slice(2)}`,
      ),
    );
    expect(receipt.logs.map((log) => log.topics[0])).toEqual([
      AUTHORIZATION_USED_TOPIC,
      TRANSFER_TOPIC,
    ]);
    expect(receipt.logs[0]!.topics[1]).toBe(pad(wallet.toLowerCase() as Hex));
    expect(await authorizationState(wallet, long.nonce)).toBe(true);

    const short = await authorization({ from: wallet });
    const parts = await signTransferAuthorization(payer, domain, short);
    expect(
      (await mined(await submitTransfer(relayer, short, parts.v, parts.r, parts.s))).status,
    ).toBe("success");
  });

  test("the wallet decides: a stranger's signature or one its isValidSignature refuses reverts with an invalid signature", async () => {
    const m = await authorization({ from: wallet });
    const byStranger = await signTransferAuthorization(stranger, domain, m);
    await expect(
      submitBytes("transferWithAuthorization", relayer, m, byStranger.signature),
    ).rejects.toThrow("FiatTokenV2: invalid signature");
    await expect(submitBytes("transferWithAuthorization", relayer, m, "0x1234")).rejects.toThrow(
      "FiatTokenV2: invalid signature",
    );
    expect(await authorizationState(wallet, m.nonce)).toBe(false);
  });

  test("receiveWithAuthorization and cancelAuthorization take a wallet's long signature through their bytes overloads", async () => {
    const m = await authorization({ from: wallet });
    const received = await signReceiveAuthorization(payer, domain, m);
    expect(
      (
        await mined(
          await submitBytes(
            "receiveWithAuthorization",
            payee,
            m,
            `${received.signature}${WALLET_DATA.slice(2)}`,
          ),
        )
      ).status,
    ).toBe("success");

    const nonce = nextNonce();
    const cancel = await signCancelAuthorization(payer, domain, { authorizer: wallet, nonce });
    const hash = await walletOf(relayer).writeContract({
      address: token,
      abi,
      functionName: "cancelAuthorization",
      args: [wallet, nonce, `${cancel.signature}${WALLET_DATA.slice(2)}`],
      chain: null,
    });
    expect((await mined(hash)).logs.map((log) => log.topics)).toEqual([
      [AUTHORIZATION_CANCELED_TOPIC, pad(wallet.toLowerCase() as Hex), nonce],
    ]);
  });

  test("an EIP-7702 delegated EOA is checked through ERC-1271: its own key signs, and a signature longer than 65 bytes passes", async () => {
    expect(await publicClient.getCode({ address: delegated.address })).toBe(
      `0xef0100${wallet.slice(2).toLowerCase()}`,
    );
    const m = await authorization({ from: delegated.address });
    const signed = await signTransferAuthorization(delegated, domain, m);
    // ECDSA would refuse a 97-byte signature; only the ERC-1271 path can accept it.
    const receipt = await mined(
      await submitBytes(
        "transferWithAuthorization",
        relayer,
        m,
        `${signed.signature}${WALLET_DATA.slice(2, 66)}`,
      ),
    );
    expect(receipt.status).toBe("success");
    expect(await authorizationState(delegated.address, m.nonce)).toBe(true);

    // The deployed wallet's owner is not the delegated EOA's signer (its storage is the EOA's own).
    const other = await authorization({ from: delegated.address });
    const byOwner = await signTransferAuthorization(payer, domain, other);
    await expect(
      submitBytes("transferWithAuthorization", relayer, other, byOwner.signature),
    ).rejects.toThrow("FiatTokenV2: invalid signature");
  });
});
