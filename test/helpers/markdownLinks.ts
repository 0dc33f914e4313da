import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/** A relative link that does not resolve: the file it is in (relative to the root), the target as written, why. */
export type BrokenLink = { file: string; target: string; reason: string };

/** `[text](target)` and `![alt](target)`, the target up to the first space (a title may follow). */
const INLINE_LINK = /!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
/** `[label]: target` reference definitions, at the start of a line. */
const REFERENCE_DEFINITION = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/;
/** A target with a scheme (`https:`, `mailto:`) or protocol-relative: not a file of the repository. */
const EXTERNAL = /^(?:[a-z][a-z0-9+.-]*:|\/\/)/i;

/**
 * The lines of a Markdown text that hold prose: fenced code blocks and HTML comments are blanked,
 * and inline code spans too (so a link written as an example inside one is not checked), or, with
 * `codeAsText`, replaced by their text (a heading's slug keeps it).
 */
function proseLines(text: string, codeAsText = false): string[] {
  const withoutComments = text.replace(/<!--[\s\S]*?-->/g, (comment) =>
    comment.replace(/[^\n]/g, " "),
  );
  let fence: string | undefined;
  return withoutComments.split("\n").map((line) => {
    const opener = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      if (opener !== undefined && opener[0] === fence[0] && opener.length >= fence.length)
        fence = undefined;
      return "";
    }
    if (opener !== undefined) {
      fence = opener;
      return "";
    }
    return line.replace(/(`+)([\s\S]*?)\1/g, (_span, _ticks, code: string) =>
      codeAsText ? code : "",
    );
  });
}

/** The link targets written in a Markdown text, in order. */
export function linkTargets(text: string): string[] {
  return proseLines(text).flatMap((line) => {
    const definition = REFERENCE_DEFINITION.exec(line)?.[1];
    if (definition !== undefined) return [definition];
    return [...line.matchAll(INLINE_LINK)].map((match) => match[1]!);
  });
}

/**
 * The anchors GitHub gives a Markdown file's headings: the heading's text lower-cased, its
 * punctuation dropped (hyphens and underscores kept), each space a hyphen; a repeated slug gets
 * `-1`, `-2`, … in order.
 */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(text, true)) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const plain = heading.replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1");
    const slug = plain
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Every `.md` file under `dir`, recursively (absolute paths, sorted). */
export function markdownFilesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return markdownFilesUnder(path);
      return entry.isFile() && entry.name.endsWith(".md") ? [path] : [];
    })
    .sort();
}

/**
 * The relative links of `files` (absolute paths of Markdown files under `root`) that do not
 * resolve: to a path that does not exist, that leaves `root`, or to a heading a Markdown file does
 * not have. Links with a scheme (`https:`, `mailto:`) are not checked.
 */
export function brokenLinks(root: string, files: readonly string[]): BrokenLink[] {
  const broken: BrokenLink[] = [];
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    const name = relative(root, file);
    for (const target of linkTargets(text)) {
      if (EXTERNAL.test(target)) continue;
      const hash = target.indexOf("#");
      const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
      const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
      const path =
        pathPart === ""
          ? file
          : pathPart.startsWith("/")
            ? join(root, pathPart)
            : resolve(dirname(file), pathPart);
      const inside = relative(root, path);
      if (inside.startsWith("..")) {
        broken.push({ file: name, target, reason: "points outside the repository" });
        continue;
      }
      if (!existsSync(path)) {
        broken.push({ file: name, target, reason: `${inside} does not exist` });
        continue;
      }
      if (anchor === undefined || anchor === "") continue;
      if (!statSync(path).isFile() || !path.endsWith(".md")) {
        broken.push({
          file: name,
          target,
          reason: `an anchor into ${inside}, which is not a Markdown file`,
        });
        continue;
      }
      if (!headingAnchors(readFileSync(path, "utf8")).has(anchor))
        broken.push({ file: name, target, reason: `${inside} has no heading #${anchor}` });
    }
  }
  return broken;
}
