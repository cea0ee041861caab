import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { Request } from 'express';
import { DependencyContainer } from 'tsyringe';
import { buildContainer, closeContainer } from '../../src/container';
import { loadConfig } from '../../src/config/config';
import { AppContext } from '../../src/app/context';
import { CommandContext } from '../../src/core/commandHandler';
import { authenticateRequest, requireWorkspaceRole } from '../../src/http/auth';
import { createApiKey, registerUser, revokeApiKey, startSession, logout } from '../../commands/user/userCommands';
import { revokeAllSessions, revokeSession } from '../../commands/user/sessions';
import { createWorkspace } from '../../commands/workspace/createWorkspace';
import { addMember, changeMemberRole, removeMember, transferOwnership } from '../../commands/workspace/members';
import { deleteWorkspace } from '../../commands/workspace/deleteWorkspace';
import { createSearchLink } from '../../commands/searchLink/createSearchLink';
import { revokeSearchLink } from '../../commands/searchLink/revokeSearchLink';
import { searchLinkByToken } from '../../queries/searchLink/searchLinkQueries';
import { memberRole } from '../../queries/workspace/workspaceQueries';
import { apiKeysCollection, sessionsCollection } from '../../projections/user/userProjection';
import { membersCollection, memberId } from '../../projections/workspace/workspaceProjection';
import { searchLinksCollection } from '../../projections/searchLink/searchLinkProjection';

const logger = pino({ level: 'silent' });

/**
 * A revocation is refused in this process from the moment its command succeeded, while the
 * projections lag (here: stopped, so the read models still show the credential live).
 */
