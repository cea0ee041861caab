import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { loadInstallKey } from './installKey';

/**
 * Reversible storage of public search-link tokens, so admins can copy a link's URL again
 * while a leaked database does not leak usable tokens: the log and the read models hold a
 * SHA-256 of the token (for look-up) and its AES-256-GCM ciphertext under a per-install key
 * kept OUTSIDE the databases: `KB_LINK_TOKEN_KEY` (base64 of 32 bytes) when set, else the
 * file `<dataDir>/link-token.key`, created once with mode 0600 (like the JWT secret).
 *
 * Sealed form: `v1:` + base64url(iv (12) || ciphertext || tag (16)). The link id is bound
 * in as additional authenticated data, so a ciphertext copied onto another link fails.
 */

export const LINK_TOKEN_KEY_ENV = 'KB_LINK_TOKEN_KEY';
export const LINK_TOKEN_KEY_FILE = 'link-token.key';
const VERSION = 'v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

export interface TokenVault {
  /** Encrypt a token for the given link. */
  seal(token: string, linkId: string): string;
  /** The token, or null when the ciphertext is malformed, tampered with or under another key. */
  open(sealed: string, linkId: string): string | null;
}

const aad = (linkId: string) => Buffer.from(`search-link:${linkId}`, 'utf8');

/** The install's key: from the environment, else read or created once (0600) in the data dir. */
export function loadLinkTokenKey(dataDir: string, env: NodeJS.ProcessEnv = process.env): Buffer {
  return loadInstallKey(dataDir, LINK_TOKEN_KEY_ENV, LINK_TOKEN_KEY_FILE, env);
}

export function createTokenVault(key: Buffer): TokenVault {
  if (key.length !== KEY_BYTES) throw new Error(`the link-token key must be ${KEY_BYTES} bytes`);
  return {
    seal(token, linkId) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(aad(linkId));
      const ct = Buffer.concat([cipher.update(token, 'utf8'), cipher.final()]);
      return VERSION + Buffer.concat([iv, ct, cipher.getAuthTag()]).toString('base64url');
    },
    open(sealed, linkId) {
      if (!sealed.startsWith(VERSION)) return null;
      const raw = Buffer.from(sealed.slice(VERSION.length), 'base64url');
      if (raw.length < IV_BYTES + TAG_BYTES + 1) return null;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
        decipher.setAAD(aad(linkId));
        decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
        return Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString('utf8');
      } catch {
        return null;
      }
    },
  };
}

const vaults = new Map<string, TokenVault>();

/**
 * The vault of an install, loaded lazily and cached per data dir and key source. Throws
 * (with a message naming the setting) when KB_LINK_TOKEN_KEY or the key file is malformed.
 */
export function tokenVault(ctx: { config: { dataDir: string } }, env: NodeJS.ProcessEnv = process.env): TokenVault {
  const cacheKey = `${ctx.config.dataDir}\0${env[LINK_TOKEN_KEY_ENV] ?? ''}`;
  let v = vaults.get(cacheKey);
  if (!v) {
    v = createTokenVault(loadLinkTokenKey(ctx.config.dataDir, env));
    vaults.set(cacheKey, v);
  }
  return v;
}
