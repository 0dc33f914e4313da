import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  brokenLinks,
  headingAnchors,
  linkTargets,
  markdownFilesUnder,
} from "../helpers/markdownLinks.js";

const ROOT = join(import.meta.dirname, "..", "..");

/** The repository's documentation: the README, everything under docs/, the benchmark's README. */
const documentation = () => [
  join(ROOT, "README.md"),
  ...markdownFilesUnder(join(ROOT, "docs")),
  join(ROOT, "scripts", "bench", "README.md"),
];

describe("the documentation's links", () => {
  test("every relative link in README.md, docs/ and scripts/bench/README.md resolves to a file and heading that exist", () => {
    const files = documentation();
    expect(files.length).toBeGreaterThan(5);
    expect(brokenLinks(ROOT, files)).toEqual([]);
  });
});

describe("brokenLinks()", () => {
  /** A scratch repository with the given files (path → text). */
  function repository(files: Record<string, string>): string {
    const root = mkdtempSync(join(tmpdir(), "flashindex-links-"));
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(root, path, ".."), { recursive: true });
      writeFileSync(join(root, path), text);
    }
    return root;
  }

  test("reports a missing file, a missing heading, a link out of the repository, and an anchor into a folder", () => {
    const root = repository({
      "README.md": [
        "# Title",
        "See [the guide](docs/guide.md#set-up), [gone](docs/gone.md), [above](../outside.md),",
        "[a heading here](#title), [no such heading](#nowhere), [src](src/#x) and [site](https://example.com/missing).",
      ].join("\n"),
      "docs/guide.md": "# Guide\n\n## Setting up\n",
      "src/a.ts": "",
    });
    expect(brokenLinks(root, [join(root, "README.md")])).toEqual([
      {
        file: "README.md",
        target: "docs/guide.md#set-up",
        reason: "docs/guide.md has no heading #set-up",
      },
      { file: "README.md", target: "docs/gone.md", reason: "docs/gone.md does not exist" },
      { file: "README.md", target: "../outside.md", reason: "points outside the repository" },
      { file: "README.md", target: "#nowhere", reason: "README.md has no heading #nowhere" },
      {
        file: "README.md",
        target: "src/#x",
        reason: "an anchor into src, which is not a Markdown file",
      },
    ]);
  });

  test("accepts links to folders, to files with headings GitHub's way, and ignores links inside code", () => {
    const root = repository({
      "README.md": [
        "[folder](src/) [file](docs/guide.md#attribution-erc-8021-and-builder-codes) [again](docs/guide.md#faq-1)",
        "`[not a link](nowhere.md)`",
        "```",
        "[also not](nowhere.md)",
        "```",
        "<!-- [commented](nowhere.md) -->",
        "[ref]: docs/guide.md#faq",
      ].join("\n"),
      "docs/guide.md": "# Attribution (ERC-8021) and builder codes\n\n## FAQ\n\n## FAQ\n",
      "src/a.ts": "",
    });
    expect(brokenLinks(root, [join(root, "README.md")])).toEqual([]);
  });
});

describe("headingAnchors() and linkTargets()", () => {
  test("slugs keep letters, digits, hyphens and underscores, and number repeats", () => {
    expect([
      ...headingAnchors(
        "# The `logs` table\n## Smart-contract wallets (ERC-1271)\n## A [link](x.md) → here\n# The `logs` table",
      ),
    ]).toEqual([
      "the-logs-table",
      "smart-contract-wallets-erc-1271",
      "a-link--here",
      "the-logs-table-1",
    ]);
  });

  test("targets come from inline links, images and reference definitions, titles dropped", () => {
    expect(
      linkTargets('[a](one.md) ![b](two.png "title") [c](<three.md>)\n[d]: four.md "t"'),
    ).toEqual(["one.md", "two.png", "three.md", "four.md"]);
  });
});
