import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keccak256, stringToHex } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { openStore } from "../../src/store/openStore.js";
import { BACKENDS, stopFileBackends } from "../helpers/backends.js";
import { spawnCli, writeConfig } from "../helpers/cli.js";
import { testConfig } from "../helpers/context.js";
import { createPayer, waitFor } from "../helpers/devnetPayments.js";
import { startWebhookReceiver } from "../helpers/webhookReceiver.js";

/** Debian's chromium package; the test drives it with playwright-core (no browser download). */
const CHROMIUM = "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(
    `Skipping the status page browser test: ${CHROMIUM} is not installed (apt-get install -y chromium; .ci/run does it).`,
  );

const SHOP = "0x000000000000000000000000000000000000c0de";
const LABEL = `USDC <b>test</b> & "quotes"`;

let devnet: Devnet;
let dir: string;
beforeAll(async () => {
  if (!hasChromium) return;
  // Blocks every 1.5 s: time to drop a pre-confirmed transaction before its block is made.
  devnet = await startDevnet({ blockTimeMs: 1_500, flashblockIntervalMs: 150 });
  dir = mkdtempSync(join(tmpdir(), "flashindex-status-page-"));
}, 60_000);
afterAll(async () => {
  await devnet?.stop();
  await stopFileBackends();
});

describe.skipIf(!hasChromium).each(BACKENDS)(
  "status page in a real browser on $name",
  (backend) => {
    test("GET / on the metrics port shows a live daemon's head, backfill, lead time, payments, drops, orders and webhook deliveries", async () => {
      const { chromium } = await import("playwright-core");
      const receiver = await startWebhookReceiver("s3cret");
      const database =
        backend.name === "sqlite"
          ? { path: join(dir, "status.db") }
          : await backend.freshDatabase();
      const config = writeConfig(
        dir,
        {
          chainId: devnet.chainId,
          rpc: {
            http: [devnet.httpUrl],
            ws: devnet.wsUrl,
            preconfWs: devnet.wsUrl,
            retry: { maxAttempts: 4, initialDelayMs: 20, maxDelayMs: 200 },
          },
          tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock, label: LABEL }],
          finality: { depth: 3 },
          realtime: { headPollIntervalMs: 200, pendingPollIntervalMs: 200 },
          database,
          metrics: { enabled: true, host: "127.0.0.1", port: 0 },
          logLevel: "info",
          webhooks: [
            {
              url: receiver.url,
              secretEnv: "FLASHINDEX_TEST_STATUS_SECRET",
              allowPrivateTargets: true,
            },
          ],
        },
        `config-${backend.name}.json`,
      );
      const setup = await openStore(
        testConfig({ chainId: devnet.chainId, rpc: { http: [devnet.httpUrl] }, database }),
        { metrics: createMetrics({ defaultMetrics: false }) },
      );
      await setup.addOrder(
        {
          chainId: devnet.chainId,
          token: devnet.token,
          authorizer: SHOP,
          payee: SHOP,
          value: 5n,
          validAfter: 0,
          validBefore: 4_000_000_000,
          nonce: keccak256(stringToHex("status page order")),
          kind: "transfer",
          signature: `0x${"11".repeat(65)}`,
        },
        Date.now(),
      );
      await setup.close();

      const daemon = spawnCli(["start", "--config", config], {
        FLASHINDEX_TEST_STATUS_SECRET: "s3cret",
      });
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
        (resolve) => daemon.on("exit", (code, signal) => resolve({ code, signal })),
      );
      const browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ["--no-sandbox", "--disable-gpu"],
      });
      try {
        await waitFor(
          () => daemon.output().stdout.includes("Caught up with the head"),
          30_000,
          "catch-up",
        );
        const url = (
          JSON.parse(
            daemon
              .output()
              .stdout.split("\n")
              .find((l) => l.includes("Started metrics and health server"))!,
          ) as { url: string }
        ).url;
        const payer = createPayer(devnet);
        const seen = (tx: string, type: string) =>
          receiver.delivered().some((r) => r.type === type && r.body.log.tx_hash === tx);
        // The lead time needs a payment seen pre-confirmed before its block. One whose flashblock came
        // just before its block can be seen confirmed first (rightly: no pre-confirmation then), so pay again.
        let paid = await payer.pay(SHOP, 2);
        for (let attempt = 1; ; attempt++) {
          await waitFor(() => seen(paid, "payment.confirmed"), 30_000, "a delivered webhook");
          if (seen(paid, "payment.preconfirmed") || attempt === 3) break;
          paid = await payer.pay(SHOP, 2);
        }
        const dropped = await payer.pay(SHOP);
        // Dropped once pre-confirmed (and announced to the receiver): the block it was announced for then comes without it.
        await waitFor(
          () => seen(dropped, "payment.preconfirmed"),
          10_000,
          "the pre-confirmation delivered",
        );
        await payer.rpc("devnet_dropPreconfirmed", [dropped]);
        payer.resync();
        await waitFor(() => seen(dropped, "payment.removed"), 30_000, "the drop delivered");

        const page = await browser.newPage();
        const outside: string[] = [];
        page.on("request", (request) => {
          if (!request.url().startsWith(url)) outside.push(request.url());
        });
        const dialogs: string[] = [];
        page.on(
          "dialog",
          (dialog) => void dialog.dismiss().then(() => dialogs.push(dialog.message())),
        );
        const response = await page.goto(`${url}/`);
        expect(response?.status()).toBe(200);
        expect(await page.title()).toBe(`flashindex status · chain ${devnet.chainId}`);
        expect(await page.locator('meta[http-equiv="refresh"]').getAttribute("content")).toBe("5");

        const section = (id: string) => page.locator(`section#${id}`);
        expect(await section("head").innerText()).toMatch(/Chain head\s+\d+/);
        const backfill = await section("backfill").innerText();
        expect(backfill).toContain(LABEL);
        expect(backfill).toContain(devnet.token);
        expect(backfill).toMatch(/100%/);
        expect(await section("lead-time").innerText()).toMatch(/p50\s+\d+ ms\s+p99\s+\d+ ms/);
        const payments = await section("payments").innerText();
        expect(payments).toContain(`${paid.slice(0, 8)}…${paid.slice(-4)}`);
        expect(payments).toMatch(/\b(confirmed|finalized)\b/);
        const reorgs = await section("reorgs").innerText();
        expect(reorgs).toMatch(/Dropped pre-confirmations\s+[1-9]/);
        expect(reorgs).toContain(`${dropped.slice(0, 8)}…${dropped.slice(-4)}`);
        expect(await section("orders").innerText()).toMatch(/authorized\s+1/);
        const webhooks = await section("webhooks").innerText();
        expect(webhooks).toMatch(/Subscriptions\s+1/);
        expect(webhooks).toMatch(/[1-9]\d* delivered/);
        expect(webhooks).toContain("payment.removed");
        // Escaped: the label's markup is text, nothing ran, nothing came from elsewhere.
        expect(await page.locator("section#backfill b").count()).toBe(0);
        expect(await page.locator("script").count()).toBe(0);
        expect({ outside, dialogs }).toEqual({ outside: [], dialogs: [] });
      } finally {
        await browser.close();
        daemon.kill("SIGTERM");
        await receiver.close();
      }
      expect(await exited).toEqual({ code: 0, signal: null });
    }, 120_000);
  },
);
