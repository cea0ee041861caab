import fc from 'fast-check';
import * as t from 'io-ts';
import { DomainError } from '../../src/domain/errors';
import { decode, HumanName, HumanText, strict } from '../../src/http/codecs';
import { authBodies } from '../../src/http/routes/authRoutes';
import { consoleAuthBodies } from '../../src/http/routes/consoleAuthRoutes';
import { workspaceBodies } from '../../src/http/routes/workspaceRoutes';
import { documentBodies } from '../../src/http/routes/documentRoutes';
import { searchBodies } from '../../src/http/routes/searchRoutes';
import { instructionSetBodies } from '../../src/http/routes/instructionSetRoutes';
import { searchLinkBodies } from '../../src/http/routes/searchLinkRoutes';
import { publicSearchBodies } from '../../src/http/routes/publicSearchRoutes';
import { validateSearchArguments } from '../../src/mcp/searchTool';
import { RpcError } from '../../src/mcp/protocol';

/** Every JSON body codec of every route, by name. */
const codecs: [string, t.Mixed][] = Object.entries({
  ...prefixed('auth', authBodies),
  ...prefixed('consoleAuth', consoleAuthBodies),
  ...prefixed('workspace', workspaceBodies),
  ...prefixed('document', documentBodies),
  ...prefixed('search', searchBodies),
  ...prefixed('instructionSet', instructionSetBodies),
  ...prefixed('searchLink', searchLinkBodies),
  ...prefixed('publicSearch', publicSearchBodies),
});
function prefixed(prefix: string, o: Record<string, t.Mixed>): Record<string, t.Mixed> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [`${prefix}.${k}`, v]));
}

const DANGEROUS_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', '__defineGetter__'];
/** Strings as hostile clients send them: any UTF-16 unit, lone surrogates, NUL, bidi overrides. */
const nastyString = fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('', ' ', '\u0000', '\ud800', '\u202e', 'a'.repeat(1001), '__proto__'));
const value: fc.Arbitrary<unknown> = fc.oneof(fc.jsonValue(), nastyString, fc.array(nastyString, { maxLength: 3 }));
/** An object as JSON.parse makes it: `__proto__` is an own key, not the prototype. */
const objectWith = (keys: string[]) =>
  fc.array(fc.tuple(fc.oneof(fc.constantFrom(...keys, ...DANGEROUS_KEYS), fc.string()), value), { maxLength: 6 }).map((entries) => JSON.parse(`{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`).join(',')}}`) as unknown);

const KNOWN_KEYS = ['name', 'email', 'password', 'refreshToken', 'settings', 'allowPublicSearchLinks', 'defaultDocumentPurpose', 'userId', 'role', 'color', 'title', 'purpose', 'tags', 'content', 'expectedUpdatedAt', 'query', 'limit', 'filters', 'documentIds', 'description', 'isPublic', 'documentId', 'allowedTags', 'expiresAt', 'historyMode'];
const anyBody = fc.oneof(value, objectWith(KNOWN_KEYS), fc.record({ settings: objectWith(KNOWN_KEYS), filters: objectWith(KNOWN_KEYS) }, { requiredKeys: [] }));

function decodesOrRefuses(codec: t.Mixed, body: unknown): void {
  try {
    decode(codec, body);
  } catch (err) {
    if (!(err instanceof DomainError) || err.code !== 'VALIDATION_ERROR') throw err;
    expect(err.message).toMatch(/^Invalid request: /);
  }
}

describe('every JSON body codec, given arbitrary JSON', () => {
  it.each(codecs)('%s decodes or refuses with VALIDATION_ERROR, never throws anything else', (_name, codec) => {
    fc.assert(fc.property(anyBody, (body) => decodesOrRefuses(codec, body)), { numRuns: 300 });
  });

  it('the tool endpoint\'s arguments are accepted or refused with -32602, never anything else', () => {
    const scope = [{ id: 'tag-1', name: 'Billing' }];
    fc.assert(
      fc.property(fc.oneof(anyBody, fc.record({ query: nastyString, limit: value, tags: value }, { requiredKeys: [] })), (args) => {
        try {
          validateSearchArguments(args, scope);
        } catch (err) {
          if (!(err instanceof RpcError) || err.code !== -32602) throw err;
        }
      }),
      { numRuns: 500 },
    );
  });

  it('strict codecs name every unknown key, __proto__ and constructor included, and never touch prototypes', () => {
    const codec = strict(t.partial({ name: t.string }));
    fc.assert(
      fc.property(fc.constantFrom(...DANGEROUS_KEYS, 'nmae', 'Name'), (key) => {
        const body = JSON.parse(`{"name":"x",${JSON.stringify(key)}:{"polluted":true}}`);
        expect(() => decode(codec, body)).toThrow(key);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
    );
  });

  it('a decoded name is trimmed, valid Unicode, free of control and bidi characters, and within its length in code points', () => {
    const name = HumanName(20);
    const text = HumanText(20);
    fc.assert(
      fc.property(nastyString, (s) => {
        for (const [codec, lines] of [[name, false], [text, true]] as const) {
          const r = codec.decode(s);
          if (r._tag === 'Left') continue;
          const v = r.right;
          expect(v).toBe(v.trim());
          expect(/\p{Cs}/u.test(v)).toBe(false);
          expect(/[\u202A-\u202E\u2066-\u2069]/.test(v)).toBe(false);
          // eslint-disable-next-line no-control-regex
          expect((lines ? /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/ : /[\u0000-\u001F\u007F-\u009F]/).test(v)).toBe(false);
          expect([...v].length).toBeLessThanOrEqual(20);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
