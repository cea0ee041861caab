import { trustProxyOf } from '../../src/config/config';

describe('KB_TRUST_PROXY', () => {
  it('trusts no proxy by default (a client cannot choose the address its limits count)', () => {
    for (const v of [undefined, '', 'off', 'false']) expect(trustProxyOf(v)).toBe(false);
  });
  it('a whole number is hops; anything else is the list Express compiles', () => {
    expect(trustProxyOf('1')).toBe(1);
    expect(trustProxyOf('loopback, 10.0.0.0/8')).toBe('loopback, 10.0.0.0/8');
  });
});
