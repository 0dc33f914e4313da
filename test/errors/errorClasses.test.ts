import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { SRC, sourceFiles } from "../helpers/sourceImports.js";

/** Classes in the error vocabulary (extending BaseError or one of its subclasses) declared in `source`. */
function vocabularyClasses(source: string, vocabulary: ReadonlySet<string>): string[] {
  return [...source.matchAll(/class (\w+) extends (\w+)/g)]
    .filter(([, , base]) => vocabulary.has(base!))
    .map(([, name]) => name!);
}

describe("the error vocabulary", () => {
  test("every class of it is declared in src/errors/", () => {
    const files = sourceFiles(SRC).map((file) => ({
      file,
      text: readFileSync(join(SRC, file), "utf8"),
    }));
    // The vocabulary grows from BaseError through the classes src/errors/ declares, in any order.
    const vocabulary = new Set(["BaseError"]);
    for (let size = 0; size !== vocabulary.size;) {
      size = vocabulary.size;
      for (const { text } of files)
        for (const name of vocabularyClasses(text, vocabulary)) vocabulary.add(name);
    }
    const outside = files
      .filter(({ file }) => !file.startsWith("errors/"))
      .flatMap(({ file, text }) =>
        vocabularyClasses(text, vocabulary).map((name) => `${name} in ${file}`),
      );
    expect(vocabulary.size).toBeGreaterThan(10);
    expect(outside).toEqual([]);
  });
});
