import DatabaseConstructor from "better-sqlite3";
import { describe, expect, test } from "vitest";
import { unsupportedNodeReason } from "../../src/cli/nodeSupport.js";

describe("which Node runs flashindex", () => {
  test("Node 20 and 22.13 (Node-API 9) are refused in one line that names the way out", () => {
    for (const node of ["20.20.2", "22.13.1"]) {
      const reason = unsupportedNodeReason({ node, napi: "9" });
      expect(reason).toContain(`Node v${node} is not supported`);
      expect(reason).toContain("Node 22.14 or later");
      expect(reason).not.toContain("\n");
    }
    expect(unsupportedNodeReason({ node: "22.13.1" })).toContain("it has 0");
  });

  test("Node 22.14, 24 and 26 (Node-API 10) are accepted", () => {
    for (const node of ["22.14.0", "22.23.3", "24.21.0", "26.12.1"]) {
      expect(unsupportedNodeReason({ node, napi: "10" })).toBeUndefined();
    }
  });

  test("the Node running this suite is supported, and better-sqlite3 opens a database on it", () => {
    expect(unsupportedNodeReason(), process.version).toBeUndefined();
    const db = new DatabaseConstructor(":memory:");
    try {
      expect(db.prepare("SELECT 1 + 1 AS two").get()).toEqual({ two: 2 });
    } finally {
      db.close();
    }
  });
});
