import * as t from 'io-ts';
import { isLeft } from 'fp-ts/Either';
import { PathReporter } from 'io-ts/PathReporter';
import { DomainError, ErrorCode } from '../domain/errors';

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

export interface IsoDateBrand {
  readonly IsoDate: unique symbol;
}
/** An ISO 8601 date-time string that parses. */
export const IsoDateString = t.brand(
  t.string,
  (s): s is t.Branded<string, IsoDateBrand> => /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(s) && !Number.isNaN(Date.parse(s)),
  'IsoDate',
);

/** A string of bounded length (in characters). */
export const boundedString = (min: number, max: number, name = `string(${min}..${max})`) =>
  t.refinement(t.string, (s) => s.length >= min && s.length <= max, name);

export const NonEmptyTrimmed = t.refinement(t.string, (s) => s.trim().length > 0, 'NonEmptyString');

export const HexColor = t.refinement(t.string, (s) => /^#[0-9A-Fa-f]{6}$/.test(s), 'HexColor(#RRGGBB)');

export const Purpose = t.keyof({ KNOWLEDGE: null, INSTRUCTION: null });
export const Role = t.keyof({ OWNER: null, ADMIN: null, MEMBER: null });

function describe(errors: t.Errors): { field: string; problem: string }[] {
  return errors.slice(0, 10).map((e) => {
    const path = e.context
      .map((c) => c.key)
      .filter((k) => k !== '' && !/^\d+$/.test(k) === true)
      .join('.');
    const last = e.context[e.context.length - 1];
    const problem = e.message ?? `expected ${last?.type.name ?? 'a valid value'}`;
    return { field: path || '(body)', problem };
  });
}

/** Decode at the edge; a failure is a 400 VALIDATION_ERROR (or the given code) naming the fields. */
export function decode<A, O>(codec: t.Type<A, O, unknown>, value: unknown, code: ErrorCode = 'VALIDATION_ERROR'): A {
  const result = codec.decode(value);
  if (isLeft(result)) {
    const problems = describe(result.left);
    const message = problems.map((p) => `${p.field}: ${p.problem}`).join('; ') || PathReporter.report(result)[0];
    throw new DomainError(code, `Invalid request: ${message}`, { fields: problems });
  }
  return result.right;
}

/** Exact object: unknown keys are refused (where they matter, e.g. settings). */
export const strict = <P extends t.Props>(props: P, partial?: boolean) =>
  t.exact(partial ? t.partial(props) : t.type(props));
