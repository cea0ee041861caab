import * as t from 'io-ts';
import { isLeft } from 'fp-ts/Either';
import { PathReporter } from 'io-ts/PathReporter';
import { DomainError, ErrorCode } from '../domain/errors';
import { codePointLength, textProblem, TextKind } from '../util/text';
import { BooleanFromString } from '../util/stringCodecs';
import { parseIsoTime } from '../util/isoTime';

export { codePointLength, textProblem };

export { BooleanFromString };

/**
 * An integer in a request (a query parameter, or a JSON number or string): a JSON integer, or a
 * string written canonically, digits only (an optional minus, no leading zero, no sign, spaces,
 * decimals or exponent). ` 5 `, `05`, `+5` and `5.0` are refused (400 VALIDATION_ERROR naming the
 * field), as the audit route's `limit` always was: one value, one spelling. (The environment's
 * integers, src/util/stringCodecs.ts, still allow surrounding spaces.) Named `IntFromString` for
 * the API description (an integer).
 */
export const IntFromString = new t.Type<number, string, unknown>(
  'IntFromString',
  (u): u is number => typeof u === 'number' && Number.isInteger(u),
  (u, c) => {
    if (typeof u === 'number' && Number.isInteger(u)) return t.success(u);
    if (typeof u !== 'string' || !/^(0|-?[1-9]\d{0,14})$/.test(u)) return t.failure(u, c, 'must be an integer written with digits only (no spaces, sign or leading zeros)');
    return t.success(Number(u));
  },
  String,
);

export interface IsoDateBrand {
  readonly IsoDate: unique symbol;
}
/** An ISO 8601 date-time string that parses. */
export const IsoDateString = t.brand(
  t.string,
  (s): s is t.Branded<string, IsoDateBrand> => /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(s) && parseIsoTime(s) !== null,
  'IsoDate',
);

/** A string of bounded length (in UTF-16 units; for identifiers and secrets, not for text people type). */
export const boundedString = (min: number, max: number, name = `string(${min}..${max})`) =>
  t.refinement(t.string, (s) => s.length >= min && s.length <= max, name);

export const NonEmptyTrimmed = t.refinement(t.string, (s) => s.trim().length > 0, 'NonEmptyString');

