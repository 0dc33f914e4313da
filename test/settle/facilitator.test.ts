import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import {
  createPublicClient,
  createWalletClient,
  http,
  keccak256,
  stringToHex,
  type Address,
  type Hex,
  type PublicClient,
} from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  readTokenDomain,
  signTransferAuthorization,
  type TokenDomain,
} from "../../src/authorization/eip3009.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { facilitatorRecordPath } from "../../src/settle/facilitatorRecord.js";
import { runCli, spawnCli, writeConfig } from "../helpers/cli.js";
import { waitFor } from "../helpers/fixtures.js";
import { startWebhookReceiver } from "../helpers/webhookReceiver.js";
import {
  payingFetch,
  PAID_BODY,
  paymentResponseOf,
  referencePaymentBody,
  startResourceServer,
  type ExactOffer,
  type RunningServer,
} from "../helpers/x402.js";

const SECRET = "whsec_facilitator_test";
/** The bearer token the facilitator requires on /verify and /settle. */
const TOKEN = "facilitator-test-token-0123456789";
const AUTH = { authorization: `Bearer ${TOKEN}` };
const HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

let devnet: Devnet;
let client: PublicClient;
let domain: TokenDomain;
let buyer: PrivateKeyAccount;
let shop: PrivateKeyAccount;
let dir: string;
let dbPath: string;
let facilitatorUrl: string;
let offer: ExactOffer;
let daemon: ReturnType<typeof spawnCli> | undefined;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
const servers: RunningServer[] = [];

const authorizationState = (authorizer: Address, nonce: Hex) =>
  client.readContract({
    address: devnet.token,
    abi: flashTestTokenAbi,
    functionName: "authorizationState",
    args: [authorizer, nonce],
  });
const balanceOf = (account: Address) =>
  client.readContract({
    address: devnet.token,
    abi: flashTestTokenAbi,
    functionName: "balanceOf",
    args: [account],
  });

async function post(
  path: "verify" | "settle",
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${facilitatorUrl}/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...AUTH },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** A verify/settle body signed as the reference client signs it, then changed by `edit` (requirements and authorization). */
async function paymentBody(
  account: PrivateKeyAccount = buyer,
  edit: (body: Awaited<ReturnType<typeof referencePaymentBody>>) => void = () => undefined,
) {
  const body = await referencePaymentBody(account, offer);
  edit(body);
  return body;
}

/** A body whose authorization (from `from`) is signed by `signer`'s key over the token's domain; `signature` may be rewritten. */
async function handSignedBody(
  from: Address,
  signer: PrivateKeyAccount,
  rewrite: (signature: Hex) => Hex = (s) => s,
) {
  const body = await referencePaymentBody(buyer, offer);
  const now = BigInt(Math.floor(Date.now() / 1000));
  const message = {
    from,
    to: offer.payTo,
    value: offer.amount,
    validAfter: now - 600n,
    validBefore: now + 300n,
    nonce: keccak256(stringToHex(`hand ${Math.random()}`)),
  };
  const { signature } = await signTransferAuthorization(signer, domain, message);
  body.paymentPayload.payload = {
    signature: rewrite(signature),
    authorization: {
      from,
      to: message.to,
      value: message.value.toString(),
      validAfter: message.validAfter.toString(),
      validBefore: message.validBefore.toString(),
      nonce: message.nonce,
    },
  };
  return body;
}

