/**
 * Every relative link in the README and the documents it points to leads somewhere: the file
 * (or folder) exists, and a `#anchor` names a heading of that Markdown file, by GitHub's slug
 * rules (lower case; punctuation but `-` and `_` dropped; each space a `-`; a repeated heading
 * gets `-1`, `-2`, …). Links inside code (fenced blocks, `inline code`) are not links.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const root = resolve(import.meta.dirname, '..');

/** The Markdown files whose links are checked: the README, docs/*.md and the other front pages. */
const documents = [
  'README.md',
  'CHANGELOG.md',
  'bench/README.md',
  'charts/winfleet/README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The text without fenced code blocks (their lines kept blank, so line numbers hold). */
function withoutFences(markdown: string): string[] {
  let fence: string | undefined;
  return markdown.split('\n').map((line) => {
    const marker = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (fence !== undefined) {
      if (marker?.startsWith(fence)) fence = undefined;
      return '';
    }
    if (marker) {
      fence = marker;
      return '';
    }
    return line;
  });
}

/** GitHub's anchor for a heading's text. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown file's headings, duplicates numbered as GitHub does. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of withoutFences(markdown)) {
    const text = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (text === undefined) continue;
    const base = slug(text);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The link targets of a Markdown file, with their line numbers; code spans are skipped. */
export function links(markdown: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  withoutFences(markdown).forEach((text, i) => {
    const prose = text.replace(/(`+)[^`]*?\1/g, '');
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      out.push({ line: i + 1, target: m[1]! });
    }
  });
  return out;
}

test('GitHub heading slugs', () => {
  assert.equal(
    slug('Host settings: proxy, trusted CAs, registry mirrors'),
    'host-settings-proxy-trusted-cas-registry-mirrors',
  );
  assert.equal(slug('`winfleet check`: before you join'), 'winfleet-check-before-you-join');
  assert.equal(slug('Active Directory join (per pool)'), 'active-directory-join-per-pool');
  assert.equal(
    slug('`winfleet hosts add | list | remove | trust-key`'),
    'winfleet-hosts-add--list--remove--trust-key',
  );
  assert.deepEqual(
    [...anchors('# A\n## A\n```\n# not a heading\n```\n### A')],
    ['a', 'a-1', 'a-2'],
  );
  assert.deepEqual(links('see [x](a.md#b) and `[y](no.md)`\n```\n[z](no.md)\n```'), [
    { line: 1, target: 'a.md#b' },
  ]);
});

test('every relative link in the README and docs/ leads to a file and heading that exist', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const doc of documents) {
    const text = readFileSync(join(root, doc), 'utf8');
    for (const { line, target } of links(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      checked++;
      const [path = '', anchor] = target.split('#', 2);
      const file =
        path === '' ? join(root, doc) : resolve(dirname(join(root, doc)), decodeURI(path));
      const where = `${doc}:${line}: ${target}`;
      if (!file.startsWith(root) || !existsSync(file)) {
        broken.push(`${where}: no file ${relative(root, file)}`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!file.endsWith('.md') || statSync(file).isDirectory()) {
        broken.push(`${where}: an anchor into a file that is not Markdown`);
        continue;
      }
      if (!anchors(readFileSync(file, 'utf8')).has(decodeURIComponent(anchor))) {
        broken.push(`${where}: no heading #${anchor} in ${relative(root, file)}`);
      }
    }
  }
  assert.ok(checked > 30, `only ${checked} links checked: is the link pattern right?`);
  assert.deepEqual(broken, [], 'links that lead nowhere');
});
