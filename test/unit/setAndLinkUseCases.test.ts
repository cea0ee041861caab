import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { DependencyContainer } from 'tsyringe';
import { buildContainer, closeContainer } from '../../src/container';
import { loadConfig } from '../../src/config/config';
import { AppContext } from '../../src/app/context';
import { CommandContext } from '../../src/core/commandHandler';
import { DomainError } from '../../src/domain/errors';
import { createWorkspace } from '../../commands/workspace/createWorkspace';
import { updateWorkspace } from '../../commands/workspace/updateWorkspace';
import { createInstructionSet } from '../../commands/instructionSet/createInstructionSet';
import { updateInstructionSet } from '../../commands/instructionSet/updateInstructionSet';
import { addSetDocument } from '../../commands/instructionSet/setDocuments';
import { createSearchLink } from '../../commands/searchLink/createSearchLink';
import { revokeSearchLink } from '../../commands/searchLink/revokeSearchLink';
import { setForMember } from '../../queries/instructionSet/instructionSetQueries';
import { searchLinkByToken } from '../../queries/searchLink/searchLinkQueries';

const logger = pino({ level: 'silent' });
const OWNER = randomUUID();
const errorOf = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => (e instanceof DomainError ? e : Promise.reject(e)));

describe('instruction-set and search-link use cases (embedded adapters on a temp dir)', () => {
  let dir: string;
  let ctx: AppContext;
  let di: DependencyContainer;
  let workspaceId: string;
  const cc = (): CommandContext => ({ actorId: OWNER, authMethod: 'session', correlationId: randomUUID(), now: new Date() });

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-setlink-'));
    ({ ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir }), logger));
    await ctx.runner.start();
    workspaceId = (await createWorkspace(ctx, cc(), { name: 'Sets and links' })).id;
  }, 60_000);

  afterAll(async () => {
    await closeContainer(di);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('createInstructionSet then updateInstructionSet: blank descriptions are null; a stale expectedUpdatedAt is CONFLICT with lastModifiedAt', async () => {
    const { id, state } = await createInstructionSet(ctx, cc(), { workspaceId, actor: { userId: OWNER, role: 'OWNER' }, name: ' Onboarding ', description: '   ' });
    expect(state).toMatchObject({ name: 'Onboarding', description: null, isPublic: false });
    const { set, actor } = await setForMember(ctx, id.toUpperCase(), OWNER);
    expect(actor).toEqual({ userId: OWNER, role: 'OWNER' });
    const updated = await updateInstructionSet(ctx, cc(), set, actor, { isPublic: true, expectedUpdatedAt: state.updatedAt });
    expect(updated.isPublic).toBe(true);
    const err = await errorOf(updateInstructionSet(ctx, cc(), set, actor, { name: 'x', expectedUpdatedAt: '2000-01-01T00:00:00.000Z' }));
    expect(err?.code).toBe('CONFLICT');
    expect(err?.details).toEqual({ lastModifiedAt: updated.updatedAt });
    expect((await errorOf(setForMember(ctx, id, randomUUID())))?.code).toBe('NOT_FOUND');
  });

  it('addSetDocument: an unknown document (or a non-id) is NOT_FOUND', async () => {
    const { id } = await createInstructionSet(ctx, cc(), { workspaceId, actor: { userId: OWNER, role: 'OWNER' }, name: 'Empty' });
    const { set, actor } = await setForMember(ctx, id, OWNER);
    expect((await errorOf(addSetDocument(ctx, cc(), set, actor, { documentId: randomUUID() })))?.code).toBe('NOT_FOUND');
    expect((await errorOf(addSetDocument(ctx, cc(), set, actor, { documentId: '__proto__' })))?.code).toBe('NOT_FOUND');
  });

  it('createSearchLink: its token opens the link until it is revoked', async () => {
    const { link, token } = await createSearchLink(ctx, cc(), workspaceId, () => ({ name: ' Public ' }));
    expect(link).toMatchObject({ workspaceId, name: 'Public', allowedTags: [], revoked: false });
    expect(await searchLinkByToken(ctx, token)).toMatchObject({ status: 'ok', link: { id: link.id } });
    await revokeSearchLink(ctx, cc(), workspaceId, link.id);
    expect(await searchLinkByToken(ctx, token)).toEqual({ status: 'not_found' });
  });

  it('createSearchLink: a workspace with links off is PUBLIC_LINKS_DISABLED before its input is decoded', async () => {
    const ws = await createWorkspace(ctx, cc(), { name: 'No links' });
    await updateWorkspace(ctx, cc(), ws.id, { settings: { allowPublicSearchLinks: false } });
    const input = jest.fn(() => ({}));
    expect((await errorOf(createSearchLink(ctx, cc(), ws.id, input)))?.code).toBe('PUBLIC_LINKS_DISABLED');
    expect(input).not.toHaveBeenCalled();
  });
});