function orderRows(): Array<{
  id: number;
  state: string;
  source: string;
  event_tx_hash: string | null;
  nonce: string;
}> {
  const db = new DatabaseConstructor(dbPath, { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare("SELECT id, state, source, event_tx_hash, nonce FROM orders ORDER BY id")
      .all() as never;
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 400, flashblockIntervalMs: 50, port: 0 });
  client = createPublicClient({ transport: http(devnet.httpUrl) });
  domain = await readTokenDomain(client, devnet.token);
  buyer = privateKeyToAccount(devnet.privateKeys[1]!);
  shop = privateKeyToAccount(devnet.privateKeys[2]!);
  offer = {
    chainId: devnet.chainId,
    token: devnet.token,
    name: domain.name,
    version: domain.version,
    payTo: shop.address,
    amount: 10_000n,
  };
  receiver = await startWebhookReceiver(SECRET);
  dir = mkdtempSync(join(tmpdir(), "flashindex-facilitator-"));
  dbPath = join(dir, "index.db");
  const configPath = writeConfig(dir, {
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl], retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 50 } },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
    finality: { depth: 0 },
    realtime: { headPollIntervalMs: 100, pendingPollIntervalMs: 100 },
    database: { path: dbPath },
    metrics: { enabled: false },
    webhooks: [
      {
        url: receiver.url,
        secretEnv: "FACILITATOR_TEST_WEBHOOK_SECRET",
        events: ["order.state_changed", "settlement.settled"],
        allowPrivateTargets: true,
      },
    ],
    facilitator: {
      enabled: true,
      port: 0,
      builderCode: "flashindex_test",
      authTokenEnv: "FACILITATOR_TEST_TOKEN",
    },
  });
  daemon = spawnCli(["start", "--config", configPath], {
    FLASHINDEX_RELAYER_KEY: devnet.privateKeys[6]!,
    FACILITATOR_TEST_WEBHOOK_SECRET: SECRET,
    FACILITATOR_TEST_TOKEN: TOKEN,
  });
  const started = await waitFor(
    () => /"msg":"Started x402 facilitator","url":"([^"]+)"/.exec(daemon!.output().stdout)?.[1],
    30_000,
    `the facilitator to start\n${daemon.output().stdout}\n${daemon.output().stderr}`,
    100,
  );
  facilitatorUrl = started;
  expect(JSON.parse(readFileSync(facilitatorRecordPath(dbPath), "utf8"))).toMatchObject({
    url: facilitatorUrl,
    pid: daemon.pid,
  });
  const status = await runCli(["status", "--config", configPath, "--json"]);
  expect(status.code, status.stderr).toBe(0);
  expect(JSON.parse(status.stdout)).toMatchObject({ facilitator_url: facilitatorUrl });
}, 60_000);

