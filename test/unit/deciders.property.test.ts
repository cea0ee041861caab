import fc from 'fast-check';
import { documentDecider, DocumentCommand, DocumentState } from '../../src/domain/document/decider';
import { DocumentEvent } from '../../src/domain/document/events';
import { instructionSetDecider, InstructionSetCommand, InstructionSetState, SetActor, totalSizeBytes } from '../../src/domain/instructionSet/decider';
import { MAX_SET_BYTES, MAX_SET_DOCUMENTS } from '../../src/domain/instructionSet/events';
import { searchLinkDecider, SearchLinkCommand } from '../../src/domain/searchLink/decider';
import { apiKeyDecider, ApiKeyCommand, sessionDecider, SessionCommand, userDecider } from '../../src/domain/user/deciders';
import { Role } from '../../src/domain/workspace/events';
import { BUILTIN_NAMES, idFrom, runCommands, RUNS } from '../support/property';

const now = new Date('2026-01-01T00:00:00.000Z');
const role = fc.constantFrom<Role>('OWNER', 'ADMIN', 'MEMBER');
const workspace = idFrom(['ws', 'other']);

describe('document decider (property-based)', () => {
  const run = fc.constantFrom('r1', 'r2', 'r3', '__proto__');
  const actor = { actorId: idFrom(['u1', 'u2']), actorRole: role, workspaceId: workspace };
  const command: fc.Arbitrary<DocumentCommand> = fc.oneof(
    fc.record({
      type: fc.constant('UploadDocument' as const),
      documentId: idFrom(['d1']),
      workspaceId: workspace,
      actorId: idFrom(['u1', 'u2']),
      processingId: run,
      blob: fc.constant({ sha256: 'a'.repeat(64), size: 10 }),
      kind: fc.constantFrom('txt' as const, 'md' as const, 'pdf' as const),
      mimeType: fc.constant('text/plain'),
      filename: fc.constant('f.txt'),
      title: fc.constant('T'),
      purpose: fc.constant('KNOWLEDGE' as const),
      tags: fc.array(idFrom(['t1', 't2'])),
      now: fc.constant(now),
    }),
    fc.record({ type: fc.constant('UpdateDocumentMetadata' as const), ...actor, title: fc.option(fc.constantFrom('T', 'U'), { nil: undefined }), tags: fc.option(fc.array(idFrom(['t1', 't2'])), { nil: undefined }), now: fc.constant(now) }),
    fc.record({ type: fc.constant('UpdateDocumentContent' as const), ...actor, content: fc.string({ maxLength: 20 }), processingId: run, now: fc.constant(now) }),
    fc.record({ type: fc.constant('RequestReprocess' as const), ...actor, processingId: run, now: fc.constant(now) }),
    fc.record({ type: fc.constant('DeleteDocument' as const), ...actor, now: fc.constant(now) }),
    fc.record({ type: fc.constant('ResumeProcessing' as const), processingId: run, newProcessingId: run, now: fc.constant(now) }),
    fc.record({ type: fc.constant('RecordTextExtracted' as const), processingId: run, sections: fc.constant(null).map(() => [{ text: 'x' }]), tokenCount: fc.nat(10), sizeBytes: fc.nat(10) }),
    fc.record({
      type: fc.constant('RecordChunks' as const),
      processingId: run,
      chunks: fc.nat({ max: 3 }).chain((start) => fc.nat({ max: 3 }).map((n) => Array.from({ length: n }, (_, i) => ({ index: start + i, content: 'c', tokenCount: 1 })))),
    }),
    fc.record({ type: fc.constant('RecordEmbeddings' as const), processingId: run, modelId: fc.constant('m'), dimensions: fc.constant(2), vectors: fc.array(fc.record({ index: fc.integer({ min: -1, max: 5 }), vector: fc.constant('AAAA') }), { maxLength: 3 }) }),
    fc.record({ type: fc.constant('MarkVerified' as const), processingId: run }),
    fc.record({ type: fc.constant('MarkFailed' as const), processingId: run, code: fc.constant('NO_TEXT' as const), message: fc.constant('none') }),
  );

  it('only DomainErrors; never VERIFIED without chunks all embedded; no event for another workspace or a deleted document', () => {
    fc.assert(
      fc.property(fc.array(command, { maxLength: 40 }), (commands) => {
        runCommands(documentDecider, commands, ({ before, after, command: c, events }) => {
          const verified = events.find((e): e is Extract<DocumentEvent, { type: 'DocumentVerified' }> => e.type === 'DocumentVerified');
          if (verified) {
            expect(before.run.chunks).toBeGreaterThan(0);
            expect(before.run.embedded).toBeGreaterThanOrEqual(before.run.chunks);
          }
          if (before.status === 'deleted') expect(events).toEqual([]);
          if ('workspaceId' in c && c.type !== 'UploadDocument' && events.length) expect(c.workspaceId).toBe(before.workspaceId);
          if (before.status !== 'none') expect(after.workspaceId).toBe(before.workspaceId);
          expect(new Set(after.tags).size).toBe(after.tags.length);
          assertNoPrototypeKeys(after);
        });
      }),
      RUNS,
    );
  });
});

