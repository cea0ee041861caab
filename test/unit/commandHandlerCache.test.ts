import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { handleCommand, systemContext } from '../../src/core/commandHandler';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { DomainError } from '../../src/domain/errors';

/**
 * The command handler remembers folded states between commands. Two event stores in one
 * process (the start-up rehearsal's beside the server's; tests) must never see each other's
 * streams through it: a stream created in one store is still new in the other.
 */
describe('command handler state cache', () => {
  const dirs: string[] = [];
  const stores: SqliteEventStore[] = [];
  afterAll(async () => {
    for (const s of stores) await s.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });
  const open = (): SqliteEventStore => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-cache-'));
    dirs.push(dir);
    const store = new SqliteEventStore(path.join(dir, 'events.db'));
    stores.push(store);
    return store;
  };
  type State = { exists: boolean };
  const decider = {
    initialState: (): State => ({ exists: false }),
    evolve: (_s: State): State => ({ exists: true }),
    decide: (_c: object, s: State) => {
      if (s.exists) throw new DomainError('EMAIL_TAKEN', 'exists');
      return [{ type: 'ThingCreated', data: { id: 'thing-1' } }];
    },
  };

  it('keys remembered states by store: the same stream id in another store starts empty', async () => {
    const a = open();
    const b = open();
    const ctx = systemContext(new Date());
    await handleCommand(a, 'thing-1', decider, {}, ctx);
    // In the first store the stream exists now (from the cache or the log alike).
    await expect(handleCommand(a, 'thing-1', decider, {}, ctx)).rejects.toMatchObject({ code: 'EMAIL_TAKEN' });
    // The second store has never seen it.
    const r = await handleCommand(b, 'thing-1', decider, {}, ctx);
    expect(r.revision).toBe(0);
    expect(await b.readStream('thing-1')).toHaveLength(1);
  });
});