export const HexColor = t.refinement(t.string, (s) => /^#[0-9A-Fa-f]{6}$/.test(s), 'HexColor(#RRGGBB)');

/**
 * An array codec that refuses more than `max` items by their count, before looking at any item.
 * io-ts validates every item of an array and keeps one error per bad item: 300,000 numbers where
 * ids were expected took the event loop ~1.2 s per request (sixth hostile look). Still an
 * ArrayType (the API description is unchanged); `max` is a ceiling against abuse, not a rule.
 */
export function lengthFirstArray<C extends t.Mixed>(item: C, max: number): t.ArrayType<C, t.TypeOf<C>[], t.OutputOf<C>[], unknown> {
  const base = t.array(item);
  return new t.ArrayType<C, t.TypeOf<C>[], t.OutputOf<C>[], unknown>(
    base.name,
    base.is,
    (u, c) => (Array.isArray(u) && u.length > max ? t.failure(u, c, `must hold at most ${max} items (got ${u.length})`) : base.validate(u, c)),
    base.encode,
    item,
  );
}

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

/** The codecs an object codec is built from, to know the keys it declares. */
function declaredKeys(codec: t.Mixed): string[] {
  if (codec instanceof t.InterfaceType || codec instanceof t.PartialType) return Object.keys((codec as t.InterfaceType<t.Props>).props);
  if (codec instanceof t.ExactType || codec instanceof t.RefinementType || codec instanceof t.ReadonlyType) return declaredKeys((codec as t.ExactType<t.Mixed>).type);
  if (codec instanceof t.IntersectionType) return (codec as t.IntersectionType<t.Mixed[]>).types.flatMap(declaredKeys);
  throw new TypeError(`strict: cannot list the keys of ${codec.name}`);
}

/**
 * An object codec that refuses keys it does not declare: each unknown key is a failure
 * naming it (`settings.allowPublicSerchLinks: unknown field`), never silently dropped.
 * Every JSON body is decoded through one; nested objects are wrapped on their own.
 */
export function strict<C extends t.Mixed>(codec: C): t.Type<t.TypeOf<C>, t.OutputOf<C>, unknown> {
  const allowed = new Set(declaredKeys(codec));
  const type = strictType(codec, allowed);
  strictCodecs.set(type, codec);
  return type;
}

/** The object codec each strict codec wraps (the OpenAPI generator reads it: additionalProperties false). */
export const strictCodecs = new WeakMap<t.Mixed, t.Mixed>();

function strictType<C extends t.Mixed>(codec: C, allowed: Set<string>): t.Type<t.TypeOf<C>, t.OutputOf<C>, unknown> {
  return new t.Type<t.TypeOf<C>, t.OutputOf<C>, unknown>(
    `Strict<${codec.name}>`,
    codec.is,
    (u, c) => {
      if (typeof u === 'object' && u !== null && !Array.isArray(u)) {
        const unknownKeys = Object.keys(u).filter((k) => !allowed.has(k));
        if (unknownKeys.length > 0) {
          return t.failures(
            unknownKeys.slice(0, 10).map((key) => {
              const actual = (u as Record<string, unknown>)[key];
              return { value: actual, context: [...c, { key, type: t.never, actual }], message: `unknown field (allowed: ${[...allowed].join(', ')})` };
            }),
          );
        }
      }
      return codec.validate(u, c);
    },
    codec.encode,
  );
}

// ---- One text rule for every human-entered string ------------------------------------------

function textCodec(name: string, kind: Exclude<TextKind, 'content'>, min: number, max: number): t.Type<string, string, unknown> {
  return new t.Type<string, string, unknown>(
    name,
    (u): u is string => typeof u === 'string',
    (u, c) => {
      if (typeof u !== 'string') return t.failure(u, c, 'must be a string');
      const trimmed = u.trim();
      const problem = textProblem(trimmed, kind);
      if (problem) return t.failure(u, c, problem);
      const length = codePointLength(trimmed);
      if (length < min) return t.failure(u, c, min === 1 ? 'must not be blank' : `must be at least ${min} characters`);
      if (length > max) return t.failure(u, c, `must be at most ${max} characters (got ${length})`);
      return t.success(trimmed);
    },
    (s) => s,
  );
}

/** A one-line name a person typed (workspace, tag, set, link, user, key, document title): decoded trimmed. */
export const HumanName = (max: number, min = 1): t.Type<string, string, unknown> => textCodec(`HumanName(${min}..${max})`, 'line', min, max);
/** Multi-line text a person typed (a description): tabs and line breaks allowed; decoded trimmed. */
export const HumanText = (max: number, min = 0): t.Type<string, string, unknown> => textCodec(`HumanText(${min}..${max})`, 'text', min, max);

/** Document content (auto-save): valid Unicode, no control characters but tab and line breaks; kept as sent. */
export const DocumentContent = new t.Type<string, string, unknown>(
  'DocumentContent',
  (u): u is string => typeof u === 'string',
  (u, c) => {
    if (typeof u !== 'string') return t.failure(u, c, 'must be a string');
    const problem = textProblem(u, 'content');
    return problem ? t.failure(u, c, problem) : t.success(u);
  },
  (s) => s,
);

/** An e-mail address: one line of valid text in the shape local@domain.tld. */
export const Email = t.refinement(HumanName(254, 3), (s) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s), 'Email');

/** Search text (a query, a title filter): valid Unicode without control characters; kept as sent (length rules are the route's). */
export const QueryText = new t.Type<string, string, unknown>(
  'QueryText',
  (u): u is string => typeof u === 'string',
  (u, c) => {
    if (typeof u !== 'string') return t.failure(u, c, 'must be a string');
    const problem = textProblem(u, 'text');
    return problem ? t.failure(u, c, problem) : t.success(u);
  },
  (s) => s,
);
