// The relative links of a packed README that lead nowhere on a registry's page of the package.
import { posix } from 'node:path';

/** A relative link that does not resolve to a file of the tarball. */
export interface DeadLink {
  /** The link's target as written (`../../docs/agents.md#run-it`). */
  target: string;
  /** The 1-based line it is on. */
  line: number;
  /** Why it leads nowhere once packed. */
  reason: 'leaves the package' | 'not packed';
}

/** A target with a scheme (`https:`, `mailto:`) or `//`: not relative. */
const absoluteTarget = /^([a-z][a-z0-9+.-]*:|\/\/)/i;
/** Inline links and images: `[text](target "title")`, `![alt](<target>)`. */
const inlineLink = /!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?[^)]*\)/g;
/** Reference definitions: `[id]: target`. */
const referenceDefinition = /^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/;
/** HTML attributes: `href="…"`, `src='…'`. */
const htmlAttribute = /\b(?:href|src)\s*=\s*["']([^"']+)["']/g;

/**
 * The relative links of `markdown` (a README at the root of a package) that do not resolve to
 * one of `packed`, the tarball's file paths relative to the package root (`dist/index.js`,
 * `LICENSE`): those that leave the package (`../../docs/…`, which a registry's page cannot
 * follow) and those to a file the tarball does not carry (`examples/…`, left out by `files`).
 * A link to a folder resolves when the tarball has a file under it. Links inside fenced code
 * blocks and code spans are not links and are skipped.
 */
export function deadLinks(markdown: string, packed: readonly string[]): DeadLink[] {
  const files = new Set(packed.map((path) => posix.normalize(path)));
  const resolves = (path: string): boolean =>
    files.has(path) || [...files].some((file) => file.startsWith(`${path.replace(/\/$/, '')}/`));
  const dead: DeadLink[] = [];
  let fence: string | undefined;
  for (const [index, text] of markdown.split('\n').entries()) {
    const fenceMark = /^ {0,3}(`{3,}|~{3,})/.exec(text)?.[1];
    if (fenceMark !== undefined) {
      if (fence === undefined) fence = fenceMark;
      else if (fenceMark.startsWith(fence)) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const prose = text.replace(/(`+)[^`]*?\1/g, '');
    const targets = [
      ...[...prose.matchAll(inlineLink)].map((match) => match[1]),
      referenceDefinition.exec(prose)?.[1],
      ...[...prose.matchAll(htmlAttribute)].map((match) => match[1]),
    ];
    for (const target of targets) {
      if (target === undefined || target.startsWith('#') || absoluteTarget.test(target)) continue;
      const path = posix.normalize(decodeURI(target.replace(/[?#].*$/, '')));
      if (path === '.' || path === './') continue;
      if (path.startsWith('../') || path === '..' || path.startsWith('/')) {
        dead.push({ target, line: index + 1, reason: 'leaves the package' });
      } else if (!resolves(path)) {
        dead.push({ target, line: index + 1, reason: 'not packed' });
      }
    }
  }
  return dead;
}
