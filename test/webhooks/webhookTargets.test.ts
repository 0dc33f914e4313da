import type { LookupAddress } from "node:dns";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseConfig } from "../../src/config/parseConfig.js";
import { ConfigError } from "../../src/errors/base.js";
import { postWebhook } from "../../src/webhooks/postWebhook.js";
import { readWebhookSecrets } from "../../src/webhooks/secrets.js";
import { PrivateTargetError } from "../../src/errors/webhooks.js";
import {
  createConnectLookup,
  systemResolve,
  type Resolve,
} from "../../src/webhooks/webhookTargets.js";
import { startWebhookReceiver } from "../helpers/webhookReceiver.js";

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const withHook = (hook: Record<string, unknown>) => ({
  chainId: 8453,
  rpc: { http: "https://mainnet.base.org" },
  tokens: [{ address: USDC, startBlock: 100 }],
  webhooks: [{ secretEnv: "SHOP_SECRET", ...hook }],
});

function refusal(raw: unknown): string {
  try {
    parseConfig(raw, "test.json");
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).shortMessage;
  }
  throw new Error("expected a ConfigError");
}

/** A resolver that answers `addresses` for every name: the DNS answer of a hostile or rebinding zone. */
const resolvingTo =
  (...addresses: string[]): Resolve =>
  (_hostname, _options, callback) =>
    callback(
      null,
      addresses.map((address): LookupAddress => ({
        address,
        family: address.includes(":") ? 6 : 4,
      })),
    );

describe("webhook URLs in the config", () => {
  test("user:password in a URL is refused, without echoing it", () => {
    const message = refusal(withHook({ url: "https://shop:hunter2@hooks.shop.example/in" }));
    expect(message).toBe(
      "webhooks[0].url: must not hold user:password credentials (they would never reach the receiver): authenticate it by the signature",
    );
    expect(message).not.toContain("hunter2");
  });

  test.each([
    ["http://127.0.0.1:8080/hook", "loopback"],
    ["http://localhost/hook", "loopback"],
    ["http://LOCALHOST./hook", "loopback"],
    ["http://api.localhost/hook", "loopback"],
    ["http://2130706433/hook", "loopback"],
    ["http://[::1]/hook", "loopback"],
    ["http://[::ffff:127.0.0.1]/hook", "loopback"],
    ["http://169.254.169.254/latest/meta-data", "link-local"],
    ["http://[fe80::1]/hook", "link-local"],
    ["http://10.1.2.3/hook", "private"],
    ["http://172.20.0.5/hook", "private"],
    ["https://192.168.1.10/hook", "private"],
    ["http://100.64.0.1/hook", "private"],
    ["http://[fd12:3456::1]/hook", "private"],
    ["http://0.0.0.0/hook", "unspecified"],
  ])("%s is refused as %s unless allowPrivateTargets is set", (url, range) => {
    expect(refusal(withHook({ url }))).toMatch(
      new RegExp(
        `^webhooks\\[0\\]\\.url: its host .* is a ${range} address: webhook targets on loopback, link-local or private networks are refused unless webhooks\\[0\\]\\.allowPrivateTargets is true$`,
      ),
    );
    expect(
      parseConfig(withHook({ url, allowPrivateTargets: true }), "test.json").webhooks[0],
    ).toMatchObject({ url, allowPrivateTargets: true });
  });

  test("public addresses and names pass; names are judged again when resolved", () => {
    for (const url of [
      "https://hooks.shop.example/in",
      "https://93.184.215.14/in",
      "http://[2606:4700::1]/in",
      "http://172.32.0.1/in",
    ])
      expect(parseConfig(withHook({ url }), "test.json").webhooks[0]).toMatchObject({
        url,
        allowPrivateTargets: false,
      });
    expect(
      refusal(withHook({ url: "https://hooks.shop.example/in", allowPrivateTargets: "yes" })),
    ).toMatch(/^webhooks\[0\]\.allowPrivateTargets: expected true or false/);
  });
});

