/**
 * Pins resolveInRoots on real temp trees (SPEC §4.1, §3.3 steps 4–5): relative paths resolve against the first root;
 * `..` escapes and the sibling-prefix directory (/T/proj vs /T/proj-secret) are NOT_ALLOWED whether or not they exist;
 * NUL and empty are VALIDATION; no roots is ROOTS_EMPTY; links (file, dir, dangling) pointing outside are NOT_ALLOWED
 * with details.reason symlink_target_outside, links inside resolve (viaSymlink); a root given through a symlink
 * accepts both spellings; not-yet-existing paths resolve with stats null, and a missing component never lets a later
 * `..` skip a link that leaves the roots; `link/..` follows kernel semantics; loops are VALIDATION symlink_loop
 * inside and NOT_ALLOWED outside; followFinal:false returns the link itself. Existence outside the roots is never
 * revealed: the envelopes for an existing and a missing outside path differ only in the path string.
 */
import { mkdirSync, realpathSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { toEnvelope, type EnvelopeError } from '../../src/errors/to-envelope.js';
import { ToolError } from '../../src/errors/tool-error.js';
import { MAX_PATH_COMPONENTS, pathComponentCount } from '../../src/fs/path-within.js';
import { realOrLexical } from '../../src/policy/git-repository-shape.js';
import { resolveInRoots, type ResolvedPath } from '../../src/policy/resolve-path.js';
import type { EffectiveRoot } from '../../src/policy/roots.js';
import { makeTree, symlink } from '../helpers/tree.js';

const OUTSIDE_CONTENT = 'OUTSIDE-CONTENT-4711';

const tree = makeTree({
  proj: {
    'a.txt': 'A',
    sub: { dir: { 'f.txt': 'F' }, 'sibling.txt': 'S' },
    'link-in.txt': symlink('a.txt'),
    'link-in-dir': symlink('sub/dir'),
    'inside-link-to-dir': symlink('sub/dir'),
    'link-out-file': symlink('../outside/secret.txt'),
    'link-out-dir': symlink('../outside'),
    'link-out-abs': symlink('/etc'),
    'dangling-in': symlink('missing-target.txt'),
    'dangling-out': symlink('../outside/missing.txt'),
    'via-outside': symlink('../outside/back'),
    'loop-a': symlink('loop-b'),
    'loop-b': symlink('loop-a'),
    'self-loop': symlink('self-loop'),
    'loop-via-outside': symlink('../outside/loop-1'),
  },
  'proj-secret': { k: OUTSIDE_CONTENT },
  outside: {
    'secret.txt': OUTSIDE_CONTENT,
    back: symlink('../proj/a.txt'),
    'link-o': symlink('dir'),
    'loop-1': symlink('loop-2'),
    'loop-2': symlink('loop-1'),
    dir: { 'inner.txt': OUTSIDE_CONTENT },
  },
  other: { 'o.txt': 'O' },
  'root-link': symlink('proj'),
});
afterAll(() => tree.cleanup());

const T = tree.dir;
const PROJ = path.join(T, 'proj');
const ROOT: EffectiveRoot = { given: PROJ, real: PROJ, source: 'cli' };
const OTHER: EffectiveRoot = { given: path.join(T, 'other'), real: path.join(T, 'other'), source: 'cli' };
const ROOTS = [ROOT];
const FOLLOW = { followFinal: true };

async function resolveOk(
  requested: string,
  roots: readonly EffectiveRoot[] = ROOTS,
  followFinal = true,
): Promise<ResolvedPath> {
  return resolveInRoots(requested, roots, { followFinal });
}

async function resolveErr(
  requested: string,
  roots: readonly EffectiveRoot[] = ROOTS,
  followFinal = true,
): Promise<EnvelopeError> {
  try {
    const r = await resolveInRoots(requested, roots, { followFinal });
    throw new Error(`expected ${JSON.stringify(requested)} to be refused, resolved to ${r.real}`);
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    const envelope = toEnvelope(error).error;
    // No refusal ever carries outside content.
    expect(JSON.stringify(envelope)).not.toContain(OUTSIDE_CONTENT);
    return envelope;
  }
}

describe('inside the roots', () => {
  test.each(
    [
      ['a.txt', 'a.txt'],
      ['./a.txt', 'a.txt'],
      ['sub/../a.txt', 'a.txt'],
      ['sub/dir/f.txt', 'sub/dir/f.txt'],
      ['sub/dir/', 'sub/dir'],
      ['.', ''],
      ['', ''],
    ].filter(([r]) => r !== ''),
  )('relative %j resolves against the first root to %j', async (requested, rel) => {
    const r = await resolveOk(requested, [ROOT, OTHER]);
    expect(r.real).toBe(path.join(PROJ, rel));
    expect(r.root).toBe(ROOT);
    expect(r.requested).toBe(requested);
    expect(path.isAbsolute(r.absolute)).toBe(true);
    expect(r.stats).not.toBeNull();
    expect(r.viaSymlink).toBe(false);
  });

  test('an absolute path inside resolves to itself with its stats', async () => {
    const r = await resolveOk(path.join(PROJ, 'a.txt'));
    expect(r.real).toBe(path.join(PROJ, 'a.txt'));
    expect(r.absolute).toBe(path.join(PROJ, 'a.txt'));
    expect(r.stats?.isFile()).toBe(true);
  });

  test('an absolute path in the second root picks that root', async () => {
    const r = await resolveOk(path.join(T, 'other', 'o.txt'), [ROOT, OTHER]);
    expect(r.root).toBe(OTHER);
  });

  test('`~` is not expanded: it is a relative name under the first root', async () => {
    const r = await resolveOk('~/x');
    expect(r.real).toBe(path.join(PROJ, '~', 'x'));
    expect(r.stats).toBeNull();
  });

  test('the root itself resolves', async () => {
    const r = await resolveOk(PROJ);
    expect(r.real).toBe(PROJ);
    expect(r.stats?.isDirectory()).toBe(true);
  });

  test.each(['new.txt', 'new/nested/deep/file.txt', 'sub/dir/new/x.txt'])(
    'a not-yet-existing path %j resolves (stats null)',
    async (requested) => {
      const r = await resolveOk(requested);
      expect(r.real).toBe(path.join(PROJ, requested));
      expect(r.stats).toBeNull();
    },
  );

  test('a missing component followed by `..` back into the tree resolves as the kernel would after mkdir -p', async () => {
    const r = await resolveOk('missing/../sub/dir/f.txt');
    expect(r.real).toBe(path.join(PROJ, 'sub', 'dir', 'f.txt'));
    expect(r.stats?.isFile()).toBe(true);
  });

  test('a link inside resolves to its target, viaSymlink true', async () => {
    const r = await resolveOk('link-in.txt');
    expect(r.real).toBe(path.join(PROJ, 'a.txt'));
    expect(r.absolute).toBe(path.join(PROJ, 'link-in.txt'));
    expect(r.viaSymlink).toBe(true);
    expect(r.stats?.isFile()).toBe(true);
  });

  test('a path through a directory link inside resolves; viaSymlink only concerns the last component', async () => {
    const r = await resolveOk('link-in-dir/f.txt');
    expect(r.real).toBe(path.join(PROJ, 'sub', 'dir', 'f.txt'));
    expect(r.viaSymlink).toBe(false);
  });

  test('a link that leaves the roots and comes back resolves (the resolved target decides)', async () => {
    const r = await resolveOk('via-outside');
    expect(r.real).toBe(path.join(PROJ, 'a.txt'));
  });

  test('a dangling link inside resolves to its missing target (stats null)', async () => {
    const r = await resolveOk('dangling-in');
    expect(r.real).toBe(path.join(PROJ, 'missing-target.txt'));
    expect(r.stats).toBeNull();
    expect(r.viaSymlink).toBe(true);
  });

  test("`inside-link-to-dir/..` is the link target's parent (kernel semantics), not the lexical parent", async () => {
    const r = await resolveOk('inside-link-to-dir/..');
    expect(r.real).toBe(path.join(PROJ, 'sub'));
    expect(r.stats?.isDirectory()).toBe(true);
    const s = await resolveOk('inside-link-to-dir/../sibling.txt');
    expect(s.real).toBe(path.join(PROJ, 'sub', 'sibling.txt'));
  });

  test('followFinal:false on a link returns the link itself', async () => {
    for (const name of ['link-in.txt', 'link-out-file', 'dangling-out', 'loop-a']) {
      const r = await resolveOk(name, ROOTS, false);
      expect(r.real).toBe(path.join(PROJ, name));
      expect(r.stats?.isSymbolicLink()).toBe(true);
      expect(r.viaSymlink).toBe(true);
    }
  });

  test('followFinal:false still follows links in the middle', async () => {
    const r = await resolveOk('link-in-dir/f.txt', ROOTS, false);
    expect(r.real).toBe(path.join(PROJ, 'sub', 'dir', 'f.txt'));
    expect(await resolveErr('link-out-dir/secret.txt', ROOTS, false)).toMatchObject({ code: 'NOT_ALLOWED' });
  });

  describe('a root given through a symlink accepts both spellings', () => {
    const linked: EffectiveRoot = { given: path.join(T, 'root-link'), real: PROJ, source: 'cli' };
    test.each([[path.join(T, 'root-link', 'a.txt')], [path.join(T, 'proj', 'a.txt')], ['a.txt']])(
      '%j',
      async (requested) => {
        const r = await resolveOk(requested, [linked]);
        expect(r.real).toBe(path.join(PROJ, 'a.txt'));
        expect(r.root).toBe(linked);
      },
    );

    test('a link leaving the root is symlink_target_outside in either spelling', async () => {
      for (const base of [path.join(T, 'root-link'), PROJ]) {
        const e = await resolveErr(path.join(base, 'link-out-file'), [linked]);
        expect(e.code).toBe('NOT_ALLOWED');
        // issue 21: NOT_ALLOWED carries the roots in force (their real paths).
        expect(e.details).toEqual({ reason: 'symlink_target_outside', roots: [linked.real] });
      }
    });
  });
});

describe('refusals', () => {
  test.each([
    ['..'],
    ['../proj-secret/k'],
    ['../outside/secret.txt'],
    ['sub/../../outside/secret.txt'],
    ['sub/dir/../../../proj-secret/k'],
    ['../proj-secret/missing'],
    ['../../../../../../../../etc/passwd'],
  ])('relative %j escaping with .. → NOT_ALLOWED outside_roots', async (requested) => {
    const e = await resolveErr(requested);
    expect(e.code).toBe('NOT_ALLOWED');
    expect(e.details).toEqual({ reason: 'outside_roots', roots: ROOTS.map((r) => r.real) });
    expect(e.retryable).toBe(false);
    expect(e.recovery).toBe('fix_arguments');
  });

  test.each([
    ['existing', path.join(T, 'proj-secret', 'k')],
    ['missing', path.join(T, 'proj-secret', 'nope')],
    ['the sibling dir itself', path.join(T, 'proj-secret')],
    ['through ..', `${PROJ}/../proj-secret/k`],
    ['through a missing component and ..', `${PROJ}/nope/../../proj-secret/k`],
  ])('sibling prefix directory (%s) → NOT_ALLOWED', async (_label, requested) => {
    const e = await resolveErr(requested);
    expect(e.code).toBe('NOT_ALLOWED');
    expect(e.path).toBe(path.resolve(requested));
  });

  test.each([
    ['link-out-file'],
    ['link-out-dir'],
    ['link-out-dir/secret.txt'],
    ['link-out-dir/missing.txt'],
    ['link-out-dir/dir/inner.txt'],
    ['link-out-abs'],
    ['link-out-abs/passwd'],
    ['dangling-out'],
    ['link-out-dir/new/nested.txt'],
  ])('link pointing outside: %j → NOT_ALLOWED symlink_target_outside', async (requested) => {
    const e = await resolveErr(requested);
    expect(e.code).toBe('NOT_ALLOWED');
    expect(e.details).toEqual({ reason: 'symlink_target_outside', roots: ROOTS.map((r) => r.real) });
    expect(e.path).toBe(path.join(PROJ, requested));
  });

  // A missing component ends the real walk; what follows must not be joined lexically, or `missing/..` would skip
  // over a link that leaves the roots and a write would create its file outside.
  test.each([
    ['missing/../link-out-dir/new.txt', true],
    ['missing/../link-out-dir/secret.txt', true],
    ['missing/deeper/../../link-out-dir/new/x.txt', true],
    ['a.txt/../link-out-dir/new.txt', true],
    ['a.txt/missing/../../link-out-dir/new.txt', true],
    ['missing/deeper/../../link-out-file', false],
    ['missing/../dangling-out', false],
  ])('a missing component does not let .. skip a link out: %j → NOT_ALLOWED', async (requested, linkInMiddle) => {
    expect(await resolveErr(requested, ROOTS, true)).toMatchObject({
      code: 'NOT_ALLOWED',
      path: path.resolve(PROJ, requested),
    });
    if (linkInMiddle) expect((await resolveErr(requested, ROOTS, false)).code).toBe('NOT_ALLOWED');
    // Without following the last component, the link itself is what is named (move/delete of the link).
    else expect((await resolveOk(requested, ROOTS, false)).stats?.isSymbolicLink()).toBe(true);
  });

  test.each([
    ['a\0b', 'nul_byte'],
    ['\0', 'nul_byte'],
    [`${PROJ}/a.txt\0.png`, 'nul_byte'],
    ['', 'invalid_path'],
  ])('%j → VALIDATION %s', async (requested, reason) => {
    const e = await resolveErr(requested);
    expect(e.code).toBe('VALIDATION');
    expect(e.details).toMatchObject({ reason, field: 'path' });
  });

  test('the field name is carried in VALIDATION details', async () => {
    await expect(resolveInRoots('', ROOTS, FOLLOW, 'destination')).rejects.toMatchObject({
      code: 'VALIDATION',
      details: { field: 'destination' },
    });
  });

  test('a malformed path string is VALIDATION even with no roots (argument validation comes first, SPEC §3.3)', async () => {
    expect((await resolveErr('a\0b', [])).code).toBe('VALIDATION');
    expect((await resolveErr('', [])).code).toBe('VALIDATION');
  });

  test('no roots → ROOTS_EMPTY, for inside, outside and relative paths alike', async () => {
    for (const requested of ['a.txt', path.join(PROJ, 'a.txt'), '/etc/passwd']) {
      const e = await resolveErr(requested, []);
      expect(e.code).toBe('ROOTS_EMPTY');
      expect(e.path).toBeNull();
    }
  });

  test.each([['loop-a'], ['self-loop'], ['loop-a/x'], ['loop-via-outside']])(
    'symlink loop %j inside → VALIDATION symlink_loop (path is the absolute request)',
    async (requested) => {
      const e = await resolveErr(requested);
      expect(e.code).toBe('VALIDATION');
      expect(e.details).toEqual({ reason: 'symlink_loop' });
      expect(e.path).toBe(path.join(PROJ, requested));
    },
  );
});

describe('existence outside the roots is never revealed', () => {
  /** The envelope with its path (and the path inside the message) blanked out. */
  function shape(e: EnvelopeError): string {
    return JSON.stringify({ ...e, path: '<p>', message: e.message.split(e.path ?? '\0').join('<p>') });
  }

  test.each([
    ['a file vs a missing file', path.join(T, 'outside', 'secret.txt'), path.join(T, 'outside', 'nope.txt')],
    ['a directory vs a missing directory', path.join(T, 'outside', 'dir'), path.join(T, 'outside', 'nodir')],
    [
      'a nested file vs a missing nested file',
      path.join(T, 'outside', 'dir', 'inner.txt'),
      path.join(T, 'nothere', 'x', 'y'),
    ],
    ['a link vs a missing path', path.join(T, 'outside', 'link-o'), path.join(T, 'outside', 'nope')],
    [
      'a path through a link vs a missing path',
      path.join(T, 'outside', 'link-o', 'inner.txt'),
      path.join(T, 'outside', 'nope', 'x'),
    ],
    ['a symlink loop vs a missing path', path.join(T, 'outside', 'loop-1'), path.join(T, 'outside', 'nope')],
    [
      'a path under a loop vs a missing path',
      path.join(T, 'outside', 'loop-1', 'x'),
      path.join(T, 'outside', 'nope', 'x'),
    ],
    ['a sibling-prefix file vs a missing one', path.join(T, 'proj-secret', 'k'), path.join(T, 'proj-secret', 'x')],
    [
      'a file under a file vs missing',
      path.join(T, 'outside', 'secret.txt', 'x'),
      path.join(T, 'outside', 'nope', 'x'),
    ],
    ['relative existing vs relative missing', '../outside/secret.txt', '../outside/nope.txt'],
    ['via link: existing vs missing', 'link-out-dir/secret.txt', 'link-out-dir/nope.txt'],
  ])('%s: identical envelopes except the path', async (_label, existing, missing) => {
    const a = await resolveErr(existing);
    const b = await resolveErr(missing);
    expect(a.code).toBe('NOT_ALLOWED');
    expect(shape(a)).toBe(shape(b));
    expect(a.path).not.toBe(b.path);
  });

  test('an outside directory the walk may not search (EACCES-like) is still plain NOT_ALLOWED', async () => {
    // Running as root cannot produce EACCES; a file used as a directory (ENOTDIR) is the other early stop.
    const e = await resolveErr(path.join(T, 'outside', 'secret.txt', 'deeper', 'x'));
    expect(e).toMatchObject({ code: 'NOT_ALLOWED', details: { reason: 'outside_roots' } });
  });
});

test('links created after the tree (absolute targets) behave the same', async () => {
  const extra = makeTree({ root: { d: {} }, out: { 'x.txt': OUTSIDE_CONTENT } });
  try {
    const root: EffectiveRoot = {
      given: path.join(extra.dir, 'root'),
      real: path.join(extra.dir, 'root'),
      source: 'cli',
    };
    symlinkSync(path.join(extra.dir, 'out'), path.join(extra.dir, 'root', 'abs-out'));
    symlinkSync(path.join(extra.dir, 'root', 'd'), path.join(extra.dir, 'root', 'abs-in'));
    mkdirSync(path.join(extra.dir, 'root', 'd', 'e'));
    await expect(resolveInRoots('abs-out/x.txt', [root], FOLLOW)).rejects.toMatchObject({ code: 'NOT_ALLOWED' });
    const r = await resolveInRoots('abs-in/e', [root], FOLLOW);
    expect(r.real).toBe(path.join(extra.dir, 'root', 'd', 'e'));
  } finally {
    extra.cleanup();
  }
});

describe('path depth (MAX_PATH_COMPONENTS, docs/security.md "Bounded work")', () => {
  const chain = (n: number) => Array.from({ length: n }, () => 'd').join('/');
  const extra = makeTree({ root: {}, out: {} });
  afterAll(() => extra.cleanup());
  const rootDir = path.join(extra.dir, 'root');
  const root: EffectiveRoot = { given: rootDir, real: rootDir, source: 'cli' };
  const rootDepth = pathComponentCount(rootDir);
  /** Levels below the root up to the bound. */
  const room = MAX_PATH_COMPONENTS - rootDepth;
  const tooDeep = { reason: 'path_too_deep', field: 'path', limit: MAX_PATH_COMPONENTS };
  mkdirSync(path.join(rootDir, chain(room + 3)), { recursive: true });
  mkdirSync(path.join(extra.dir, 'out', chain(room + 3)), { recursive: true });
  symlinkSync(chain(room + 2), path.join(rootDir, 'deep-link'));
  symlinkSync(path.join(extra.dir, 'out', chain(room + 2)), path.join(rootDir, 'deep-out'));
  symlinkSync(chain(room - 1), path.join(rootDir, 'edge-link'));
  // A link one component past the bound, out of the roots (the component walk stops before reading it).
  symlinkSync(path.join(extra.dir, 'out'), path.join(rootDir, chain(room), 'l'));

  test('pathComponentCount counts names, not separators', () => {
    expect([pathComponentCount('/'), pathComponentCount('/a'), pathComponentCount('/a//b/')]).toEqual([0, 1, 2]);
  });

  test('a spelling of exactly the bound resolves; one component more is refused before any IO', async () => {
    const r = await resolveInRoots(chain(room), [root], FOLLOW);
    expect(pathComponentCount(r.real)).toBe(MAX_PATH_COMPONENTS);
    // Missing or not, deeper as spelled: refused (as is a spelling that climbs back with `..` after going too deep).
    for (const spelled of [chain(room + 1), `${chain(room + 1)}/missing`, `${chain(room + 1)}/../..`]) {
      const error = await resolveInRoots(spelled, [root], FOLLOW).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolError);
      expect((error as ToolError).code).toBe('VALIDATION');
      expect((error as ToolError).details).toEqual(tooDeep);
    }
  });

  test.each([
    ['deep-link', 'an existing target (the kernel answer)'],
    ['deep-link/missing.txt', 'a missing final component (the component walk)'],
    ['edge-link/d/d', 'a target that crosses the bound below the link'],
  ])('%s: a short path through a link to %s is path_too_deep', async (spelled) => {
    const error = await resolveInRoots(spelled, [root], FOLLOW).catch((e: unknown) => e);
    expect((error as ToolError).code).toBe('VALIDATION');
    expect((error as ToolError).details).toEqual(tooDeep);
    expect((error as ToolError).message).toContain('leads through a symbolic link');
  });

  test('a link to an edge-deep target inside the bound resolves', async () => {
    const r = await resolveInRoots('edge-link/d', [root], FOLLOW);
    expect(pathComponentCount(r.real)).toBe(MAX_PATH_COMPONENTS);
  });

  test('realOrLexical: the nearest existing ancestor through a deep link, the missing rest appended', () => {
    const deepReal = path.join(rootDir, chain(room + 2));
    expect(realOrLexical(path.join(rootDir, 'deep-link'))).toBe(deepReal);
    expect(realOrLexical(path.join(rootDir, 'deep-link', 'm', 'n', 'o'))).toBe(path.join(deepReal, 'm', 'n', 'o'));
    expect(realOrLexical(path.join(rootDir, 'missing', 'x'))).toBe(path.join(rootDir, 'missing', 'x'));
    expect(realOrLexical('relative/missing')).toBe(path.join(realpathSync(process.cwd()), 'relative/missing'));
  });

  test.each(['edge-link/d/l', 'edge-link/d/l/missing.txt'])(
    '%s: a link past the bound out of the roots is NOT_ALLOWED, its target existing or not',
    async (spelled) => {
      const error = await resolveInRoots(spelled, [root], FOLLOW).catch((e: unknown) => e);
      expect((error as ToolError).code).toBe('NOT_ALLOWED');
      expect((error as ToolError).details).toMatchObject({ reason: 'symlink_target_outside' });
    },
  );

  test('a missing path reached down past the bound and back up resolves where the kernel leads', async () => {
    const r = await resolveInRoots(`deep-link/${'../'.repeat(room + 2)}new.txt`, [root], FOLLOW);
    expect(r.real).toBe(path.join(rootDir, 'new.txt'));
  });

  test.each(['deep-out', 'deep-out/missing.txt'])('%s: too deep outside the roots is NOT_ALLOWED', async (spelled) => {
    const error = await resolveInRoots(spelled, [root], FOLLOW).catch((e: unknown) => e);
    expect((error as ToolError).code).toBe('NOT_ALLOWED');
    expect((error as ToolError).details).toMatchObject({ reason: 'symlink_target_outside' });
  });
});
