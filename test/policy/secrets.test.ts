/**
 * Pins the secret-filename rules (SPEC §4.2): every listed name is a secret, case-insensitively (`.ENV`, `ID_RSA`);
 * `.env.local` is, `.env.example/.sample/.template` and `id_*.pub` are not; `.aws/credentials` and
 * `.docker/config.json` only with their directory; nested paths; `path.win32` separators. assertNotSecret throws
 * SECRET_DENIED when the requested OR the resolved path is a secret, never with allowSecrets.
 */
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import { toEnvelope } from '../../src/errors/to-envelope.js';
import type { PathFlavor } from '../../src/policy/containment.js';
import { assertNotSecret, isSecretPath, secretRuleFor } from '../../src/policy/secrets.js';

const WIN: PathFlavor = { pathModule: path.win32, caseInsensitive: true };

/** SPEC §4.2, one example name per rule. */
const SPEC_SECRET_NAMES = [
  '.env',
  '.env.local',
  '.env.production',
  '.env.development.local',
  'server.pem',
  'server.key',
  'cert.p12',
  'cert.pfx',
  'store.jks',
  'release.keystore',
  'passwords.kdbx',
  'id_rsa',
  'id_dsa',
  'id_ecdsa',
  'id_ed25519',
  '.netrc',
  '_netrc',
  '.npmrc',
  '.pypirc',
  '.git-credentials',
  '.htpasswd',
  'credentials.json',
  '.aws/credentials',
  '.docker/config.json',
  // Not in SPEC §4.2's list; added for issue #12 (the forge CLIs' token stores).
  'gh/hosts.yml',
  'glab-cli/config.yml',
];

const NOT_SECRETS = [
  '.env.example',
  '.env.sample',
  '.env.template',
  '.ENV.EXAMPLE',
  '.Env.Sample',
  'id_rsa.pub',
  'id_dsa.pub',
  'id_ecdsa.pub',
  'id_ed25519.pub',
  'ID_ED25519.PUB',
  'credentials',
  'config.json',
  'aws/credentials',
  'docker/config.json',
  '.aws/config',
  '.docker/daemon.json',
  'hosts.yml',
  'config.yml',
  'gh/config.yml',
  'glab-cli/aliases.yml',
  'environment.ts',
  'env',
  '.envrc',
  'my.env',
  'README.md',
  'key.txt',
  'pem',
  'keys/readme',
  'credentials.json.bak',
  'id_rsa_backup.txt',
  '.npmrc.d/readme',
];

describe('secret names', () => {
  test.each(SPEC_SECRET_NAMES)('%s is a secret (at the top level)', (name) => {
    expect(isSecretPath(`/proj/${name}`)).toBe(true);
  });

  test.each(SPEC_SECRET_NAMES)('%s is a secret in upper case', (name) => {
    expect(isSecretPath(`/proj/${name.toUpperCase()}`)).toBe(true);
  });

  test.each(SPEC_SECRET_NAMES)('%s is a secret nested deep, and as a bare relative name', (name) => {
    expect(isSecretPath(`/proj/a/b/c/${name}`)).toBe(true);
    expect(isSecretPath(`a/b/${name}`)).toBe(true);
    expect(isSecretPath(name)).toBe(true);
  });

  test.each(SPEC_SECRET_NAMES)('%s is a secret with win32 separators', (name) => {
    expect(isSecretPath(`C:\\proj\\sub\\${name.replace('/', '\\')}`, WIN)).toBe(true);
    expect(isSecretPath(`C:/proj/sub/${name}`, WIN)).toBe(true);
  });

  test.each(NOT_SECRETS)('%s is not a secret', (name) => {
    expect(isSecretPath(`/proj/${name}`)).toBe(false);
    expect(isSecretPath(`C:\\proj\\${name.replace('/', '\\')}`, WIN)).toBe(false);
  });

  test.each([
    ['.ENV', '.env'],
    ['ID_RSA', 'id_rsa'],
    ['.Env.Local', '.env.*'],
    ['Server.PEM', '*.pem'],
    ['.AWS/Credentials', '.aws/credentials'],
    ['.Docker/Config.JSON', '.docker/config.json'],
  ])('secretRuleFor(%j) names the rule %j', (name, rule) => {
    expect(secretRuleFor(`/proj/${name}`)).toBe(rule);
  });

  test('a directory named like a secret makes only itself a secret, not what is under it', () => {
    // `.env` is a file name rule; `/proj/.env/x` is judged by its own last component.
    expect(isSecretPath('/proj/.env/readme.md')).toBe(false);
  });

  test('a trailing separator does not hide the name', () => {
    expect(isSecretPath('/proj/.env/')).toBe(true);
  });

  test('empty and root paths are not secrets', () => {
    expect(isSecretPath('')).toBe(false);
    expect(isSecretPath('/')).toBe(false);
  });
});

describe('assertNotSecret', () => {
  function thrown(fn: () => void): ToolError {
    try {
      fn();
    } catch (error) {
      expect(error).toBeInstanceOf(ToolError);
      return error as ToolError;
    }
    throw new Error('expected a throw');
  }

  test.each([
    ['requested is a secret', '/proj/.env', '/proj/.env'],
    ['only the requested spelling is a secret (link .env → notes.txt)', '/proj/.env', '/proj/notes.txt'],
    ['only the resolved target is a secret (link notes.txt → .env)', '/proj/notes.txt', '/proj/.env'],
    ['resolved target is a nested key', '/proj/link', '/proj/keys/deploy.pem'],
    ['resolved target with its directory rule', '/proj/link', '/home/u/.aws/credentials'],
    ['case-folded requested', '/proj/.ENV', '/proj/.ENV'],
  ])('%s → SECRET_DENIED', (_label, requested, resolved) => {
    const error = thrown(() => assertNotSecret(requested, resolved, false));
    expect(error.code).toBe('SECRET_DENIED');
    expect(error.path).toBe(requested);
    const envelope = toEnvelope(error).error;
    expect(envelope.code).toBe('SECRET_DENIED');
    expect(envelope.retryable).toBe(false);
    expect(envelope.recovery).toBe('fix_arguments');
    expect(typeof envelope.details.pattern).toBe('string');
  });

  test.each([
    ['/proj/.env', '/proj/.env'],
    ['/proj/notes.txt', '/proj/.env'],
    ['/proj/.env', '/proj/notes.txt'],
  ])('allowSecrets: (%j, %j) passes', (requested, resolved) => {
    expect(() => assertNotSecret(requested, resolved, true)).not.toThrow();
  });

  test.each([
    ['/proj/notes.txt', '/proj/notes.txt'],
    ['/proj/.env.example', '/proj/.env.example'],
    ['/proj/id_rsa.pub', '/proj/id_rsa.pub'],
  ])('not a secret: (%j, %j) passes', (requested, resolved) => {
    expect(() => assertNotSecret(requested, resolved, false)).not.toThrow();
  });
});