describe("a secret given as secretEnv", () => {
  test("is refused and never repeated, in the config and when the secrets are read", () => {
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const message = refusal(withHook({ url: "https://hooks.shop.example/in", secretEnv: secret }));
    expect(message).toBe(
      "webhooks[0].secretEnv: expected an environment variable name (letters, digits, _), not the secret itself",
    );
    const random = "a8f3k29dj4k5l6m7n8p9q0r";
    expect(
      refusal(withHook({ url: "https://hooks.shop.example/in", secretEnv: random })),
    ).not.toContain(random);
    // A config made some other way still never echoes it.
    const hook = {
      url: "https://a.example/",
      secretEnv: secret,
      events: undefined,
      tokens: undefined,
      addresses: undefined,
      allowPrivateTargets: false,
    };
    expect(() => readWebhookSecrets([hook], {})).toThrow(
      /^webhooks\[0\]\.secretEnv: the environment variable it names \(not shown/,
    );
    try {
      readWebhookSecrets([hook], {});
    } catch (error) {
      expect(String((error as Error).message)).not.toContain("MfKQ9r8");
    }
  });

  test("an ordinary variable name is still named when it is unset", () => {
    const hooks = parseConfig(
      withHook({ url: "https://a.example/", secretEnv: "SHOP_WEBHOOK_SECRET" }),
      "t",
    ).webhooks;
    expect(() => readWebhookSecrets(hooks, {})).toThrow(
      "webhooks[0].secretEnv: the environment variable SHOP_WEBHOOK_SECRET is not set",
    );
  });
});

describe("postWebhook() checks the address it connects to", () => {
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let port: string;
  beforeAll(async () => {
    receiver = await startWebhookReceiver("s3cret");
    port = new URL(receiver.url).port;
  });
  afterAll(async () => {
    await receiver?.close();
  });
  const post = (url: string, allowPrivateTargets: boolean, resolve?: Resolve) =>
    postWebhook(
      {
        url,
        allowPrivateTargets,
        headers: { "content-type": "application/json", "flashindex-event-id": "evt_8453_1" },
        body: "{}",
        signal: AbortSignal.timeout(5_000),
      },
      resolve,
    );

  test("a name that resolves to loopback is refused before any byte is sent, and goes through with allowPrivateTargets", async () => {
    const before = receiver.receipts.length;
    await expect(
      post(`http://hooks.shop.example:${port}/hooks`, false, resolvingTo("127.0.0.1")),
    ).rejects.toThrow(
      "hooks.shop.example resolves to 127.0.0.1, a loopback address: refused (set allowPrivateTargets on the subscription to allow it)",
    );
    // One public and one private answer (a rebinding zone answers both): refused too.
    await expect(
      post(
        `http://hooks.shop.example:${port}/hooks`,
        false,
        resolvingTo("93.184.215.14", "10.0.0.7"),
      ),
    ).rejects.toThrow(PrivateTargetError);
    expect(receiver.receipts.length).toBe(before);
    expect(
      await post(`http://hooks.shop.example:${port}/hooks`, true, resolvingTo("127.0.0.1")),
    ).toBe(204);
    expect(receiver.receipts.length).toBe(before + 1);
  });

  test("a kept-alive connection of a subscription that allows private targets is never lent to one that does not", async () => {
    const url = `http://rebound.shop.example:${port}/hooks`;
    expect(await post(url, true, resolvingTo("127.0.0.1"))).toBe(204);
    await expect(post(url, false, resolvingTo("127.0.0.1"))).rejects.toThrow(PrivateTargetError);
  });

  test("an IP literal (never looked up) is checked too", async () => {
    await expect(post(receiver.url, false)).rejects.toThrow(
      "127.0.0.1 is a loopback address: refused",
    );
    expect(await post(receiver.url, true)).toBe(204);
  });

  test("the system resolver's answer for localhost is refused", async () => {
    const lookup = createConnectLookup(systemResolve, true);
    const error = await new Promise<unknown>((done) =>
      lookup("localhost", {}, (failure) => done(failure)),
    );
    expect(error).toBeInstanceOf(PrivateTargetError);
  });
});
