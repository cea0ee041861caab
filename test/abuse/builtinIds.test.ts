import { client, signUp, startServer, TestServer } from '../support/server';
import { upload, waitForStatus } from '../http/instructionSets.support';

/**
 * Finding 5: ids that are built-in JavaScript property names (constructor, __proto__, ...)
 * must name nothing: not a member, not a tag, not an invitation; and no write in one
 * workspace may touch another workspace's rows.
 */
const BUILTIN = ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', '__defineGetter__'];

describe('abuse: built-in property names as ids', () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUp>>;
  let ws: string;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    owner = await signUp(server.url, 'Owner');
    ws = (await owner.api.post('/v1/workspaces', { name: 'A' })).body.id;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('a built-in name is not a member: no role change, no removal, the sole OWNER cannot leave the workspace ownerless', async () => {
    for (const id of BUILTIN) {
      const promote = await owner.api.patch(`/v1/workspaces/${ws}/members/${id}`, { role: 'OWNER' });
      expect({ id, status: promote.status, code: promote.body?.error?.code }).toEqual({ id, status: 404, code: 'MEMBER_NOT_FOUND' });
      const remove = await owner.api.delete(`/v1/workspaces/${ws}/members/${id}`);
      expect({ id, status: remove.status, code: remove.body?.error?.code }).toEqual({ id, status: 404, code: 'MEMBER_NOT_FOUND' });
    }
    const demote = await owner.api.patch(`/v1/workspaces/${ws}/members/${owner.id}`, { role: 'MEMBER' });
    expect(demote.status).toBe(400);
    expect(demote.body.error.code).toBe('CANNOT_REMOVE_OWNER');
    const members = (await owner.api.get(`/v1/workspaces/${ws}/members`)).body;
    expect(members.map((m: { userId: string; role: string }) => [m.userId, m.role])).toEqual([[owner.id, 'OWNER']]);
  });

  it('a built-in name is not a user to add, nor a tag to update or delete (404, never 200 or 500)', async () => {
    for (const id of BUILTIN) {
      const add = await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: id, role: 'MEMBER' });
      expect({ id, status: add.status }).toEqual({ id, status: 404 });
      const put = await owner.api.put(`/v1/workspaces/${ws}/tags/${id}`, { name: `phantom ${id}`, color: '#123456' });
      expect({ id, status: put.status, code: put.body?.error?.code }).toEqual({ id, status: 404, code: 'TAG_NOT_FOUND' });
      const del = await owner.api.delete(`/v1/workspaces/${ws}/tags/${id}`);
      expect({ id, status: del.status, code: del.body?.error?.code }).toEqual({ id, status: 404, code: 'TAG_NOT_FOUND' });
      const accept = await owner.api.post(`/v1/invitations/${id}/accept`);
      expect({ id, status: accept.status }).toEqual({ id, status: 404 });
    }
    expect((await owner.api.get(`/v1/workspaces/${ws}/tags`)).body).toEqual({ data: [] });
  });

  it("workspace B's admin cannot overwrite the tag shown on workspace A's documents (cross-tenant write)", async () => {
    const a = await signUp(server.url, 'TenantA');
    const b = await signUp(server.url, 'TenantB');
    const wsA = (await a.api.post('/v1/workspaces', { name: 'Tenant A' })).body.id;
    const wsB = (await b.api.post('/v1/workspaces', { name: 'Tenant B' })).body.id;

    // A's admin names a tag `constructor` (a phantom the decider used to accept) and tags a document with it.
    const phantom = await a.api.put(`/v1/workspaces/${wsA}/tags/constructor`, { name: 'Contracts', color: '#00aa00' });
    expect(phantom.status).toBe(404);
    const real = await a.api.post(`/v1/workspaces/${wsA}/tags`, { name: 'Contracts', color: '#00aa00' });
    expect(real.status).toBe(201);
    const docId = await upload(a.api, wsA, 'a.txt', 'tenant A contract terms');
    await waitForStatus(a.api, wsA, docId);
    const tagged = await a.api.put(`/v1/workspaces/${wsA}/documents/${docId}`, { tags: ['constructor'] });
    expect(tagged.status).toBe(400);
    expect((await a.api.put(`/v1/workspaces/${wsA}/documents/${docId}`, { tags: [real.body.id] })).status).toBe(200);

    // B's admin tries both the built-in name and A's real tag id.
    for (const tagId of ['constructor', real.body.id]) {
      const overwrite = await b.api.put(`/v1/workspaces/${wsB}/tags/${tagId}`, { name: 'PWNED by B', color: '#ff0000' });
      expect({ tagId, status: overwrite.status }).toEqual({ tagId, status: 404 });
      expect((await b.api.delete(`/v1/workspaces/${wsB}/tags/${tagId}`)).status).toBe(404);
    }
    // B cannot borrow A's tag id either: not on a document, not in a search link's scope.
    const docB = await upload(b.api, wsB, 'b.txt', 'tenant B notes');
    await waitForStatus(b.api, wsB, docB);
    expect((await b.api.put(`/v1/workspaces/${wsB}/documents/${docB}`, { tags: [real.body.id] })).status).toBe(400);
    expect((await b.api.post(`/api/workspaces/${wsB}/public-links`, { allowedTags: [real.body.id] })).status).toBe(400);

    const doc = await a.api.get(`/v1/workspaces/${wsA}/documents/${docId}`);
    expect(doc.body.tags).toEqual([{ id: real.body.id, name: 'Contracts', color: '#00aa00' }]);
    expect((await a.api.get(`/v1/workspaces/${wsA}/tags`)).body).toEqual({ data: [real.body] });
    expect((await b.api.get(`/v1/workspaces/${wsB}/tags`)).body).toEqual({ data: [] });
  });

  it('ids in bodies that are not UUIDs are refused at the edge (400 VALIDATION_ERROR), never stored', async () => {
    const docId = await upload(owner.api, ws, 'c.txt', 'some text for the set');
    await waitForStatus(owner.api, ws, docId);
    const set = await owner.api.post(`/api/workspaces/${ws}/instruction-sets`, { name: 'Set' });
    expect(set.status).toBe(201);
    for (const id of BUILTIN) {
      const tags = await owner.api.put(`/v1/workspaces/${ws}/documents/${docId}`, { tags: [id] });
      expect({ id, status: tags.status, code: tags.body?.error?.code }).toEqual({ id, status: 400, code: 'VALIDATION_ERROR' });
      const link = await owner.api.post(`/api/workspaces/${ws}/public-links`, { allowedTags: [id] });
      expect({ id, status: link.status, code: link.body?.error?.code }).toEqual({ id, status: 400, code: 'VALIDATION_ERROR' });
      const add = await owner.api.post(`/api/instruction-sets/${set.body.id}/documents`, { documentId: id });
      expect({ id, status: add.status }).toEqual({ id, status: 404 });
      const removeEntry = await owner.api.delete(`/api/instruction-sets/${set.body.id}/documents/${id}`);
      expect({ id, status: removeEntry.status }).toEqual({ id, status: 404 });
      const reorder = await owner.api.patch(`/api/instruction-sets/${set.body.id}/documents/reorder`, { documentIds: [id] });
      expect({ id, status: reorder.status, code: reorder.body?.error?.code }).toEqual({ id, status: 400, code: 'VALIDATION_ERROR' });
      const search = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'text', filters: { documentIds: [id], tags: [id] } });
      expect({ id, status: search.status }).toEqual({ id, status: 400 });
    }
  });

  it('a multipart field named like a built-in property is ignored, not a crash', async () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const form = new FormData();
      form.append(name, 'x');
      form.append('file', new Blob(['hello from a form'], { type: 'text/plain' }), 'form.txt');
      const r = await owner.api.post(`/v1/workspaces/${ws}/documents`, form);
      expect({ name, status: r.status }).toEqual({ name, status: 201 });
    }
    expect((await client(server.url).get('/healthz')).status).toBe(200);
  });
});