describe('revocations while the projections lag (container, role all)', () => {
  let dir: string;
  let ctx: AppContext;
  let di: DependencyContainer;
  const cc = (actorId: string | null): CommandContext => ({ actorId, authMethod: 'session', correlationId: randomUUID(), now: new Date() });
  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } }) as unknown as Request;
  const settle = async () => expect(await ctx.runner.waitFor(await ctx.eventStore.headPosition(), 20_000)).toBe(true);
  const refusal = (p: Promise<unknown>) => p.then(() => 'accepted', (err: { code?: string }) => err.code ?? 'error');

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-revoke-'));
    // Commands wait 1 ms for the read models: their answer never depends on the projections here.
    ({ ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir, KB_SEARCH_THREAD: 'main', KB_READ_YOUR_WRITES_MS: '1' }), logger));
    await ctx.runner.start();
  });
  afterEach(async () => {
    await closeContainer(di);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const user = async (name: string) => (await registerUser(ctx, cc(null), { email: `${name}-${randomUUID()}@example.com`, password: 'correct horse battery', name, emailVerified: true })).user;

  it('an API key and sessions (one, all, logout) are refused at once, then forgotten once the projections caught up', async () => {
    const u = await user('ann');
    const key = await createApiKey(ctx, cc(u.userId), u.userId, 'k');
    const one = await startSession(ctx, cc(u.userId), u.userId, {}, 'password');
    const other = await startSession(ctx, cc(u.userId), u.userId, {}, 'password');
    const loggedOut = await startSession(ctx, cc(u.userId), u.userId, {}, 'password');
    await settle();
    for (const t of [key.key, one.accessToken, other.accessToken, loggedOut.accessToken]) await authenticateRequest(ctx, bearer(t));

    await ctx.runner.stop();
    const sid = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).sid as string;
    await revokeApiKey(ctx, cc(u.userId), u.userId, key.id);
    await revokeSession(ctx, cc(u.userId), u.userId, sid(one.accessToken));
    await logout(ctx, cc(u.userId), loggedOut.refreshToken);
    // The read models still show every one of them live.
    expect((await apiKeysCollection(ctx.readStore).get(key.id))?.revoked).toBe(false);
    for (const s of [one, loggedOut]) expect((await sessionsCollection(ctx.readStore).get(sid(s.accessToken)))?.revoked).toBe(false);

    expect(await refusal(authenticateRequest(ctx, bearer(key.key)))).toBe('UNAUTHORIZED');
    expect(await refusal(authenticateRequest(ctx, bearer(one.accessToken)))).toBe('UNAUTHORIZED');
    expect(await refusal(authenticateRequest(ctx, bearer(loggedOut.accessToken)))).toBe('UNAUTHORIZED');
    expect(await refusal(authenticateRequest(ctx, bearer(other.accessToken)))).toBe('accepted');

    // "Sign out everywhere" (DELETE /v1/auth/sessions): the session left is refused too.
    await revokeAllSessions(ctx, cc(u.userId), u.userId, 'revoked_by_user');
    expect(await refusal(authenticateRequest(ctx, bearer(other.accessToken)))).toBe('UNAUTHORIZED');
    expect(ctx.revocations.size).toBeGreaterThan(0);

    // The projections catch up: the read models refuse them, and nothing is kept in memory.
    await ctx.runner.start();
    await settle();
    expect(ctx.revocations.size).toBe(0);
    expect((await apiKeysCollection(ctx.readStore).get(key.id))?.revoked).toBe(true);
    for (const t of [key.key, one.accessToken, other.accessToken, loggedOut.accessToken]) expect(await refusal(authenticateRequest(ctx, bearer(t)))).toBe('UNAUTHORIZED');
  });

  it('a removed member and a revoked search link are refused at once', async () => {
    const owner = await user('owner');
    const member = await user('member');
    const ws = await createWorkspace(ctx, cc(owner.userId), { name: 'w' });
    await settle();
    await addMember(ctx, cc(owner.userId), ws.id, { userId: member.userId, role: 'ADMIN' });
    const link = await createSearchLink(ctx, cc(owner.userId), ws.id, () => ({ name: 'l' }));
    const key = await createApiKey(ctx, cc(member.userId), member.userId, 'k');
    await settle();
    const asMember = bearer(key.key);
    await authenticateRequest(ctx, asMember);
    expect(await requireWorkspaceRole(ctx, asMember, ws.id, 'ADMIN')).toBe('ADMIN');
    expect((await searchLinkByToken(ctx, link.token)).status).toBe('ok');

    await ctx.runner.stop();
    await removeMember(ctx, cc(owner.userId), ws.id, member.userId);
    await revokeSearchLink(ctx, cc(owner.userId), ws.id, link.link.id);
    expect((await membersCollection(ctx.readStore).get(memberId(ws.id, member.userId)))?.role).toBe('ADMIN');
    expect((await searchLinksCollection(ctx.readStore).get(link.link.id))?.revoked).toBe(false);

    const fresh = bearer(key.key);
    await authenticateRequest(ctx, fresh);
    expect(await refusal(requireWorkspaceRole(ctx, fresh, ws.id))).toBe('WORKSPACE_NOT_FOUND');
    expect(await memberRole(ctx, ws.id, member.userId)).toBeNull();
    expect((await searchLinkByToken(ctx, link.token)).status).toBe('not_found');
    // The owner is untouched.
    expect(await memberRole(ctx, ws.id, owner.userId)).toBe('OWNER');
  });

  it('a demoted member, and an owner who handed the workspace over, have the lower role at once', async () => {
    const owner = await user('owner');
    const admin = await user('admin');
    const heir = await user('heir');
    const ws = await createWorkspace(ctx, cc(owner.userId), { name: 'w' });
    await settle();
    await addMember(ctx, cc(owner.userId), ws.id, { userId: admin.userId, role: 'ADMIN' });
    await addMember(ctx, cc(owner.userId), ws.id, { userId: heir.userId, role: 'ADMIN' });
    const key = await createApiKey(ctx, cc(admin.userId), admin.userId, 'k');
    await settle();
    const before = bearer(key.key);
    await authenticateRequest(ctx, before);
    expect(await requireWorkspaceRole(ctx, before, ws.id, 'ADMIN')).toBe('ADMIN');

    await ctx.runner.stop();
    await changeMemberRole(ctx, cc(owner.userId), ws.id, { userId: admin.userId, role: 'MEMBER' });
    await transferOwnership(ctx, cc(owner.userId), ws.id, heir.userId);
    // The read models still show the old roles.
    expect((await membersCollection(ctx.readStore).get(memberId(ws.id, admin.userId)))?.role).toBe('ADMIN');
    expect((await membersCollection(ctx.readStore).get(memberId(ws.id, owner.userId)))?.role).toBe('OWNER');

    const after = bearer(key.key);
    await authenticateRequest(ctx, after);
    expect(await refusal(requireWorkspaceRole(ctx, after, ws.id, 'ADMIN'))).not.toBe('accepted');
    expect(await requireWorkspaceRole(ctx, after, ws.id, 'MEMBER')).toBe('MEMBER');
    expect(await memberRole(ctx, ws.id, admin.userId)).toBe('MEMBER');
    expect(await memberRole(ctx, ws.id, owner.userId)).toBe('ADMIN');
    // A promotion is not taken early: the heir is OWNER once the projections apply it.
    expect(await memberRole(ctx, ws.id, heir.userId)).toBe('ADMIN');

    await ctx.runner.start();
    await settle();
    expect(ctx.revocations.size).toBe(0);
    expect(await memberRole(ctx, ws.id, heir.userId)).toBe('OWNER');
    expect(await memberRole(ctx, ws.id, owner.userId)).toBe('ADMIN');
  });

  it("a deleted workspace's members and links are refused at once", async () => {
    const owner = await user('owner');
    const ws = await createWorkspace(ctx, cc(owner.userId), { name: 'w' });
    await settle();
    const link = await createSearchLink(ctx, cc(owner.userId), ws.id, () => ({ name: 'l' }));
    const key = await createApiKey(ctx, cc(owner.userId), owner.userId, 'k');
    await settle();
    expect(await memberRole(ctx, ws.id, owner.userId)).toBe('OWNER');
    expect((await searchLinkByToken(ctx, link.token)).status).toBe('ok');

    await ctx.runner.stop();
    await deleteWorkspace(ctx, cc(owner.userId), ws.id);
    // The read models still show the membership and the link.
    expect((await membersCollection(ctx.readStore).get(memberId(ws.id, owner.userId)))?.role).toBe('OWNER');
    expect((await searchLinksCollection(ctx.readStore).get(link.link.id))?.revoked).toBe(false);

    const fresh = bearer(key.key);
    await authenticateRequest(ctx, fresh);
    expect(await refusal(requireWorkspaceRole(ctx, fresh, ws.id))).toBe('WORKSPACE_NOT_FOUND');
    expect(await memberRole(ctx, ws.id, owner.userId)).toBeNull();
    expect((await searchLinkByToken(ctx, link.token)).status).toBe('not_found');
  });
});

