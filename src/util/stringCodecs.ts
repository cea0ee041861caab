import * as t from 'io-ts';

/** Codecs for values that arrive as strings (query strings, environment variables). */

/** A string holding an integer (query strings, environment). */
export const IntFromString = new t.Type<number, string, unknown>(
  'IntFromString',
  (u): u is number => typeof u === 'number' && Number.isInteger(u),
  (u, c) => {
    if (typeof u === 'number' && Number.isInteger(u)) return t.success(u);
    if (typeof u !== 'string' || !/^-?\d{1,15}$/.test(u.trim())) return t.failure(u, c, 'must be an integer');
    return t.success(Number(u.trim()));
  },
  String,
);

export const BooleanFromString = new t.Type<boolean, string, unknown>(
  'BooleanFromString',
  (u): u is boolean => typeof u === 'boolean',
  (u, c) => {
    if (typeof u === 'boolean') return t.success(u);
    if (u === 'true' || u === '1' || u === 'on') return t.success(true);
    if (u === 'false' || u === '0' || u === 'off') return t.success(false);
    return t.failure(u, c, 'must be true or false');
  },
  String,
);
