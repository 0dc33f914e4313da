import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { HTTPFacilitatorClient, x402ResourceServer } from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import type { Address } from "viem";
import { afterEach, describe, expect, test } from "vitest";
import { buildSupportedBody, type SupportedInput } from "../../src/settle/supportedBody.js";

const TOKEN: Address = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
const USDC: Address = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const RELAYER: Address = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc";
const INPUT: SupportedInput = {
  chainId: 8453,
  tokens: [
    { address: TOKEN, name: "Flash Test USD", version: "2" },
    { address: USDC, name: "USD Coin", version: "2" },
  ],
  signers: [RELAYER, RELAYER.toUpperCase().replace("0X", "0x") as Address],
  extensions: ["builder-code", "payment-identifier", "builder-code"],
};

const servers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of servers.splice(0)) await close();
});

/** Serves `body` at GET /supported on a free port, as a facilitator would. */
async function serveSupported(body: unknown): Promise<string> {
  const server = createServer((request, response) => {
    if (request.method === "GET" && request.url === "/supported")
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
    else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("buildSupportedBody()", () => {
  test("lists one exact kind per token with its EIP-712 domain, the relayers once, the extensions once", () => {
    expect(buildSupportedBody(INPUT)).toEqual({
      kinds: [
        {
          x402Version: 2,
          scheme: "exact",
          network: "eip155:8453",
          extra: {
            asset: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
            name: "Flash Test USD",
            version: "2",
            assetTransferMethod: "eip3009",
          },
        },
        {
          x402Version: 2,
          scheme: "exact",
          network: "eip155:8453",
          extra: { asset: USDC, name: "USD Coin", version: "2", assetTransferMethod: "eip3009" },
        },
        // The reference lists its v1 exact scheme too, under v1's network names (8453 is `base`).
        {
          x402Version: 1,
          scheme: "exact",
          network: "base",
          extra: {
            asset: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
            name: "Flash Test USD",
            version: "2",
            assetTransferMethod: "eip3009",
          },
        },
        {
          x402Version: 1,
          scheme: "exact",
          network: "base",
          extra: { asset: USDC, name: "USD Coin", version: "2", assetTransferMethod: "eip3009" },
        },
      ],
      extensions: ["builder-code", "payment-identifier"],
      signers: { "eip155:*": ["0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"] },
    });
  });

  test("is read by HTTPFacilitatorClient, and a reference resource server builds requirements from it", async () => {
    const url = await serveSupported(buildSupportedBody(INPUT));
    const facilitator = new HTTPFacilitatorClient({ url });
    const supported = await facilitator.getSupported();
    expect(
      supported.kinds.map((kind) => [kind.x402Version, kind.network, kind.extra?.asset]),
    ).toEqual([
      [2, "eip155:8453", "0x5FbDB2315678afecb367f032d93F642f64180aa3"],
      [2, "eip155:8453", USDC],
      [1, "base", "0x5FbDB2315678afecb367f032d93F642f64180aa3"],
      [1, "base", USDC],
    ]);
    expect(supported.signers["eip155:*"]).toEqual(["0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"]);

    const server = new x402ResourceServer(facilitator).register(
      "eip155:8453",
      new ExactEvmScheme(),
    );
    await server.initialize();
    const [requirements] = await server.buildPaymentRequirements({
      scheme: "exact",
      network: "eip155:8453",
      payTo: "0x000000000000000000000000000000000000c0de",
      price: { amount: "10000", asset: TOKEN, extra: { name: "Flash Test USD", version: "2" } },
    });
    expect(requirements).toMatchObject({
      scheme: "exact",
      network: "eip155:8453",
      amount: "10000",
      asset: TOKEN,
      extra: { name: "Flash Test USD", version: "2" },
    });
    // A network the facilitator does not list is refused by the resource server itself.
    const elsewhere = new x402ResourceServer(facilitator).register(
      "eip155:84532",
      new ExactEvmScheme(),
    );
    await elsewhere.initialize();
    await expect(
      elsewhere.buildPaymentRequirements({
        scheme: "exact",
        network: "eip155:84532",
        payTo: "0x000000000000000000000000000000000000c0de",
        price: { amount: "1", asset: TOKEN },
      }),
    ).rejects.toThrow(/does not support exact on eip155:84532/);
  });

  test("lists only v2 kinds on a chain x402 v1 has no name for", () => {
    expect(
      buildSupportedBody({ ...INPUT, chainId: 31337 }).kinds.map((kind) => [
        kind.x402Version,
        kind.network,
      ]),
    ).toEqual([
      [2, "eip155:31337"],
      [2, "eip155:31337"],
    ]);
  });

  test("lists no kind when no token is configured", () => {
    expect(buildSupportedBody({ ...INPUT, tokens: [] }).kinds).toEqual([]);
  });
});
