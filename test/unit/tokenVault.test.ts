import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createTokenVault, LINK_TOKEN_KEY_FILE, loadLinkTokenKey, tokenVault } from '../../src/security/tokenVault';

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'kb-vault-'));
const TOKEN = 'ab'.repeat(32);

describe('token vault (AES-256-GCM, key outside the databases)', () => {
  it('seals and opens a token; the sealed form does not contain the token', () => {
    const v = createTokenVault(randomBytes(32));
    const sealed = v.seal(TOKEN, 'link-1');
    expect(sealed).toMatch(/^v1:[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain(TOKEN);
    expect(sealed).not.toContain(TOKEN.slice(8));
    expect(v.open(sealed, 'link-1')).toBe(TOKEN);
    // A fresh IV each time.
    expect(v.seal(TOKEN, 'link-1')).not.toBe(sealed);
  });

  it('refuses another key, another link id (AAD), tampering and garbage', () => {
    const v = createTokenVault(randomBytes(32));
    const sealed = v.seal(TOKEN, 'link-1');
    expect(createTokenVault(randomBytes(32)).open(sealed, 'link-1')).toBeNull();
    expect(v.open(sealed, 'link-2')).toBeNull();
    const raw = Buffer.from(sealed.slice(3), 'base64url');
    raw[20] ^= 1;
    expect(v.open(`v1:${raw.toString('base64url')}`, 'link-1')).toBeNull();
    expect(v.open('v1:', 'link-1')).toBeNull();
    expect(v.open('v2:abc', 'link-1')).toBeNull();
    expect(v.open(TOKEN, 'link-1')).toBeNull();
  });

  it('without KB_LINK_TOKEN_KEY: creates <dataDir>/link-token.key once, mode 0600, and reuses it', () => {
    const dir = tmp();
    const k1 = loadLinkTokenKey(dir, {});
    const file = path.join(dir, LINK_TOKEN_KEY_FILE);
    expect(k1).toHaveLength(32);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const k2 = loadLinkTokenKey(dir, {});
    expect(k2.equals(k1)).toBe(true);
    // A vault loaded later (e.g. after a restart) opens what an earlier one sealed.
    const sealed = createTokenVault(k1).seal(TOKEN, 'l');
    expect(tokenVault({ config: { dataDir: dir } }, {}).open(sealed, 'l')).toBe(TOKEN);
  });

  it('creates the data dir when missing', () => {
    const dir = path.join(tmp(), 'nested', 'data');
    expect(loadLinkTokenKey(dir, {})).toHaveLength(32);
    expect(fs.existsSync(path.join(dir, LINK_TOKEN_KEY_FILE))).toBe(true);
  });

  it('KB_LINK_TOKEN_KEY (base64 of 32 bytes) wins over the key file, and no file is written', () => {
    const dir = tmp();
    const key = randomBytes(32);
    expect(loadLinkTokenKey(dir, { KB_LINK_TOKEN_KEY: key.toString('base64') }).equals(key)).toBe(true);
    expect(fs.existsSync(path.join(dir, LINK_TOKEN_KEY_FILE))).toBe(false);
  });

  it('a malformed key (env or file) is an error naming where it came from, never silently replaced', () => {
    const dir = tmp();
    expect(() => loadLinkTokenKey(dir, { KB_LINK_TOKEN_KEY: randomBytes(16).toString('base64') })).toThrow(/KB_LINK_TOKEN_KEY/);
    expect(() => loadLinkTokenKey(dir, { KB_LINK_TOKEN_KEY: 'not base64 at all!' })).toThrow(/KB_LINK_TOKEN_KEY/);
    const file = path.join(dir, LINK_TOKEN_KEY_FILE);
    fs.writeFileSync(file, 'short', { mode: 0o600 });
    expect(() => loadLinkTokenKey(dir, {})).toThrow(/link-token\.key/);
    expect(fs.readFileSync(file, 'utf8')).toBe('short');
  });
});
