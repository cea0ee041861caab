import jwt from 'jsonwebtoken';
import { signAccessToken, verifyAccessToken } from '../../src/security/accessTokens';

const keys = { jwtSecret: 'a-secret-of-the-tests-0123456789abcdef', config: { accessTokenTtl: 60 } };

describe('access tokens: verified signatures are remembered until the token expires', () => {
  afterEach(() => jest.restoreAllMocks());

  it('checks a token once, then answers from memory with the same claims', () => {
    const token = signAccessToken(keys, 'user-1', 'session-1');
    const verify = jest.spyOn(jwt, 'verify');
    const first = verifyAccessToken(keys, token);
    const second = verifyAccessToken(keys, token);
    expect(first).toMatchObject({ sub: 'user-1', sid: 'session-1', typ: 'access' });
    expect(second).toEqual(first);
    expect(verify).toHaveBeenCalledTimes(1);
  });

  it('refuses a remembered token once it has expired (TOKEN_EXPIRED, as without memory)', () => {
    const token = signAccessToken(keys, 'user-2', 'session-2');
    verifyAccessToken(keys, token);
    const exp = (jwt.decode(token) as { exp: number }).exp;
    jest.spyOn(Date, 'now').mockReturnValue(exp * 1000);
    expect(() => verifyAccessToken(keys, token)).toThrow(expect.objectContaining({ code: 'TOKEN_EXPIRED' }));
  });

  it('never accepts a token remembered under one secret when another secret verifies', () => {
    const token = signAccessToken(keys, 'user-3', 'session-3');
    verifyAccessToken(keys, token);
    expect(() => verifyAccessToken({ jwtSecret: 'another-secret-0123456789abcdef0123' }, token)).toThrow(expect.objectContaining({ code: 'UNAUTHORIZED' }));
  });

  it('remembers nothing of a token that fails (a forged signature fails every time)', () => {
    const token = signAccessToken(keys, 'user-4', 'session-4');
    const forged = `${token.slice(0, token.lastIndexOf('.') + 1)}${'A'.repeat(43)}`;
    const verify = jest.spyOn(jwt, 'verify');
    expect(() => verifyAccessToken(keys, forged)).toThrow(expect.objectContaining({ code: 'UNAUTHORIZED' }));
    expect(() => verifyAccessToken(keys, forged)).toThrow(expect.objectContaining({ code: 'UNAUTHORIZED' }));
    expect(verify).toHaveBeenCalledTimes(2);
  });
});
