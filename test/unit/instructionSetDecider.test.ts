import { DocumentSnapshot, InstructionSetCommand, instructionSetDecider, InstructionSetState, SetActor } from '../../src/domain/instructionSet/decider';
import { InstructionSetEvent, MAX_SET_BYTES } from '../../src/domain/instructionSet/events';
import { extractedSizeBound } from '../../queries/instructionSet/instructionSetQueries';
import { specFor } from '../support/given';

const WS = 'ws-1';
const SET = 'set-1';
const T0 = '2025-01-01T00:00:00.000Z';
const now = new Date('2025-01-02T00:00:00.000Z');
const admin: SetActor = { userId: 'u-admin', role: 'ADMIN' };
const owner: SetActor = { userId: 'u-owner', role: 'OWNER' };
const member: SetActor = { userId: 'u-member', role: 'MEMBER' };
const stranger: SetActor = { userId: 'u-x', role: null };
const system: SetActor = { userId: null, role: 'SYSTEM' };

const fold = (events: InstructionSetEvent[]): InstructionSetState => events.reduce(instructionSetDecider.evolve, instructionSetDecider.initialState());

/** given(events).when(command) → then(events) | thenThrows(code). */
const given = specFor(instructionSetDecider);

const created: InstructionSetEvent = { type: 'InstructionSetCreated', data: { setId: SET, workspaceId: WS, name: 'Set', description: null, isPublic: false, createdAt: T0 } };
const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();
const added = (documentId: string, sizeBytes = 10, ms = 1): InstructionSetEvent => ({
  type: 'SetDocumentAdded',
  data: { setId: SET, workspaceId: WS, documentId, title: `Doc ${documentId}`, sizeBytes, purpose: 'INSTRUCTION', updatedAt: at(ms) },
});
const doc = (documentId: string, over: Partial<DocumentSnapshot> = {}): DocumentSnapshot => ({
  documentId,
  workspaceId: WS,
  title: `Doc ${documentId}`,
  sizeBytes: 10,
  purpose: 'INSTRUCTION',
  processingStatus: 'VERIFIED',
  ...over,
});
const add = (documentId: string, d: DocumentSnapshot | null = doc(documentId), actor = admin): InstructionSetCommand => ({ type: 'AddSetDocument', actor, documentId, document: d, now });

