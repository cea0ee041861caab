import { toCsv } from '../../src/analytics/csv';
import { recordSearch, searchEventsInFlight } from '../../commands/search/recordSearch';
import { EventStore } from '../../src/ports/eventStore';
import { NewEvent } from '../../src/domain/event';
import { bucketStart, buckets, percentile } from '../../queries/analytics/workspaceAnalytics';

describe('toCsv', () => {
  it('writes objects with the union of their keys, quoting what needs it', () => {
    expect(toCsv([{ a: 1, b: 'x,y' }, { b: 'say "hi"', c: null }, { a: { n: 1 } }])).toBe('a,b,c\r\n1,"x,y",\r\n,"say ""hi""",\r\n"{""n"":1}",,\r\n');
    expect(toCsv([['h1', 'h2'], [1, 'line\nbreak']])).toBe('h1,h2\r\n1,"line\nbreak"\r\n');
    expect(toCsv({ k1: { n: 1 }, k2: 5 })).toBe('key,n,value\r\nk1,1,\r\nk2,,5\r\n');
    expect(() => toCsv(42)).toThrow(/--format csv needs/);
  });
});

describe('recordSearch', () => {
  it('appends one SearchPerformed per search, without query text, and drops past the backlog', async () => {
    const appended: { stream: string; events: NewEvent[] }[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const store = {
      append: async (stream: string, events: NewEvent[]) => {
        await gate;
        appended.push({ stream, events });
        return { nextRevision: 0, position: appended.length };
      },
    } as unknown as EventStore;
    const warnings: object[] = [];
    const ports = { eventStore: store, logger: { warn: (o: object) => warnings.push(o) }, config: { searchEventBacklog: 2 }, now: () => new Date('2026-01-01T00:00:00Z') };
    const s = { workspaceId: 'w', channel: 'link' as const, linkId: 'l', actorId: null, authMethod: 'public_token' as const, correlationId: 'c', latencyMs: 3.14159, hitDocumentIds: ['d1', 'd2', 'd1'] };
    recordSearch(ports, s);
    recordSearch(ports, s);
    recordSearch(ports, s); // third: backlog of 2 is full
    expect(searchEventsInFlight()).toBe(2);
    expect(warnings).toEqual([{ dropped: 1 }]);
    release();
    while (searchEventsInFlight() > 0) await new Promise((r) => setTimeout(r, 1));
    expect(appended).toHaveLength(2);
    const e = appended[0].events[0];
    expect(appended[0].stream).toMatch(/^search-/);
    expect(e.type).toBe('SearchPerformed');
    expect(e.data).toEqual({ searchId: expect.any(String), workspaceId: 'w', channel: 'link', linkId: 'l', latencyMs: 3.14, resultCount: 3, hitDocumentIds: ['d1', 'd2'] });
    expect(e.metadata).toMatchObject({ authMethod: 'public_token', actorId: null, workspaceId: 'w', occurredAt: '2026-01-01T00:00:00.000Z' });
  });
});

describe('analytics buckets and percentiles', () => {
  it('starts weeks on Monday (UTC), bounds the number of buckets, and takes nearest-rank percentiles', () => {
    expect(bucketStart(new Date('2026-11-29T23:00:00Z'), 'week').toISOString()).toBe('2026-11-23T00:00:00.000Z');
    expect(bucketStart(new Date('2026-11-29T23:59:00Z'), 'hour').toISOString()).toBe('2026-11-29T23:00:00.000Z');
    expect(buckets(new Date('2026-11-01T12:00:00Z'), new Date('2026-11-03T00:00:00Z'), 'day')).toEqual(['2026-11-01T00:00:00.000Z', '2026-11-02T00:00:00.000Z']);
    expect(() => buckets(new Date('2000-01-01T00:00:00Z'), new Date('2026-01-01T00:00:00Z'), 'hour')).toThrow(/more than 1000/);
    expect(percentile([], 50)).toBeNull();
    expect([percentile([1, 2, 3, 4], 50), percentile([1, 2, 3, 4], 95)]).toEqual([2, 4]);
  });
});
