import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { DependencyContainer } from 'tsyringe';
import { buildContainer, closeContainer } from '../../src/container';
import { loadConfig } from '../../src/config/config';
import { AppContext } from '../../src/app/context';
import { handleCommand, systemContext, toNewEvents } from '../../src/core/commandHandler';
import { workspaceDecider } from '../../src/domain/workspace/decider';
import { workspaceStream } from '../../src/domain/workspace/events';
import { documentStream, DocumentEvent, encodeVector } from '../../src/domain/document/events';
import { DomainError } from '../../src/domain/errors';
import { searchThroughLink } from '../../queries/searchLink/searchThroughLink';

const logger = pino({ level: 'silent' });
const OWNER = '00000000-0000-4000-8000-0000000000aa';

/** A VERIFIED document appended as its pipeline would (upload → chunk → embed → verify). */
async function verifiedDocument(ctx: AppContext, workspaceId: string, title: string, text: string, tags: string[]): Promise<number> {
  const documentId = randomUUID();
  const processingId = randomUUID();
  const [vector] = await ctx.embeddings.embed([text]);
  const base = { documentId, workspaceId };
  const now = new Date().toISOString();
  const events: DocumentEvent[] = [
    { type: 'DocumentUploaded', data: { ...base, blob: { sha256: 'a'.repeat(64), size: text.length }, kind: 'txt', mimeType: 'text/plain', size: text.length, filename: `${title}.txt`, title, purpose: 'KNOWLEDGE', tags, uploadedBy: OWNER, uploadedAt: now } },
    { type: 'DocumentProcessingStarted', data: { ...base, processingId, reason: 'UPLOADED', startedAt: now } },
    { type: 'DocumentChunked', data: { ...base, processingId, chunks: [{ index: 0, content: text, tokenCount: 10 }] } },
    { type: 'ChunksEmbedded', data: { ...base, processingId, modelId: ctx.embeddings.modelId, dimensions: vector.length, vectors: [{ index: 0, vector: encodeVector(vector) }] } },
    { type: 'DocumentVerified', data: { ...base, processingId, chunkCount: 1, tokenCount: 10 } },
  ];
  const r = await ctx.eventStore.append(documentStream(documentId), toNewEvents(events, systemContext(), workspaceId), 'no_stream');
  return r.position;
}

describe('searchThroughLink: the one link-scope rule (public search and tool endpoint)', () => {
  let dir: string;
  let ctx: AppContext;
  let di: DependencyContainer;
  const workspaceId = randomUUID();
  const contracts = randomUUID();
  const recipes = randomUUID();

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-linksearch-'));
    ({ ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir }), logger));
    await ctx.runner.start();
    const cc = { ...systemContext(), actorId: OWNER };
    const ws = (command: Parameters<typeof workspaceDecider.decide>[0]) => handleCommand(ctx.eventStore, workspaceStream(workspaceId), workspaceDecider, command, cc, { workspaceId });
    await ws({ type: 'CreateWorkspace', workspaceId, actorId: OWNER, name: 'Scope', now: new Date() });
    await ws({ type: 'CreateTag', actorId: OWNER, tagId: contracts, name: 'Contracts', color: '#00aa00' });
    await ws({ type: 'CreateTag', actorId: OWNER, tagId: recipes, name: 'Recipes', color: '#aa0000' });
    await verifiedDocument(ctx, workspaceId, 'Lease', 'The lease agreement ends after twelve months of rent payments.', [contracts, recipes]);
    const last = await verifiedDocument(ctx, workspaceId, 'Pancakes', 'Pancake recipe: flour, eggs, milk, and a pinch of salt for the rent party.', [recipes]);
    expect(await ctx.runner.waitFor(last, 20_000)).toBe(true);
  }, 120_000);

  afterAll(async () => {
    await closeContainer(di);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('an unscoped link searches the whole workspace and shows every tag', async () => {
    const hits = await searchThroughLink(ctx, { workspaceId, allowedTags: [] }, { query: 'rent', limit: 10 });
    expect(hits.map((h) => h.title).sort()).toEqual(['Lease', 'Pancakes']);
    expect(hits.find((h) => h.title === 'Lease')?.tags.sort()).toEqual([contracts, recipes].sort());
  });

  it('a scoped link reaches only documents having one of its tags, and cuts hit tags to the scope', async () => {
    const hits = await searchThroughLink(ctx, { workspaceId, allowedTags: [contracts] }, { query: 'rent', limit: 10 });
    expect(hits.map((h) => h.title)).toEqual(['Lease']);
    expect(hits[0].tags).toEqual([contracts]);
  });

  it('a requested tag narrows the search inside the scope', async () => {
    const hits = await searchThroughLink(ctx, { workspaceId, allowedTags: [] }, { query: 'rent', limit: 10, tags: [contracts] });
    expect(hits.map((h) => h.title)).toEqual(['Lease']);
  });

  it('a requested tag outside the scope is refused with TAG_NOT_ALLOWED', async () => {
    const err = await searchThroughLink(ctx, { workspaceId, allowedTags: [contracts] }, { query: 'rent', limit: 10, tags: [recipes] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('TAG_NOT_ALLOWED');
  });

  it('another workspace is never reached', async () => {
    expect(await searchThroughLink(ctx, { workspaceId: randomUUID(), allowedTags: [] }, { query: 'rent', limit: 10 })).toEqual([]);
  });
});