describe('instruction set decider: create, update, delete', () => {
  it('an ADMIN creates a set', () =>
    given([])
      .when({ type: 'CreateInstructionSet', setId: SET, workspaceId: WS, actor: admin, name: 'Set', description: 'd', isPublic: true, now })
      .then([{ type: 'InstructionSetCreated', data: { setId: SET, workspaceId: WS, name: 'Set', description: 'd', isPublic: true, createdAt: now.toISOString() } }]));

  it('a MEMBER may not create a set; a non-member does not see the workspace', () => {
    given([]).when({ type: 'CreateInstructionSet', setId: SET, workspaceId: WS, actor: member, name: 'S', description: null, isPublic: false, now }).thenThrows('FORBIDDEN');
    given([]).when({ type: 'CreateInstructionSet', setId: SET, workspaceId: WS, actor: stranger, name: 'S', description: null, isPublic: false, now }).thenThrows('WORKSPACE_NOT_FOUND');
  });

  it('update emits only the changed fields with a new updatedAt', () =>
    given([created])
      .when({ type: 'UpdateInstructionSet', actor: owner, name: 'Set', isPublic: true, now })
      .then([{ type: 'InstructionSetUpdated', data: { setId: SET, workspaceId: WS, isPublic: true, updatedAt: now.toISOString() } }]));

  it('update without a change emits nothing', () => given([created]).when({ type: 'UpdateInstructionSet', actor: owner, name: 'Set', description: null, now }).then([]));

  it('expectedUpdatedAt older than the last change is a CONFLICT carrying lastModifiedAt', () =>
    given([created, added('a', 10, 5)])
      .when({ type: 'UpdateInstructionSet', actor: admin, name: 'New', expectedUpdatedAt: T0, now })
      .thenThrows('CONFLICT', { lastModifiedAt: at(5) }));

  it('expectedUpdatedAt equal to the last change passes', () =>
    given([created, added('a', 10, 5)])
      .when({ type: 'UpdateInstructionSet', actor: admin, name: 'New', expectedUpdatedAt: at(5), now })
      .then([{ type: 'InstructionSetUpdated', data: { setId: SET, workspaceId: WS, name: 'New', updatedAt: now.toISOString() } }]));

  it('updatedAt always moves forward, even when the clock does not', () =>
    given([created, added('a', 10, 5)])
      .when({ type: 'UpdateInstructionSet', actor: admin, name: 'New', now: new Date(T0) })
      .then([{ type: 'InstructionSetUpdated', data: { setId: SET, workspaceId: WS, name: 'New', updatedAt: at(6) } }]));

  it('a MEMBER cannot change a set; a non-member gets NOT_FOUND', () => {
    given([created]).when({ type: 'UpdateInstructionSet', actor: member, name: 'x', now }).thenThrows('FORBIDDEN');
    given([created]).when({ type: 'DeleteInstructionSet', actor: stranger, now }).thenThrows('NOT_FOUND');
  });

  it('delete, then every command on the set is NOT_FOUND', () => {
    given([created]).when({ type: 'DeleteInstructionSet', actor: admin, now }).then([{ type: 'InstructionSetDeleted', data: { setId: SET, workspaceId: WS, deletedAt: now.toISOString() } }]);
    const deleted: InstructionSetEvent = { type: 'InstructionSetDeleted', data: { setId: SET, workspaceId: WS, deletedAt: at(2) } };
    given([created, deleted]).when({ type: 'DeleteInstructionSet', actor: admin, now }).thenThrows('NOT_FOUND');
    given([created, deleted]).when(add('a')).thenThrows('NOT_FOUND');
    given([]).when({ type: 'UpdateInstructionSet', actor: admin, name: 'x', now }).thenThrows('NOT_FOUND');
  });
});

