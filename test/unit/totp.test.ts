import { base32Decode, base32Encode, matchTotp, totp } from '../../src/security/totp';
import { createIdentityKeys } from '../../src/security/identityKeys';
import { randomBytes } from 'node:crypto';

// RFC 6238, Appendix B (8 digits; the seeds are the ASCII strings below).
const SHA1 = Buffer.from('12345678901234567890');
const SHA256 = Buffer.from('12345678901234567890123456789012');
const SHA512 = Buffer.from('1234567890123456789012345678901234567890123456789012345678901234');
const VECTORS: [number, string, string, string][] = [
  [59, '94287082', '46119246', '90693936'],
  [1111111109, '07081804', '68084774', '25091201'],
  [1111111111, '14050471', '67062674', '99943326'],
  [1234567890, '89005924', '91819424', '93441116'],
  [2000000000, '69279037', '90698825', '38618901'],
  [20000000000, '65353130', '77737706', '47863826'],
];

describe('TOTP (RFC 6238)', () => {
  it.each(VECTORS)('T=%d matches the RFC test vectors for SHA-1, SHA-256 and SHA-512', (t, sha1, sha256, sha512) => {
    expect(totp(SHA1, t, 8, 'sha1')).toBe(sha1);
    expect(totp(SHA256, t, 8, 'sha256')).toBe(sha256);
    expect(totp(SHA512, t, 8, 'sha512')).toBe(sha512);
  });

  it('accepts one step of drift either way, nothing further, and only 6 digits', () => {
    const now = new Date(1_700_000_000_000);
    const t = now.getTime() / 1000;
    expect(matchTotp(SHA1, totp(SHA1, t), now)).toBe(Math.floor(t / 30));
    expect(matchTotp(SHA1, totp(SHA1, t - 30), now)).not.toBeNull();
    expect(matchTotp(SHA1, totp(SHA1, t + 30), now)).not.toBeNull();
    expect(matchTotp(SHA1, totp(SHA1, t - 90), now)).toBeNull();
    expect(matchTotp(SHA1, 'abcdef', now)).toBeNull();
    expect(matchTotp(SHA1, '1234567', now)).toBeNull();
  });

  it('base32 round-trips (RFC 4648 vectors)', () => {
    expect(base32Encode(Buffer.from('foobar'))).toBe('MZXW6YTBOI');
    expect(base32Decode('MZXW6YTBOI').toString()).toBe('foobar');
    const b = randomBytes(20);
    expect(base32Decode(base32Encode(b))).toEqual(b);
  });
});

describe('identity keys', () => {
  const keys = createIdentityKeys(randomBytes(32));
  const u = '11111111-1111-4111-8111-111111111111';
  const r = '22222222-2222-4222-8222-222222222222';

  it('mail tokens verify for their purpose and subject only', () => {
    const token = keys.mailToken('reset-password', u, r);
    expect(keys.requestOf('reset-password', token)).toEqual({ subjectId: u, requestId: r });
    expect(keys.requestOf('verify-email', token)).toBeNull();
    expect(keys.requestOf('reset-password', token.replace(u, '33333333-3333-4333-8333-333333333333'))).toBeNull();
    expect(keys.requestOf('reset-password', `${token.slice(0, -2)}AA`)).toBeNull();
    expect(createIdentityKeys(randomBytes(32)).requestOf('reset-password', token)).toBeNull();
    expect(keys.requestOf('reset-password', 'garbage')).toBeNull();
  });

  it('seeds are sealed to their user', () => {
    const seed = randomBytes(20);
    const sealed = keys.sealSeed(seed, u);
    expect(sealed).not.toContain(base32Encode(seed));
    expect(keys.openSeed(sealed, u)).toEqual(seed);
    expect(keys.openSeed(sealed, r)).toBeNull();
  });
});
