import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { RecordedEvent } from '../../src/domain/event';
import { documentProjection, documentsCollection, documentTextsCollection } from '../../projections/document/documentProjection';
import { joinSections } from '../../src/domain/document/eventParts';
import { versionKey } from '../../src/core/projection';

const meta = { actorId: 'u1', authMethod: 'session' as const, correlationId: 'c', occurredAt: '2024-01-01T00:00:00.000Z', schemaVersion: 1 };
const WS = '00000000-0000-4000-8000-00000000000a';
const DOC = '00000000-0000-4000-8000-0000000000d1';
const T1 = '00000000-0000-4000-8000-000000000001';
const T2 = '00000000-0000-4000-8000-000000000002';

let position = 0;
const at = (type: string, data: Record<string, unknown>): RecordedEvent => {
  position += 1;
  return { id: randomUUID(), streamId: 's', revision: position, position, type, data, metadata: meta };
};
const uploaded = (tags: string[]) =>
  at('DocumentUploaded', {
    documentId: DOC,
    workspaceId: WS,
    blob: { sha256: 'a'.repeat(64), size: 1 },
    kind: 'md',
    mimeType: 'text/markdown',
    size: 1,
    filename: 'a.md',
    title: 'A',
    purpose: 'KNOWLEDGE',
    tags,
    uploadedBy: 'u1',
    uploadedAt: '2024-01-01T00:00:00.000Z',
  });

describe('document projection: given events → view', () => {
  let dir: string;
  let store: SqliteReadStore;
  beforeEach(() => {
    position = 0;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-docproj-'));
    store = new SqliteReadStore(path.join(dir, 'read.db'));
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a file name stored before uploads refused bidi and control characters is shown with each replaced by U+FFFD; a view of version 2 is rebuilt', async () => {
    const legacy = { ...uploaded([]), data: { ...(uploaded([]).data as Record<string, unknown>), filename: 'salary\u202Etxt.exe\u202C\u0007.md' } };
    await documentProjection(store).apply([legacy]);
    expect((await documentsCollection(store).get(DOC))?.filename).toBe('salary\uFFFDtxt.exe\uFFFD\uFFFD.md');
    // A store projected by the code before (version 2, the name as uploaded) is cleared at start, to be rebuilt from the log.
    const row = await documentsCollection(store).get(DOC);
    await documentsCollection(store).put({ ...row!, filename: 'salary\u202Etxt.exe\u202C.md' });
    await store.setCheckpoint(versionKey('documents'), 2);
    const p = documentProjection(store);
    await p.prepare?.();
    expect(await documentsCollection(store).get(DOC)).toBeFalsy();
    // Names that pass the rule are kept as they are.
    await p.apply([{ ...uploaded([]), data: { ...(uploaded([]).data as Record<string, unknown>), filename: 'Résumé 2024 (final) 📄.md' } }]);
    expect((await documentsCollection(store).get(DOC))?.filename).toBe('Résumé 2024 (final) 📄.md');
  });

  it('a tag deleted before a metadata update that sets it (decided on a stale read model) does not come back', async () => {
    const p = documentProjection(store);
    await p.apply([
      uploaded([]),
      at('TagDeleted', { workspaceId: WS, tagId: T1 }),
      at('DocumentMetadataUpdated', { documentId: DOC, workspaceId: WS, tags: [T1, T2], updatedAt: '2024-01-01T00:00:01.000Z' }),
    ]);
    expect((await documentsCollection(store).get(DOC))?.tags).toEqual([T2]);
    expect(await documentsCollection(store).count({ workspaceId: WS, tags: { $contains: T1 } })).toBe(0);
  });

  it('an upload carrying a tag deleted just before it keeps only live tags; a tag deleted after is removed', async () => {
    const p = documentProjection(store);
    await p.apply([at('TagDeleted', { workspaceId: WS, tagId: T1 }), uploaded([T1, T2]), at('TagDeleted', { workspaceId: WS, tagId: T2 })]);
    expect((await documentsCollection(store).get(DOC))?.tags).toEqual([]);
  });

  it('a text in parts is written whole at its last part (the parts before kept apart meanwhile); the parts of an abandoned run are dropped', async () => {
    const p = documentProjection(store);
    const part = (processingId: string, k: number, parts: number, sections: { text: string; continued?: boolean }[]) =>
      at('DocumentTextExtracted', { documentId: DOC, workspaceId: WS, processingId, sections, tokenCount: 9, sizeBytes: 99, part: k, parts });
    const started = (processingId: string) => at('DocumentProcessingStarted', { documentId: DOC, workspaceId: WS, processingId, reason: 'UPLOADED' });
    // A run abandoned after two of its four parts.
    await p.apply([uploaded([]), started('r1'), part('r1', 0, 4, [{ text: 'old zero' }]), part('r1', 1, 4, [{ text: 'old one' }])]);
    expect(await documentTextsCollection(store).get(DOC)).toBeNull();
    const sections = [[{ text: 'Alpha.' }, { text: 'Beta, cut', continued: false }], [{ text: ' here.', continued: true }], [{ text: 'Gamma.' }]];
    await p.apply([started('r2'), part('r2', 0, 3, sections[0]), part('r2', 1, 3, sections[1])]);
    expect(await documentTextsCollection(store).get(DOC)).toBeNull();
    await p.apply([part('r2', 2, 3, sections[2])]);
    expect((await documentTextsCollection(store).get(DOC))?.text).toBe(joinSections(sections.flat()));
    expect((await documentTextsCollection(store).get(DOC))?.text).toBe('Alpha.\n\nBeta, cut here.\n\nGamma.');
    expect(await store.collection('document_text_parts').count({ documentId: DOC })).toBe(0);
    // A single-part text replaces it at once.
    await p.apply([started('r3'), at('DocumentTextExtracted', { documentId: DOC, workspaceId: WS, processingId: 'r3', sections: [{ text: 'Only.' }], tokenCount: 1, sizeBytes: 5 })]);
    expect((await documentTextsCollection(store).get(DOC))?.text).toBe('Only.');
  });

  it('replaying the same events changes nothing (idempotent)', async () => {
    const p = documentProjection(store);
    const events = [uploaded([T2]), at('DocumentMetadataUpdated', { documentId: DOC, workspaceId: WS, title: 'B', updatedAt: '2024-01-01T00:00:01.000Z' })];
    await p.apply(events);
    const once = await documentsCollection(store).get(DOC);
    await p.apply(events);
    expect(await documentsCollection(store).get(DOC)).toEqual(once);
    expect(once?.title).toBe('B');
  });
});
