import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HTTPFacilitatorClient } from "@x402/core/server";
import {
  createPublicClient,
  http,
  keccak256,
  stringToHex,
  type Address,
  type Hex,
  type PublicClient,
} from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createCaptureRelay } from "../../src/authorization/captureRelay.js";
import {
  readTokenDomain,
  signTransferAuthorization,
  type TokenDomain,
} from "../../src/authorization/eip3009.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { ConfigError } from "../../src/errors/base.js";
import { createMetrics } from "../../src/ops/metrics.js";
import {
  startFacilitatorServer,
  type FacilitatorServer,
} from "../../src/settle/facilitatorServer.js";
import { evmNetwork } from "../../src/settle/wire.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { sqliteBackend } from "../helpers/backends.js";
import { anvilConfigFile, spawnCli } from "../helpers/cli.js";
import { createMemoryLogger, testConfig, testDeps } from "../helpers/context.js";
import {
  startScriptedRpcServer,
  type Reply,
  type RpcRequest,
} from "../helpers/scriptedRpcServer.js";
import {
  referencePaymentBody,
  referenceV1PaymentBody,
  startReferenceFacilitator,
  type ExactOffer,
  type RunningServer,
} from "../helpers/x402.js";
import { createDevnetFacilitator } from "../helpers/devnetFacilitator.js";

/**
 * flashindex's facilitator on the wire, over real HTTP, beside the reference facilitator
 * (@x402/core's x402Facilitator with @x402/evm's exact scheme) on the same devnet: bearer tokens,
 * what a buyer may read in an answer, the network echoed, x402 v1, and the reasons of refusals.
 * flashindex reaches the chain through a scripted RPC front that can be told to fail the way
 * providers fail, so every answer can be scanned for what must never leave the operator's log.
 */

const TOKEN = "wire-test-token-0123456789abcdef";
/** Multicall3's address on every chain that has it (Base included). */
const MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11";
/** A provider's failure text, as hosted nodes word them: the endpoint, a balance, an internal id. */
const SECRET_HOST = "base-mainnet.secret-provider.example";
const NODE_TEXT = `backend ${SECRET_HOST}/v2/k3y-s3cr3t failed: insufficient funds for gas * price + value: have 123456789012 want 999999999999 (order 4242)`;

let devnet: Devnet;
let chain: PublicClient;
let domain: TokenDomain;
let offer: ExactOffer;
let store: Store;
let server: FacilitatorServer;
let reference: RunningServer & { address: Address };
let rpcFront: Awaited<ReturnType<typeof startScriptedRpcServer>>;
let logLines: Array<Record<string, unknown>>;
/** When set, answers the RPC requests it returns a reply for; the rest go to the devnet. */
let fault: ((request: RpcRequest) => Reply | undefined) | undefined;
const buyer = () => privateKeyToAccount(devnet.privateKeys[1]!);
const shop = () => privateKeyToAccount(devnet.privateKeys[2]!);
/** Holds no test token. */
const poor = () => privateKeyToAccount(devnet.privateKeys[7]!);

type Posted = {
  status: number;
  requestId: string | null;
  text: string;
  body: Record<string, unknown>;
};
type Body = Awaited<ReturnType<typeof referencePaymentBody>>;

async function postTo(
  url: string,
  path: "verify" | "settle",
  body: unknown,
  authorization: string | undefined = `Bearer ${TOKEN}`,
): Promise<Posted> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (authorization !== undefined) headers.authorization = authorization;
  const response = await fetch(`${url}/${path}`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    requestId: response.headers.get("x-request-id"),
    text,
    body: JSON.parse(text) as Record<string, unknown>,
  };
}
const ours = (path: "verify" | "settle", body: unknown) => postTo(server.url, path, body);
const theirs = (path: "verify" | "settle", body: unknown) =>
  postTo(reference.url, path, body, undefined);

/** A body signed as the reference client signs it, then changed by `edit`. */
async function paymentBody(
  account: PrivateKeyAccount = buyer(),
  edit: (body: Body) => void = () => undefined,
  changes: Partial<ExactOffer> = {},
): Promise<Body> {
  const body = await referencePaymentBody(account, { ...offer, ...changes });
  edit(body);
  return body;
}