describe('instruction set decider (property-based)', () => {
  const DOCS = Array.from({ length: 25 }, (_, i) => `d${i}`);
  const docId = idFrom(DOCS);
  const setActor: fc.Arbitrary<SetActor> = fc.oneof(
    fc.record({ userId: fc.constant('u1'), role: fc.constantFrom<Role | 'SYSTEM' | null>('OWNER', 'ADMIN', 'MEMBER', 'SYSTEM', null) }),
  );
  const snapshot = (documentId: string) =>
    fc.option(
      fc.record({
        documentId: fc.oneof({ weight: 9, arbitrary: fc.constant(documentId) }, { weight: 1, arbitrary: docId }),
        workspaceId: fc.oneof({ weight: 9, arbitrary: fc.constant('ws') }, { weight: 1, arbitrary: workspace }),
        title: fc.constant('T'),
        sizeBytes: fc.oneof(fc.integer({ min: 0, max: 8000 }), fc.integer({ min: 0, max: 120_000 })),
        purpose: fc.constant('INSTRUCTION' as const),
        processingStatus: fc.oneof({ weight: 8, arbitrary: fc.constant('VERIFIED') }, { weight: 2, arbitrary: fc.constantFrom('PROCESSING', 'FAILED', 'PENDING') }),
      }),
      { nil: null, freq: 10 },
    );
  const command: fc.Arbitrary<InstructionSetCommand> = fc.oneof(
    fc.record({ type: fc.constant('CreateInstructionSet' as const), setId: fc.constant('s1'), workspaceId: fc.constant('ws'), actor: setActor, name: fc.constant('S'), description: fc.constant(null), isPublic: fc.boolean(), now: fc.constant(now) }),
    fc.record({ type: fc.constant('UpdateInstructionSet' as const), actor: setActor, isPublic: fc.option(fc.boolean(), { nil: undefined }), name: fc.option(fc.constantFrom('S', 'T'), { nil: undefined }), now: fc.constant(now) }),
    fc.record({ type: fc.constant('DeleteInstructionSet' as const), actor: setActor, now: fc.constant(now) }),
    docId.chain((documentId) =>
      fc.record({ type: fc.constant('AddSetDocument' as const), actor: setActor, documentId: fc.constant(documentId), document: snapshot(documentId), now: fc.constant(now), pendingGrowthBytes: fc.option(fc.nat(20_000), { nil: undefined }) }),
    ),
    fc.record({ type: fc.constant('RemoveSetDocument' as const), actor: setActor, documentId: docId, reason: fc.constantFrom('removed' as const, 'document_deleted' as const), now: fc.constant(now) }),
    fc.record({ type: fc.constant('ReorderSetDocuments' as const), actor: setActor, documentIds: fc.array(docId, { maxLength: 6 }), now: fc.constant(now) }),
    fc.record({ type: fc.constant('ResizeSetDocument' as const), actor: setActor, documentId: docId, sizeBytes: fc.integer({ min: -1, max: 30_000 }) }),
  );
  const created = { type: 'CreateInstructionSet' as const, setId: 's1', workspaceId: 'ws', actor: { userId: 'u1', role: 'ADMIN' as const }, name: 'S', description: null, isPublic: true, now };
  // Many adds in a row, so the limits are reached.
  const adds = fc.array(
    fc.record({ documentId: fc.constantFrom(...DOCS, ...BUILTIN_NAMES), sizeBytes: fc.oneof(fc.integer({ min: 0, max: 600 }), fc.integer({ min: 0, max: 9000 })) }).map(
      (d): InstructionSetCommand => ({ type: 'AddSetDocument', actor: { userId: 'u1', role: 'ADMIN' }, documentId: d.documentId, document: { ...d, workspaceId: 'ws', title: 'T', purpose: 'INSTRUCTION', processingStatus: 'VERIFIED' }, now }),
    ),
    { minLength: 15, maxLength: 30 },
  );

  it('only DomainErrors; at most 20 documents; an add never passes 100 KB; entries only for documents added, each once, of the set\'s workspace', () => {
    fc.assert(
      fc.property(adds, fc.array(command, { maxLength: 30 }), (first, rest) => {
        const added = new Set<string>();
        runCommands(instructionSetDecider, [created, ...first, ...rest], ({ after, command: c, events }) => {
          for (const e of events) if (e.type === 'SetDocumentAdded') added.add(e.data.documentId);
          expect(after.documents.length).toBeLessThanOrEqual(MAX_SET_DOCUMENTS);
          const ids = after.documents.map((d) => d.documentId);
          expect(new Set(ids).size).toBe(ids.length);
          expect(ids.filter((id) => !added.has(id))).toEqual([]);
          if (events.some((e) => e.type === 'SetDocumentAdded')) {
            const pending = c.type === 'AddSetDocument' ? (c.pendingGrowthBytes ?? 0) : 0;
            expect(totalSizeBytes(after) + pending).toBeLessThanOrEqual(MAX_SET_BYTES);
            if (c.type === 'AddSetDocument') expect(c.document?.workspaceId).toBe(after.workspaceId);
          }
          if (events.length && c.actor.role !== 'SYSTEM') expect(['OWNER', 'ADMIN']).toContain(c.actor.role);
          assertNoPrototypeKeys(after);
        });
      }),
      { numRuns: 150 },
    );
  });

  it('a built-in name is never an entry of a set that did not add it', () => {
    const s = [created].reduce<InstructionSetState>((st, c) => instructionSetDecider.decide(c, st).reduce(instructionSetDecider.evolve, st), instructionSetDecider.initialState());
    for (const name of BUILTIN_NAMES) {
      expect(() => instructionSetDecider.decide({ type: 'RemoveSetDocument', actor: { userId: 'u1', role: 'ADMIN' }, documentId: name, reason: 'removed', now }, s)).toThrow(
        expect.objectContaining({ code: 'NOT_FOUND' }),
      );
      expect(instructionSetDecider.decide({ type: 'ResizeSetDocument', actor: { userId: null, role: 'SYSTEM' }, documentId: name, sizeBytes: 5 }, s)).toEqual([]);
    }
  });
});

