import Database from 'better-sqlite3';
import path from 'node:path';
import { confirmAddress, signUp, startServer, TestServer } from '../support/server';

/** Pending invitations (list, revoke), ownership transfer, and the owners' "verify the log". */
describe('team administration: invitations, ownership transfer, log verification', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
  });
  afterAll(async () => server.stop());

  async function team() {
    const owner = await signUp(server.url, 'Owner');
    const admin = await signUp(server.url, 'Admin');
    const member = await signUp(server.url, 'Member');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Team' })).body.id as string;
    expect((await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: admin.id, role: 'ADMIN' })).status).toBe(201);
    expect((await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: member.id, role: 'MEMBER' })).status).toBe(201);
    return { owner, admin, member, ws };
  }

  it('lists pending invitations (newest first, expired ones marked), revokes one, and the revoked one cannot be accepted', async () => {
    const { admin, member, ws } = await team();
    const invitee = await signUp(server.url, 'Invitee');
    await confirmAddress(server, invitee.email);
    const first = (await admin.api.post(`/v1/workspaces/${ws}/invite`, { email: invitee.email, role: 'MEMBER' })).body;
    const second = (await admin.api.post(`/v1/workspaces/${ws}/invite`, { email: 'newcomer@example.com', role: 'ADMIN' })).body;
    const list = await admin.api.get(`/v1/workspaces/${ws}/invitations`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      total: 2,
      data: [
        { id: second.invitationId, email: 'newcomer@example.com', role: 'ADMIN', createdAt: expect.any(String), expiresAt: second.expiresAt, status: 'PENDING' },
        { id: first.invitationId, email: invitee.email.toLowerCase(), role: 'MEMBER', createdAt: expect.any(String), expiresAt: first.expiresAt, status: 'PENDING' },
      ],
    });
    // A MEMBER may not see or revoke invitations.
    expect((await member.api.get(`/v1/workspaces/${ws}/invitations`)).body.error.code).toBe('FORBIDDEN');
    expect((await member.api.delete(`/v1/workspaces/${ws}/invitations/${first.invitationId}`)).status).toBe(403);

    expect((await admin.api.delete(`/v1/workspaces/${ws}/invitations/${first.invitationId}`)).status).toBe(204);
    expect((await admin.api.get(`/v1/workspaces/${ws}/invitations`)).body.data.map((i: { id: string }) => i.id)).toEqual([second.invitationId]);
    const accept = await invitee.api.post(`/v1/invitations/${first.invitationId}/accept`);
    expect(accept.status).toBe(404);
    expect(accept.body.error.code).toBe('INVITATION_NOT_FOUND');
    // Revoked twice: nothing pending any more.
    expect((await admin.api.delete(`/v1/workspaces/${ws}/invitations/${first.invitationId}`)).body.error.code).toBe('INVITATION_NOT_FOUND');

    // An accepted invitation leaves the list and cannot be revoked.
    const third = (await admin.api.post(`/v1/workspaces/${ws}/invite`, { email: invitee.email, role: 'MEMBER' })).body;
    expect((await invitee.api.post(`/v1/invitations/${third.invitationId}/accept`)).status).toBe(200);
    expect((await admin.api.get(`/v1/workspaces/${ws}/invitations`)).body.data.map((i: { id: string }) => i.id)).toEqual([second.invitationId]);
    expect((await admin.api.delete(`/v1/workspaces/${ws}/invitations/${third.invitationId}`)).status).toBe(404);

    // The audit trail shows the revocation.
    const audit = await admin.api.get(`/v1/workspaces/${ws}/audit?action=InvitationRevoked`);
    expect(audit.body.data).toEqual([expect.objectContaining({ action: 'InvitationRevoked', subject: { type: 'invitation', id: first.invitationId } })]);
  });

  it("another workspace's invitation id is not found; bad ids are 404, never 500", async () => {
    const a = await team();
    const b = await team();
    const inv = (await b.owner.api.post(`/v1/workspaces/${b.ws}/invite`, { email: 'someone@example.com', role: 'MEMBER' })).body;
    const cross = await a.owner.api.delete(`/v1/workspaces/${a.ws}/invitations/${inv.invitationId}`);
    expect(cross.status).toBe(404);
    expect(cross.body.error.code).toBe('INVITATION_NOT_FOUND');
    expect((await b.owner.api.get(`/v1/workspaces/${b.ws}/invitations`)).body.total).toBe(1);
    // Not a member of b: its list is not found.
    expect((await a.owner.api.get(`/v1/workspaces/${b.ws}/invitations`)).body.error.code).toBe('WORKSPACE_NOT_FOUND');
    for (const bad of ['nope', '__proto__', 'constructor']) {
      const r = await a.owner.api.delete(`/v1/workspaces/${a.ws}/invitations/${bad}`);
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('INVITATION_NOT_FOUND');
    }
  });

  it('transfers ownership in one step (OWNER only): the member becomes OWNER, the owner ADMIN; the audit trail shows it', async () => {
    const { owner, admin, member, ws } = await team();
    const byAdmin = await admin.api.post(`/v1/workspaces/${ws}/transfer-ownership`, { userId: member.id });
    expect(byAdmin.status).toBe(403);
    expect(byAdmin.body.error.code).toBe('FORBIDDEN');
    const toSelf = await owner.api.post(`/v1/workspaces/${ws}/transfer-ownership`, { userId: owner.id });
    expect(toSelf.status).toBe(400);
    expect(toSelf.body.error.code).toBe('VALIDATION_ERROR');
    const stranger = await signUp(server.url, 'Stranger');
    expect((await owner.api.post(`/v1/workspaces/${ws}/transfer-ownership`, { userId: stranger.id })).body.error.code).toBe('MEMBER_NOT_FOUND');
    for (const body of [{}, { userId: 'constructor' }, { userId: member.id, role: 'OWNER' }, { userId: 42 }]) {
      const r = await owner.api.post(`/v1/workspaces/${ws}/transfer-ownership`, body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_ERROR');
    }

    const done = await owner.api.post(`/v1/workspaces/${ws}/transfer-ownership`, { userId: member.id });
    expect(done.status).toBe(200);
    const roles = new Map(done.body.data.map((m: { userId: string; role: string }) => [m.userId, m.role]));
    expect(roles).toEqual(new Map([[owner.id, 'ADMIN'], [admin.id, 'ADMIN'], [member.id, 'OWNER']]));
    expect((await member.api.get(`/v1/workspaces/${ws}`)).body.role).toBe('OWNER');
    // The former owner is an ADMIN now: OWNER-only actions are refused.
    expect((await owner.api.delete(`/v1/workspaces/${ws}`)).status).toBe(403);
    expect((await owner.api.post(`/v1/workspaces/${ws}/transfer-ownership`, { userId: owner.id })).status).toBe(403);
    // The new owner can hand it back.
    expect((await member.api.post(`/v1/workspaces/${ws}/transfer-ownership`, { userId: owner.id })).status).toBe(200);

    const audit = await owner.api.get(`/v1/workspaces/${ws}/audit?action=OwnershipTransferred`);
    expect(audit.body.data).toHaveLength(2);
    expect(audit.body.data[1]).toMatchObject({ actor: { userId: owner.id }, action: 'OwnershipTransferred', summary: { fromUserId: owner.id, toUserId: member.id, previousRole: 'MEMBER' } });
  });

  it("verifies the log for an owner only; reports a break, naming an event only when it is the workspace's own", async () => {
    const a = await team();
    const b = await team();
    await b.owner.api.post(`/v1/workspaces/${b.ws}/tags`, { name: 'secret-b', color: '#112233' });
    await a.owner.api.post(`/v1/workspaces/${a.ws}/tags`, { name: 'mine-a', color: '#112233' });
    expect((await a.admin.api.post(`/v1/workspaces/${a.ws}/audit/verify`)).status).toBe(403);
    expect((await a.member.api.post(`/v1/workspaces/${a.ws}/audit/verify`)).status).toBe(403);
    expect((await a.owner.api.post(`/v1/workspaces/${b.ws}/audit/verify`)).status).toBe(404);
    expect((await a.owner.api.post(`/v1/workspaces/${a.ws}/audit/verify`, { deep: true })).body.error.code).toBe('VALIDATION_ERROR');

    const ok = await a.owner.api.post(`/v1/workspaces/${a.ws}/audit/verify`);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ ok: true, checked: ok.body.headPosition, workspaceEvents: expect.any(Number), headPosition: expect.any(Number), firstBreak: null, startedAt: expect.any(String), finishedAt: expect.any(String) });
    expect(ok.body.workspaceEvents).toBeGreaterThanOrEqual(4); // created, two members added, a tag
    expect(ok.body.workspaceEvents).toBeLessThan(ok.body.checked);

    // Edit b's tag behind the server's back: a's owner learns the log is broken, but not which event of b's it is.
    const db = new Database(path.join(server.dataDir, 'events.db'));
    const rowB = db.prepare("SELECT position, id, data FROM events WHERE type = 'TagCreated' AND data LIKE '%secret-b%'").get() as { position: number; id: string; data: string };
    db.prepare('UPDATE events SET data = ? WHERE position = ?').run(rowB.data.replace('secret-b', 'secret-c'), rowB.position);
    db.close();
    const seenByA = await a.owner.api.post(`/v1/workspaces/${a.ws}/audit/verify`);
    expect(seenByA.body.ok).toBe(false);
    expect(seenByA.body.firstBreak).toEqual({ position: rowB.position, reason: 'hash does not match its content and the previous hash', inThisWorkspace: false });
    expect(seenByA.text).not.toContain(rowB.id);
    const seenByB = await b.owner.api.post(`/v1/workspaces/${b.ws}/audit/verify`);
    expect(seenByB.body.firstBreak).toEqual({ position: rowB.position, reason: expect.any(String), inThisWorkspace: true, id: rowB.id, type: 'TagCreated' });
    expect(seenByB.body.checked).toBe(rowB.position);
  });
});

