import { describe, expect, test } from "vitest";
import { isRetryableRpcError, RpcRequestError } from "../../src/errors/rpc.js";

const sendError = (code: number, message: string) =>
  new RpcRequestError("eth_sendRawTransaction", { code, message });

describe("isRetryableRpcError()", () => {
  test("a node's verdict on a sent transaction is not retried: the same bytes get the same answer", () => {
    for (const [code, message] of [
      [-32000, "already known"],
      [-32003, "transaction already imported"],
      [-32000, "nonce too low: next nonce 9, tx nonce 8"],
      [-32000, "replacement transaction underpriced"],
      [-32003, "insufficient funds for gas * price + value"],
    ] as const)
      expect(isRetryableRpcError(sendError(code, message)), message).toBe(false);
  });

  test("an overloaded or lagging node is still retried", () => {
    for (const [code, message] of [
      [-32000, "header not found"],
      [-32603, "internal error"],
      [-32005, "limit exceeded"],
    ] as const)
      expect(isRetryableRpcError(sendError(code, message)), message).toBe(true);
  });
});
