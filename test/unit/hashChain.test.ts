import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { canonicalJson, chainHash, GENESIS_HASH } from '../../src/core/hashChain';

/** The canonical JSON the log's chain was built with so far: the faster one must give the same bytes. */
function reference(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(',')}}`;
}

describe('canonicalJson', () => {
  it('gives the bytes the existing chains were hashed over, for any JSON-like value', () => {
    const values = fc.anything({
      withBoxedValues: false,
      withMap: false,
      withSet: false,
      withObjectString: true,
      withNullPrototype: true,
      withSparseArray: true,
      withDate: true,
      withTypedArray: false,
      withBigInt: false,
      maxDepth: 4,
    });
    fc.assert(fc.property(values, (v) => canonicalJson(v) === reference(v)), { numRuns: 2000 });
  });

  it('sorts keys, drops undefined members, writes other undefined values as null', () => {
    expect(canonicalJson({ b: 1, a: [undefined, 'x', { d: undefined, c: null }], é: 2, Z: 3 })).toBe('{"Z":3,"a":[null,"x",{"c":null}],"b":1,"é":2}');
  });

  it('chains an event to the previous hash (the hash of a known event is unchanged)', () => {
    const e = { id: 'e1', streamId: 's', revision: 0, position: 1, type: 'T', data: { b: 1, a: 'x' }, metadata: { occurredAt: '2024-01-01T00:00:00.000Z' } };
    expect(chainHash(GENESIS_HASH, e)).toBe(chainHash(GENESIS_HASH, { ...e, data: { a: 'x', b: 1 } }));
    const expected = createHash('sha256').update(GENESIS_HASH).update(reference({ id: 'e1', streamId: 's', revision: 0, position: 1, type: 'T', data: e.data, metadata: e.metadata })).digest('hex');
    expect(chainHash(GENESIS_HASH, e)).toBe(expected);
  });
});
