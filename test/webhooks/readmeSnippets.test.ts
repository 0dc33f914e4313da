import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { signatureHeader } from "../../src/webhooks/signature.js";

const ROOT = join(import.meta.dirname, "..", "..");
const guide = readFileSync(join(ROOT, "docs", "operations.md"), "utf8");
const webhooksStart = guide.indexOf("\n## Webhooks\n");
const webhooksSection = guide.slice(webhooksStart, guide.indexOf("\n## ", webhooksStart + 1));
const block = (lang: string) =>
  new RegExp("```" + lang + "\\n([\\s\\S]*?)```").exec(webhooksSection)?.[1];

const SECRET = "whsec_readme";
const BODY = JSON.stringify({
  id: "evt_8453_1",
  type: "payment.confirmed",
  payment: { value: "2500000", memo: "é ✓" },
});
const now = () => Math.floor(Date.now() / 1_000);
/** [header, raw body, expected verdict] cases the snippets must get right. */
const cases = () =>
  [
    [signatureHeader(SECRET, now(), BODY), BODY, true],
    [signatureHeader(SECRET, now(), BODY), BODY.replace("2500000", "2500001"), false],
    [signatureHeader("another secret", now(), BODY), BODY, false],
    [signatureHeader(SECRET, now() - 3_600, BODY), BODY, false],
    [`t=${now()},v1=abcd`, BODY, false],
  ] as const;

describe("the operations guide's webhook verification snippets", () => {
  test("the Node snippet accepts a flashindex signature and refuses a changed body, a wrong secret, an old timestamp and a short signature", () => {
    const code = block("js");
    expect(code).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), "flashindex-readme-"));
    writeFileSync(join(dir, "verify.mjs"), code!);
    writeFileSync(
      join(dir, "run.mjs"),
      `import { verify } from "./verify.mjs";\nconst cases = ${JSON.stringify(cases())};\nconsole.log(JSON.stringify(cases.map(([h, b]) => verify(b, h, ${JSON.stringify(SECRET)}))));\n`,
    );
    const run = spawnSync(process.execPath, [join(dir, "run.mjs")], { encoding: "utf8" });
    expect(run.stderr).toBe("");
    expect(JSON.parse(run.stdout)).toEqual(cases().map((c) => c[2]));
  });

  const python = spawnSync("python3", ["--version"]).status === 0;
  test.skipIf(!python)(
    "the Python snippet gives the same answers (skipped without python3)",
    () => {
      const code = block("python");
      expect(code).toBeDefined();
      const dir = mkdtempSync(join(tmpdir(), "flashindex-readme-"));
      writeFileSync(join(dir, "cases.json"), JSON.stringify(cases()));
      writeFileSync(
        join(dir, "run.py"),
        `${code}\nimport json, sys\ncases = json.load(open(sys.argv[1]))\nprint(json.dumps([verify(b.encode(), h, ${JSON.stringify(SECRET)}) for h, b, _ in cases]))\n`,
      );
      const run = spawnSync("python3", [join(dir, "run.py"), join(dir, "cases.json")], {
        encoding: "utf8",
      });
      expect(run.stderr).toBe("");
      expect(JSON.parse(run.stdout)).toEqual(cases().map((c) => c[2]));
    },
  );
});
