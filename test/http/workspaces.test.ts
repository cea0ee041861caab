import { confirmAddress, signUp, startServer, TestServer } from '../support/server';

describe('workspaces, members, invitations, tags', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
  });
  afterAll(async () => server.stop());

  it('creates, lists (read-your-writes), gets, updates and deletes a workspace', async () => {
    const owner = await signUp(server.url, 'Owner');
    const created = await owner.api.post('/v1/workspaces', { name: 'Research' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.any(String), name: 'Research', createdAt: expect.any(String) });
    const id = created.body.id;
    const list = await owner.api.get('/v1/workspaces');
    expect(list.body).toEqual([{ id, name: 'Research', role: 'OWNER', createdAt: created.body.createdAt, documentCount: 0, memberCount: 1 }]);
    const got = await owner.api.get(`/v1/workspaces/${id}`);
    expect(got.body).toEqual({
      id,
      name: 'Research',
      role: 'OWNER',
      createdAt: created.body.createdAt,
      documentCount: 0,
      memberCount: 1,
      settings: { allowPublicSearchLinks: true, defaultDocumentPurpose: 'KNOWLEDGE' },
    });
    const put = await owner.api.put(`/v1/workspaces/${id}`, { name: 'Research 2', settings: { allowPublicSearchLinks: false, defaultDocumentPurpose: 'INSTRUCTION' } });
    expect(put.status).toBe(200);
    expect(put.body.name).toBe('Research 2');
    expect(put.body.settings).toEqual({ allowPublicSearchLinks: false, defaultDocumentPurpose: 'INSTRUCTION' });
    const badSettings = await owner.api.put(`/v1/workspaces/${id}`, { settings: { defaultDocumentPurpose: 'OTHER' } });
    expect(badSettings.status).toBe(400);
    expect(badSettings.body.error.code).toBe('VALIDATION_ERROR');
    expect((await owner.api.delete(`/v1/workspaces/${id}`)).status).toBe(204);
    expect((await owner.api.get(`/v1/workspaces/${id}`)).status).toBe(404);
    expect((await owner.api.get('/v1/workspaces')).body).toEqual([]);
  });

  it('validates bodies and answers unknown ids with 404, never 500', async () => {
    const u = await signUp(server.url, 'Val');
    expect((await u.api.post('/v1/workspaces', {})).status).toBe(400);
    expect((await u.api.post('/v1/workspaces', { name: '   ' })).status).toBe(400);
    expect((await u.api.post('/v1/workspaces', { name: 'x'.repeat(201) })).status).toBe(400);
    const malformed = await u.api.raw('POST', '/v1/workspaces', '{"name":', { 'content-type': 'application/json' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('VALIDATION_ERROR');
    const huge = await u.api.post('/v1/workspaces', { name: 'x'.repeat(2_000_000) });
    expect(huge.status).toBe(413);
    const notFound = await u.api.get('/v1/workspaces/not-a-uuid');
    expect(notFound.status).toBe(404);
    expect(notFound.body.error.code).toBe('WORKSPACE_NOT_FOUND');
    const viaSelfHostedBase = await u.api.get('/api/v1/workspaces');
    expect(viaSelfHostedBase.status).toBe(200);
    const noRoute = await u.api.get('/v1/nothing-here');
    expect(noRoute.status).toBe(404);
    expect(noRoute.body.error.code).toBe('NOT_FOUND');
    expect(noRoute.text).not.toMatch(/at \w+ \(/);
  });

  it('members: add, list, role change, remove, and the permission matrix', async () => {
    const owner = await signUp(server.url, 'O');
    const admin = await signUp(server.url, 'A');
    const member = await signUp(server.url, 'M');
    const outsider = await signUp(server.url, 'X');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Team' })).body.id;
    expect((await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: admin.id, role: 'ADMIN' })).status).toBe(201);
    const added = await admin.api.post(`/v1/workspaces/${ws}/members`, { userId: member.id, role: 'MEMBER' });
    expect(added.status).toBe(201);
    expect(added.body).toEqual({ userId: member.id, email: member.email, name: 'M', role: 'MEMBER', joinedAt: expect.any(String) });
    const dup = await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: member.id, role: 'MEMBER' });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('MEMBER_EXISTS');
    const list = await member.api.get(`/v1/workspaces/${ws}/members`);
    expect(list.status).toBe(200);
    expect(list.body.map((m: { userId: string; role: string }) => [m.userId, m.role])).toEqual([
      [owner.id, 'OWNER'],
      [admin.id, 'ADMIN'],
      [member.id, 'MEMBER'],
    ]);
    expect(Object.keys(list.body[0]).sort()).toEqual(['email', 'joinedAt', 'name', 'role', 'userId']);
    expect((await outsider.api.get(`/v1/workspaces/${ws}/members`)).body.error.code).toBe('WORKSPACE_NOT_FOUND');
    expect((await member.api.post(`/v1/workspaces/${ws}/members`, { userId: outsider.id, role: 'MEMBER' })).status).toBe(403);
    expect((await member.api.put(`/v1/workspaces/${ws}`, { name: 'Nope' })).status).toBe(403);
    expect((await admin.api.delete(`/v1/workspaces/${ws}`)).status).toBe(403);
    expect((await admin.api.patch(`/v1/workspaces/${ws}/members/${member.id}`, { role: 'OWNER' })).status).toBe(403);
    const promoted = await owner.api.patch(`/v1/workspaces/${ws}/members/${member.id}`, { role: 'ADMIN' });
    expect(promoted.status).toBe(200);
    expect(promoted.body.role).toBe('ADMIN');
    const selfRemove = await owner.api.delete(`/v1/workspaces/${ws}/members/${owner.id}`);
    expect(selfRemove.status).toBe(400);
    expect(selfRemove.body.error.code).toBe('CANNOT_REMOVE_OWNER');
    expect((await owner.api.delete(`/v1/workspaces/${ws}/members/${member.id}`)).status).toBe(204);
    expect((await member.api.get(`/v1/workspaces/${ws}`)).status).toBe(404);
    const unknownUser = await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: 'nobody', role: 'MEMBER' });
    expect(unknownUser.status).toBe(404);
    const badRole = await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: outsider.id, role: 'KING' });
    expect(badRole.status).toBe(400);
  });

  it('invitations: invite, accept by the invited email only', async () => {
    const owner = await signUp(server.url, 'Inv');
    const invitee = await signUp(server.url, 'Guest');
    await confirmAddress(server, invitee.email);
    const other = await signUp(server.url, 'Other');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Invites' })).body.id;
    const inv = await owner.api.post(`/v1/workspaces/${ws}/invite`, { email: invitee.email.toUpperCase(), role: 'MEMBER' });
    expect(inv.status).toBe(201);
    expect(inv.body).toEqual({ invitationId: expect.any(String), email: invitee.email, role: 'MEMBER', expiresAt: expect.any(String) });
    const days = (Date.parse(inv.body.expiresAt) - Date.now()) / 86400000;
    expect(days).toBeGreaterThan(6.9);
    expect(days).toBeLessThanOrEqual(7);
    expect((await other.api.post(`/v1/invitations/${inv.body.invitationId}/accept`)).status).toBe(404);
    const accepted = await invitee.api.post(`/v1/invitations/${inv.body.invitationId}/accept`);
    expect(accepted.status).toBe(200);
    expect(accepted.body.role).toBe('MEMBER');
    expect((await invitee.api.get('/v1/workspaces')).body.map((w: { id: string }) => w.id)).toEqual([ws]);
    expect((await invitee.api.post(`/v1/invitations/${inv.body.invitationId}/accept`)).status).toBe(404);
    const again = await owner.api.post(`/v1/workspaces/${ws}/invite`, { email: invitee.email, role: 'ADMIN' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('MEMBER_EXISTS');
  });

  it('never answers 500 to a broken %-escape in a path, and never echoes a token', async () => {
    const u = await signUp(server.url, 'Esc');
    for (const p of ['/v1/workspaces/%E0%A4%A', '/api/instruction-sets/%E0%A4%A', '/public/%E0%A4%A/search?q=x', '/s/%E0%A4%A']) {
      const r = await u.api.get(p);
      expect(r.status).toBe(400);
    }
    const token = 'ab'.repeat(32);
    const mcp = await u.api.raw('POST', `/mcp/${token}%E0%A4%A`, { jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(mcp.status).toBe(400);
    expect(mcp.body.error.code).toBe(-32600);
    const aliased = await u.api.get(`/api/v1/public/${token}/search?q=secret-words`);
    expect(aliased.status).toBe(404);
    expect(aliased.body.error).toBe('NOT_FOUND');
    expect(aliased.text).not.toContain(token);
    await new Promise((r) => setTimeout(r, 200));
    expect(server.output()).not.toContain(token);
    expect(server.output()).not.toContain('secret-words');
    expect(server.output()).not.toMatch(/URIError/);
  });

  it('tags: create, list, update, delete, validate colour, admins only', async () => {
    const owner = await signUp(server.url, 'Tagger');
    const member = await signUp(server.url, 'TagMember');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Tags' })).body.id;
    await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: member.id, role: 'MEMBER' });
    const t = await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'Legal', color: '#FF0000' });
    expect(t.status).toBe(201);
    expect(t.body).toEqual({ id: expect.any(String), name: 'Legal', color: '#ff0000' });
    expect((await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'legal', color: '#00ff00' })).status).toBe(409);
    expect((await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'Bad', color: 'red' })).status).toBe(400);
    expect((await member.api.post(`/v1/workspaces/${ws}/tags`, { name: 'M', color: '#000000' })).status).toBe(403);
    expect((await member.api.get(`/v1/workspaces/${ws}/tags`)).body).toEqual({ data: [t.body] });
    const upd = await owner.api.put(`/v1/workspaces/${ws}/tags/${t.body.id}`, { name: 'Compliance' });
    expect(upd.status).toBe(200);
    expect(upd.body).toEqual({ id: t.body.id, name: 'Compliance', color: '#ff0000' });
    expect((await owner.api.delete(`/v1/workspaces/${ws}/tags/${t.body.id}`)).status).toBe(204);
    expect((await owner.api.get(`/v1/workspaces/${ws}/tags`)).body).toEqual({ data: [] });
    expect((await owner.api.delete(`/v1/workspaces/${ws}/tags/${t.body.id}`)).status).toBe(404);
  });
});
