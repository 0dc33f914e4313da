import { decodePaymentRequiredHeader } from "@x402/core/http";
import {
  BuilderCodeClientExtension,
  builderCodeResourceServerExtension,
  declareBuilderCodeExtension,
} from "@x402/extensions/builder-code";
import {
  createPublicClient,
  createWalletClient,
  getAddress,
  http,
  parseAbi,
  parseEventLogs,
  parseUnits,
  type Address,
  type Hex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { decodeAttribution } from "../../src/decode/erc8021.js";
import { readTokenDomain, signTransferAuthorization } from "../../src/authorization/eip3009.js";
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from "../../src/devnet/anvil.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { deployTestToken } from "../../src/devnet/deployToken.js";
import { deployMiniWallet } from "../../src/devnet/deployWallet.js";
import { checkExactFields } from "../../src/settle/exactFieldChecks.js";
import { parseFacilitatorRequest } from "../../src/settle/parseRequest.js";
import {
  PAID_BODY,
  payingFetch,
  referencePaymentBody,
  smartWalletSigner,
  paymentResponseOf,
  startReferenceFacilitator,
  startResourceServer,
  type ExactOffer,
  type RunningServer,
} from "../helpers/x402.js";

/**
 * The harness of test/helpers/x402.ts proven end to end on a real anvil with the repo's token: the
 * reference client buys GET /paid from the reference express resource server through the
 * reference facilitator. This is the oracle flashindex's facilitator is compared against.
 */

const CHAIN_ID = 8453;
const EVENTS_ABI = parseAbi([
  "event Transfer(address indexed from, address indexed to, uint256 value)",
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
]);
const SHOP: Address = getAddress("0x000000000000000000000000000000000000c0de");
const payer = privateKeyToAccount(ANVIL_PRIVATE_KEYS[1] as Hex);
const open: RunningServer[] = [];
let anvil: Anvil;
let offer: ExactOffer;
let facilitator: RunningServer & { address: Address };

beforeAll(async () => {
  anvil = await startAnvil({ chainId: CHAIN_ID });
  const { address: token } = await deployTestToken({
    rpcUrl: anvil.httpUrl,
    privateKey: ANVIL_PRIVATE_KEYS[0] as Hex,
    mint: [{ to: payer.address, amount: parseUnits("100", 6) }],
  });
  offer = {
    chainId: CHAIN_ID,
    token,
    name: "USD Coin",
    version: "2",
    payTo: SHOP,
    amount: parseUnits("0.25", 6),
  };
  facilitator = await startReferenceFacilitator({
    rpcUrl: anvil.httpUrl,
    chainId: CHAIN_ID,
    privateKey: ANVIL_PRIVATE_KEYS[2] as Hex,
    builderCode: "bc_reference",
    receiptPollingMs: 100,
  });
  open.push(facilitator);
}, 60_000);

afterAll(async () => {
  for (const server of open.splice(0).reverse()) await server.close();
  await anvil?.stop();
});

describe("the x402 reference harness", () => {
  test("answers GET /paid without payment with 402 and the offer in PAYMENT-REQUIRED", async () => {
    const shop = await startResourceServer({ facilitatorUrl: facilitator.url, offer });
    open.push(shop);
    const response = await fetch(`${shop.url}/paid`);
    expect(response.status).toBe(402);
    const required = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED")!);
    expect(required.accepts).toEqual([
      expect.objectContaining({
        scheme: "exact",
        network: `eip155:${CHAIN_ID}`,
        amount: "250000",
        asset: offer.token,
        payTo: SHOP,
        extra: { name: "USD Coin", version: "2" },
      }),
    ]);
  });

  test("a client buys GET /paid through the reference facilitator: the PAYMENT-RESPONSE transaction moved the amount on chain", async () => {
    const shop = await startResourceServer({
      facilitatorUrl: facilitator.url,
      offer,
      routeExtensions: { "builder-code": declareBuilderCodeExtension("my_app") },
      serverExtensions: [builderCodeResourceServerExtension],
    });
    open.push(shop);
    const chain = createPublicClient({ transport: http(anvil.httpUrl) });
    const balanceOf = (owner: Address) =>
      chain.readContract({
        address: offer.token,
        abi: flashTestTokenAbi,
        functionName: "balanceOf",
        args: [owner],
      }) as Promise<bigint>;
    const [payerBefore, shopBefore] = await Promise.all([
      balanceOf(payer.address),
      balanceOf(SHOP),
    ]);

    const response = await payingFetch(
      payer,
      [offer],
      [new BuilderCodeClientExtension("my_client")],
    )(`${shop.url}/paid`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(PAID_BODY);
    const settlement = paymentResponseOf(response);
    expect(settlement).toMatchObject({
      success: true,
      network: `eip155:${CHAIN_ID}`,
      payer: payer.address,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });

    const hash = settlement!.transaction as Hex;
    const [receipt, transaction] = await Promise.all([
      chain.getTransactionReceipt({ hash }),
      chain.getTransaction({ hash }),
    ]);
    expect(receipt.status).toBe("success");
    expect(getAddress(transaction.from)).toBe(facilitator.address);
    const events = parseEventLogs({
      abi: EVENTS_ABI,
      logs: receipt.logs.filter((log) => getAddress(log.address) === offer.token),
    });
    expect(events.map((event) => event.eventName)).toEqual(["AuthorizationUsed", "Transfer"]);
    expect(events[1]!.args).toEqual({ from: payer.address, to: SHOP, value: offer.amount });
    expect(events[0]!.args).toMatchObject({ authorizer: payer.address });
    expect(await balanceOf(payer.address)).toBe(payerBefore - offer.amount);
    expect(await balanceOf(SHOP)).toBe(shopBefore + offer.amount);
    // The reference attributes the settlement with the builder-code extension; the repo's decoder reads it.
    expect(decodeAttribution(transaction.input)).toMatchObject({
      kind: "codes",
      schemaId: 2,
      codes: [
        { code: "my_app", role: "app" },
        { code: "bc_reference", role: "wallet" },
        { code: "my_client", role: "service" },
      ],
    });
  }, 60_000);

  test("the reference's /verify and parseFacilitatorRequest + checkExactFields refuse the same payments with the same reasons", async () => {
    type Body = Awaited<ReturnType<typeof referencePaymentBody>>;
    const signed =
      (edit: (body: Body) => void, changes: Partial<ExactOffer> = {}) =>
      async () => {
        const body = await referencePaymentBody(payer, { ...offer, ...changes });
        edit(body);
        return body;
      };
    const notYetValid = async () => {
      const body = await referencePaymentBody(payer, offer);
      const domain = await readTokenDomain(
        createPublicClient({ transport: http(anvil.httpUrl) }),
        offer.token,
      );
      const now = BigInt(Math.floor(Date.now() / 1000));
      const authorization = {
        from: payer.address,
        to: SHOP,
        value: offer.amount,
        validAfter: now + 3600n,
        validBefore: now + 7200n,
        nonce: `0x${"ab".repeat(32)}` as Hex,
      };
      const { signature } = await signTransferAuthorization(payer, domain, authorization);
      body.paymentPayload.payload = {
        signature,
        authorization: Object.fromEntries(
          Object.entries(authorization).map(([key, value]) => [key, String(value)]),
        ),
      };
      return body;
    };
    const cases: Array<[string, () => Promise<Body>]> = [
      [
        "amount above the authorized value",
        signed((body) => void (body.paymentRequirements.amount = "250001")),
      ],
      [
        "payTo other than the authorization's to",
        signed(
          (body) =>
            void (body.paymentRequirements.payTo = "0x000000000000000000000000000000000000bEEF"),
        ),
      ],
      ["validBefore under 6 s away", signed(() => {}, { maxTimeoutSeconds: 3 })],
      ["validAfter an hour ahead", notYetValid],
      [
        "accepted on another network",
        signed((body) => void (body.paymentPayload.accepted.network = "eip155:84532")),
      ],
      [
        "accepted under another scheme",
        signed((body) => void (body.paymentPayload.accepted.scheme = "upto")),
      ],
      [
        "requirements without the EIP-712 name",
        signed((body) => void delete body.paymentRequirements.extra.name),
      ],
    ];
    const policy = {
      chainId: CHAIN_ID,
      tokens: [{ address: offer.token, name: offer.name, version: offer.version }],
      payTo: [],
    };
    for (const [what, make] of cases) {
      const body = await make();
      const reference = (await (
        await fetch(`${facilitator.url}/verify`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        })
      ).json()) as { isValid: boolean; invalidReason?: string };
      const parsed = parseFacilitatorRequest(body);
      const ours = parsed.ok
        ? checkExactFields(parsed.request, policy, BigInt(Math.floor(Date.now() / 1000)))
            ?.invalidReason
        : parsed.refusal.invalidReason;
      expect({ what, reason: ours }).toEqual({ what, reason: reference.invalidReason });
      expect(reference.isValid).toBe(false);
    }
  }, 60_000);

  test("a smart-contract wallet (ERC-1271) buys GET /paid through the reference facilitator", async () => {
    const owner = privateKeyToAccount(ANVIL_PRIVATE_KEYS[4] as Hex);
    const wallet = await deployMiniWallet({
      rpcUrl: anvil.httpUrl,
      privateKey: ANVIL_PRIVATE_KEYS[0] as Hex,
      owner: owner.address,
    });
    const chain = createPublicClient({ transport: http(anvil.httpUrl) });
    const deployer = createWalletClient({
      account: privateKeyToAccount(ANVIL_PRIVATE_KEYS[0] as Hex),
      transport: http(anvil.httpUrl),
    });
    await chain.waitForTransactionReceipt({
      hash: await deployer.writeContract({
        address: offer.token,
        abi: flashTestTokenAbi,
        functionName: "mint",
        args: [wallet, offer.amount],
        chain: null,
      }),
    });
    const shop = await startResourceServer({ facilitatorUrl: facilitator.url, offer });
    open.push(shop);

    const response = await payingFetch(smartWalletSigner(owner, wallet), [offer])(
      `${shop.url}/paid`,
    );
    expect(response.status).toBe(200);
    const settlement = paymentResponseOf(response)!;
    expect(settlement).toMatchObject({ success: true, payer: wallet });
    const receipt = await chain.getTransactionReceipt({ hash: settlement.transaction as Hex });
    const transfer = parseEventLogs({ abi: EVENTS_ABI, logs: receipt.logs, eventName: "Transfer" });
    expect(transfer.map((event) => event.args)).toEqual([
      { from: wallet, to: SHOP, value: offer.amount },
    ]);
    expect(
      await chain.readContract({
        address: offer.token,
        abi: flashTestTokenAbi,
        functionName: "balanceOf",
        args: [wallet],
      }),
    ).toBe(0n);
  }, 60_000);
});
