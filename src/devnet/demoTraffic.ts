import {
  createPublicClient,
  createWalletClient,
  http,
  toHex,
  type Address,
  type Hex,
  type LocalAccount,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { schema0Suffix, schema2Suffix } from "../attribution/erc8021Suffix.js";
import { flashTestTokenAbi } from "./contracts/generated/flashTestToken.js";
import {
  readTokenDomain,
  signCancelAuthorization,
  signReceiveAuthorization,
  signTransferAuthorization,
  type TokenDomain,
} from "../authorization/eip3009.js";
import { WALLET_OWNER_KEY_INDEX, type Devnet } from "./startDevnet.js";

export type TrafficOptions = {
  /** Payments started per second across all buyers. */
  paymentsPerSecond: number;
  /** Roughly one reorg (depth 1 or 2) every this many seconds; 0 for none. */
  reorgEverySeconds?: number;
  /** Roughly one dropped pre-confirmation every this many seconds; 0 for none. */
  dropEverySeconds?: number;
  /**
   * The builder code registered for a wallet (the registration stand-in's): a relayer's payments
   * carry its own code, so `wallet_codes` shows one code per agent wallet. Without it the relayers
   * take turns with DEMO_BUILDER_CODES.
   */
  builderCodeOf?: (wallet: Address) => string;
  onError?: (error: unknown) => void;
};

/** Every this many payments, one comes from the devnet's smart-contract wallet (ERC-1271) instead of a buyer's key. */
const WALLET_PAYMENT_EVERY = 4;
/** What a smart wallet appends to its owner's signature (authenticator data and the like): wallet signatures exceed 65 bytes. */
const WALLET_SIGNATURE_DATA = "5a".repeat(64);

/** Builder codes the demo agents attribute their payments to when no registered codes are given (schema 0 `bc_…` codes). */
const DEMO_BUILDER_CODES = ["bc_b8nos5a8", "bc_k2x9q7m1", "bc_demo0001"];
const APP_CODES = ["baseapp", "morpho"];

/**
 * Realistic EIP-3009 payment traffic on the devnet's test token: buyers sign transfer and receive
 * authorizations (some for the devnet's smart-contract wallet, whose owner signs and whose long
 * ERC-1271 signatures go through the `bytes signature` overloads), relayers submit them with ERC-8021
 * suffixes (schema 0, schema 2 or none), some
 * authorizations are canceled, some transfers are plain, and now and then a block is reorged or a
 * pre-confirmation dropped.
 */
export function startDemoTraffic(devnet: Devnet, options: TrafficOptions) {
  const transport = http(devnet.httpUrl);
  const publicClient = createPublicClient({ transport });
  const buyers = devnet.privateKeys.slice(1, 6).map((key) => privateKeyToAccount(key));
  const relayers = devnet.privateKeys.slice(6, 9).map((key) => privateKeyToAccount(key));
  const flaky = privateKeyToAccount(devnet.privateKeys[9]!);
  const walletOwner = privateKeyToAccount(devnet.privateKeys[WALLET_OWNER_KEY_INDEX]!);
  // Each account's next nonce, as a promise: payments start on a timer without waiting for the one
  // before, so two of them must never read the node's count for the same account at once.
  const nonces = new Map<Address, Promise<number>>();
  let domain: TokenDomain | undefined;
  let stopped = false;
  let sequence = 0;
  const report = options.onError ?? (() => undefined);

  function nextNonce(account: LocalAccount): Promise<number> {
    const mine =
      nonces.get(account.address) ??
      publicClient.getTransactionCount({ address: account.address, blockTag: "pending" });
    const next = mine.then((nonce) => nonce + 1);
    nonces.set(account.address, next);
    // A failed read leaves nothing behind: the next send asks the node again.
    next.catch(() => {
      if (nonces.get(account.address) === next) nonces.delete(account.address);
    });
    return mine;
  }

  async function send(
    account: LocalAccount,
    functionName: string,
    args: readonly unknown[],
    dataSuffix?: Hex,
  ): Promise<Hex> {
    const wallet = createWalletClient({ account, transport });
    try {
      return await wallet.writeContract({
        address: devnet.token,
        abi: flashTestTokenAbi,
        functionName,
        args,
        chain: null,
        gas: 200_000n,
        nonce: await nextNonce(account),
        ...(dataSuffix === undefined ? {} : { dataSuffix }),
      } as never);
    } catch (error) {
      nonces.delete(account.address); // resync from the node next time
      throw error;
    }
  }

  /** The code of the relayer that submits payment `n`: its registered one, or a demo code. */
  function relayerCode(n: number): string {
    const relayer = relayers[n % relayers.length]!;
    return (
      options.builderCodeOf?.(relayer.address) ?? DEMO_BUILDER_CODES[n % DEMO_BUILDER_CODES.length]!
    );
  }

  /** The ERC-8021 suffix of payment `n`, sent by relayer `n % relayers.length` (plain transfers by the buyer carry none). */
  function suffix(n: number, sentByRelayer = true): Hex | undefined {
    // Not n % 3: the relayer is n % relayers.length, and every relayer must see every kind of suffix.
    const pick = Math.floor(n / relayers.length) % 3;
    if (!sentByRelayer || pick === 2) return undefined;
    if (pick === 0) return schema0Suffix([relayerCode(n)]);
    return schema2Suffix({ app: APP_CODES[n % APP_CODES.length]!, wallet: relayerCode(n) });
  }

  async function onePayment(): Promise<void> {
    domain ??= await readTokenDomain(publicClient, devnet.token);
    const n = sequence++;
    const buyer = buyers[n % buyers.length]!;
    const relayer = relayers[n % relayers.length]!;
    const now = BigInt(Math.floor(Date.now() / 1_000));
    const nonce = toHex(crypto.getRandomValues(new Uint8Array(32)));
    const value = BigInt(1 + Math.floor(Math.random() * 250_000_000));
    const kind = n % 10;
    if (devnet.wallet !== undefined && n % WALLET_PAYMENT_EVERY === 3 && kind <= 7) {
      // A payment from the smart wallet: its owner signs, the wallet's long signature goes through the bytes overload.
      const from = devnet.wallet;
      const message = {
        from,
        to: relayer.address,
        value,
        validAfter: 0n,
        validBefore: now + 600n,
        nonce,
      };
      const long = (signature: Hex): Hex => `${signature}${WALLET_SIGNATURE_DATA}`;
      if (kind <= 4) {
        const signed = await signTransferAuthorization(walletOwner, domain, message);
        await send(
          relayer,
          "transferWithAuthorization",
          [from, message.to, value, 0n, message.validBefore, nonce, long(signed.signature)],
          suffix(n),
        );
      } else if (kind <= 6) {
        const signed = await signReceiveAuthorization(walletOwner, domain, message);
        await send(
          relayer,
          "receiveWithAuthorization",
          [from, message.to, value, 0n, message.validBefore, nonce, long(signed.signature)],
          suffix(n),
        );
      } else {
        const signed = await signCancelAuthorization(walletOwner, domain, {
          authorizer: from,
          nonce,
        });
        await send(
          relayer,
          "cancelAuthorization",
          [from, nonce, long(signed.signature)],
          suffix(n),
        );
      }
    } else if (kind <= 4) {
      const message = {
        from: buyer.address,
        to: relayer.address,
        value,
        validAfter: 0n,
        validBefore: now + 600n,
        nonce,
      };
      const signed = await signTransferAuthorization(buyer, domain, message);
      await send(
        relayer,
        "transferWithAuthorization",
        [
          message.from,
          message.to,
          value,
          0n,
          message.validBefore,
          nonce,
          signed.v,
          signed.r,
          signed.s,
        ],
        suffix(n),
      );
    } else if (kind <= 6) {
      const message = {
        from: buyer.address,
        to: relayer.address,
        value,
        validAfter: 0n,
        validBefore: now + 600n,
        nonce,
      };
      const signed = await signReceiveAuthorization(buyer, domain, message);
      await send(
        relayer,
        "receiveWithAuthorization",
        [message.from, message.to, value, 0n, message.validBefore, nonce, signed.signature],
        suffix(n),
      );
    } else if (kind === 7) {
      const signed = await signCancelAuthorization(buyer, domain, {
        authorizer: buyer.address,
        nonce,
      });
      await send(
        relayer,
        "cancelAuthorization",
        [buyer.address, nonce, signed.v, signed.r, signed.s],
        suffix(n),
      );
    } else {
      await send(
        buyer,
        "transfer",
        [relayers[(n + 1) % relayers.length]!.address, value],
        suffix(n, false),
      );
    }
  }

  /** A payment whose pre-confirmation the sequencer then drops: it never lands, and nothing retracts it. */
  async function droppedPayment(): Promise<void> {
    const hash = await send(flaky, "transfer", [buyers[0]!.address, 0n]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await publicClient.request({ method: "devnet_dropPreconfirmed", params: [hash] } as never);
    nonces.delete(flaky.address);
  }

  const timers: NodeJS.Timeout[] = [];
  const every = (ms: number, work: () => Promise<void>) => {
    timers.push(setInterval(() => void (stopped ? undefined : work().catch(report)), ms));
  };
  if (options.paymentsPerSecond > 0) every(1_000 / options.paymentsPerSecond, onePayment);
  if ((options.reorgEverySeconds ?? 0) > 0)
    every(options.reorgEverySeconds! * 1_000, () =>
      publicClient
        .request({ method: "devnet_reorg", params: [1 + (sequence % 2)] } as never)
        .then(() => undefined),
    );
  if ((options.dropEverySeconds ?? 0) > 0) every(options.dropEverySeconds! * 1_000, droppedPayment);

  return {
    stop(): void {
      stopped = true;
      for (const timer of timers) clearInterval(timer);
    },
  };
}
