import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { SqliteKeyStore } from '../../src/adapters/sqlite/sqliteKeyStore';
import { EncryptingEventStore } from '../../src/adapters/encryption/encryptingEventStore';
import { EVENT_TRAITS } from '../../src/domain/eventCatalog';
import { summarize } from '../../src/audit/summary';

/** A `data` object with `marker` at `path` (`[]` steps into a one-element array). */
function dataWith(p: readonly string[], marker: string): unknown {
  if (p.length === 0) return marker;
  const [head, ...rest] = p;
  if (head === '[]') return [dataWith(rest, marker)];
  return { [head]: dataWith(rest, marker) };
}

const TEXT_FIELD = /^(text|content|sections|chunks|vectors?|body|passwordHash|keyHash|refreshTokenHash|previousHash|tokenHash)$/;

describe('event traits: every event type declares its audit fields and where its text sits', () => {
  const types = [...EVENT_TRAITS.keys()];

  it('covers the event types of every aggregate', () => {
    // Spot-check one type of each union; the per-aggregate catalogues are exhaustive by type.
    for (const t of ['DocumentUploaded', 'WorkspaceCreated', 'InstructionSetCreated', 'SearchLinkCreated', 'UserRegistered', 'SessionStarted']) expect(types).toContain(t);
    expect(types.length).toBeGreaterThanOrEqual(38);
  });

  it.each(types)('%s: no text, hash or vector field is whitelisted for audit, and every audit field is shown', (type) => {
    const traits = EVENT_TRAITS.get(type)!;
    const encryptedHeads = new Set(traits.encrypted.map((p) => p[0]));
    for (const field of traits.audit) {
      expect(field).not.toMatch(TEXT_FIELD);
      expect(encryptedHeads.has(field)).toBe(false);
    }
    // A whitelisted field must survive the summariser (else the declaration is a dead letter).
    const data = Object.fromEntries(traits.audit.map((f) => [f, 'v']));
    expect(Object.keys(summarize(type, data)).sort()).toEqual([...traits.audit].sort());
  });

  describe('the encrypting store seals exactly the declared paths', () => {
    let dir: string;
    let inner: SqliteEventStore;
    let store: EncryptingEventStore;
    beforeAll(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-traits-'));
      inner = new SqliteEventStore(path.join(dir, 'events.db'));
      store = new EncryptingEventStore(inner, new SqliteKeyStore(path.join(dir, 'keys.db')));
    });
    afterAll(async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    const withText = types.filter((t) => EVENT_TRAITS.get(t)!.encrypted.length > 0);
    it('text-bearing document events declare their text', () => {
      expect(withText.sort()).toEqual(['ChunksEmbedded', 'ChunksReembedded', 'DocumentChunked', 'DocumentContentUpdated', 'DocumentTextExtracted']);
    });

    it.each(withText)('%s', async (type) => {
      const documentId = randomUUID();
      const marker = `secret-${randomUUID()}`;
      const data: Record<string, unknown> = { documentId, workspaceId: randomUUID() };
      for (const p of EVENT_TRAITS.get(type)!.encrypted) Object.assign(data, dataWith(p, marker) as object);
      const stream = `document-${documentId}`;
      await store.append(stream, [{ id: randomUUID(), type, data, metadata: { actorId: null, authMethod: 'system', correlationId: 'c', occurredAt: new Date(0).toISOString(), schemaVersion: 1 } }], 'any');
      expect(JSON.stringify((await inner.readStream(stream))[0].data)).not.toContain(marker);
      expect(JSON.stringify((await store.readStream(stream))[0].data)).toContain(marker);
    });
  });
});
