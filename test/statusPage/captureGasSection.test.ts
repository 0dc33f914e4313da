import type { Address } from "viem";
import { describe, expect, test } from "vitest";
import {
  CAPTURE_GAS_TOP_PAYEES,
  formatWeiAsEth,
  renderCaptureGasSection,
  summarizeCaptureGas,
} from "../../src/statusPage/captureGasSection.js";
import { escapeHtml } from "../../src/statusPage/statusPage.js";
import type { CaptureGasRow } from "../../src/store/captureStore.js";
import { formatEther } from "viem";

const payee = (i: number) => `0x${i.toString(16).padStart(40, "0")}` as Address;
const row = (orderId: number, to: Address, gasUsed: bigint, price: bigint | null) =>
  ({ orderId, payee: to, gasUsed, effectiveGasPrice: price }) satisfies CaptureGasRow;
const table = (headers: readonly string[], rows: ReadonlyArray<readonly unknown[]>) =>
  `${headers.join("|")}\n${rows.map((r) => r.map((c) => escapeHtml(c as string)).join("|")).join("\n")}`;

describe("the status page's gas per payment section", () => {
  test("lists the payees with the most captures first, at most CAPTURE_GAS_TOP_PAYEES, while the overall figures count them all", () => {
    // Payee i has i + 1 captures of 100 gas at 3 wei: 15 payees, 120 captures.
    const rows = Array.from({ length: 15 }, (_, i) =>
      Array.from({ length: i + 1 }, (_, k) => row(i * 100 + k, payee(i), 100n, 3n)),
    ).flat();
    const status = summarizeCaptureGas(rows, 1_000);
    expect(status.overall).toEqual({
      count: 120,
      avgGasUsed: 100n,
      pricedCount: 120,
      avgCostWei: 300n,
    });
    expect(status.payees).toHaveLength(CAPTURE_GAS_TOP_PAYEES);
    expect(status.payees.map((p) => [p.payee, p.count])).toEqual(
      Array.from({ length: CAPTURE_GAS_TOP_PAYEES }, (_, i) => [payee(14 - i), 15 - i]),
    );
  });

  test("ties on count are ordered by address, and the averages are floored bigint", () => {
    const status = summarizeCaptureGas(
      [
        row(1, payee(2), 10n, 1n),
        row(2, payee(1), 11n, null),
        row(3, payee(1), 12n, 5n),
        row(4, payee(2), 13n, 1n),
      ],
      1_000,
      1,
    );
    // Gas 46 / 4; cost (10 + 60 + 13) / 3.
    expect(status.overall).toEqual({ count: 4, avgGasUsed: 11n, pricedCount: 3, avgCostWei: 27n });
    expect(status.payees).toEqual([
      { payee: payee(1), count: 2, avgGasUsed: 11n, pricedCount: 1, avgCostWei: 60n },
    ]);
  });

  test("escapes what it prints", () => {
    const status = summarizeCaptureGas(
      [row(1, `<script>"x"&'y'</script>` as Address, 21_000n, 10n ** 9n)],
      1_000,
    );
    const html = renderCaptureGasSection(status, { escapeHtml, table });
    expect(html).not.toContain("<script>");
    expect(html).toContain("&#60;script&#62;&#34;x&#34;&#38;&#39;y&#39;&#60;/script&#62;");
    expect(html).toContain("0.000021 ETH");
  });
});

describe("formatWeiAsEth()", () => {
  test("writes wei as ETH exactly as viem's formatEther does", () => {
    for (const wei of [
      0n,
      1n,
      10n ** 18n,
      10n ** 18n + 1n,
      123_456_789_000_000_000n,
      2n ** 90n,
      -(10n ** 15n),
    ])
      expect(formatWeiAsEth(wei)).toBe(formatEther(wei));
  });
});
