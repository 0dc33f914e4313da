import { checksum } from "ox/Address";
import type { Address } from "viem";
import type { FacilitatorToken } from "./exactFieldChecks.js";
import {
  ASSET_TRANSFER_EIP3009,
  EVM_SIGNER_FAMILY,
  SCHEME_EXACT,
  X402_VERSION,
  X402_VERSION_V1,
  evmNetwork,
  v1NetworkName,
  type SupportedResponse,
} from "./wire.js";

/** What GET /supported describes: the chain, the tokens settled on it, the relayers, the extensions. */
export type SupportedInput = {
  chainId: number;
  tokens: readonly FacilitatorToken[];
  /** The relayer addresses that send the settlements. */
  signers: readonly Address[];
  /** Extension keys the facilitator implements (e.g. builder-code, payment-identifier). */
  extensions: readonly string[];
};

/**
 * The body of GET /supported (x402-specification-v2.md §7.3): one `exact` kind per configured token,
 * so the list says exactly what is accepted. The reference's EVM scheme sends no `extra`; each kind
 * here carries its token (`asset`), the token's EIP-712 `name` and `version` (the `extra` a resource
 * server must put in its requirements) and `assetTransferMethod`, which HTTPFacilitatorClient
 * accepts as any record. Signers are listed under `eip155:*` as the reference does.
 */
export function buildSupportedBody(input: SupportedInput): SupportedResponse {
  const network = evmNetwork(input.chainId);
  // The reference registers its v1 exact scheme beside v2 and lists it; so do we, under the
  // chain's v1 name (base, base-sepolia), when v1 has one.
  const v1Name = v1NetworkName(input.chainId);
  const versions: Array<{ x402Version: number; network: string }> = [
    { x402Version: X402_VERSION, network },
  ];
  if (v1Name !== undefined) versions.push({ x402Version: X402_VERSION_V1, network: v1Name });
  return {
    kinds: versions.flatMap(({ x402Version, network }) =>
      input.tokens.map((token) => ({
        x402Version,
        scheme: SCHEME_EXACT,
        network,
        extra: {
          asset: checksum(token.address),
          name: token.name,
          version: token.version,
          assetTransferMethod: ASSET_TRANSFER_EIP3009,
        },
      })),
    ),
    extensions: [...new Set(input.extensions)],
    signers: { [EVM_SIGNER_FAMILY]: [...new Set(input.signers.map((signer) => checksum(signer)))] },
  };
}
