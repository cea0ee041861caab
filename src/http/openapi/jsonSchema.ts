import * as t from 'io-ts';
import { strictCodecs } from '../codecs';

/** A JSON Schema (2020-12, as OpenAPI 3.1 uses it). */
export type JsonSchema = { [key: string]: unknown };

const UUID = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

/** Named custom codecs of this service, by name (their rules live in code; the schema says what it can). */
function namedSchema(name: string): JsonSchema | undefined {
  let m: RegExpExecArray | null;
  if ((m = /^HumanName\((\d+)\.\.(\d+)\)$/.exec(name))) return { type: 'string', minLength: Number(m[1]), maxLength: Number(m[2]), description: 'One line of text (trimmed; no control or bidi-override characters).' };
  if ((m = /^HumanText\((\d+)\.\.(\d+)\)$/.exec(name))) return { type: 'string', minLength: Number(m[1]), maxLength: Number(m[2]), description: 'Text (trimmed; tabs and line breaks allowed).' };
  if ((m = /^string\((\d+)\.\.(\d+)\)$/.exec(name))) return { type: 'string', minLength: Number(m[1]), maxLength: Number(m[2]) };
  switch (name) {
    case 'Uuid':
      return { type: 'string', format: 'uuid', pattern: UUID };
    case 'IsoDate':
      return { type: 'string', format: 'date-time' };
    case 'IntFromString':
      return { type: 'integer' };
    case 'BooleanFromString':
      return { type: 'boolean' };
    case 'DocumentContent':
      return { type: 'string', description: 'Document text: valid Unicode, no control characters but tab and line breaks.' };
    case 'QueryText':
      return { type: 'string', description: 'Search text: valid Unicode without control characters.' };
    case 'HistoryMode(boolean|ON|OFF)':
      return { anyOf: [{ type: 'boolean' }, { type: 'string', enum: ['ON', 'OFF'] }] };
    case 'Email':
      return { type: 'string', format: 'email', minLength: 3, maxLength: 254 };
    case 'NonEmptyString':
      return { type: 'string', minLength: 1 };
    case 'HexColor(#RRGGBB)':
      return { type: 'string', pattern: '^#[0-9A-Fa-f]{6}$' };
  }
  return undefined;
}

/** Bounds a refinement's name states (`integer 1..20`, `page >= 1`, `at most 50 ids`), applied to its base's schema. */
function refine(base: JsonSchema, name: string): JsonSchema {
  const out: JsonSchema = { ...base };
  const isString = base.type === 'string';
  const isArray = base.type === 'array';
  let m: RegExpExecArray | null;
  if ((m = /(\d+)\.\.(\d+)/.exec(name))) {
    if (isString) Object.assign(out, { minLength: Number(m[1]), maxLength: Number(m[2]) });
    else if (isArray) Object.assign(out, { minItems: Number(m[1]), maxItems: Number(m[2]) });
    else Object.assign(out, { minimum: Number(m[1]), maximum: Number(m[2]) });
  } else if ((m = />=\s*(\d+)/.exec(name))) {
    out.minimum = Number(m[1]);
  } else if ((m = /at most (\d+)/.exec(name))) {
    if (isArray) out.maxItems = Number(m[1]);
    else out.maximum = Number(m[1]);
  }
  if (/integer/.test(name) && out.type === 'number') out.type = 'integer';
  return out;
}

function objectOf(props: t.Props, required: boolean): JsonSchema {
  const properties: JsonSchema = {};
  for (const [k, v] of Object.entries(props)) properties[k] = toJsonSchema(v);
  return { type: 'object', properties, ...(required && Object.keys(props).length ? { required: Object.keys(props) } : {}) };
}

/** Objects of an intersection merged into one (so `additionalProperties: false` can hold). */
function mergeObjects(parts: JsonSchema[]): JsonSchema | undefined {
  if (!parts.every((p) => p.type === 'object' && p.properties)) return undefined;
  const properties: JsonSchema = {};
  const required: string[] = [];
  for (const p of parts) {
    Object.assign(properties, p.properties);
    required.push(...((p.required as string[] | undefined) ?? []));
  }
  return { type: 'object', properties, ...(required.length ? { required } : {}) };
}

/**
 * The JSON Schema of an io-ts codec: the codecs that validate requests are the one source of
 * the API description. Strict codecs refuse unknown keys (additionalProperties: false); named
 * custom codecs (HumanName, Uuid, ...) map to constrained strings; refinements add the bounds
 * their names state; anything else unknown is described by its name.
 */
export function toJsonSchema(codec: t.Mixed): JsonSchema {
  const inner = strictCodecs.get(codec);
  if (inner) {
    const s = toJsonSchema(inner);
    return s.type === 'object' ? { ...s, additionalProperties: false } : s;
  }
  if (codec instanceof t.StringType) return { type: 'string' };
  if (codec instanceof t.NumberType) return { type: 'number' };
  if (codec instanceof t.BooleanType) return { type: 'boolean' };
  if (codec instanceof t.NullType) return { type: 'null' };
  if (codec instanceof t.UnknownType) return {};
  if (codec instanceof t.AnyDictionaryType) return { type: 'object' };
  if (codec instanceof t.DictionaryType) return { type: 'object', additionalProperties: toJsonSchema((codec as t.DictionaryType<t.Mixed, t.Mixed>).codomain) };
  if (codec instanceof t.LiteralType) return { const: (codec as t.LiteralType<string | number | boolean>).value };
  if (codec instanceof t.KeyofType) return { type: 'string', enum: Object.keys((codec as t.KeyofType<Record<string, unknown>>).keys) };
  if (codec instanceof t.ArrayType) return { type: 'array', items: toJsonSchema((codec as t.ArrayType<t.Mixed>).type) };
  if (codec instanceof t.InterfaceType) return objectOf((codec as t.InterfaceType<t.Props>).props, true);
  if (codec instanceof t.PartialType) return objectOf((codec as t.PartialType<t.Props>).props, false);
  if (codec instanceof t.ExactType || codec instanceof t.ReadonlyType) return toJsonSchema((codec as t.ExactType<t.Mixed>).type);
  if (codec instanceof t.IntersectionType) {
    const parts = (codec as t.IntersectionType<t.Mixed[]>).types.map(toJsonSchema);
    return mergeObjects(parts) ?? { allOf: parts };
  }
  if (codec instanceof t.UnionType) {
    const parts = (codec as t.UnionType<t.Mixed[]>).types.map(toJsonSchema);
    return { anyOf: parts };
  }
  if (codec instanceof t.RefinementType) {
    const r = codec as t.RefinementType<t.Mixed>;
    const named = namedSchema(r.name);
    return named ?? refine(toJsonSchema(r.type), r.name);
  }
  return namedSchema(codec.name) ?? { description: codec.name };
}
