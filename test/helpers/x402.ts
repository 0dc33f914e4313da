import { x402Client, type ClientExtension } from "@x402/core/client";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { registerExactEvmScheme as registerExactEvmClient } from "@x402/evm/exact/client";
import type { Address, LocalAccount } from "viem";

/**
 * The x402 reference packages (@x402/* 2.27) as test parts: a client that signs payments, and
 * (below) a resource server, a paying fetch and the reference facilitator served over HTTP. They
 * are the oracle flashindex's facilitator is compared against.
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
export function referenceClient(account: LocalAccount, tokens: ReadonlyArray<{ chainId: number; token: Address }>): x402Client {
  const client = new x402Client().setSpendControls({ allowedAssets: tokens.map(({ chainId, token }) => ({ network: `eip155:${chainId}` as const, asset: token })) });
  return registerExactEvmClient(client, { signer: account });
}

/**
 * The body HTTPFacilitatorClient POSTs to /verify and /settle for `offer`, signed by the reference
 * client with `account`: `{ x402Version, paymentPayload, paymentRequirements }`. `extensions` are
 * the ones a resource server would declare in its PaymentRequired; `clientExtensions` enrich the
 * payload as the client's registered extensions do (e.g. builder-code's service codes).
 */
export async function referencePaymentBody(account: LocalAccount, offer: ExactOffer, extensions: Record<string, unknown> = {}, clientExtensions: readonly ClientExtension[] = []) {
  const requirements = referenceRequirements(offer);
  const client = referenceClient(account, [offer]);
  for (const extension of clientExtensions) client.registerExtension(extension);
  const paymentPayload: PaymentPayload = await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: "http://127.0.0.1/paid", description: "a test resource", mimeType: "text/plain" },
    accepts: [requirements],
    extensions,
  });
  return JSON.parse(JSON.stringify({ x402Version: paymentPayload.x402Version, paymentPayload, paymentRequirements: requirements })) as {
    x402Version: number;
    paymentPayload: PaymentPayload & { payload: { signature: string; authorization: Record<string, string> } };
    paymentRequirements: PaymentRequirements;
  };
}