/** A body whose authorization (from `from`, times and value as given) is signed by `signer`. */
async function handSigned(
  from: Address,
  signer: PrivateKeyAccount,
  fields: { validAfter?: bigint; validBefore?: bigint; value?: bigint; nonce?: Hex } = {},
): Promise<Body> {
  const body = await referencePaymentBody(buyer(), offer);
  const now = BigInt(Math.floor(Date.now() / 1000));
  const message = {
    from,
    to: offer.payTo,
    value: fields.value ?? offer.amount,
    validAfter: fields.validAfter ?? now - 600n,
    validBefore: fields.validBefore ?? now + 300n,
    nonce: fields.nonce ?? keccak256(stringToHex(`wire ${Math.random()}`)),
  };
  const { signature } = await signTransferAuthorization(signer, domain, message);
  body.paymentPayload.payload = {
    signature,
    authorization: Object.fromEntries(
      Object.entries(message).map(([key, value]) => [key, String(value)]),
    ),
  };
  return body;
}

/** Forwards one JSON-RPC request to the devnet as it came. */
async function forward(request: RpcRequest): Promise<Reply> {
  const response = await fetch(devnet.httpUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", ...request }),
  });
  const answer = (await response.json()) as {
    result?: unknown;
    error?: { code: number; message: string; data?: unknown };
  };
  return answer.error === undefined ? { result: answer.result ?? null } : { error: answer.error };
}

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 400, flashblockIntervalMs: 50, port: 0 });
  chain = createPublicClient({ transport: http(devnet.httpUrl) });
  domain = await readTokenDomain(chain, devnet.token);
  offer = {
    chainId: devnet.chainId,
    token: devnet.token,
    name: domain.name,
    version: domain.version,
    payTo: shop().address,
    amount: 10_000n,
  };
  await installMulticall3(devnet.httpUrl);
  rpcFront = await startScriptedRpcServer((request) => fault?.(request) ?? forward(request));

  const config = testConfig({
    chainId: devnet.chainId,
    rpc: { http: [rpcFront.url], retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 5 } },
    database: await sqliteBackend.freshDatabase(),
    logLevel: "silent",
  });
  const metrics = createMetrics({ defaultMetrics: false });
  store = await openStore(config, { metrics });
  const client = createRpcClient(testDeps(config));
  const relayer = privateKeyToAccount(devnet.privateKeys[8]!);
  const memory = createMemoryLogger("debug");
  logLines = memory.lines;
  const relay = createCaptureRelay({
    client,
    store,
    chainId: devnet.chainId,
    relayer,
    logger: memory.logger,
  });
  const facilitator = createDevnetFacilitator(
    { client, store, relay, logger: memory.logger },
    devnet,
    domain,
    relayer.address,
    { metrics },
  );
  server = await startFacilitatorServer({ logger: memory.logger }, facilitator, {
    host: "127.0.0.1",
    port: 0,
    authToken: TOKEN,
    maxBodyBytes: 65_536,
    settleTimeoutMs: 10_000,
    network: evmNetwork(devnet.chainId),
  });
  reference = await startReferenceFacilitator({
    rpcUrl: devnet.httpUrl,
    chainId: devnet.chainId,
    privateKey: devnet.privateKeys[6]!,
    receiptPollingMs: 100,
  });
}, 90_000);

afterAll(async () => {
  await server?.close();
  await reference?.close();
  await rpcFront?.close();
  await store?.close();
  await devnet?.stop();
});