describe('verify the log: bounded per workspace', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({});
  });
  afterAll(async () => server.stop());

  it('answers 429 after 10 verifications of one workspace within an hour', async () => {
    const owner = await signUp(server.url, 'Owner');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Busy' })).body.id as string;
    const answers = await Promise.all(Array.from({ length: 10 }, () => owner.api.post(`/v1/workspaces/${ws}/audit/verify`)));
    expect(answers.map((r) => r.status)).toEqual(Array(10).fill(200));
    const over = await owner.api.post(`/v1/workspaces/${ws}/audit/verify`);
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe('RATE_LIMITED');
  });

  it("one tenant's 60 verifications over six workspaces leave another tenant's answered (no server-wide budget), and a user is bounded at 30", async () => {
    // Tenant A: two owners, three workspaces each, ten verifications of each.
    for (const name of ['A1', 'A2']) {
      const owner = await signUp(server.url, name);
      for (let w = 0; w < 3; w++) {
        const ws = (await owner.api.post('/v1/workspaces', { name: `${name}-${w}` })).body.id as string;
        const answers = await Promise.all(Array.from({ length: 10 }, () => owner.api.post(`/v1/workspaces/${ws}/audit/verify`)));
        expect(answers.map((r) => r.status)).toEqual(Array(10).fill(200));
      }
      // A fourth workspace of the same owner: the user's own hourly limit (30) is spent.
      const more = (await owner.api.post('/v1/workspaces', { name: `${name}-more` })).body.id as string;
      const over = await owner.api.post(`/v1/workspaces/${more}/audit/verify`);
      expect(over.status).toBe(429);
      expect(over.body.error.code).toBe('RATE_LIMITED');
    }
    // Tenant B is answered (a budget of 60 per server per hour refused it: 429).
    const b = await signUp(server.url, 'B');
    const bws = (await b.api.post('/v1/workspaces', { name: 'B' })).body.id as string;
    const answer = await b.api.post(`/v1/workspaces/${bws}/audit/verify`);
    expect(answer.status).toBe(200);
    expect(answer.body.ok).toBe(true);
  });
});