afterAll(async () => {
  for (const server of servers) await server.close();
  if (daemon !== undefined && daemon.exitCode === null) {
    const exited = new Promise((resolve) => daemon!.once("exit", resolve));
    daemon.kill("SIGTERM");
    await exited;
    expect(existsSync(facilitatorRecordPath(dbPath))).toBe(false);
  }
  await receiver?.close();
  await devnet?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("flashindex as an x402 facilitator", () => {
  test("GET /supported lists exactly the exact scheme on our network for the configured token, the relayer as signer", async () => {
    const response = await fetch(`${facilitatorUrl}/supported`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      kinds: Array<Record<string, unknown>>;
      signers: Record<string, string[]>;
      extensions: string[];
    };
    const extra = {
      asset: devnet.token,
      name: domain.name,
      version: domain.version,
      assetTransferMethod: "eip3009",
    };
    // The devnet is chain 8453, which x402 v1 names `base`: the v1 kind is listed too, as the reference lists its v1 scheme.
    expect(body.kinds).toEqual([
      { x402Version: 2, scheme: "exact", network: `eip155:${devnet.chainId}`, extra },
      { x402Version: 1, scheme: "exact", network: "base", extra },
    ]);
    expect(body.signers["eip155:*"]).toEqual([privateKeyToAccount(devnet.privateKeys[6]!).address]);
    expect(body.extensions.sort()).toEqual(["builder-code", "payment-identifier"]);
  });

  test("a reference client buys GET /paid from an express resource server whose facilitator is flashindex", async () => {
    const resource = await startResourceServer({ facilitatorUrl, offer, facilitatorToken: TOKEN });
    servers.push(resource);
    const before = await balanceOf(shop.address);
    const response = await payingFetch(buyer, [offer])(`${resource.url}/paid`);
    expect(response.status, await response.clone().text()).toBe(200);
    expect(await response.text()).toBe(PAID_BODY);
    const settled = paymentResponseOf(response)!;
    expect(settled).toMatchObject({
      success: true,
      network: `eip155:${devnet.chainId}`,
      payer: buyer.address,
    });
    const txHash = settled.transaction as Hex;
    expect(txHash).toMatch(/^0x[0-9a-f]{64}$/);

    const receipt = await waitFor(
      async () => {
        const r = await client.getTransactionReceipt({ hash: txHash }).catch(() => undefined);
        return r !== undefined && r.blockHash !== `0x${"0".repeat(64)}` ? r : undefined;
      },
      20_000,
      "the settlement in a block",
      50,
    );
    expect(receipt.status).toBe("success");
    expect(await balanceOf(shop.address)).toBe(before + offer.amount);

    const order = await waitFor(
      () => orderRows().find((o) => o.event_tx_hash === txHash && o.state === "captured"),
      20_000,
      "the indexed capture",
      100,
    );
    expect(order.source).toBe("x402");
    const db = new DatabaseConstructor(dbPath, { readonly: true });
    try {
      expect(
        db
          .prepare("SELECT COUNT(*) FROM transfers WHERE tx_hash = ? AND to_address = ?")
          .pluck()
          .get(txHash, shop.address.toLowerCase()),
      ).toBe(1);
      // The facilitator's builder code rides on the calldata (ERC-8021 schema 2, w).
      await waitFor(
        () =>
          db
            .prepare(
              "SELECT 1 FROM attribution_codes WHERE tx_hash = ? AND code = 'flashindex_test'",
            )
            .get(txHash),
        20_000,
        "the builder code",
        100,
      );
    } finally {
      db.close();
    }
    const hooks = await waitFor(
      () => {
        const changes = receiver
          .delivered()
          .filter(
            (r) =>
              r.body.data?.order?.id === order.id ||
              r.body.order?.id === order.id ||
              JSON.stringify(r.body).includes(`"id":${order.id},`),
          );
        return changes.some((r) => JSON.stringify(r.body).includes('"to_state":"captured"'))
          ? changes
          : undefined;
      },
      20_000,
      "the order.state_changed webhooks",
      100,
    );
    expect(hooks.every((r) => r.signatureValid && r.type === "order.state_changed")).toBe(true);
    expect(
      hooks.map((r) => JSON.stringify(r.body)).some((b) => b.includes('"to_state":"capturing"')),
    ).toBe(true);
    // The settle's final outcome, signed like the payment webhooks: paid, with its block (issue 43).
    const outcome = await waitFor(
      () =>
        receiver
          .delivered()
          .find(
            (r) =>
              r.type === "settlement.settled" &&
              JSON.stringify(r.body).includes(txHash.toLowerCase()),
          ),
      20_000,
      "the settlement.settled webhook",
      100,
    );
    expect(outcome.signatureValid).toBe(true);
    expect(JSON.stringify(outcome.body)).toMatch(/"outcome":"settled".*"block_number":\d+/);
  }, 90_000);

  test("a repeated /settle of a landed payment is refused as a used nonce and sends nothing", async () => {
    const body = await paymentBody();
    const first = await post("settle", body);
    expect(first.body, JSON.stringify(first.body)).toMatchObject({ success: true });
    const relayer = privateKeyToAccount(devnet.privateKeys[6]!).address;
    const sent = await client.getTransactionCount({ address: relayer, blockTag: "pending" });
    // One payment, one success (the reference answers a repeat the same way).
    const again = await post("settle", body);
    expect(again.body).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_nonce_already_used",
      transaction: "",
    });
    expect(await client.getTransactionCount({ address: relayer, blockTag: "pending" })).toBe(sent);
    expect(
      orderRows().filter(
        (o) => o.nonce === body.paymentPayload.payload.authorization.nonce!.toLowerCase(),
      ),
    ).toHaveLength(1);
    // The nonce is used now: a verify says so.
    expect((await post("verify", body)).body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_nonce_already_used",
    });
  }, 60_000);

  test.each([
    [
      "expired",
      (b: any) =>
        (b.paymentPayload.payload.authorization.validBefore = String(
          Math.floor(Date.now() / 1000) - 1,
        )),
      "invalid_exact_evm_payload_authorization_valid_before",
    ],
    [
      "not yet valid",
      (b: any) =>
        (b.paymentPayload.payload.authorization.validAfter = String(
          Math.floor(Date.now() / 1000) + 600,
        )),
      "invalid_exact_evm_payload_authorization_valid_after",
    ],
    [
      "the wrong amount",
      (b: any) => (b.paymentRequirements.amount = String(offer.amount + 1n)),
      "invalid_exact_evm_payload_authorization_value_mismatch",
    ],
    [
      "a wrong payTo",
      (b: any) => (b.paymentRequirements.payTo = buyer.address),
      "invalid_exact_evm_recipient_mismatch",
    ],
    [
      "a changed value (bad signature)",
      (b: any) => {
        b.paymentPayload.payload.authorization.value = String(offer.amount + 1n);
        b.paymentRequirements.amount = String(offer.amount + 1n);
      },
      "invalid_exact_evm_signature",
    ],
  ])(
    "%s is refused by /verify and /settle with its reason, nothing sent",
    async (_name, edit, reason) => {
      const body = await paymentBody(buyer, edit as never);
      const verified = await post("verify", body);
      expect(verified.body, JSON.stringify(verified.body)).toMatchObject({
        isValid: false,
        invalidReason: reason,
        payer: buyer.address,
      });
      const settled = await post("settle", body);
      expect(settled.body).toMatchObject({ success: false, errorReason: reason, transaction: "" });
      expect(
        await authorizationState(
          buyer.address,
          body.paymentPayload.payload.authorization.nonce as Hex,
        ),
      ).toBe(false);
    },
    60_000,
  );

  test("insufficient balance, a stranger's signature and a high-s signature are refused", async () => {
    const poor = privateKeyToAccount(devnet.privateKeys[7]!);
    expect(await balanceOf(poor.address)).toBe(0n);
    expect((await post("verify", await paymentBody(poor))).body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_insufficient_balance",
    });
    expect((await post("verify", await handSignedBody(buyer.address, shop))).body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_signature",
    });
    const highS = (signature: Hex): Hex => {
      const s = BigInt(`0x${signature.slice(66, 130)}`);
      const v = Number.parseInt(signature.slice(130), 16);
      expect(s <= HALF_N).toBe(true);
      return `${signature.slice(0, 66)}${(N - s).toString(16).padStart(64, "0")}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
    };
    const refused = await post("settle", await handSignedBody(buyer.address, buyer, highS));
    expect(refused.body).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_signature",
    });
    // The buyer reads the reason's one line; why exactly (the s in the upper half) stays in the operator's log.
    expect(refused.body.errorMessage).toBe(
      "The signature does not authorize this transfer for the payer.",
    );
  }, 60_000);

  test("a smart-wallet payer (ERC-1271) is accepted and settled", async () => {
    expect(devnet.wallet).toBeDefined();
    const body = await handSignedBody(devnet.wallet!, privateKeyToAccount(devnet.privateKeys[1]!));
    expect((await post("verify", body)).body).toMatchObject({
      isValid: true,
      payer: devnet.wallet,
    });
    const settled = await post("settle", body);
    expect(settled.body, JSON.stringify(settled.body)).toMatchObject({
      success: true,
      payer: devnet.wallet,
    });
    await waitFor(
      async () =>
        authorizationState(
          devnet.wallet!,
          body.paymentPayload.payload.authorization.nonce as Hex,
        ).then((used) => used || undefined),
      20_000,
      "the wallet's payment",
      100,
    );
  }, 60_000);

  test("the payment-identifier binds an id to its payload: the same id with another payload is refused with 409", async () => {
    const extensions = (id: string) => ({
      "payment-identifier": { info: { required: false, id } },
    });
    const id = `pay_${Date.now()}_abcdefghij`;
    const first = await paymentBody(buyer, (b) => (b.paymentPayload.extensions = extensions(id)));
    const settled = await post("settle", first);
    expect(settled.body, JSON.stringify(settled.body)).toMatchObject({ success: true });
    expect((await post("settle", first)).body).toMatchObject({
      success: true,
      transaction: settled.body.transaction,
    });
    const other = await paymentBody(buyer, (b) => (b.paymentPayload.extensions = extensions(id)));
    const conflict = await post("settle", other);
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({
      success: false,
      errorReason: "payment_identifier_conflict",
    });
    expect(
      await authorizationState(
        buyer.address,
        other.paymentPayload.payload.authorization.nonce as Hex,
      ),
    ).toBe(false);
  }, 60_000);

  test("load: 200 payments from 20 payers at concurrency 20 through one relayer all land, no nonce gap, nothing sent twice", async () => {
    const relayer = privateKeyToAccount(devnet.privateKeys[6]!).address;
    const payers = Array.from({ length: 20 }, (_, i) =>
      privateKeyToAccount(keccak256(stringToHex(`load payer ${i}`))),
    );
    // Payers only sign; the token is minted to them by the deployer.
    const deployer = createWalletClient({
      account: privateKeyToAccount(devnet.privateKeys[0]!),
      transport: http(devnet.httpUrl),
    });
    let deployerNonce = await client.getTransactionCount({
      address: deployer.account.address,
      blockTag: "pending",
    });
    const mints: Hex[] = [];
    for (const payer of payers)
      mints.push(
        await deployer.writeContract({
          address: devnet.token,
          abi: flashTestTokenAbi,
          functionName: "mint",
          args: [payer.address, offer.amount * 10n],
          chain: null,
          nonce: deployerNonce++,
        }),
      );
    for (const mint of mints)
      expect(
        (
          await client.waitForTransactionReceipt({
            hash: mint,
            pollingInterval: 100,
            timeout: 90_000,
          })
        ).status,
      ).toBe("success");
    await waitFor(
      async () =>
        (await balanceOf(payers.at(-1)!.address)) === offer.amount * 10n ? true : undefined,
      30_000,
      "the minted balances",
      100,
    );

    const startNonce = await client.getTransactionCount({ address: relayer, blockTag: "latest" });
    const bodies = await Promise.all(
      Array.from({ length: 200 }, (_, i) => paymentBody(payers[i % 20]!)),
    );
    const answers: Array<Record<string, unknown>> = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next < bodies.length) answers.push((await post("settle", bodies[next++]!)).body);
      }),
    );
    expect(
      answers.filter((a) => a.success !== true),
      JSON.stringify(answers.find((a) => a.success !== true)),
    ).toEqual([]);
    const hashes = new Set(answers.map((a) => a.transaction as Hex));
    expect(hashes.size).toBe(200);

    // Every one in a block, the relayer's nonces exactly 200 further, none left pending: no gap, no second broadcast that landed.
    await waitFor(
      async () =>
        (await client.getTransactionCount({ address: relayer, blockTag: "latest" })) ===
        startNonce + 200
          ? true
          : undefined,
      60_000,
      "200 relayer transactions mined",
      200,
    );
    expect(await client.getTransactionCount({ address: relayer, blockTag: "pending" })).toBe(
      startNonce + 200,
    );
    for (const body of bodies)
      expect(
        await authorizationState(
          body.paymentPayload.payload.authorization.from as Address,
          body.paymentPayload.payload.authorization.nonce as Hex,
        ),
      ).toBe(true);
    const nonces = new Set(
      bodies.map((b) => (b.paymentPayload.payload.authorization.nonce as string).toLowerCase()),
    );
    await waitFor(
      () =>
        orderRows().filter((o) => nonces.has(o.nonce) && o.state === "captured").length === 200
          ? true
          : undefined,
      60_000,
      "200 captured orders",
      200,
    );
    expect(
      new Set(
        orderRows()
          .filter((o) => nonces.has(o.nonce))
          .map((o) => o.event_tx_hash),
      ),
    ).toEqual(hashes);
    expect(mints).toHaveLength(20);
  }, 300_000);

  test("without the bearer token, or with another, /verify and /settle answer 401 and send nothing; /supported stays open", async () => {
    const body = await paymentBody();
    for (const headers of [
      {},
      { authorization: "Bearer wrong-token" },
      { authorization: TOKEN },
      { authorization: `Bearer ${TOKEN}x` },
    ]) {
      for (const path of ["verify", "settle"]) {
        const response = await fetch(`${facilitatorUrl}/${path}`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify(body),
        });
        expect(response.status, `${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(response.headers.get("www-authenticate")).toContain("Bearer");
      }
    }
    expect(
      await authorizationState(
        buyer.address,
        body.paymentPayload.payload.authorization.nonce as Hex,
      ),
    ).toBe(false);
    expect((await fetch(`${facilitatorUrl}/supported`)).status).toBe(200);
    expect(daemon!.output().stdout).not.toContain(TOKEN);
  });

  test("hostile bodies: not JSON is 400, an oversized body 413, another route 404; none reaches the chain", async () => {
    const notJson = await fetch(`${facilitatorUrl}/settle`, {
      method: "POST",
      headers: AUTH,
      body: "{nope",
    });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ success: false, errorReason: "invalid_payload" });
    const huge = await fetch(`${facilitatorUrl}/verify`, {
      method: "POST",
      headers: AUTH,
      body: JSON.stringify({ pad: "x".repeat(70_000) }),
    });
    expect(huge.status).toBe(413);
    expect((await fetch(`${facilitatorUrl}/other`, { method: "POST", body: "{}" })).status).toBe(
      404,
    );
    expect(
      (await post("verify", { x402Version: 3, paymentPayload: { x402Version: 3 } })).body,
    ).toMatchObject({ isValid: false, invalidReason: "invalid_x402_version" });
    expect((await post("verify", { x402Version: 1 })).body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_payload",
    });
  });
});