describe("the facilitator's bearer token", () => {
  test("refuses to listen off loopback without a token, naming the setting", async () => {
    const { logger } = createMemoryLogger("silent");
    const started = startFacilitatorServer({ logger }, createFacilitatorStub(), {
      host: "0.0.0.0",
      port: 0,
      authToken: undefined,
      maxBodyBytes: 1_024,
      settleTimeoutMs: 1_000,
      network: "eip155:8453",
    });
    await expect(started).rejects.toBeInstanceOf(ConfigError);
    await expect(started).rejects.toMatchObject({ field: "facilitator.authTokenEnv" });
  });

  test("flashindex start off loopback without authTokenEnv exits 2 with one line naming the setting", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flashindex-wire-"));
    try {
      const configPath = anvilConfigFile(dir, "open", devnet.httpUrl, devnet.token, {
        facilitator: { enabled: true, host: "0.0.0.0", port: 0, payTo: [shop().address] },
      });
      const child = spawnCli(["start", "--config", configPath], {
        FLASHINDEX_RELAYER_KEY: devnet.privateKeys[8]!,
      });
      const code = await new Promise<number | string | null>((resolve) => {
        const timer = setTimeout(() => {
          child.kill("SIGKILL");
          resolve("still running: it started");
        }, 20_000);
        child.once("exit", (exitCode) => {
          clearTimeout(timer);
          resolve(exitCode);
        });
      });
      const stderr = child.output().stderr.trim();
      expect(code, stderr).toBe(2);
      expect(stderr.split("\n")).toHaveLength(1);
      expect(stderr).toContain(
        "facilitator.authTokenEnv: is required while the facilitator listens on 0.0.0.0",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  test("accepts the Bearer scheme in any case (RFC 9110 §11.1), refuses a wrong token or another scheme", async () => {
    const body = await paymentBody();
    for (const header of [
      `bearer ${TOKEN}`,
      `BEARER ${TOKEN}`,
      `Bearer  ${TOKEN}`,
      `bEaReR ${TOKEN}`,
    ]) {
      const answer = await postTo(server.url, "verify", body, header);
      expect({ header, status: answer.status, body: answer.body }).toMatchObject({
        header,
        status: 200,
        body: { isValid: true },
      });
    }
    for (const header of [
      `Bearer ${TOKEN.slice(0, -1)}`,
      `Bearer ${TOKEN}x`,
      `Basic ${TOKEN}`,
      `Bearer`,
      TOKEN,
      `Bearer ${TOKEN} extra`,
    ]) {
      const answer = await postTo(server.url, "settle", body, header);
      expect({ header, status: answer.status }).toEqual({ header, status: 401 });
    }
    expect(
      await chain.readContract({
        address: devnet.token,
        abi: flashTestTokenAbi,
        functionName: "authorizationState",
        args: [buyer().address, body.paymentPayload.payload.authorization.nonce as Hex],
      }),
    ).toBe(false);
    // The reference's HTTPFacilitatorClient, its auth header written in lower case, is let in.
    const lower = { authorization: `bearer ${TOKEN}` };
    const client = new HTTPFacilitatorClient({
      url: server.url,
      createAuthHeaders: async () => ({ verify: lower, settle: lower, supported: lower }),
    });
    await expect(
      client.verify(body.paymentPayload, body.paymentRequirements),
    ).resolves.toMatchObject({ isValid: true, payer: buyer().address });
  });
});

describe("what a buyer reads in an answer", () => {
  /** Everything of the operator's that must never reach a buyer. */
  const forbidden = () => [
    SECRET_HOST,
    "k3y-s3cr3t",
    "123456789012",
    "999999999999",
    "insufficient funds for gas",
    "4242",
    rpcFront.url,
    new URL(rpcFront.url).host,
    "127.0.0.1",
    devnet.httpUrl,
  ];

  function expectClean(what: string, answer: Posted): void {
    for (const text of forbidden())
      expect(answer.text, `${what}: the answer quotes ${text}`).not.toContain(text);
    // Not String(): a message that is not a string must fail toMatch, not pass as "[object Object]".
    const message = answer.body.invalidMessage ?? answer.body.errorMessage ?? "";
    expect(message, what).not.toMatch(/\n|order \d|https?:\/\//i);
  }

  test.each<[string, (request: RpcRequest) => Reply | undefined]>([
    [
      "a node error quoting its endpoint, the relayer's balance and an id",
      (r) =>
        r.method === "eth_estimateGas"
          ? { error: { code: -32603, message: NODE_TEXT } }
          : undefined,
    ],
    [
      "503s naming the provider (the retries end naming the endpoint's host)",
      (r) =>
        r.method === "eth_estimateGas"
          ? { http: 503, body: `upstream ${SECRET_HOST} unavailable` }
          : undefined,
    ],
    [
      "eth_estimateGas failing with the node's text",
      (r) =>
        r.method === "eth_estimateGas"
          ? { error: { code: -32000, message: NODE_TEXT } }
          : undefined,
    ],
  ])(
    "verify and settle with %s: unexpected_*_error with a fixed line; the log keeps the detail under the request id",
    async (_what, script) => {
      const body = await paymentBody();
      fault = script;
      try {
        const verified = await ours("verify", body);
        expect(verified.body).toMatchObject({
          isValid: false,
          invalidReason: "unexpected_verify_error",
          payer: buyer().address,
        });
        expectClean("verify", verified);
        const settled = await ours("settle", body);
        expect(settled.body).toMatchObject({
          success: false,
          errorReason: "unexpected_settle_error",
          transaction: "",
        });
        expectClean("settle", settled);
        // The buyer can quote the id; the operator's log has what happened under it.
        for (const answer of [verified, settled]) {
          expect(answer.requestId).toMatch(/^[0-9a-f-]{36}$/);
          expect(String(answer.body.invalidMessage ?? answer.body.errorMessage)).toContain(
            answer.requestId!,
          );
          const logged = logLines.find(
            (line) => line.request_id === answer.requestId && line.msg === "Refused payment",
          );
          expect(logged, JSON.stringify(logLines.slice(-5))).toBeDefined();
          expect(String(logged!.detail)).toMatch(/secret-provider|failed after/);
        }
      } finally {
        fault = undefined;
      }
      expect(
        await chain.readContract({
          address: devnet.token,
          abi: flashTestTokenAbi,
          functionName: "authorizationState",
          args: [buyer().address, body.paymentPayload.payload.authorization.nonce as Hex],
        }),
      ).toBe(false);
    },
    60_000,
  );

  test("a send refused by the node with the relayer's balance is answered without it", async () => {
    const body = await paymentBody();
    fault = (r) =>
      r.method === "eth_sendRawTransaction" || r.method === "eth_estimateGas"
        ? { error: { code: -32000, message: NODE_TEXT } }
        : undefined;
    try {
      const settled = await ours("settle", body);
      expect(settled.body).toMatchObject({ success: false, transaction: expect.any(String) });
      expectClean("settle", settled);
    } finally {
      fault = undefined;
    }
  }, 60_000);

  test("a second authorization on a nonce already recorded is refused without naming the stored order", async () => {
    const nonce = keccak256(stringToHex(`reused ${Math.random()}`));
    const first = await handSigned(buyer().address, buyer(), { nonce });
    expect((await ours("settle", first)).body, "the first payment").toMatchObject({
      success: true,
    });
    const second = await handSigned(buyer().address, buyer(), { nonce, value: offer.amount * 2n });
    second.paymentRequirements.amount = String(offer.amount * 2n);
    const refused = await ours("settle", second);
    expect(refused.body).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_nonce_already_used",
    });
    expectClean("settle", refused);
    expect(String(refused.body.errorMessage)).not.toMatch(/order/i);
  }, 60_000);

  test("every refusal reads one fixed line per reason: refusals of the same reason say the same", async () => {
    const a = await ours(
      "verify",
      await paymentBody(buyer(), (b) => void (b.paymentRequirements.amount = "1")),
    );
    const b = await ours(
      "verify",
      await paymentBody(buyer(), (b) => void (b.paymentRequirements.amount = "99999")),
    );
    expect(a.body.invalidReason).toBe("invalid_exact_evm_payload_authorization_value_mismatch");
    expect(a.body.invalidMessage).toBe(b.body.invalidMessage);
    expect(String(a.body.invalidMessage)).not.toMatch(/99999|\b1\b/);
  });
});

describe("wire parity with the reference facilitator", () => {
  test("a settle refusal names the network the request named, as the reference does, and HTTPFacilitatorClient reads it", async () => {
    const body = await paymentBody(
      buyer(),
      (b) => void (b.paymentPayload.accepted.network = "eip155:84532"),
    );
    const [mine, theirAnswer] = await Promise.all([ours("settle", body), theirs("settle", body)]);
    expect(theirAnswer.body).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_network_mismatch",
      network: "eip155:84532",
    });
    expect(mine.body).toMatchObject({
      success: false,
      errorReason: theirAnswer.body.errorReason,
      network: theirAnswer.body.network,
      transaction: "",
    });
    // Requirements on a chain this facilitator does not settle: refused, and that network echoed.
    const elsewhere = await paymentBody(buyer(), (b) => {
      b.paymentRequirements.network = "eip155:84532";
      b.paymentPayload.accepted.network = "eip155:84532";
    });
    const auth = { authorization: `Bearer ${TOKEN}` };
    const client = new HTTPFacilitatorClient({
      url: server.url,
      createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: auth }),
    });
    await expect(
      client.settle(elsewhere.paymentPayload, elsewhere.paymentRequirements),
    ).resolves.toMatchObject({
      success: false,
      errorReason: "invalid_network",
      network: "eip155:84532",
    });
  }, 60_000);

  test("refusals carry the reference's reasons for the same failures, on /verify and /settle", async () => {
    const now = BigInt(Math.floor(Date.now() / 1000));
    const usedOnChain = await paymentBody();
    expect(
      (await theirs("settle", usedOnChain)).body,
      "the reference settles it first",
    ).toMatchObject({ success: true });
    // The reference answers once a node shows the receipt; its verify simulates at latest, so wait for the chain to agree.
    const usedNonce = usedOnChain.paymentPayload.payload.authorization.nonce as Hex;
    await expect
      .poll(
        () =>
          chain.readContract({
            address: devnet.token,
            abi: flashTestTokenAbi,
            functionName: "authorizationState",
            args: [buyer().address, usedNonce],
          }),
        { timeout: 20_000, interval: 100 },
      )
      .toBe(true);
    const cases: Array<[string, () => Promise<unknown>, "both" | "verify"]> = [
      [
        "amount above the authorized value",
        () =>
          paymentBody(
            buyer(),
            (b) => void (b.paymentRequirements.amount = String(offer.amount + 1n)),
          ),
        "both",
      ],
      [
        "payTo other than the authorization's to",
        () => paymentBody(buyer(), (b) => void (b.paymentRequirements.payTo = poor().address)),
        "both",
      ],
      [
        "validBefore under 6 s away",
        () => paymentBody(buyer(), () => undefined, { maxTimeoutSeconds: 3 }),
        "both",
      ],
      [
        "validAfter an hour ahead",
        () =>
          handSigned(buyer().address, buyer(), {
            validAfter: now + 3600n,
            validBefore: now + 7200n,
          }),
        "both",
      ],
      [
        "accepted on another network",
        () =>
          paymentBody(buyer(), (b) => void (b.paymentPayload.accepted.network = "eip155:84532")),
        "both",
      ],
      [
        "accepted under another scheme",
        () => paymentBody(buyer(), (b) => void (b.paymentPayload.accepted.scheme = "upto")),
        "both",
      ],
      [
        "requirements without the EIP-712 name",
        () =>
          paymentBody(
            buyer(),
            (b) => void delete (b.paymentRequirements.extra as Record<string, unknown>).name,
          ),
        "both",
      ],
      ["a payer without the balance", () => paymentBody(poor()), "both"],
      ["a stranger's signature", () => handSigned(buyer().address, shop()), "both"],
      ["a nonce already used on chain", async () => usedOnChain, "both"],
      [
        "v1: a value other than maxAmountRequired",
        async () => {
          const body = await referenceV1PaymentBody(buyer(), offer, "base");
          body.paymentRequirements.maxAmountRequired = String(offer.amount + 1n);
          return body;
        },
        "both",
      ],
      [
        "v1: a payload on another v1 network",
        async () => {
          const body = await referenceV1PaymentBody(buyer(), offer, "base");
          body.paymentPayload.network = "base-sepolia";
          return body;
        },
        "both",
      ],
      [
        "v1: payTo other than the authorization's to",
        async () => {
          const body = await referenceV1PaymentBody(buyer(), offer, "base");
          body.paymentRequirements.payTo = poor().address;
          return body;
        },
        "both",
      ],
      // The reference's v1 settle answers a failed send with the node's message as the reason; only verify is comparable.
      [
        "v1: a payer without the balance",
        () => referenceV1PaymentBody(poor(), offer, "base"),
        "verify",
      ],
    ];
    for (const [what, make, endpoints] of cases) {
      const body = await make();
      const [mine, theirAnswer] = await Promise.all([ours("verify", body), theirs("verify", body)]);
      expect(theirAnswer.body.isValid, `${what}: the reference refuses it`).toBe(false);
      expect({
        what,
        isValid: mine.body.isValid,
        reason: mine.body.invalidReason,
        payer: mine.body.payer,
      }).toEqual({
        what,
        isValid: false,
        reason: theirAnswer.body.invalidReason,
        payer: theirAnswer.body.payer,
      });
      if (endpoints === "verify") continue;
      const settledByUs = await ours("settle", body);
      const settledByThem = await theirs("settle", body);
      const shape = (answer: Posted) => ({
        what,
        success: answer.body.success,
        reason: answer.body.errorReason,
        network: answer.body.network,
        transaction: answer.body.transaction,
        payer: answer.body.payer,
      });
      expect(shape(settledByUs)).toEqual(shape(settledByThem));
    }
  }, 180_000);

  test("an x402 v1 payment (maxAmountRequired, network base) is verified and settled as the reference does", async () => {
    const [forUs, forThem] = await Promise.all([
      referenceV1PaymentBody(buyer(), offer, "base"),
      referenceV1PaymentBody(buyer(), offer, "base"),
    ]);
    const [verifiedByUs, verifiedByThem] = await Promise.all([
      ours("verify", forUs),
      theirs("verify", forThem),
    ]);
    expect(verifiedByThem.body).toMatchObject({ isValid: true, payer: buyer().address });
    expect(verifiedByUs.body).toMatchObject({ isValid: true, payer: verifiedByThem.body.payer });
    const settledByThem = await theirs("settle", forThem);
    const settledByUs = await ours("settle", forUs);
    expect(settledByThem.body).toMatchObject({
      success: true,
      network: "base",
      payer: buyer().address,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(settledByUs.body).toMatchObject({
      success: true,
      network: "base",
      payer: buyer().address,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    for (const body of [forUs, forThem]) {
      const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
      await expect
        .poll(
          () =>
            chain.readContract({
              address: devnet.token,
              abi: flashTestTokenAbi,
              functionName: "authorizationState",
              args: [buyer().address, nonce],
            }),
          { timeout: 20_000, interval: 100 },
        )
        .toBe(true);
    }
    // /supported lists the v1 kind under the chain's v1 name, as the reference lists its v1 scheme.
    const supported = (await (await fetch(`${server.url}/supported`)).json()) as {
      kinds: Array<{ x402Version: number; network: string }>;
    };
    const theirSupported = (await (await fetch(`${reference.url}/supported`)).json()) as {
      kinds: Array<{ x402Version: number; network: string }>;
    };
    expect(theirSupported.kinds).toContainEqual(
      expect.objectContaining({ x402Version: 1, network: "base" }),
    );
    expect(supported.kinds).toContainEqual(
      expect.objectContaining({ x402Version: 1, scheme: "exact", network: "base" }),
    );
  }, 90_000);
});

/**
 * Multicall3 at its canonical address, as every Base chain has it: the reference explains a failed
 * simulation with one multicall (balance, name, version, authorizationState) and, without it,
 * answers the generic simulation_failed. viem carries the creation code; an eth_call of it
 * returns the runtime code, which anvil_setCode puts in place.
 */
async function installMulticall3(rpcUrl: string): Promise<void> {
  const source = readFileSync(
    createRequire(import.meta.url)
      .resolve("viem")
      .replace(/_cjs[\\/]index\.js$/, "_esm/constants/contracts.js"),
    "utf8",
  );
  const creation = /multicall3Bytecode = '(0x[0-9a-f]+)'/.exec(source)?.[1];
  if (creation === undefined) throw new Error("viem's Multicall3 creation code was not found");
  const rpc = async (method: string, params: unknown[]) => {
    const answer = (await (
      await fetch(rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      })
    ).json()) as { result?: unknown; error?: unknown };
    if (answer.error !== undefined) throw new Error(`${method}: ${JSON.stringify(answer.error)}`);
    return answer.result;
  };
  const runtime = await rpc("eth_call", [{ data: creation }, "latest"]);
  await rpc("anvil_setCode", [MULTICALL3, runtime]);
}

/** A facilitator that is never called: for start-up checks that refuse before serving. */
function createFacilitatorStub(): Parameters<typeof startFacilitatorServer>[1] {
  const never = () => Promise.reject(new Error("not expected to be called"));
  return {
    supported: () => ({ kinds: [], extensions: [], signers: {} }),
    verify: never,
    settle: never,
  };
}
