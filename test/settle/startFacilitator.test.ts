import { describe, expect, test } from "vitest";
import { ConfigError } from "../../src/errors/base.js";
import { readAuthToken } from "../../src/settle/startFacilitator.js";

describe("readAuthToken()", () => {
  test("reads the bearer token from the variable facilitator.authTokenEnv names, trimmed", () => {
    expect(
      readAuthToken("FACILITATOR_TOKEN", {
        FACILITATOR_TOKEN: "  0123456789abcdef0123456789abcdef\n",
      }),
    ).toBe("0123456789abcdef0123456789abcdef");
    expect(readAuthToken("T", { T: "a-b.c_d~e+f/g0123456==" })).toBe("a-b.c_d~e+f/g0123456==");
  });

  test.each([
    ["unset", {}, /T is not set/],
    ["empty", { T: "  " }, /T is not set/],
    ["shorter than 16 characters", { T: "short-token" }, /at least 16 characters/],
    [
      "holding a space (not a token68)",
      { T: "0123456789 abcdef0123" },
      /at least 16 characters of A-Z/,
    ],
    [
      "holding a quote (not a token68)",
      { T: '0123456789abcdef"0123' },
      /at least 16 characters of A-Z/,
    ],
  ])(
    "refuses a token %s, naming the setting and never the value",
    (_what, env: NodeJS.ProcessEnv, message) => {
      let error: unknown;
      try {
        readAuthToken("T", env);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe("facilitator.authTokenEnv");
      expect((error as ConfigError).shortMessage).toMatch(message);
      for (const value of Object.values(env))
        if (value !== undefined && value.trim() !== "")
          expect((error as ConfigError).shortMessage).not.toContain(value.trim());
    },
  );
});
