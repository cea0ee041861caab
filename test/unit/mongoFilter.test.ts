import { escapeRegex, mongoField, toMongoFilter, toMongoSort } from '../../src/adapters/mongodb/mongoFilter';

describe('toMongoFilter', () => {
  it('translates equality on every scalar kind, with id as _id', () => {
    expect(toMongoFilter({ workspaceId: 'w1', size: 3, verified: true, status: null, id: 'd1' })).toEqual({
      workspaceId: 'w1',
      size: 3,
      verified: true,
      status: null,
      _id: 'd1',
    });
    expect(toMongoFilter({})).toEqual({});
  });

  it('translates $in and $ne', () => {
    expect(toMongoFilter({ status: { $in: ['A', 'B'] }, n: { $in: [] } })).toEqual({ status: { $in: ['A', 'B'] }, n: { $in: [] } });
    expect(toMongoFilter({ status: { $ne: 'A' }, deletedAt: { $ne: null } })).toEqual({ status: { $ne: 'A' }, deletedAt: { $ne: null } });
  });

  it('translates array membership', () => {
    expect(toMongoFilter({ tags: { $contains: 't1' } })).toEqual({ tags: { $elemMatch: { $eq: 't1' } } });
    expect(toMongoFilter({ tags: { $containsAny: ['t1', 't2'] } })).toEqual({ tags: { $elemMatch: { $in: ['t1', 't2'] } } });
  });

  it('translates $ilike to an escaped case-insensitive regex', () => {
    expect(toMongoFilter({ name: { $ilike: 'a.b*(c)' } })).toEqual({ name: { $regex: 'a\\.b\\*\\(c\\)', $options: 'i' } });
    const { $regex } = toMongoFilter({ name: { $ilike: '1+1=[2]?' } }).name as { $regex: string };
    expect(new RegExp($regex, 'i').test('Sum: 1+1=[2]? yes')).toBe(true);
    expect(new RegExp($regex, 'i').test('11=2')).toBe(false);
  });

  it('translates ranges, keeping only the bounds given and dropping an empty one', () => {
    expect(toMongoFilter({ size: { $gte: 1, $lt: 5 }, at: { $gt: '2024-01-01' } })).toEqual({ size: { $gte: 1, $lt: 5 }, at: { $gt: '2024-01-01' } });
    expect(toMongoFilter({ size: { $lte: 0 } })).toEqual({ size: { $lte: 0 } });
    expect(toMongoFilter({ size: {} })).toEqual({});
  });

  it('refuses field names that could reach into operators or nested paths', () => {
    expect(() => toMongoFilter({ $where: 'x' })).toThrow(/invalid field/);
    expect(() => toMongoFilter({ 'a.b': 'x' })).toThrow(/invalid field/);
    expect(() => mongoField('')).toThrow();
  });
});

describe('toMongoSort', () => {
  it('maps directions and appends _id as the tie-breaker', () => {
    expect(toMongoSort([{ field: 'createdAt', direction: 'desc' }, { field: 'name', direction: 'asc' }])).toEqual([
      ['createdAt', -1],
      ['name', 1],
      ['_id', 1],
    ]);
    expect(toMongoSort(undefined)).toEqual([['_id', 1]]);
    expect(toMongoSort([{ field: 'id', direction: 'desc' }])).toEqual([['_id', -1]]);
  });
});

describe('escapeRegex', () => {
  it('escapes every metacharacter', () => {
    const s = '.*+?^${}()|[]\\';
    expect(new RegExp(`^${escapeRegex(s)}$`).test(s)).toBe(true);
  });
});