describe('search link decider (property-based)', () => {
  const tags = ['t1', 't2', '__proto__', 'constructor'];
  const command: fc.Arbitrary<SearchLinkCommand> = fc.oneof(
    fc.record({
      type: fc.constant('CreateSearchLink' as const),
      linkId: fc.constant('l1'),
      workspaceId: fc.constant('ws'),
      tokenHash: fc.constant('a'.repeat(64)),
      tokenPrefix: fc.constant('abcd'),
      tokenCiphertext: fc.constant('v1:sealed'),
      name: fc.string({ maxLength: 210 }),
      allowedTags: fc.array(idFrom(tags), { maxLength: 5 }),
      expiresAt: fc.constantFrom(null, '2025-01-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'),
      historyMode: fc.boolean(),
      linksEnabled: fc.boolean(),
      workspaceTags: fc.subarray(tags),
      now: fc.constant(now),
    }),
    fc.record({
      type: fc.constant('UpdateSearchLink' as const),
      workspaceId: workspace,
      name: fc.option(fc.string({ maxLength: 210 }), { nil: undefined }),
      allowedTags: fc.option(fc.array(idFrom(tags), { maxLength: 5 }), { nil: undefined }),
      linksEnabled: fc.boolean(),
      workspaceTags: fc.subarray(tags),
      now: fc.constant(now),
    }),
    fc.record({ type: fc.constant('RevokeSearchLink' as const), workspaceId: workspace, now: fc.constant(now) }),
  );

  it("only DomainErrors; allowed tags are always the workspace's tags of that moment; revoked is final; other workspaces change nothing", () => {
    fc.assert(
      fc.property(fc.array(command, { maxLength: 30 }), (commands) => {
        runCommands(searchLinkDecider, commands, ({ before, after, command: c, events }) => {
          if (before.status === 'revoked') expect(events).toEqual([]);
          if (c.type !== 'CreateSearchLink' && events.length) expect(c.workspaceId).toBe(before.workspaceId);
          for (const e of events) {
            const allowed = e.type === 'LinkRevoked' ? undefined : e.data.allowedTags;
            if (allowed === undefined || c.type === 'RevokeSearchLink') continue;
            for (const t of allowed) expect(c.workspaceTags).toContain(t);
            expect(new Set(allowed).size).toBe(allowed.length);
          }
          expect(after.name.length).toBeLessThanOrEqual(200);
        });
      }),
      RUNS,
    );
  });
});