describe('instruction set decider: documents', () => {
  it('adds a VERIFIED document of the workspace with its snapshot', () =>
    given([created])
      .when(add('a', doc('a', { sizeBytes: 42, purpose: 'KNOWLEDGE', title: 'A' })))
      .then([{ type: 'SetDocumentAdded', data: { setId: SET, workspaceId: WS, documentId: 'a', title: 'A', sizeBytes: 42, purpose: 'KNOWLEDGE', updatedAt: now.toISOString() } }]));

  it('refuses a missing document and one of another workspace with NOT_FOUND', () => {
    given([created]).when(add('a', null)).thenThrows('NOT_FOUND');
    given([created]).when(add('a', doc('a', { workspaceId: 'other' }))).thenThrows('NOT_FOUND');
  });

  it('refuses a document that is not VERIFIED', () => {
    for (const status of ['PENDING', 'PROCESSING', 'FAILED']) given([created]).when(add('a', doc('a', { processingStatus: status }))).thenThrows('DOCUMENT_NOT_VERIFIED');
  });

  it('refuses a document already in the set', () => given([created, added('a')]).when(add('a')).thenThrows('DOCUMENT_ALREADY_IN_SET'));

  it('refuses a 21st document', () => {
    const twenty = Array.from({ length: 20 }, (_, i) => added(`d${i}`, 1, i + 1));
    given([created, ...twenty]).when(add('x')).thenThrows('DOCUMENT_LIMIT_EXCEEDED');
    given([created, ...twenty.slice(0, 19)]).when(add('x')).then([expect.objectContaining({ type: 'SetDocumentAdded' }) as InstructionSetEvent]);
  });

  it('refuses a document that would pass 102400 bytes, with currentSize, documentSize and maxSize', () => {
    given([created, added('a', 60_000), added('b', 30_000)])
      .when(add('c', doc('c', { sizeBytes: 30_000 })))
      .thenThrows('SIZE_LIMIT_EXCEEDED', { currentSize: 90_000, documentSize: 30_000, maxSize: MAX_SET_BYTES });
  });

  it('accepts a document that fills the set to exactly 102400 bytes', () =>
    given([created, added('a', 100_000)])
      .when(add('c', doc('c', { sizeBytes: 2400 })))
      .then([expect.objectContaining({ type: 'SetDocumentAdded' }) as InstructionSetEvent]));

  it('a MEMBER cannot add or remove documents', () => {
    given([created]).when(add('a', doc('a'), member)).thenThrows('FORBIDDEN');
    given([created, added('a')]).when({ type: 'RemoveSetDocument', actor: member, documentId: 'a', reason: 'removed', now }).thenThrows('FORBIDDEN');
  });

  it('removing frees room: count and size are decided on the folded state', () => {
    const removed: InstructionSetEvent = { type: 'SetDocumentRemoved', data: { setId: SET, workspaceId: WS, documentId: 'a', reason: 'removed', updatedAt: at(9) } };
    given([created, added('a', 100_000), removed])
      .when(add('c', doc('c', { sizeBytes: 100_000 })))
      .then([expect.objectContaining({ type: 'SetDocumentAdded' }) as InstructionSetEvent]);
  });

  it('removes a document; a document not in the set is NOT_FOUND', () => {
    given([created, added('a')])
      .when({ type: 'RemoveSetDocument', actor: admin, documentId: 'a', reason: 'removed', now })
      .then([{ type: 'SetDocumentRemoved', data: { setId: SET, workspaceId: WS, documentId: 'a', reason: 'removed', updatedAt: now.toISOString() } }]);
    given([created]).when({ type: 'RemoveSetDocument', actor: admin, documentId: 'a', reason: 'removed', now }).thenThrows('NOT_FOUND');
  });

  it('the cleanup after a document deletion is idempotent', () => {
    const cleanup = (documentId: string): InstructionSetCommand => ({ type: 'RemoveSetDocument', actor: system, documentId, reason: 'document_deleted', now });
    given([created, added('a')])
      .when(cleanup('a'))
      .then([{ type: 'SetDocumentRemoved', data: { setId: SET, workspaceId: WS, documentId: 'a', reason: 'document_deleted', updatedAt: now.toISOString() } }]);
    given([created]).when(cleanup('a')).then([]);
    given([]).when(cleanup('a')).then([]);
  });
});

