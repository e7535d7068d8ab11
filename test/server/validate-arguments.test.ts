/**
 * Argument validation against the real tool definitions (src/server/validate-arguments.ts, issue #21): closest-name
 * suggestions at every depth from the alias table agents really use, then edit distance; every unknown parameter in
 * one envelope; never a suggestion that leads to another VALIDATION (a name already given, claimed twice, or whose
 * value would fail there). Each envelope is asserted field by field.
 */
import { describe, expect, it } from 'vitest';
import { toEnvelope } from '../../src/errors/to-envelope.js';
import {
  argumentShapeError,
  closestName,
  MAX_ARGUMENT_DEPTH,
  MAX_ARGUMENT_KEYS,
  RefusedArguments,
  validateArguments,
} from '../../src/server/validate-arguments.js';
import { TOOLS } from '../../src/tools/registry.js';

const tool = (name: string) => TOOLS.find((t) => t.name === name)!;

function envelopeOf(name: string, args: unknown) {
  try {
    validateArguments(tool(name), args);
  } catch (error) {
    return toEnvelope(error).error;
  }
  throw new Error(`${name} accepted ${JSON.stringify(args)}`);
}

describe('closest names from the alias table, at every depth', () => {
  it.each([
    ['read_file', { file: 'a.txt' }, 'file', 'path'],
    ['read_file', { filepath: 'a.txt' }, 'filepath', 'path'],
    ['read_file', { path: 'a.txt', end: 5 }, 'end', 'end_line'],
    ['read_file', { path: 'a.txt', line: 5 }, 'line', 'start_line'],
    ['move_path', { from: 'a', destination: 'b' }, 'from', 'source'],
    ['move_path', { source: 'a', to: 'b' }, 'to', 'destination'],
    ['write_file', { path: 'a', text: 'x' }, 'text', 'content'],
    ['edit_file', { path: 'a', edits: [{ old_string: 'x', new_text: 'y' }] }, 'edits.0.old_string', 'old_text'],
    ['edit_file', { path: 'a', edits: [{ oldText: 'x', new_text: 'y' }] }, 'edits.0.oldText', 'old_text'],
    ['edit_file', { path: 'a', edits: [{ old_text: 'x', new_string: 'y' }] }, 'edits.0.new_string', 'new_text'],
    [
      'edit_file',
      { path: 'a', edits: [{ old_text: 'x', new_text: 'y', replaceAll: true }] },
      'edits.0.replaceAll',
      'replace_all',
    ],
    ['apply_patch', { diff: '--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n' }, 'diff', 'patch'],
  ])('%s %j: %s → %s', (name, args, field, closest) => {
    const e = envelopeOf(name, args);
    expect(e.code).toBe('VALIDATION');
    expect(e.details).toMatchObject({ reason: 'unknown_parameter', field, closest });
    expect(e.message).toContain(`'${field}'`);
    expect(e.suggestion).toContain(`'${closest}'`);
    expect(e.retryable).toBe(false);
    expect(e.recovery).toBe('fix_arguments');
  });

  it('lists the valid names of the object the unknown key sits in (edits[], not edit_file)', () => {
    const e = envelopeOf('edit_file', { path: 'a', edits: [{ old_string: 'x', new_text: 'y' }] });
    expect(e.details.valid).toEqual(expect.arrayContaining(['old_text', 'new_text', 'replace_all']));
    expect(e.details.valid).not.toContain('path');
  });

  it('following each suggestion gives arguments that validate', () => {
    const cases: Array<[string, Record<string, unknown>]> = [
      ['read_file', { file: 'a.txt', end: 3 }],
      ['move_path', { from: 'a', to: 'b' }],
      ['edit_file', { file_path: 'a', edits: [{ old_string: 'x', new_string: 'y', replaceAll: true }] }],
    ];
    for (const [name, args] of cases) {
      const e = envelopeOf(name, args);
      const fixed = structuredClone(args);
      for (const u of (e.details.unknown ?? [{ field: e.details.field, closest: e.details.closest }]) as Array<{
        field: string;
        closest: string | null;
      }>) {
        expect(u.closest, u.field).not.toBeNull();
        const parts = u.field.split('.');
        const key = parts.pop()!;
        const holder = parts.reduce<any>((o, p) => o[p], fixed);
        holder[u.closest!] = holder[key];
        delete holder[key];
      }
      expect(() => validateArguments(tool(name), fixed), `${name} ${JSON.stringify(fixed)}`).not.toThrow();
    }
  });
});

