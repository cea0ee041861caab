import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  InMemoryHandledJobs,
  PoisonMessageError,
  ReadStoreHandledJobs,
  decideOnFailure,
  decodeJob,
  defaultRetryDelay,
  encodeJob,
} from '../../src/adapters/jobRetry';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';

describe('decideOnFailure', () => {
  it('retries with the configured delay until the last attempt, then dead-letters', () => {
    const delay = (n: number): number => n * 100;
    expect(decideOnFailure(1, new Error('x'), 3, delay)).toEqual({ kind: 'retry', delayMs: 100 });
    expect(decideOnFailure(2, new Error('x'), 3, delay)).toEqual({ kind: 'retry', delayMs: 200 });
    expect(decideOnFailure(3, new Error('db down'), 3, delay)).toEqual({ kind: 'dead-letter', reason: 'failed 3 times: db down' });
    expect(decideOnFailure(1, 'plain', 1)).toEqual({ kind: 'dead-letter', reason: 'failed 1 times: plain' });
  });

  it('dead-letters a poison message at the first failure', () => {
    expect(decideOnFailure(1, new PoisonMessageError('bad json'), 10)).toEqual({ kind: 'dead-letter', reason: 'poison message: bad json' });
  });

  it('backs off exponentially with a cap, never negative', () => {
    expect([1, 2, 3, 4].map(defaultRetryDelay)).toEqual([500, 1000, 2000, 4000]);
    expect(defaultRetryDelay(30)).toBe(30_000);
    expect(decideOnFailure(1, new Error(), 5, () => -5)).toEqual({ kind: 'retry', delayMs: 0 });
  });
});

describe('decodeJob', () => {
  it('round-trips an encoded job', () => {
    const job = { id: 'j1', type: 'ProcessDocument', payload: { documentId: 'd1', n: 2 } };
    expect(decodeJob(Buffer.from(encodeJob(job)))).toEqual(job);
    expect(decodeJob(encodeJob(job))).toEqual(job);
  });

  it.each([
    [null, 'empty message'],
    ['{not json', 'message is not JSON'],
    ['42', 'message is not an object'],
    ['{"type":"T","payload":{}}', 'job has no id'],
    ['{"id":"j","payload":{}}', 'job has no type'],
    ['{"id":"j","type":"T","payload":[1]}', 'job payload is not an object'],
  ])('refuses %p as poison (%s)', (raw, message) => {
    expect(() => decodeJob(raw)).toThrow(PoisonMessageError);
    expect(() => decodeJob(raw)).toThrow(message);
  });
});

describe('handled job ids', () => {
  it('remembers ids in memory, forgetting the oldest past capacity', async () => {
    const h = new InMemoryHandledJobs(2);
    await h.add('a');
    await h.add('b');
    expect(await h.has('a')).toBe(true);
    await h.add('c');
    expect(await h.has('a')).toBe(false);
    expect(await h.has('b')).toBe(true);
    expect(await h.has('c')).toBe(true);
  });

  it('remembers ids in a read store, across instances', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kb-handled-'));
    const store = new SqliteReadStore(path.join(dir, 'rs.db'));
    try {
      const id = randomUUID();
      expect(await new ReadStoreHandledJobs(store).has(id)).toBe(false);
      await new ReadStoreHandledJobs(store).add(id);
      expect(await new ReadStoreHandledJobs(store).has(id)).toBe(true);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
