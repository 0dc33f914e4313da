import {
  BuilderCodeClientExtension,
  BuilderCodeFacilitatorExtension,
  declareBuilderCodeExtension,
  parseBuilderCodeSuffixFromCalldata,
} from "@x402/extensions/builder-code";
import { Attribution as OxAttribution } from "ox/erc8021";
import { encodeFunctionData, parseAbi, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, test } from "vitest";
import { decodeAttribution } from "../../src/decode/erc8021.js";
import { ANVIL_PRIVATE_KEYS } from "../../src/devnet/anvil.js";
import {
  appendSuffix,
  builderCodeSuffix,
  isBuilderCode,
  readPayloadBuilderCodes,
} from "../../src/settle/builderCode.js";
import { referencePaymentBody, type ExactOffer } from "../helpers/x402.js";

const payer = privateKeyToAccount(ANVIL_PRIVATE_KEYS[1] as `0x${string}`);
const OFFER: ExactOffer = {
  chainId: 8453,
  token: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
  name: "Flash Test USD",
  version: "2",
  payTo: "0x000000000000000000000000000000000000c0de",
  amount: 10_000n,
};
/** A transferWithAuthorization call, the calldata a settlement carries before its suffix. */
const CALLDATA: Hex = encodeFunctionData({
  abi: parseAbi([
    "function transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)",
  ]),
  args: [
    payer.address,
    OFFER.payTo,
    10_000n,
    0n,
    2n ** 40n,
    `0x${"11".repeat(32)}`,
    `0x${"22".repeat(65)}`,
  ],
});

const extensionsWith = (value: unknown) => ({ "builder-code": value });

describe("readPayloadBuilderCodes()", () => {
  test("reads a (echoed from the resource server) and s (the client's) from a reference client's payload", async () => {
    const body = await referencePaymentBody(
      payer,
      OFFER,
      { "builder-code": declareBuilderCodeExtension("my_app") },
      [new BuilderCodeClientExtension(["base_mcp", "demo_app"])],
    );
    expect(readPayloadBuilderCodes(body.paymentPayload.extensions ?? {})).toEqual({
      app: "my_app",
      services: ["base_mcp", "demo_app"],
      problems: [],
    });
  });

  test("takes s as a single string, and the spec example's codes on the extension itself", () => {
    expect(readPayloadBuilderCodes(extensionsWith({ info: { s: "my_client" } }))).toEqual({
      services: ["my_client"],
      problems: [],
    });
    expect(readPayloadBuilderCodes(extensionsWith({ a: "my_app", s: "my_client" }))).toEqual({
      app: "my_app",
      services: ["my_client"],
      problems: [],
    });
    expect(readPayloadBuilderCodes({})).toEqual({ services: [], problems: [] });
  });

  test("drops codes of the wrong form and names each, as the reference drops them", () => {
    const read = readPayloadBuilderCodes(
      extensionsWith({
        info: { a: "My-App", s: ["ok_1", "", "UPPER", "x".repeat(33), 7, "ok_1", "ok_2"] },
      }),
    );
    expect(read.app).toBeUndefined();
    expect(read.services).toEqual(["ok_1", "ok_2"]);
    expect(read.problems).toHaveLength(5);
    expect(read.problems[0]).toMatch(/\.a: expected a builder code .*"My-App"/);
    expect(
      readPayloadBuilderCodes(extensionsWith({ info: { s: { code: "x" } } })).problems,
    ).toEqual([expect.stringMatching(/\.s: expected a builder code or an array/)]);
    expect(readPayloadBuilderCodes(extensionsWith("my_app")).problems).toEqual([
      expect.stringMatching(/expected an object/),
    ]);
    expect(readPayloadBuilderCodes(extensionsWith({ info: [] })).problems).toEqual([
      expect.stringMatching(/\.info: expected an object/),
    ]);
  });

  test("keeps at most 5 client and 5 server service codes", () => {
    const codes = Array.from({ length: 12 }, (_, i) => `svc_${i}`);
    const read = readPayloadBuilderCodes(extensionsWith({ info: { s: codes } }));
    expect(read.services).toEqual(codes.slice(0, 10));
    expect(read.problems).toEqual([expect.stringMatching(/12 service codes, more than the 10/)]);
  });
});

describe("builderCodeSuffix()", () => {
  test("writes a, s and the facilitator's w so the repo's decoder, ox and the reference all read them back", () => {
    const data = appendSuffix(
      CALLDATA,
      builderCodeSuffix({ app: "my_app", services: ["base_mcp", "demo_app"] }, "bc_flashfac"),
    );
    expect(data.startsWith(CALLDATA)).toBe(true);
    expect(decodeAttribution(data)).toMatchObject({
      kind: "codes",
      schemaId: 2,
      codes: [
        { code: "my_app", role: "app" },
        { code: "bc_flashfac", role: "wallet" },
        { code: "base_mcp", role: "service" },
        { code: "demo_app", role: "service" },
      ],
      suffixLength: (data.length - CALLDATA.length) / 2,
    });
    expect(parseBuilderCodeSuffixFromCalldata(data)).toEqual({
      a: "my_app",
      w: "bc_flashfac",
      s: ["base_mcp", "demo_app"],
    });
    expect(OxAttribution.fromData(data)).toMatchObject({
      id: 2,
      appCode: "my_app",
      walletCode: "bc_flashfac",
      serviceCodes: ["base_mcp", "demo_app"],
    });
  });

  test("attributes a payment the same as the reference facilitator's extension does", async () => {
    const body = await referencePaymentBody(
      payer,
      OFFER,
      { "builder-code": declareBuilderCodeExtension("my_app") },
      [new BuilderCodeClientExtension("my_client")],
    );
    const reference = new BuilderCodeFacilitatorExtension({
      builderCode: "bc_flashfac",
    }).buildDataSuffix({
      paymentPayload: body.paymentPayload,
      paymentRequirements: body.paymentRequirements,
    } as never);
    const ours = builderCodeSuffix(
      readPayloadBuilderCodes(body.paymentPayload.extensions ?? {}),
      "bc_flashfac",
    );
    expect(reference).toBeDefined();
    const codesOf = (suffix: Hex | undefined) => {
      const decoded = decodeAttribution(appendSuffix(CALLDATA, suffix));
      return decoded.kind === "codes" ? decoded.codes : decoded;
    };
    expect(codesOf(ours)).toEqual(codesOf(reference));
  });

  test("writes only what there is, and nothing without any code", () => {
    expect(builderCodeSuffix({}, undefined)).toBeUndefined();
    expect(appendSuffix(CALLDATA, builderCodeSuffix({ services: [] }))).toBe(CALLDATA);
    expect(
      decodeAttribution(appendSuffix(CALLDATA, builderCodeSuffix({}, "bc_flashfac"))),
    ).toMatchObject({ codes: [{ code: "bc_flashfac", role: "wallet" }] });
    expect(
      decodeAttribution(appendSuffix(CALLDATA, builderCodeSuffix({ services: ["only_me"] }))),
    ).toMatchObject({ codes: [{ code: "only_me", role: "service" }] });
  });

  test("refuses a facilitator code of the wrong form", () => {
    expect(() => builderCodeSuffix({}, "Bad Code")).toThrow(/not of the form/);
    expect(isBuilderCode("bc_b8nos5a8")).toBe(true);
    expect(isBuilderCode("bc-b8nos5a8")).toBe(false);
    expect(isBuilderCode(undefined)).toBe(false);
  });
});
