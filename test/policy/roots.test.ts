/**
 * RootSet's rules (SPEC §4.1 as updated for issue #15), driven directly with announcement sequences a client (or an
 * attacker posing as one) can send: an initial empty list keeps the command-line roots; anything announced after a
 * non-empty list only narrows, and an empty list then narrows to nothing, never back; an announcement of roots that
 * do not exist is not "no roots to offer". A roots/list answer is taken entry by entry (invalid entries rejected with
 * their reason; none valid: no roots, never the default). ROOTS_EMPTY names the cause and no path but the roots
 * given (rejected command-line roots, the client's own entries).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveInRoots } from '../../src/policy/resolve-path.js';
import { rejectedRootsOf, RootSet, rootsEmptyError } from '../../src/policy/roots.js';
import { makeTree } from '../helpers/tree.js';

const R = makeTree({ sub: { 'in.txt': 'x\n' }, 'top.txt': 't\n', other: {} }, 'fs-tools-rootset-');
const O = makeTree({ 'o.txt': 'o\n' }, 'fs-tools-rootset-out-');
afterAll(() => {
  R.cleanup();
  O.cleanup();
});
const uri = (p: string) => pathToFileURL(p).href;
const cli = () => [{ given: R.dir, real: R.dir, source: 'cli' as const }];
const paths = (s: RootSet) => s.current().map((r) => r.real);

describe('RootSet announcement sequences', () => {
  it('[] then [] keeps the command-line roots; then [sub] narrows; then [] empties; then [] stays empty', async () => {
    const s = new RootSet(cli(), 'narrow', true);
    await s.applyClientRoots([]);
    expect([paths(s), s.rule]).toEqual([[R.dir], 'client_offered_none']);
    await s.applyClientRoots([]);
    expect([paths(s), s.rule]).toEqual([[R.dir], 'client_offered_none']);
    await s.applyClientRoots([uri(path.join(R.dir, 'sub'))]);
    expect([paths(s), s.rule]).toEqual([[path.join(R.dir, 'sub')], 'narrowed_by_client']);
    await s.applyClientRoots([]);
    expect([paths(s), s.rule]).toEqual([[], 'client_emptied']);
    await s.applyClientRoots([]);
    expect([paths(s), s.rule]).toEqual([[], 'client_emptied']);
  });

  it('a later announcement cannot widen beyond the command-line roots (narrow)', async () => {
    const s = new RootSet(cli(), 'narrow', true);
    await s.applyClientRoots([uri(path.join(R.dir, 'sub'))]);
    await s.applyClientRoots([uri(O.dir), uri('/')]);
    expect(paths(s)).toEqual([R.dir]); // `/` contains the CLI root: the CLI root, never `/` itself
    expect(paths(s)).not.toContain(O.dir);
  });

  it('roots that do not exist are not "no roots to offer": they narrow to nothing, and then [] stays nothing', async () => {
    const s = new RootSet(cli(), 'narrow', true);
    await s.applyClientRoots([uri(path.join(R.dir, 'no-such-dir'))]);
    expect(paths(s)).toEqual([]);
    const e = s.emptyError();
    expect(e.message).toContain("no entry of the client's roots/list answer is a usable local directory");
    expect(e.details.rejected_roots).toEqual([
      { root: path.join(R.dir, 'no-such-dir'), source: 'client', reason: 'missing' },
    ]);
    await s.applyClientRoots([]);
    expect([paths(s), s.rule]).toEqual([[], 'client_emptied']);
  });

  it('replace: [] first keeps the command-line roots; a non-empty list replaces them', async () => {
    const s = new RootSet(cli(), 'replace', true);
    await s.applyClientRoots([]);
    expect(paths(s)).toEqual([R.dir]);
    await s.applyClientRoots([uri(O.dir)]);
    expect([paths(s), s.rule]).toEqual([[O.dir], 'replaced_by_client']);
  });

  it('ignore: nothing a client sends changes the roots', async () => {
    const s = new RootSet(cli(), 'ignore', true);
    await s.applyClientRoots([uri(O.dir)]);
    await s.applyClientRoots([]);
    expect([paths(s), s.rule]).toEqual([[R.dir], 'command_line']);
    expect(s.client).toBeNull();
  });

  it('the ROOTS_EMPTY thrown by path resolution names the cause and carries no path', async () => {
    const s = new RootSet(cli(), 'narrow', true);
    await s.applyClientRoots([uri(O.dir)]);
    const error = await resolveInRoots(path.join(O.dir, 'o.txt'), s.current(), { followFinal: true }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'ROOTS_EMPTY', path: null, details: { rule: 'narrowed_by_client' } });
    const text = JSON.stringify({
      m: (error as Error).message,
      d: (error as { details: unknown }).details,
      s: (error as { suggestion: string }).suggestion,
    });
    expect(text).not.toContain(O.dir);
    expect(text).not.toContain(R.dir);
  });

  it('no ROOT and no default (cwd is / or home): the cause and the fix name the ROOT argument', () => {
    const s = new RootSet([], 'narrow', false);
    expect(s.rule).toBe('no_default_root');
    const e = s.emptyError();
    expect(e.message).toContain('without a ROOT');
    expect(e.suggestion).toContain('ROOT argument');
  });
});

describe('RootSet reporting and client tracking', () => {
  it('explains every rule it passes through, and reports what the client announced', async () => {
    const s = new RootSet(cli(), 'narrow', true);
    expect([s.rule, s.explain(), s.fromClient, s.clientRootsMode]).toEqual([
      'command_line',
      'The command-line roots are in force.',
      false,
      'narrow',
    ]);
    await s.applyClientRoots([]);
    expect(s.explain()).toContain('command-line roots stay in force');
    await s.applyClientRoots(['not a uri', 'https://example.com/x', uri(path.join(R.dir, 'sub'))]);
    expect([s.rule, s.fromClient]).toEqual(['narrowed_by_client', true]);
    expect(s.explain()).toContain('narrow the command-line roots');
    expect(s.client?.announced.map((a) => a.usable)).toEqual([false, false, true]);
    expect(s.commandLine.map((r) => r.real)).toEqual([R.dir]);
    await s.applyClientRoots([]);
    expect(s.explain()).toContain('empty list after a non-empty one');
    expect(rootsEmptyError(s.current())).toMatchObject({ code: 'ROOTS_EMPTY', details: { rule: 'client_emptied' } });
  });

  it('without a command-line ROOT the client replaces the working-directory default', async () => {
    const s = new RootSet([{ given: R.dir, real: R.dir, source: 'cwd' }], 'narrow', false);
    expect([s.rule, s.explain()]).toEqual(['cwd_default', 'No ROOT was given: the working directory is the root.']);
    await s.applyClientRoots([uri(O.dir)]);
    expect([paths(s), s.rule]).toEqual([[O.dir], 'client_replaces_default']);
    expect(s.explain()).toContain('replace the working-directory default');
  });

  it('track applies an answered roots request before ready() returns; a failed request is reported and changes nothing', async () => {
    const s = new RootSet(cli(), 'narrow', true);
    await s.ready(); // nothing pending
    s.track(Promise.resolve({ roots: [{ uri: uri(path.join(R.dir, 'sub')) }] }), () => undefined);
    await s.ready();
    expect(paths(s)).toEqual([path.join(R.dir, 'sub')]);
    const failures: unknown[] = [];
    const t = new RootSet(cli(), 'narrow', true);
    t.track(Promise.reject(new Error('client gone')), (e) => failures.push(e));
    await t.ready();
    expect(failures).toHaveLength(1);
    expect(paths(t)).toEqual([R.dir]);
    const ignoring = new RootSet(cli(), 'ignore', true);
    ignoring.track(Promise.resolve({ roots: [{ uri: uri(O.dir) }] }), () => undefined);
    await ignoring.ready();
    expect(paths(ignoring)).toEqual([R.dir]);
  });

  it('a roots/list answer is taken entry by entry: each invalid entry is rejected with its reason', async () => {
    const s = new RootSet(cli(), 'narrow', true);
    const file = path.join(R.dir, 'top.txt');
    await s.applyClientAnswer({
      roots: [
        { uri: uri(path.join(R.dir, 'sub')) },
        { uri: path.join(R.dir, 'other') },
        { uri: 'https://example.invalid/x' },
        { uri: 'file://remote-host/share' },
        { uri: uri(file) },
        { name: 'no uri' },
        42,
      ],
    });
    expect([paths(s), s.rule]).toEqual([[path.join(R.dir, 'sub')], 'narrowed_by_client']);
    expect(s.rejected.map((r) => [r.given, r.reason])).toEqual([
      [path.join(R.dir, 'other'), 'not_a_file_uri'],
      ['https://example.invalid/x', 'not_a_file_uri'],
      ['file://remote-host/share', 'not_a_file_uri'],
      [file, 'not_a_directory'],
      ['{"name":"no uri"}', 'malformed'],
      ['42', 'malformed'],
    ]);
    // The NOT_ALLOWED of a path outside names them too.
    const error = await resolveInRoots(path.join(R.dir, 'top.txt'), s.current(), { followFinal: true }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'NOT_ALLOWED', details: { reason: 'outside_roots' } });
    expect((error as { details: { rejected_roots: unknown[] } }).details.rejected_roots).toHaveLength(6);
  });

  it('a non-empty answer with no valid entry, or no roots array at all, gives no roots: never the default', async () => {
    for (const answer of [{ roots: [{ uri: R.dir }] }, { roots: 'x' }, null, 'nonsense']) {
      const s = new RootSet([{ given: R.dir, real: R.dir, source: 'cwd' }], 'narrow', false);
      await s.applyClientAnswer(answer);
      expect([paths(s), s.rule]).toEqual([[], 'client_replaces_default']);
      const e = s.emptyError();
      expect(e.message).toContain('no entry of the client');
      expect(e.suggestion).toContain('file:// URIs');
      expect(e.details.rejected_roots).toHaveLength(1);
    }
  });

  it('command-line roots rejected at start-up: every one rejected is ROOTS_EMPTY naming them, and stays so', async () => {
    const missing = path.join(R.dir, 'missing');
    const s = new RootSet([], 'narrow', true, [{ given: missing, source: 'cli', reason: 'missing' }]);
    expect([paths(s), s.rule]).toEqual([[], 'command_line']);
    const e = rootsEmptyError(s.current());
    expect(e.message).toBe(`No sandbox roots: every command-line root was left out (${missing} does not exist).`);
    expect(e.suggestion).toContain('ROOT arguments');
    expect(e.details.rejected_roots).toEqual([{ root: missing, source: 'cli', reason: 'missing' }]);
    // A client root cannot widen an empty command-line set under narrow.
    await s.applyClientRoots([uri(R.dir)]);
    expect(paths(s)).toEqual([]);
    expect(s.emptyError().message).toContain('every command-line root was left out');
    // Under replace the client's answer decides: an answer with no valid entry is named as the cause.
    const r = new RootSet([], 'replace', true, [{ given: missing, source: 'cli', reason: 'missing' }]);
    await r.applyClientAnswer({ roots: [{ uri: 'relative/path' }] });
    expect([paths(r), r.rule]).toEqual([[], 'replaced_by_client']);
    expect(r.emptyError().message).toContain("no entry of the client's roots/list answer");
    expect(r.emptyError().details.rejected_roots).toHaveLength(2);
    expect(rejectedRootsOf(s.current())).toEqual([{ given: missing, source: 'cli', reason: 'missing' }]);
  });

  it('a generic ROOTS_EMPTY for an empty list that carries no cause', () => {
    expect(rootsEmptyError([])).toMatchObject({ code: 'ROOTS_EMPTY', path: null });
  });
});

describe('the shown text of a rejected client entry (review of the r8-roots work)', () => {
  it('is one line of at most 200 characters, for a plain string and for a file:// URI path', async () => {
    const s = new RootSet(cli(), 'narrow', true);
    await s.applyClientAnswer({
      roots: [
        { uri: 'x\r\n\u2028y\u0085' },
        { uri: `${uri(R.dir)}/nope%0Az` },
        { uri: `${uri(R.dir)}/${'a'.repeat(1000)}` },
        'b'.repeat(1000),
      ],
    });
    const shown = s.client!.announced.map((a) => a.path);
    expect(shown[0]).toBe('x\\u000d\\u000a\\u2028y\\u0085');
    expect(shown[1]).toBe(`${R.dir}/nope\\u000az`);
    expect(shown[2]).toHaveLength(200);
    expect(shown[2].endsWith('…')).toBe(true);
    expect(shown[3]).toHaveLength(200);
    expect(s.rejected.map((r) => r.reason)).toEqual(['not_a_file_uri', 'missing', 'missing', 'malformed']);
  });
});

describe('rejected entries in envelopes', () => {
  it('ROOTS_EMPTY names the first 10 and counts the rest', async () => {
    const s = new RootSet(cli(), 'narrow', true);
    await s.applyClientAnswer({ roots: Array.from({ length: 12 }, (_, i) => ({ uri: `plain-${i}` })) });
    const details = s.emptyError().details;
    expect((details.rejected_roots as unknown[]).length).toBe(10);
    expect(details.rejected_roots_omitted).toBe(2);
    expect(s.rejected).toHaveLength(12);
  });
});
