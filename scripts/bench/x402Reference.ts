import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { x402Client, type ClientExtension } from "@x402/core/client";
import { x402Facilitator } from "@x402/core/facilitator";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { toFacilitatorEvmSigner, type ClientEvmSigner } from "@x402/evm";
import { registerExactEvmScheme as registerExactEvmClient } from "@x402/evm/exact/client";
import { registerExactEvmScheme as registerExactEvmFacilitator } from "@x402/evm/exact/facilitator";
import { BuilderCodeFacilitatorExtension } from "@x402/extensions/builder-code";
import express, { type Express } from "express";
import {
  createWalletClient,
  defineChain,
  http,
  publicActions,
  type Address,
  type Hex,
  type LocalAccount,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";

/**
 * The x402 reference packages (@x402/* 2.27) as parts of the settle benchmark and of the tests
 * (test/helpers/x402.ts re-exports them): a client that signs payments and the reference
 * facilitator served over HTTP, the oracle flashindex's facilitator is compared against.
 */

/** What a resource server asks for: one exact EIP-3009 payment of `amount` of `token` to `payTo`. */
export type ExactOffer = {
  chainId: number;
  token: Address;
  /** The token's EIP-712 domain (name() and version() of the contract). */
  name: string;
  version: string;
  payTo: Address;
  /** Atomic units. */
  amount: bigint;
  maxTimeoutSeconds?: number;
};

/** PaymentRequirements as @x402/core's resource server sends them for `offer` (assetTransferMethod eip3009 left out, as it does). */
export function referenceRequirements(offer: ExactOffer): PaymentRequirements {
  return {
    scheme: "exact",
    network: `eip155:${offer.chainId}`,
    amount: offer.amount.toString(),
    asset: offer.token,
    payTo: offer.payTo,
    maxTimeoutSeconds: offer.maxTimeoutSeconds ?? 300,
    extra: { name: offer.name, version: offer.version },
  };
}

/**
 * A reference x402 client paying with `account`: @x402/evm's exact scheme on every EVM network,
 * spend controls opened for `tokens` (by default the client pays only the reference's known assets).
 */
export function referenceClient(
  account: ClientEvmSigner,
  tokens: ReadonlyArray<{ chainId: number; token: Address }>,
): x402Client {
  const client = new x402Client().setSpendControls({
    allowedAssets: tokens.map(({ chainId, token }) => ({
      network: `eip155:${chainId}` as const,
      asset: token,
    })),
  });
  return registerExactEvmClient(client, { signer: account });
}

/**
 * The body HTTPFacilitatorClient POSTs to /verify and /settle for `offer`, signed by the reference
 * client with `account`: `{ x402Version, paymentPayload, paymentRequirements }`. `extensions` are
 * the ones a resource server would declare in its PaymentRequired; `clientExtensions` enrich the
 * payload as the client's registered extensions do (e.g. builder-code's service codes).
 */
export async function referencePaymentBody(
  account: ClientEvmSigner,
  offer: ExactOffer,
  extensions: Record<string, unknown> = {},
  clientExtensions: readonly ClientExtension[] = [],
) {
  const requirements = referenceRequirements(offer);
  const client = referenceClient(account, [offer]);
  for (const extension of clientExtensions) client.registerExtension(extension);
  const paymentPayload: PaymentPayload = await client.createPaymentPayload({
    x402Version: 2,
    resource: {
      url: "http://127.0.0.1/paid",
      description: "a test resource",
      mimeType: "text/plain",
    },
    accepts: [requirements],
    extensions,
  });
  return JSON.parse(
    JSON.stringify({
      x402Version: paymentPayload.x402Version,
      paymentPayload,
      paymentRequirements: requirements,
    }),
  ) as {
    x402Version: number;
    paymentPayload: PaymentPayload & {
      payload: { signature: string; authorization: Record<string, string> };
    };
    paymentRequirements: PaymentRequirements;
  };
}

/**
 * A payer that is a smart-contract wallet (ERC-1271), such as the devnet's MiniWallet: payments name
 * `wallet` as `from` and carry `owner`'s signature of the EIP-712 digest, which the wallet's
 * isValidSignature accepts. The token checks it through the wallet, not by ecrecover.
 */
export function smartWalletSigner(owner: LocalAccount, wallet: Address): ClientEvmSigner {
  return { address: wallet, signTypedData: (message) => owner.signTypedData(message as never) };
}

/** A listening HTTP server of the harness: its base URL and how to stop it (open connections included). */
export type RunningServer = { url: string; close: () => Promise<void> };

/** Listens on a free loopback port. */
export async function listen(app: Express): Promise<RunningServer> {
  const server = await new Promise<Server>((resolve, reject) => {
    const listening = app.listen(0, "127.0.0.1", (error?: Error) =>
      error === undefined ? resolve(listening) : reject(error),
    );
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        // fetch keeps connections alive; without this close() would wait for them to idle out.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type ReferenceFacilitatorOptions = {
  rpcUrl: string;
  chainId: number;
  /** The relayer's key: it pays the gas of every settlement. */
  privateKey: Hex;
  /** The facilitator's own builder code (`w`); without it the builder-code extension is not registered. */
  builderCode?: string;
  /**
   * How often the reference polls for a settlement's receipt. Default 1,000 ms: what viem picks for
   * Base (half its 2 s block time), so a benchmark measures the reference as it runs there.
   */
  receiptPollingMs?: number;
};

/** Upper bound on a /verify or /settle body, as a deployed facilitator would set one. */
const REFERENCE_BODY_LIMIT = "64kb";

/**
 * The reference facilitator: x402Facilitator of @x402/core with @x402/evm's exact EVM scheme, its
 * signer a viem wallet client on `rpcUrl`, served over HTTP as x402's example facilitator serves
 * it (POST /verify, POST /settle, GET /supported; 400 without the two fields, 500 on a throw).
 */
export async function startReferenceFacilitator(
  options: ReferenceFacilitatorOptions,
): Promise<RunningServer & { address: Address }> {
  const account = privateKeyToAccount(options.privateKey);
  const chain = defineChain({
    id: options.chainId,
    name: `chain ${options.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [options.rpcUrl] } },
  });
  const client = createWalletClient({
    account,
    chain,
    transport: http(options.rpcUrl),
    pollingInterval: options.receiptPollingMs ?? 1_000,
  }).extend(publicActions);
  const signer = toFacilitatorEvmSigner({
    address: account.address,
    getCode: (args) => client.getCode(args),
    readContract: (args) => client.readContract({ ...args, args: args.args ?? [] } as never),
    verifyTypedData: (args) => client.verifyTypedData(args as never),
    writeContract: (args) => client.writeContract({ ...args, args: args.args ?? [] } as never),
    sendTransaction: (args) => client.sendTransaction(args),
    waitForTransactionReceipt: (args) => client.waitForTransactionReceipt(args),
  });
  const facilitator = new x402Facilitator();
  registerExactEvmFacilitator(facilitator, { signer, networks: `eip155:${options.chainId}` });
  if (options.builderCode !== undefined)
    facilitator.registerExtension(
      new BuilderCodeFacilitatorExtension({ builderCode: options.builderCode }),
    );

  const app = express();
  app.use(express.json({ limit: REFERENCE_BODY_LIMIT }));
  for (const operation of ["verify", "settle"] as const) {
    app.post(`/${operation}`, async (request, response) => {
      const { paymentPayload, paymentRequirements } = (request.body ?? {}) as {
        paymentPayload?: PaymentPayload;
        paymentRequirements?: PaymentRequirements;
      };
      if (paymentPayload === undefined || paymentRequirements === undefined) {
        response.status(400).json({ error: "Missing paymentPayload or paymentRequirements" });
        return;
      }
      try {
        response.json(
          operation === "verify"
            ? await facilitator.verify(paymentPayload, paymentRequirements)
            : await facilitator.settle(paymentPayload, paymentRequirements),
        );
      } catch (error) {
        response
          .status(500)
          .json({ error: error instanceof Error ? error.message : String(error) });
      }
    });
  }
  app.get("/supported", (_request, response) => {
    response.json(facilitator.getSupported());
  });
  return { ...(await listen(app)), address: account.address };
}
