/**
 * The code cites the contract as this repository states it (docs/*.md), never documents a clone does not hold: no
 * "SPEC §" section numbers and no issue numbers in src/ (history belongs in commit messages and CHANGELOG.md).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(path.join(dir, e.name)) : [path.join(dir, e.name)],
  );
}

describe('citations in src/', () => {
  it('name docs/ pages, not SPEC sections, STYLE sections or issue numbers', () => {
    const files = sources(SRC);
    expect(files.length).toBeGreaterThan(100);
    const offending: string[] = [];
    for (const file of files) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (/SPEC §|STYLE §|issues? #\d+|\bissue \d+\b|seeds?\/001/.test(line))
            offending.push(`${path.relative(SRC, file)}:${i + 1}`);
        });
    }
    expect(offending).toEqual([]);
  });

  it('every docs/ page the code cites exists', () => {
    const cited = new Set<string>();
    for (const file of sources(SRC)) {
      for (const m of readFileSync(file, 'utf8').matchAll(/docs\/([a-z-]+)\.md/g)) cited.add(m[1]);
    }
    expect(cited.size).toBeGreaterThan(3);
    const pages = new Set(readdirSync(path.resolve(SRC, '../docs')).map((n) => n.replace(/\.md$/, '')));
    expect([...cited].filter((c) => !pages.has(c))).toEqual([]);
  });
});