/**
 * A split deployment: an API process (KB_ROLE=api, its runner polling the checkpoints of
 * projections run elsewhere). The process that ran the revocation refuses the key at once;
 * here no projector runs at all, so the read models never show it revoked.
 */
describe('revocations in an API process whose projections run elsewhere', () => {
  it('the process that ran the revocation refuses the key at once', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-revoke-api-'));
    const cc = (actorId: string | null): CommandContext => ({ actorId, authMethod: 'session', correlationId: randomUUID(), now: new Date() });
    const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } }) as unknown as Request;
    let { ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir, KB_SEARCH_THREAD: 'main' }), logger);
    try {
      await ctx.runner.start();
      const u = (await registerUser(ctx, cc(null), { email: `api-${randomUUID()}@example.com`, password: 'correct horse battery', name: 'api', emailVerified: true })).user;
      const key = await createApiKey(ctx, cc(u.userId), u.userId, 'k');
      expect(await ctx.runner.waitFor(await ctx.eventStore.headPosition(), 20_000)).toBe(true);
      await closeContainer(di);
      ({ ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir, KB_SEARCH_THREAD: 'main', KB_ROLE: 'api', KB_READ_YOUR_WRITES_MS: '1' }), logger));
      await ctx.runner.start();
      expect(ctx.runner.mode).toBe('poll');
      await authenticateRequest(ctx, bearer(key.key));
      await revokeApiKey(ctx, cc(u.userId), u.userId, key.id);
      expect((await apiKeysCollection(ctx.readStore).get(key.id))?.revoked).toBe(false);
      await expect(authenticateRequest(ctx, bearer(key.key))).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    } finally {
      await closeContainer(di);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
