import type { Address } from "viem";
import type { TokenDomain } from "../../src/authorization/eip3009.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { createFacilitator, type FacilitatorDeps } from "../../src/settle/facilitator.js";

/**
 * A facilitator for the devnet's one token, as the settle tests run it: any payee, answered at
 * pre-confirmation within 10 s, no builder code. `overrides` changes any of those.
 */
export function createDevnetFacilitator(
  deps: Pick<FacilitatorDeps, "client" | "store" | "relay" | "logger">,
  devnet: { chainId: number; token: Address },
  domain: Pick<TokenDomain, "name" | "version">,
  relayer: Address,
  overrides: Partial<FacilitatorDeps> = {},
) {
  return createFacilitator({
    ...deps,
    metrics: createMetrics({ defaultMetrics: false }),
    chainId: devnet.chainId,
    tokens: [{ address: devnet.token, name: domain.name, version: domain.version }],
    relayer,
    payTo: [],
    settleWaitsFor: "preconfirmed",
    settleTimeoutMs: 10_000,
    builderCode: undefined,
    ...overrides,
  });
}