describe('instruction set decider: a document VERIFIED again with another size', () => {
  const resized = (documentId: string, sizeBytes: number, previousSizeBytes: number): InstructionSetEvent => ({
    type: 'SetDocumentResized',
    data: { setId: SET, workspaceId: WS, documentId, sizeBytes, previousSizeBytes },
  });
  const resize = (documentId: string, sizeBytes: number, actor = system): InstructionSetCommand => ({ type: 'ResizeSetDocument', actor, documentId, sizeBytes });

  it('the system records the new size with the previous one', () =>
    given([created, added('a', 60_000), added('b', 42_400)])
      .when(resize('a', 500_002))
      .then([resized('a', 500_002, 60_000)]));

  it('the folded state follows the new size; updatedAt stays (not a user change)', () => {
    const s = fold([created, added('a', 60_000, 1), added('b', 42_400, 2), resized('a', 1_000, 60_000)]);
    expect(s.documents).toEqual([expect.objectContaining({ documentId: 'a', sizeBytes: 1_000 }), expect.objectContaining({ documentId: 'b', sizeBytes: 42_400 })]);
    expect(s.updatedAt).toBe(at(2));
  });

  it('an add after a resize is decided on the new size: refused when it would pass the limit', () => {
    given([created, added('a', 60_000), resized('a', 90_000, 60_000)])
      .when(add('c', doc('c', { sizeBytes: 20_000 })))
      .thenThrows('SIZE_LIMIT_EXCEEDED', { currentSize: 90_000, documentSize: 20_000, maxSize: MAX_SET_BYTES });
    // Without the resize the same add fits.
    given([created, added('a', 60_000)])
      .when(add('c', doc('c', { sizeBytes: 20_000 })))
      .then([expect.objectContaining({ type: 'SetDocumentAdded' }) as InstructionSetEvent]);
  });

  it('a shrink frees room for an add', () =>
    given([created, added('a', 100_000), resized('a', 50_000, 100_000)])
      .when(add('c', doc('c', { sizeBytes: 50_000 })))
      .then([expect.objectContaining({ type: 'SetDocumentAdded' }) as InstructionSetEvent]));

  it('a set pushed over the limit by a resize refuses every add until it is back under', () => {
    const over = [created, added('a', 60_000), added('b', 42_400), resized('a', 70_000, 60_000)];
    given(over).when(add('c', doc('c', { sizeBytes: 1 }))).thenThrows('SIZE_LIMIT_EXCEEDED', { currentSize: 112_400 });
    given([...over, resized('a', 60_000, 70_000)]).when(add('c', doc('c', { sizeBytes: 0 }))).then([expect.objectContaining({ type: 'SetDocumentAdded' }) as InstructionSetEvent]);
  });

  it('is idempotent: same size, a document not in the set, or a set gone emit nothing', () => {
    given([created, added('a', 10)]).when(resize('a', 10)).then([]);
    given([created, added('a', 10)]).when(resize('x', 99)).then([]);
    given([]).when(resize('a', 99)).then([]);
    const deleted: InstructionSetEvent = { type: 'InstructionSetDeleted', data: { setId: SET, workspaceId: WS, deletedAt: at(5) } };
    given([created, added('a', 10), deleted]).when(resize('a', 99)).then([]);
  });

  it('only the system records sizes', () => {
    for (const actor of [owner, admin, member, stranger]) given([created, added('a', 10)]).when(resize('a', 99, actor)).thenThrows('FORBIDDEN');
    given([created, added('a', 10)]).when(resize('a', -1)).thenThrows('VALIDATION_ERROR');
  });
});

describe('instruction set decider: reorder', () => {
  const three = [created, added('a', 1, 1), added('b', 1, 2), added('c', 1, 3)];

  it('reorders to a permutation of the set', () => {
    given(three)
      .when({ type: 'ReorderSetDocuments', actor: admin, documentIds: ['c', 'a', 'b'], now })
      .then([{ type: 'SetReordered', data: { setId: SET, workspaceId: WS, documentIds: ['c', 'a', 'b'], updatedAt: now.toISOString() } }]);
    const reordered = fold([...three, { type: 'SetReordered', data: { setId: SET, workspaceId: WS, documentIds: ['c', 'a', 'b'], updatedAt: at(4) } }]);
    expect(reordered.documents.map((d) => d.documentId)).toEqual(['c', 'a', 'b']);
  });

  it('the same order emits nothing', () => given(three).when({ type: 'ReorderSetDocuments', actor: admin, documentIds: ['a', 'b', 'c'], now }).then([]));

  it('refuses anything but a permutation', () => {
    for (const documentIds of [['a', 'b'], ['a', 'b', 'c', 'd'], ['a', 'a', 'b'], ['a', 'b', 'x'], []]) {
      given(three).when({ type: 'ReorderSetDocuments', actor: admin, documentIds, now }).thenThrows('VALIDATION_ERROR');
    }
  });

  it('a MEMBER cannot reorder', () => given(three).when({ type: 'ReorderSetDocuments', actor: member, documentIds: ['c', 'b', 'a'], now }).thenThrows('FORBIDDEN'));
});

describe('extractedSizeBound (the PATCH content check)', () => {
  it('is the UTF-8 bytes of plain text, more when NFC lengthens it, plus one per Markdown heading line', () => {
    expect(extractedSizeBound('z'.repeat(500), 'txt')).toBe(500);
    expect(extractedSizeBound('é€', 'txt')).toBe(5);
    // U+0958 is excluded from composition: NFC turns its 3 bytes into 6.
    expect(extractedSizeBound('\u0958', 'txt')).toBe(6);
    expect(extractedSizeBound('intro\n# H\ntext\nTitle\n===', 'md')).toBe(Buffer.byteLength('intro\n# H\ntext\nTitle\n===') + 2);
  });
});
