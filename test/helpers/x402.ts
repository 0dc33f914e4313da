import { decodePaymentResponseHeader } from "@x402/core/http";
import { HTTPFacilitatorClient, x402ResourceServer } from "@x402/core/server";
import type { ResourceServerExtension, SettleResponse } from "@x402/core/types";
import { x402Client, type ClientExtension } from "@x402/core/client";
import { registerExactEvmScheme as registerExactEvmClient } from "@x402/evm/exact/client";
import { ExactEvmScheme as ExactEvmServerScheme } from "@x402/evm/exact/server";
import { paymentMiddleware } from "@x402/express";
import { wrapFetchWithPayment } from "@x402/fetch";
import express from "express";
import type { ClientEvmSigner } from "@x402/evm";
import type { Address } from "viem";
import {
  listen,
  referenceClient,
  type ExactOffer,
  type RunningServer,
} from "../../scripts/bench/x402Reference.js";

/**
 * The x402 reference packages (@x402/* 2.27) as test parts: the reference client and facilitator
 * (from scripts/bench/x402Reference.ts, shared with the settle benchmark), an express resource
 * server, a paying fetch. They are the oracle flashindex's facilitator is compared against.
 */

export {
  referenceClient,
  referencePaymentBody,
  referenceRequirements,
  smartWalletSigner,
  startReferenceFacilitator,
  type ExactOffer,
  type ReferenceFacilitatorOptions,
  type RunningServer,
} from "../../scripts/bench/x402Reference.js";

export type ResourceServerOptions = {
  /** Base URL of the facilitator (flashindex's or the reference's). */
  facilitatorUrl: string;
  offer: ExactOffer;
  /** Sent as `Authorization: Bearer <token>` to /verify, /settle and /supported. */
  facilitatorToken?: string;
  /** Declared in the route's PaymentRequired (e.g. builder-code, payment-identifier declarations). */
  routeExtensions?: Record<string, unknown>;
  /** Resource-server halves of those extensions. */
  serverExtensions?: readonly ResourceServerExtension[];
};

/** Body of GET /paid once paid. */
export const PAID_BODY = "the paid content";

/**
 * An express resource server whose `GET /paid` costs `offer`, protected by @x402/express's payment
 * middleware with an HTTPFacilitatorClient pointed at `facilitatorUrl` (it fetches /supported on
 * the first request). Answers 402 with PAYMENT-REQUIRED without payment, 200 with
 * PAYMENT-RESPONSE once the facilitator settled.
 */
export async function startResourceServer(options: ResourceServerOptions): Promise<RunningServer> {
  const { offer } = options;
  const token = options.facilitatorToken;
  const bearer = token === undefined ? undefined : { Authorization: `Bearer ${token}` };
  const facilitator = new HTTPFacilitatorClient({
    url: options.facilitatorUrl,
    ...(bearer === undefined
      ? {}
      : { createAuthHeaders: async () => ({ verify: bearer, settle: bearer, supported: bearer }) }),
  });
  const network = `eip155:${offer.chainId}` as const;
  const resourceServer = new x402ResourceServer(facilitator).register(
    network,
    new ExactEvmServerScheme(),
  );
  for (const extension of options.serverExtensions ?? [])
    resourceServer.registerExtension(extension);
  const routes = {
    "GET /paid": {
      accepts: {
        scheme: "exact",
        network,
        payTo: offer.payTo,
        price: {
          amount: offer.amount.toString(),
          asset: offer.token,
          extra: { name: offer.name, version: offer.version },
        },
        maxTimeoutSeconds: offer.maxTimeoutSeconds ?? 300,
      },
      description: "a test resource",
      mimeType: "text/plain",
      ...(options.routeExtensions === undefined ? {} : { extensions: options.routeExtensions }),
    },
  };
  const app = express();
  app.use(paymentMiddleware(routes, resourceServer));
  app.get("/paid", (_request, response) => {
    response.type("text/plain").send(PAID_BODY);
  });
  return listen(app);
}

/**
 * fetch that pays 402 answers with the reference client, signing with `account`, for payments in
 * `tokens`; `clientExtensions` enrich each payment (e.g. BuilderCodeClientExtension).
 */
export function payingFetch(
  account: ClientEvmSigner,
  tokens: ReadonlyArray<{ chainId: number; token: Address }>,
  clientExtensions: readonly ClientExtension[] = [],
): typeof fetch {
  const client = referenceClient(account, tokens);
  for (const extension of clientExtensions) client.registerExtension(extension);
  return wrapFetchWithPayment(fetch, client);
}

/** The settlement a paid answer carries in its PAYMENT-RESPONSE header, decoded; undefined without one. */
export function paymentResponseOf(response: Response): SettleResponse | undefined {
  const header = response.headers.get("PAYMENT-RESPONSE");
  return header === null ? undefined : decodePaymentResponseHeader(header);
}

/** An x402 v1 verify/settle body: `maxAmountRequired`, networks named as v1 names them (`base`). */
export type V1PaymentBody = {
  x402Version: 1;
  paymentPayload: {
    x402Version: 1;
    scheme: string;
    network: string;
    payload: { signature: string; authorization: Record<string, string> };
  };
  paymentRequirements: Record<string, unknown> & {
    network: string;
    maxAmountRequired: string;
    extra: Record<string, unknown>;
  };
};

/**
 * The body a v1 resource server POSTs to /verify and /settle for `offer` on the v1 network
 * `network` (e.g. `base`), signed by the reference client's v1 exact scheme (@x402/evm's
 * ExactEvmSchemeV1, which registerExactEvmScheme registers on every v1 network).
 */
export async function referenceV1PaymentBody(
  account: ClientEvmSigner,
  offer: ExactOffer,
  network: string,
): Promise<V1PaymentBody> {
  const requirements = {
    scheme: "exact",
    network,
    maxAmountRequired: offer.amount.toString(),
    resource: "http://127.0.0.1/paid",
    description: "a test resource",
    mimeType: "text/plain",
    payTo: offer.payTo,
    maxTimeoutSeconds: offer.maxTimeoutSeconds ?? 300,
    asset: offer.token,
    extra: { name: offer.name, version: offer.version },
  };
  const client = registerExactEvmClient(
    new x402Client().setSpendControls({
      allowedAssets: [{ network: network as never, asset: offer.token }],
    }),
    { signer: account },
  );
  const paymentPayload = await client.createPaymentPayload({
    x402Version: 1,
    accepts: [requirements],
  } as never);
  return JSON.parse(
    JSON.stringify({ x402Version: 1, paymentPayload, paymentRequirements: requirements }),
  ) as V1PaymentBody;
}
