import { describe, expect, test } from "vitest";
import { parseConfig } from "../../src/config/parseConfig.js";
import { ConfigError } from "../../src/errors/base.js";
import { readWebhookSecrets } from "../../src/webhooks/secrets.js";

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const withHooks = (webhooks: unknown, webhookDelivery?: unknown) => ({
  chainId: 8453,
  rpc: { http: "https://mainnet.base.org" },
  tokens: [{ address: USDC, startBlock: 100 }],
  webhooks,
  ...(webhookDelivery === undefined ? {} : { webhookDelivery }),
});

function message(raw: unknown): string {
  try {
    parseConfig(raw, "test.json");
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).shortMessage;
  }
  throw new Error("expected a ConfigError");
}

describe("webhooks config", () => {
  test("a full subscription is read with lower-case filters and the delivery defaults", () => {
    const config = parseConfig(
      withHooks([
        {
          url: "https://shop.example/hooks",
          secretEnv: "SHOP_SECRET",
          events: ["payment.confirmed"],
          tokens: [USDC],
          addresses: [USDC],
        },
      ]),
      "test.json",
    );
    expect(config.webhooks).toEqual([
      {
        url: "https://shop.example/hooks",
        secretEnv: "SHOP_SECRET",
        events: ["payment.confirmed"],
        tokens: [USDC.toLowerCase()],
        addresses: [USDC.toLowerCase()],
        allowPrivateTargets: false,
      },
    ]);
    expect(config.webhookDelivery).toEqual({
      maxAttempts: 20,
      maxHours: 24,
      initialDelayMs: 1_000,
      maxDelayMs: 3_600_000,
      timeoutMs: 10_000,
      concurrency: 8,
      retentionDays: 7,
    });
    expect(parseConfig(withHooks(undefined), "test.json").webhooks).toEqual([]);
  });

  test("each mistake is one line naming the field", () => {
    expect(
      message(
        withHooks([{ url: "https://a.example/", secretEnv: "S", events: ["payment.captured"] }]),
      ),
    ).toMatch(/^webhooks\[0\]\.events\[0\]: expected one of payment\.preconfirmed/);
    expect(message(withHooks([{ url: "https://a.example/" }]))).toBe(
      "webhooks[0].secretEnv: is required: the name of the environment variable holding the signing secret",
    );
    expect(message(withHooks([{ url: "https://a.example/", secretEnv: "whsec 123!" }]))).toBe(
      "webhooks[0].secretEnv: expected an environment variable name (letters, digits, _), not the secret itself",
    );
    expect(
      message(
        withHooks([
          { url: "https://a.example/", secretEnv: "S" },
          { url: "https://a.example/", secretEnv: "T" },
        ]),
      ),
    ).toBe("webhooks[1].url: is listed twice (one subscription per URL)");
    expect(message(withHooks([{ url: "ftp://a.example/", secretEnv: "S" }]))).toMatch(
      /^webhooks\[0\]\.url: must use http/,
    );
    expect(
      message(withHooks([{ url: "https://a.example/", secretEnv: "S", addresses: [] }])),
    ).toMatch(/^webhooks\[0\]\.addresses: expected a non-empty array/);
    expect(message(withHooks([], { initialDelayMs: 5_000, maxDelayMs: 1_000 }))).toBe(
      "webhookDelivery.maxDelayMs: must be at least webhookDelivery.initialDelayMs (5000)",
    );
    expect(message(withHooks([], { concurrency: 0 }))).toBe(
      "webhookDelivery.concurrency: must be at least 1, got 0",
    );
  });

  test("secrets come from the named environment variables; a missing one names the variable, never a value", () => {
    const hooks = parseConfig(
      withHooks([
        { url: "https://a.example/", secretEnv: "A_SECRET" },
        { url: "https://b.example/", secretEnv: "B_SECRET" },
      ]),
      "t",
    ).webhooks;
    expect(readWebhookSecrets(hooks, { A_SECRET: "a", B_SECRET: "b" })).toEqual(["a", "b"]);
    expect(() => readWebhookSecrets(hooks, { A_SECRET: "a", B_SECRET: "" })).toThrow(
      "webhooks[1].secretEnv: the environment variable B_SECRET is not set",
    );
  });
});
