import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { DependencyContainer } from 'tsyringe';
import { buildContainer, closeContainer } from '../../src/container';
import { loadConfig } from '../../src/config/config';
import { AppContext } from '../../src/app/context';
import { CommandContext, handleCommand } from '../../src/core/commandHandler';
import { userDecider } from '../../src/domain/user/deciders';
import { userStream } from '../../src/domain/user/events';
import { sha256Hex } from '../../src/util/crypto';
import { DomainError } from '../../src/domain/errors';
import { registerUser } from '../../commands/user/userCommands';
import { createWorkspace } from '../../commands/workspace/createWorkspace';
import { updateWorkspace } from '../../commands/workspace/updateWorkspace';
import { addMember, changeMemberRole } from '../../commands/workspace/members';
import { acceptInvitation, inviteMember } from '../../commands/workspace/invitations';
import { createTag, updateTag } from '../../commands/workspace/tags';
import { getWorkspace, listTags } from '../../queries/workspace/workspaceQueries';

const logger = pino({ level: 'silent' });

const codeOf = (p: Promise<unknown>) => p.then(() => 'no error', (e: unknown) => (e instanceof DomainError ? e.code : String(e)));

describe('workspace use cases (embedded adapters on a temp dir)', () => {
  let dir: string;
  let ctx: AppContext;
  let di: DependencyContainer;
  const as = (actorId: string): CommandContext => ({ actorId, authMethod: 'session', correlationId: randomUUID(), now: new Date() });

  async function user(email: string): Promise<string> {
    const r = await registerUser(ctx, { ...as(randomUUID()), actorId: null }, { email, password: 'correct horse battery', name: email.split('@')[0] });
    await ctx.runner.waitFor(r.position, 5000);
    return r.user.userId;
  }

  /** Confirms the address as its mailed link would (the verification the registration asked for). */
  async function confirm(email: string, userId: string): Promise<void> {
    const stream = userStream(sha256Hex(email));
    const requested = (await ctx.eventStore.readStream(stream)).find((e) => e.type === 'EmailVerificationRequested');
    const requestId = (requested!.data as { requestId: string }).requestId;
    const r = await handleCommand(ctx.eventStore, stream, userDecider, { type: 'VerifyEmail', requestId, now: new Date() }, as(userId));
    await ctx.runner.waitFor(r.position, 5000);
  }

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-wsuse-'));
    ({ ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir }), logger));
    await ctx.runner.start();
  }, 60_000);

  afterAll(async () => {
    await closeContainer(di);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('createWorkspace: the creator is OWNER and reads the workspace at once (read-your-writes)', async () => {
    const owner = await user('owner1@example.com');
    const ws = await createWorkspace(ctx, as(owner), { name: '  Legal  ' });
    expect(ws.name).toBe('Legal');
    const seen = await getWorkspace(ctx, ws.id, owner);
    expect(seen).toMatchObject({ id: ws.id, name: 'Legal', role: 'OWNER', memberCount: 1 });
    const updated = await updateWorkspace(ctx, as(owner), ws.id, { name: 'Legal team', settings: { allowPublicSearchLinks: false } });
    expect(updated).toMatchObject({ name: 'Legal team', settings: { allowPublicSearchLinks: false } });
  });

  it('addMember: an unknown or malformed user id is USER_NOT_FOUND; a known one becomes a member', async () => {
    const owner = await user('owner2@example.com');
    const ws = await createWorkspace(ctx, as(owner), { name: 'Members' });
    expect(await codeOf(addMember(ctx, as(owner), ws.id, { userId: randomUUID(), role: 'MEMBER' }))).toBe('USER_NOT_FOUND');
    expect(await codeOf(addMember(ctx, as(owner), ws.id, { userId: 'constructor', role: 'MEMBER' }))).toBe('USER_NOT_FOUND');
    const bob = await user('bob2@example.com');
    expect(await addMember(ctx, as(owner), ws.id, { userId: bob.toUpperCase(), role: 'MEMBER' })).toMatchObject({ userId: bob, email: 'bob2@example.com', role: 'MEMBER' });
    expect(await changeMemberRole(ctx, as(owner), ws.id, { userId: bob, role: 'ADMIN' })).toMatchObject({ userId: bob, role: 'ADMIN' });
  });

  it('inviteMember then acceptInvitation: the invitee joins with the invited role', async () => {
    const owner = await user('owner3@example.com');
    const ws = await createWorkspace(ctx, as(owner), { name: 'Invites' });
    const carol = await user('carol3@example.com');
    const inv = await inviteMember(ctx, as(owner), ws.id, { email: ' Carol3@Example.com ', role: 'ADMIN' });
    expect(inv).toMatchObject({ email: 'carol3@example.com', role: 'ADMIN' });
    expect(await codeOf(acceptInvitation(ctx, as(carol), { invitationId: randomUUID(), actorEmail: 'carol3@example.com' }))).toBe('INVITATION_NOT_FOUND');
    // Only from a confirmed address (whoever registered it first may not own the mailbox).
    expect(await codeOf(acceptInvitation(ctx, as(carol), { invitationId: inv.invitationId, actorEmail: 'carol3@example.com' }))).toBe('EMAIL_NOT_VERIFIED');
    await confirm('carol3@example.com', carol);
    expect(await acceptInvitation(ctx, as(carol), { invitationId: inv.invitationId, actorEmail: 'carol3@example.com' })).toEqual({ workspaceId: ws.id });
    expect(await getWorkspace(ctx, ws.id, carol)).toMatchObject({ id: ws.id, role: 'ADMIN' });
  });

  it('createTag / updateTag: trimmed names, lower-case colours, an unknown tag is TAG_NOT_FOUND', async () => {
    const owner = await user('owner4@example.com');
    const ws = await createWorkspace(ctx, as(owner), { name: 'Tags' });
    const tag = await createTag(ctx, as(owner), ws.id, { name: ' Contracts ', color: '#AABBCC' });
    expect(tag).toMatchObject({ name: 'Contracts', color: '#aabbcc' });
    expect(await listTags(ctx, ws.id)).toEqual([tag]);
    expect(await updateTag(ctx, as(owner), ws.id, tag.id, { color: '#00FF00' })).toEqual({ ...tag, color: '#00ff00' });
    expect(await codeOf(updateTag(ctx, as(owner), ws.id, randomUUID(), { name: 'x' }))).toBe('TAG_NOT_FOUND');
  });
});
