import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, http, type Address, type Hex, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { readTokenDomain } from "../../src/authorization/eip3009.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { spawnCli, writeConfig } from "../helpers/cli.js";
import { waitFor } from "../helpers/fixtures.js";
import { referencePaymentBody, type ExactOffer } from "../helpers/x402.js";

let devnet: Devnet;
let client: PublicClient;
let dir: string;
let configPath: string;
let offer: ExactOffer;
const daemons: Array<ReturnType<typeof spawnCli>> = [];

/** Starts the daemon and returns it with its facilitator's URL (port 0: a new one each start). */
async function startDaemon(): Promise<{ daemon: ReturnType<typeof spawnCli>; url: string }> {
  const daemon = spawnCli(["start", "--config", configPath], {
    FLASHINDEX_RELAYER_KEY: devnet.privateKeys[6]!,
  });
  daemons.push(daemon);
  const url = await waitFor(
    () => /"msg":"Started x402 facilitator","url":"([^"]+)"/.exec(daemon.output().stdout)?.[1],
    30_000,
    `the facilitator\n${daemon.output().stderr}`,
    50,
  );
  return { daemon, url };
}

async function settle(url: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${url}/settle`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return (await response.json()) as Record<string, unknown>;
}

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 400, flashblockIntervalMs: 50, port: 0 });
  client = createPublicClient({ transport: http(devnet.httpUrl) });
  const domain = await readTokenDomain(client, devnet.token);
  offer = {
    chainId: devnet.chainId,
    token: devnet.token,
    name: domain.name,
    version: domain.version,
    payTo: privateKeyToAccount(devnet.privateKeys[2]!).address,
    amount: 7_000n,
  };
  dir = mkdtempSync(join(tmpdir(), "flashindex-facilitator-crash-"));
  configPath = writeConfig(dir, {
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl], retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 50 } },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
    finality: { depth: 0 },
    realtime: { headPollIntervalMs: 100, pendingPollIntervalMs: 100 },
    database: { path: join(dir, "index.db") },
    metrics: { enabled: false },
    // Answers once in a sealed block: the crash test covers that mode; facilitator.test.ts the pre-confirmed one.
    facilitator: { enabled: true, port: 0, settleWaitsFor: "confirmed" },
  });
}, 60_000);

afterAll(async () => {
  for (const daemon of daemons)
    if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill("SIGKILL");
  await devnet?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("the facilitator after kill -9", () => {
  test("every payment answered as settled lands exactly once; nothing lands twice; a repeat after the restart never answers a second success", async () => {
    const relayer = privateKeyToAccount(devnet.privateKeys[6]!).address;
    const payers = [1, 3, 4, 5].map((i) => privateKeyToAccount(devnet.privateKeys[i]!));
    const bodies = await Promise.all(
      Array.from({ length: 24 }, (_, i) => referencePaymentBody(payers[i % payers.length]!, offer)),
    );
    const startNonce = await client.getTransactionCount({ address: relayer, blockTag: "latest" });

    const first = await startDaemon();
    const answered = new Map<number, Record<string, unknown>>();
    const send = (body: unknown, i: number) =>
      settle(first.url, body).then(
        (answer) => void answered.set(i, answer),
        () => undefined, // the daemon died under it
      );
    // Killed once some settles were answered and others are still under way: a second wave is sent
    // after the first answers, and the kill comes as soon as one of it is broadcast. (One wave of
    // all 24 could be answered in one 400 ms block before a kill after the first answers landed.)
    const firstWave = 12;
    const inFlight = bodies.slice(0, firstWave).map(send);
    await waitFor(() => (answered.size >= 3 ? true : undefined), 30_000, "the first answers", 5);
    const pendingNonce = () =>
      client.getTransactionCount({ address: relayer, blockTag: "pending" });
    const sentBefore = await pendingNonce();
    inFlight.push(...bodies.slice(firstWave).map((body, j) => send(body, firstWave + j)));
    await waitFor(
      async () => ((await pendingNonce()) > sentBefore ? true : undefined),
      30_000,
      "a broadcast of the second wave",
      5,
    );
    const killed = new Promise((resolve) => first.daemon.once("exit", resolve));
    first.daemon.kill("SIGKILL");
    await killed;
    await Promise.all(inFlight);
    expect(answered.size).toBeLessThan(bodies.length);

    const second = await startDaemon();
    const inBlockAtAnswer: boolean[] = [];
    const again = await Promise.all(
      bodies.map(async (body) => {
        const answer = await settle(second.url, body);
        if (answer.success === true) {
          const receipt = await client.getTransactionReceipt({ hash: answer.transaction as Hex });
          inBlockAtAnswer.push(receipt.blockHash !== `0x${"0".repeat(64)}`);
        }
        return answer;
      }),
    );
    // settleWaitsFor "confirmed": every answer came with its transaction already in a block.
    expect(inBlockAtAnswer.filter((inBlock) => !inBlock)).toEqual([]);
    // One payment, at most one success: a repeat of one answered (or claimed) before the kill is
    // refused as a used nonce; the others settle now.
    for (const answer of again)
      if (answer.success !== true)
        expect(answer, JSON.stringify(answer)).toMatchObject({
          errorReason: "invalid_exact_evm_nonce_already_used",
        });
    for (const [i, answer] of answered)
      if (answer.success === true) expect(again[i]!.success).toBe(false);
    const successes = [...[...answered.values()], ...again].filter((a) => a.success === true);
    const hashes = new Set(successes.map((a) => a.transaction as Hex));
    expect(hashes.size).toBe(successes.length);

    // One relayer transaction per authorization used, all mined, none pending: nothing was
    // broadcast twice and landed. A payment claimed by the killed daemon and never sent stays
    // unsent (its claim is held for settleTimeoutMs + 30 s): its repeat was refused above.
    const used = async () => {
      const states = await Promise.all(
        bodies.map((body) => {
          const { from, nonce } = body.paymentPayload.payload.authorization as {
            from: Address;
            nonce: Hex;
          };
          return client.readContract({
            address: devnet.token,
            abi: flashTestTokenAbi,
            functionName: "authorizationState",
            args: [from, nonce],
          });
        }),
      );
      return states;
    };
    const settledNonces = await waitFor(
      async () => {
        const [latest, pending, states] = await Promise.all([
          client.getTransactionCount({ address: relayer, blockTag: "latest" }),
          client.getTransactionCount({ address: relayer, blockTag: "pending" }),
          used(),
        ]);
        const count = states.filter(Boolean).length;
        return latest === pending && latest - startNonce === count && count >= successes.length
          ? states
          : undefined;
      },
      60_000,
      "one relayer transaction per authorization used, none pending",
      500,
    );
    bodies.forEach((_, i) => {
      if (again[i]!.success === true || answered.get(i)?.success === true)
        expect(settledNonces[i]).toBe(true);
    });
    for (const hash of hashes)
      expect((await client.getTransactionReceipt({ hash })).status).toBe("success");
  }, 180_000);
});