describe('all problems in one envelope', () => {
  it('every unknown parameter, at every depth, with the first in the top-level fields', () => {
    const e = envelopeOf('edit_file', { file_path: 'a', edits: [{ old_string: 'x', new_string: 'y' }], bogus: 1 });
    expect(e.details.unknown).toEqual([
      { field: 'edits.0.old_string', closest: 'old_text' },
      { field: 'edits.0.new_string', closest: 'new_text' },
      { field: 'file_path', closest: 'path' },
      { field: 'bogus', closest: null },
    ]);
    expect(e.details.field).toBe('edits.0.old_string');
    expect(e.details.closest).toBe('old_text');
    expect(e.suggestion).toContain("'file_path' to 'path'");
    expect(e.suggestion).toContain('remove the other unknown parameters');
  });
});

describe('never a suggestion that leads to another VALIDATION', () => {
  it('not a name already given', () => {
    const e = envelopeOf('read_file', { path: 'a.txt', file: 'b.txt' });
    expect(e.details).toMatchObject({ field: 'file', closest: null });
    expect(e.suggestion).toContain("Remove 'file'");
  });

  it('not the same name for two unknown keys', () => {
    const e = envelopeOf('read_file', { file: 'a.txt', filepath: 'b.txt' });
    expect(e.details.unknown).toEqual([
      { field: 'file', closest: 'path' },
      { field: 'filepath', closest: null },
    ]);
  });

  it('not a name whose schema rejects the value sent', () => {
    const e = envelopeOf('read_file', { file: 42 });
    expect(e.details).toMatchObject({ field: 'file', closest: null });
  });

  it('not "head" for "end" (the old edit-distance answer, which conflicted with start_line/end_line)', () => {
    expect(closestName('end', ['path', 'head', 'tail', 'start_line', 'end_line'])).toBe('end_line');
  });

  it('an alias that is not valid at that depth falls back to edit distance or nothing', () => {
    expect(closestName('old_string', ['path', 'content'])).toBeNull();
    expect(closestName('pathh', ['path', 'content'])).toBe('path');
  });
});

describe('bounded shape before anything recursive (docs/security.md "Bounded work")', () => {
  /** `{"a":{"a":…}}` nested `n` levels, built iteratively (JSON.stringify of it would itself recurse). */
  const nested = (n: number): unknown => {
    let v: unknown = 1;
    for (let i = 0; i < n; i++) v = i % 2 ? { a: v } : [v];
    return v;
  };

  it('a value nested 50,000 levels is VALIDATION too_deep naming the parameter, not a stack overflow', () => {
    const e = envelopeOf('read_file', { path: 'a.txt', x: nested(50_000) });
    expect(e.code).toBe('VALIDATION');
    expect(e.details).toEqual({ reason: 'too_deep', field: 'x', limit: MAX_ARGUMENT_DEPTH });
    // The limit itself passes the shape check (and then fails as an unknown parameter, with a closest-name search).
    expect(envelopeOf('read_file', { path: 'a.txt', x: nested(MAX_ARGUMENT_DEPTH - 1) }).details.reason).toBe(
      'unknown_parameter',
    );
    expect(envelopeOf('read_file', { path: 'a.txt', x: nested(MAX_ARGUMENT_DEPTH) }).details.reason).toBe('too_deep');
  });

  it('more than MAX_ARGUMENT_KEYS keys is VALIDATION too_many_keys; at the bound, closest names only for the first 20', () => {
    const many = (n: number) =>
      Object.fromEntries([['path', 'a.txt'], ...Array.from({ length: n }, (_, i) => [`fil${i}`, 1])]);
    expect(envelopeOf('read_file', many(MAX_ARGUMENT_KEYS)).details).toEqual({
      reason: 'too_many_keys',
      field: null,
      limit: MAX_ARGUMENT_KEYS,
    });
    const e = envelopeOf('read_file', many(MAX_ARGUMENT_KEYS - 1));
    expect(e.details.reason).toBe('unknown_parameter');
    expect(e.details.unknown).toHaveLength(20);
    expect(e.details.unknown_count).toBe(MAX_ARGUMENT_KEYS - 1);
    expect(e.message.length).toBeLessThan(2000);
  });

  it('argumentShapeError names the same refusal for the protocol layer, and RefusedArguments carries it through', () => {
    const refused = argumentShapeError('read_file', { path: 'a.txt', x: nested(100) });
    expect(refused?.details.reason).toBe('too_deep');
    expect(argumentShapeError('read_file', { path: 'a.txt' })).toBeNull();
    expect(() => validateArguments(tool('read_file'), new RefusedArguments(refused!))).toThrow(refused!);
  });
});