describe('user, API key and session deciders (property-based)', () => {
  it('a user registers once', () => {
    fc.assert(
      fc.property(fc.array(idFrom(['u1']), { minLength: 1, maxLength: 5 }), (ids) => {
        let n = 0;
        runCommands(userDecider, ids.map((userId) => ({ type: 'RegisterUser' as const, userId, email: 'e', name: 'n', passwordHash: 'h', now })), ({ events }) => (n += events.length));
        expect(n).toBe(1);
      }),
      { numRuns: 50 },
    );
  });

  it("API keys: only DomainErrors; nobody revokes another user's key", () => {
    const command: fc.Arbitrary<ApiKeyCommand> = fc.oneof(
      fc.record({ type: fc.constant('CreateApiKey' as const), keyId: fc.constant('k1'), userId: idFrom(['u1', 'u2']), name: fc.constant('k'), prefix: fc.constant('p'), keyHash: fc.constant('h'), now: fc.constant(now) }),
      fc.record({ type: fc.constant('RevokeApiKey' as const), userId: idFrom(['u1', 'u2']), now: fc.constant(now) }),
    );
    fc.assert(
      fc.property(fc.array(command, { maxLength: 20 }), (commands) => {
        runCommands(apiKeyDecider, commands, ({ before, command: c, events }) => {
          for (const e of events) if (e.type === 'ApiKeyRevoked') expect(before.status !== 'none' && before.userId === c.userId).toBe(true);
        });
      }),
      RUNS,
    );
  });

  it('sessions: only DomainErrors; a rotated-away token never rotates again; nothing after revocation', () => {
    const hash = idFrom(['h1', 'h2', 'h3', 'h4']);
    const command: fc.Arbitrary<SessionCommand> = fc.oneof(
      fc.record({ type: fc.constant('StartSession' as const), sessionId: fc.constant('s1'), userId: fc.constant('u1'), refreshTokenHash: hash, expiresAt: fc.constant(new Date('2026-01-08T00:00:00.000Z')) }),
      fc.record({ type: fc.constant('RotateRefreshToken' as const), presentedHash: hash, newHash: hash, expiresAt: fc.constant(new Date('2026-01-08T00:00:00.000Z')), now: fc.constantFrom(now, new Date('2026-02-01T00:00:00.000Z')) }),
      fc.record({ type: fc.constant('EndSession' as const), presentedHash: hash }),
    );
    fc.assert(
      fc.property(fc.array(command, { maxLength: 30 }), (commands) => {
        const used = new Set<string>();
        runCommands(sessionDecider, commands, ({ before, command: c, events }) => {
          if (before.status === 'revoked') expect(events).toEqual([]);
          for (const e of events) {
            if (e.type === 'RefreshTokenRotated') {
              expect(used.has(e.data.previousHash)).toBe(false);
              used.add(e.data.previousHash);
            }
          }
          if (c.type === 'RotateRefreshToken' && before.status === 'active' && before.usedHashes.includes(c.presentedHash)) {
            expect(events.map((e) => e.type)).toEqual(['SessionRevoked']);
          }
        });
      }),
      RUNS,
    );
  });
});

/** No state object carries a built-in name as an own key (a sign of ids used as plain-object keys). */
function assertNoPrototypeKeys(state: DocumentState | InstructionSetState): void {
  const seen = new Set<unknown>();
  const walk = (v: unknown): void => {
    if (v === null || typeof v !== 'object' || seen.has(v)) return;
    seen.add(v);
    const proto: unknown = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== Array.prototype) throw new Error(`unexpected object in state: ${String(v)}`);
    for (const k of Object.keys(v)) {
      if (BUILTIN_NAMES.includes(k)) throw new Error(`state has a key named ${k}`);
      walk((v as Record<string, unknown>)[k]);
    }
  };
  walk(state);
}
