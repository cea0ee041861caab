import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { loadInstallKey } from './installKey';

/**
 * The install's identity key, kept OUTSIDE the log and the read models: `KB_IDENTITY_KEY`
 * (base64 of 32 bytes) when set, else `<dataDir>/identity.key`, created once with mode 0600.
 * Sub-keys are derived per purpose (HKDF-SHA256), so one purpose's output never serves another:
 *
 * - `mail-token`: e-mailed tokens (verification, password reset, invitations) are an HMAC of
 *   the request's id, so the token is never in an event (events are kept forever and exported)
 *   and the mail process manager can derive the same token again after a crash;
 * - `totp-seed`: TOTP secrets are sealed (AES-256-GCM, user id as associated data) before
 *   they enter an event;
 * - `ip-hash`: session IP addresses are shown as a keyed hash (a plain SHA-256 of an IPv4
 *   address is reversed by enumeration).
 */
export const IDENTITY_KEY_ENV = 'KB_IDENTITY_KEY';
export const IDENTITY_KEY_FILE = 'identity.key';
const KEY_BYTES = 32;

export function loadIdentityKey(dataDir: string, env: NodeJS.ProcessEnv = process.env): Buffer {
  return loadInstallKey(dataDir, IDENTITY_KEY_ENV, IDENTITY_KEY_FILE, env);
}

export type MailTokenPurpose = 'verify-email' | 'reset-password' | 'invitation';

export interface IdentityKeys {
  /**
   * `<subjectId>.<requestId>.<mac>`: the token mailed for a request of a subject (the user;
   * the workspace for an invitation). Derived, never stored.
   */
  mailToken(purpose: MailTokenPurpose, subjectId: string, requestId: string): string;
  /** What a token was issued for, or null when it is malformed or forged. */
  requestOf(purpose: MailTokenPurpose, token: string): { subjectId: string; requestId: string } | null;
  sealSeed(seed: Buffer, userId: string): string;
  openSeed(sealed: string, userId: string): Buffer | null;
  ipHash(ip: string): string;
}

const subKey = (key: Buffer, info: string) => Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), Buffer.from(`kb-identity:${info}`), KEY_BYTES));
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function createIdentityKeys(key: Buffer): IdentityKeys {
  if (key.length !== KEY_BYTES) throw new Error(`the identity key must be ${KEY_BYTES} bytes`);
  const tokenKey = subKey(key, 'mail-token');
  const seedKey = subKey(key, 'totp-seed');
  const ipKey = subKey(key, 'ip-hash');
  const mac = (purpose: string, subjectId: string, requestId: string) => createHmac('sha256', tokenKey).update(`${purpose}\0${subjectId}\0${requestId}`).digest();
  return {
    mailToken: (purpose, subjectId, requestId) => `${subjectId}.${requestId}.${mac(purpose, subjectId, requestId).toString('base64url')}`,
    requestOf(purpose, token) {
      const [subjectId, requestId, sig, extra] = token.split('.');
      if (extra !== undefined || !subjectId || !requestId || !sig || !UUID.test(subjectId) || !UUID.test(requestId)) return null;
      const given = Buffer.from(sig, 'base64url');
      const expected = mac(purpose, subjectId, requestId);
      return given.length === expected.length && timingSafeEqual(given, expected) ? { subjectId, requestId } : null;
    },
    sealSeed(seed, userId) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', seedKey, iv);
      cipher.setAAD(Buffer.from(`totp:${userId}`));
      const ct = Buffer.concat([cipher.update(seed), cipher.final()]);
      return `v1:${Buffer.concat([iv, ct, cipher.getAuthTag()]).toString('base64url')}`;
    },
    openSeed(sealed, userId) {
      if (!sealed.startsWith('v1:')) return null;
      const raw = Buffer.from(sealed.slice(3), 'base64url');
      if (raw.length < 12 + 16 + 1) return null;
      try {
        const d = createDecipheriv('aes-256-gcm', seedKey, raw.subarray(0, 12));
        d.setAAD(Buffer.from(`totp:${userId}`));
        d.setAuthTag(raw.subarray(raw.length - 16));
        return Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]);
      } catch {
        return null;
      }
    },
    ipHash: (ip) => createHmac('sha256', ipKey).update(ip).digest('hex').slice(0, 32),
  };
}

const cache = new Map<string, IdentityKeys>();

/** The identity keys of an install, loaded lazily and cached per data dir and key source. */
export function identityKeys(ctx: { config: { dataDir: string } }, env: NodeJS.ProcessEnv = process.env): IdentityKeys {
  const k = `${ctx.config.dataDir}\0${env[IDENTITY_KEY_ENV] ?? ''}`;
  let v = cache.get(k);
  if (!v) {
    v = createIdentityKeys(loadIdentityKey(ctx.config.dataDir, env));
    cache.set(k, v);
  }
  return v;
}
