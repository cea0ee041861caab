import jwt from 'jsonwebtoken';
import { client, startServer, TestServer } from '../support/server';
import { eventually, prose, team, upload, verifiedDoc, waitForStatus } from './instructionSets.support';

const APP = 'https://sets.example.test';
const JWT_SECRET = 'test-secret-test-secret-test-secret';

/** Every /api error carries code, message, details (object) and a non-empty suggestion. */
function expectApiError(r: { status: number; body: any }, status: number, code: string) {
  expect({ status: r.status, code: r.body?.error?.code }).toEqual({ status, code });
  expect(typeof r.body.error.message).toBe('string');
  expect(typeof r.body.error.details).toBe('object');
  expect(r.body.error.suggestion).toEqual(expect.any(String));
  expect(r.body.error.suggestion.length).toBeGreaterThan(10);
}

describe('instruction sets (management)', () => {
  let server: TestServer;
  let t: Awaited<ReturnType<typeof team>>;
  let small: { id: string; sizeBytes: number; title: string }[];
  let big60: { id: string; sizeBytes: number };
  let big30a: { id: string; sizeBytes: number };
  let big30b: { id: string; sizeBytes: number };
  let failed: string;

  const sets = () => t.admin.api;
  const createSet = async (body: Record<string, unknown> = { name: 'Set' }) => {
    const r = await sets().post(`/api/workspaces/${t.workspaceId}/instruction-sets`, body);
    expect(r.status).toBe(201);
    return r.body as { id: string; updatedAt: string };
  };

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_APP_URL: APP });
    t = await team(server.url);
    const api = t.owner.api;
    const uploads = await Promise.all(
      Array.from({ length: 21 }, (_, i) => upload(api, t.workspaceId, `note-${String(i).padStart(2, '0')}.txt`, `Note ${i}\n${prose(`small-${i}`, 200)}`)),
    );
    small = [];
    for (const id of uploads) {
      const d = await waitForStatus(api, t.workspaceId, id);
      small.push({ id, sizeBytes: d.sizeBytes, title: d.title });
    }
    big60 = await verifiedDoc(api, t.workspaceId, 'big-60k.md', `# Sixty\n\n${prose('big-60', 60 * 1024)}`);
    big30a = await verifiedDoc(api, t.workspaceId, 'big-30k-a.txt', prose('big-30-a', 30 * 1024));
    big30b = await verifiedDoc(api, t.workspaceId, 'big-30k-b.txt', prose('big-30-b', 30 * 1024));
    failed = await upload(api, t.workspaceId, 'empty.txt', '');
    await waitForStatus(api, t.workspaceId, failed, 'FAILED');
  }, 600_000);
  afterAll(async () => server?.stop());

  it('the big fixtures measure what the limits need', () => {
    expect(big60.sizeBytes + big30a.sizeBytes).toBeLessThanOrEqual(102400);
    expect(big60.sizeBytes + big30a.sizeBytes + big30b.sizeBytes).toBeGreaterThan(102400);
    expect(big30a.sizeBytes + big30b.sizeBytes).toBeLessThanOrEqual(102400);
  });

  it('requires authentication: 401 UNAUTHORIZED, and TOKEN_EXPIRED for an expired token', async () => {
    const anon = client(server.url);
    expectApiError(await anon.get(`/api/workspaces/${t.workspaceId}/instruction-sets`), 401, 'UNAUTHORIZED');
    expectApiError(await anon.post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: 'x' }), 401, 'UNAUTHORIZED');
    const set = await createSet();
    for (const [method, path] of [
      ['GET', `/api/instruction-sets/${set.id}`],
      ['PATCH', `/api/instruction-sets/${set.id}`],
      ['DELETE', `/api/instruction-sets/${set.id}`],
      ['POST', `/api/instruction-sets/${set.id}/documents`],
      ['DELETE', `/api/instruction-sets/${set.id}/documents/${small[0].id}`],
      ['PATCH', `/api/instruction-sets/${set.id}/documents/reorder`],
    ]) {
      expectApiError(await anon.raw(method, path, method === 'GET' || method === 'DELETE' ? undefined : {}), 401, 'UNAUTHORIZED');
    }
    const expired = jwt.sign({ sub: t.admin.id, sid: 'whatever', typ: 'access' }, JWT_SECRET, { algorithm: 'HS256', expiresIn: -60 });
    expectApiError(await client(server.url, expired).get(`/api/instruction-sets/${set.id}`), 401, 'TOKEN_EXPIRED');
    expectApiError(await client(server.url, 'garbage').get(`/api/instruction-sets/${set.id}`), 401, 'UNAUTHORIZED');
  });

  it('creates a set (private by default), validates the body, lists it (read-your-writes) without documents', async () => {
    const r = await sets().post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: '  Support persona  ', description: 'How to answer' });
    expect(r.status).toBe(201);
    expect(r.body).toEqual(
      expect.objectContaining({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name: 'Support persona',
        description: 'How to answer',
        isPublic: false,
        publicUrl: null,
        documentCount: 0,
        totalSizeBytes: 0,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      }),
    );
    expect(r.body.documents).toBeUndefined();
    const pub = await sets().post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: 'Shared', isPublic: true });
    expect(pub.body.publicUrl).toBe(`${APP}/s/${pub.body.id}`);
    expect((await sets().post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: 'n'.repeat(200), description: 'd'.repeat(500) })).status).toBe(201);

    for (const bad of [{}, { name: '' }, { name: '   ' }, { name: 'n'.repeat(201) }, { name: 'ok', description: 'd'.repeat(501) }, { name: 'ok', isPublic: 'yes' }, { name: 42 }]) {
      expectApiError(await sets().post(`/api/workspaces/${t.workspaceId}/instruction-sets`, bad), 400, 'VALIDATION_ERROR');
    }
    const malformed = await sets().raw('POST', `/api/workspaces/${t.workspaceId}/instruction-sets`, '{"name":', { 'content-type': 'application/json' });
    expect(malformed.status).toBe(400);

    for (const who of [t.member, t.owner]) {
      const list = await who.api.get(`/api/workspaces/${t.workspaceId}/instruction-sets`);
      expect(list.status).toBe(200);
      const mine = list.body.data.find((s: any) => s.id === r.body.id);
      expect(mine).toEqual(r.body);
      expect(list.body.data.every((s: any) => s.documents === undefined)).toBe(true);
    }
  });

  it('only ADMIN or OWNER change sets; members read; non-members get 404', async () => {
    expectApiError(await t.member.api.post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: 'x' }), 403, 'FORBIDDEN');
    expectApiError(await t.stranger.api.post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: 'x' }), 404, 'WORKSPACE_NOT_FOUND');
    expectApiError(await t.stranger.api.get(`/api/workspaces/${t.workspaceId}/instruction-sets`), 404, 'WORKSPACE_NOT_FOUND');
    expectApiError(await t.admin.api.get(`/api/workspaces/not-a-uuid/instruction-sets`), 404, 'WORKSPACE_NOT_FOUND');

    const byOwner = await t.owner.api.post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: 'Owner set' });
    expect(byOwner.status).toBe(201);
    const id = byOwner.body.id;
    expect((await t.member.api.get(`/api/instruction-sets/${id}`)).status).toBe(200);
    expectApiError(await t.member.api.patch(`/api/instruction-sets/${id}`, { name: 'x' }), 403, 'FORBIDDEN');
    expectApiError(await t.member.api.delete(`/api/instruction-sets/${id}`), 403, 'FORBIDDEN');
    expectApiError(await t.member.api.post(`/api/instruction-sets/${id}/documents`, { documentId: small[0].id }), 403, 'FORBIDDEN');
    expectApiError(await t.member.api.patch(`/api/instruction-sets/${id}/documents/reorder`, { documentIds: [] }), 403, 'FORBIDDEN');

    for (const [method, path, body] of [
      ['GET', `/api/instruction-sets/${id}`, undefined],
      ['PATCH', `/api/instruction-sets/${id}`, { name: 'x' }],
      ['DELETE', `/api/instruction-sets/${id}`, undefined],
      ['POST', `/api/instruction-sets/${id}/documents`, { documentId: small[0].id }],
      ['DELETE', `/api/instruction-sets/${id}/documents/${small[0].id}`, undefined],
      ['PATCH', `/api/instruction-sets/${id}/documents/reorder`, { documentIds: [] }],
    ] as const) {
      expectApiError(await t.stranger.api.raw(method, path, body), 404, 'NOT_FOUND');
    }
    expectApiError(await t.admin.api.get('/api/instruction-sets/00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND');
    expectApiError(await t.admin.api.get('/api/instruction-sets/nope'), 404, 'NOT_FOUND');
    // The stranger's own workspace does not open the set either.
    expect((await t.admin.api.get(`/api/instruction-sets/${id}`)).status).toBe(200);
  });

  it('gets a set with ordered documents, totals and publicUrl; PATCH toggles public access', async () => {
    const set = await createSet({ name: 'Ordered' });
    for (const d of small.slice(0, 3)) {
      const r = await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: d.id });
      expect(r.status).toBe(201);
    }
    const got = await t.member.api.get(`/api/instruction-sets/${set.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(
      expect.objectContaining({ id: set.id, name: 'Ordered', isPublic: false, publicUrl: null, documentCount: 3, totalSizeBytes: small[0].sizeBytes + small[1].sizeBytes + small[2].sizeBytes }),
    );
    expect(got.body.documents).toEqual(small.slice(0, 3).map((d, order) => ({ documentId: d.id, title: d.title, sizeBytes: d.sizeBytes, purpose: expect.stringMatching(/^(KNOWLEDGE|INSTRUCTION)$/), order })));

    const pub = await sets().patch(`/api/instruction-sets/${set.id}`, { isPublic: true, description: 'Now shared' });
    expect(pub.status).toBe(200);
    expect(pub.body).toEqual({ id: set.id, name: 'Ordered', description: 'Now shared', isPublic: true, publicUrl: `${APP}/s/${set.id}`, updatedAt: expect.any(String) });
    expect(Date.parse(pub.body.updatedAt)).toBeGreaterThan(Date.parse(got.body.updatedAt));
    expect((await sets().get(`/api/instruction-sets/${set.id}`)).body.publicUrl).toBe(`${APP}/s/${set.id}`);
    const priv = await sets().patch(`/api/instruction-sets/${set.id}`, { isPublic: false });
    expect(priv.body.publicUrl).toBeNull();
    expectApiError(await sets().patch(`/api/instruction-sets/${set.id}`, { name: '' }), 400, 'VALIDATION_ERROR');
    expectApiError(await sets().patch(`/api/instruction-sets/${set.id}`, { expectedUpdatedAt: 'yesterday' }), 400, 'VALIDATION_ERROR');
  });

  it('optimistic locking: a stale expectedUpdatedAt is 409 CONFLICT with details.lastModifiedAt; of two racing edits one wins', async () => {
    const set = await createSet({ name: 'Locked' });
    const first = await sets().patch(`/api/instruction-sets/${set.id}`, { name: 'Locked 1', expectedUpdatedAt: set.updatedAt });
    expect(first.status).toBe(200);
    const stale = await t.owner.api.patch(`/api/instruction-sets/${set.id}`, { name: 'Locked 2', expectedUpdatedAt: set.updatedAt });
    expectApiError(stale, 409, 'CONFLICT');
    expect(stale.body.error.details.lastModifiedAt).toBe(first.body.updatedAt);
    expect((await sets().get(`/api/instruction-sets/${set.id}`)).body.name).toBe('Locked 1');

    // A document change modifies the set too.
    await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: small[0].id });
    const afterAdd = await sets().patch(`/api/instruction-sets/${set.id}`, { name: 'Locked 3', expectedUpdatedAt: first.body.updatedAt });
    expectApiError(afterAdd, 409, 'CONFLICT');

    const current = (await sets().get(`/api/instruction-sets/${set.id}`)).body.updatedAt;
    const racing = await Promise.all(
      ['A', 'B', 'C'].map((n) => (n === 'B' ? t.owner.api : sets()).patch(`/api/instruction-sets/${set.id}`, { name: `Racer ${n}`, expectedUpdatedAt: current })),
    );
    expect(racing.map((r) => r.status).sort()).toEqual([200, 409, 409]);
    const winner = racing.find((r) => r.status === 200)!;
    for (const loser of racing.filter((r) => r.status === 409)) expect(loser.body.error.details.lastModifiedAt).toBe(winner.body.updatedAt);
    expect((await sets().get(`/api/instruction-sets/${set.id}`)).body.name).toBe(winner.body.name);
  });

  it('adds documents: NOT_FOUND, DOCUMENT_NOT_VERIFIED, DOCUMENT_ALREADY_IN_SET', async () => {
    const set = await createSet({ name: 'Adds' });
    const added = await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: small[4].id });
    expect(added.status).toBe(201);
    expect(added.body).toEqual({ documentId: small[4].id, title: small[4].title, sizeBytes: small[4].sizeBytes, purpose: expect.any(String), order: 0 });
    const second = await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: small[5].id });
    expect(second.body.order).toBe(1);

    expectApiError(await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: small[4].id }), 409, 'DOCUMENT_ALREADY_IN_SET');
    expectApiError(await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: failed }), 400, 'DOCUMENT_NOT_VERIFIED');
    expectApiError(await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: '00000000-0000-4000-8000-000000000000' }), 404, 'NOT_FOUND');
    expectApiError(await sets().post('/api/instruction-sets/00000000-0000-4000-8000-000000000000/documents', { documentId: small[6].id }), 404, 'NOT_FOUND');
    expectApiError(await sets().post(`/api/instruction-sets/${set.id}/documents`, {}), 400, 'VALIDATION_ERROR');

    // A VERIFIED document of another workspace is not found from this one.
    const other = await t.stranger.api.post('/v1/workspaces', { name: 'Elsewhere' });
    const foreign = await verifiedDoc(t.stranger.api, other.body.id, 'foreign.txt', prose('foreign', 300));
    expectApiError(await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: foreign.id }), 404, 'NOT_FOUND');

    const got = (await sets().get(`/api/instruction-sets/${set.id}`)).body;
    expect(got.documents.map((d: any) => d.documentId)).toEqual([small[4].id, small[5].id]);
    expect(got.totalSizeBytes).toBe(small[4].sizeBytes + small[5].sizeBytes);
  });

  it('SIZE_LIMIT_EXCEEDED past 102400 bytes, with currentSize, documentSize and maxSize', async () => {
    const set = await createSet({ name: 'Big' });
    expect((await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: big60.id })).status).toBe(201);
    expect((await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: big30a.id })).status).toBe(201);
    const over = await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: big30b.id });
    expectApiError(over, 400, 'SIZE_LIMIT_EXCEEDED');
    expect(over.body.error.details).toEqual({ currentSize: big60.sizeBytes + big30a.sizeBytes, documentSize: big30b.sizeBytes, maxSize: 102400 });
    const got = (await sets().get(`/api/instruction-sets/${set.id}`)).body;
    expect(got.documentCount).toBe(2);
    expect(got.totalSizeBytes).toBe(big60.sizeBytes + big30a.sizeBytes);
    // Removing the big one makes room.
    expect((await sets().delete(`/api/instruction-sets/${set.id}/documents/${big60.id}`)).status).toBe(204);
    expect((await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: big30b.id })).status).toBe(201);
  });

  it('DOCUMENT_LIMIT_EXCEEDED at 20 documents', async () => {
    const set = await createSet({ name: 'Twenty' });
    for (const d of small.slice(0, 20)) expect((await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: d.id })).status).toBe(201);
    expectApiError(await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: small[20].id }), 400, 'DOCUMENT_LIMIT_EXCEEDED');
    expect((await sets().get(`/api/instruction-sets/${set.id}`)).body.documentCount).toBe(20);
  });

  it('limits hold under concurrency: 21 simultaneous adds never pass 20 documents', async () => {
    const set = await createSet({ name: 'Race count' });
    const results = await Promise.all(small.map((d, i) => (i % 2 ? t.owner.api : sets()).post(`/api/instruction-sets/${set.id}/documents`, { documentId: d.id })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(20);
    const refused = results.filter((r) => r.status !== 201);
    expect(refused).toHaveLength(1);
    expectApiError(refused[0], 400, 'DOCUMENT_LIMIT_EXCEEDED');
    const got = (await sets().get(`/api/instruction-sets/${set.id}`)).body;
    expect(got.documentCount).toBe(20);
    expect(got.documents.map((d: any) => d.order)).toEqual([...Array(20).keys()]);
    expect(new Set(results.filter((r) => r.status === 201).map((r) => r.body.order)).size).toBe(20);
  });

  it('limits hold under concurrency: simultaneous big adds never pass 102400 bytes', async () => {
    const set = await createSet({ name: 'Race size' });
    const results = await Promise.all([big60, big30a, big30b].map((d) => sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: d.id })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(2);
    const refused = results.filter((r) => r.status !== 201);
    expect(refused).toHaveLength(1);
    expectApiError(refused[0], 400, 'SIZE_LIMIT_EXCEEDED');
    const got = (await sets().get(`/api/instruction-sets/${set.id}`)).body;
    expect(got.totalSizeBytes).toBeLessThanOrEqual(102400);
    expect(got.totalSizeBytes).toBe(got.documents.reduce((n: number, d: any) => n + d.sizeBytes, 0));
    expect(refused[0].body.error.details.currentSize + refused[0].body.error.details.documentSize).toBeGreaterThan(102400);
  });

  it('removes a document from a set (204; the document itself stays)', async () => {
    const set = await createSet({ name: 'Removal' });
    await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: small[7].id });
    await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: small[8].id });
    const del = await sets().delete(`/api/instruction-sets/${set.id}/documents/${small[7].id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    const got = (await sets().get(`/api/instruction-sets/${set.id}`)).body;
    expect(got.documents).toEqual([expect.objectContaining({ documentId: small[8].id, order: 0 })]);
    expect(got.totalSizeBytes).toBe(small[8].sizeBytes);
    expectApiError(await sets().delete(`/api/instruction-sets/${set.id}/documents/${small[7].id}`), 404, 'NOT_FOUND');
    expect((await sets().get(`/v1/workspaces/${t.workspaceId}/documents/${small[7].id}`)).status).toBe(200);
  });

  it('reorders to a permutation (order 0..n-1); anything else is 400 VALIDATION_ERROR', async () => {
    const set = await createSet({ name: 'Reorder' });
    const ids = small.slice(9, 13).map((d) => d.id);
    for (const id of ids) await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: id });
    const wanted = [ids[2], ids[0], ids[3], ids[1]];
    const r = await sets().patch(`/api/instruction-sets/${set.id}/documents/reorder`, { documentIds: wanted });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ documents: wanted.map((documentId, order) => ({ documentId, order })) });
    const got = (await t.member.api.get(`/api/instruction-sets/${set.id}`)).body;
    expect(got.documents.map((d: any) => [d.documentId, d.order])).toEqual(wanted.map((id, i) => [id, i]));

    for (const documentIds of [wanted.slice(0, 3), [...wanted, small[0].id], [wanted[0], wanted[0], wanted[1], wanted[2]], [wanted[0], wanted[1], wanted[2], 'x'], 'nope', [1, 2, 3, 4]]) {
      expectApiError(await sets().patch(`/api/instruction-sets/${set.id}/documents/reorder`, { documentIds }), 400, 'VALIDATION_ERROR');
    }
    expectApiError(await sets().patch(`/api/instruction-sets/${set.id}/documents/reorder`, {}), 400, 'VALIDATION_ERROR');
    expect((await sets().get(`/api/instruction-sets/${set.id}`)).body.documents.map((d: any) => d.documentId)).toEqual(wanted);
  });

  it('deletes a set (204) without deleting its documents', async () => {
    const set = await createSet({ name: 'Doomed' });
    await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: small[13].id });
    const del = await sets().delete(`/api/instruction-sets/${set.id}`);
    expect(del.status).toBe(204);
    expectApiError(await sets().get(`/api/instruction-sets/${set.id}`), 404, 'NOT_FOUND');
    expectApiError(await sets().delete(`/api/instruction-sets/${set.id}`), 404, 'NOT_FOUND');
    const list = await sets().get(`/api/workspaces/${t.workspaceId}/instruction-sets`);
    expect(list.body.data.some((s: any) => s.id === set.id)).toBe(false);
    const doc = await sets().get(`/v1/workspaces/${t.workspaceId}/documents/${small[13].id}`);
    expect(doc.status).toBe(200);
    expect(doc.body.processingStatus).toBe('VERIFIED');
  });

  it('deleting a document removes it from every set, its size leaves the totals, and the sets\' limits learn it', async () => {
    const victim = await verifiedDoc(t.owner.api, t.workspaceId, 'victim.md', `# Victim\n\n${prose('victim', 500)}`);
    const full = await createSet({ name: 'Full' });
    const other = await createSet({ name: 'Other' });
    for (const d of [...small.slice(0, 19), victim]) await sets().post(`/api/instruction-sets/${full.id}/documents`, { documentId: d.id });
    await sets().post(`/api/instruction-sets/${other.id}/documents`, { documentId: victim.id });
    await sets().post(`/api/instruction-sets/${other.id}/documents`, { documentId: small[0].id });
    expectApiError(await sets().post(`/api/instruction-sets/${full.id}/documents`, { documentId: small[20].id }), 400, 'DOCUMENT_LIMIT_EXCEEDED');
    const before = (await sets().get(`/api/instruction-sets/${full.id}`)).body;

    expect((await t.owner.api.delete(`/v1/workspaces/${t.workspaceId}/documents/${victim.id}`)).status).toBe(204);

    // The deleter reads its write: gone from both sets, totals without it.
    const fullNow = (await sets().get(`/api/instruction-sets/${full.id}`)).body;
    expect(fullNow.documentCount).toBe(19);
    expect(fullNow.totalSizeBytes).toBe(before.totalSizeBytes - victim.sizeBytes);
    expect(fullNow.documents.some((d: any) => d.documentId === victim.id)).toBe(false);
    expect(fullNow.documents.map((d: any) => d.order)).toEqual([...Array(19).keys()]);
    const otherNow = (await sets().get(`/api/instruction-sets/${other.id}`)).body;
    expect(otherNow.documents.map((d: any) => d.documentId)).toEqual([small[0].id]);
    expect(otherNow.totalSizeBytes).toBe(small[0].sizeBytes);

    // The set's stream learns it too (SetDocumentRemoved from the cleanup service bumps updatedAt) ...
    await eventually(async () => (await sets().get(`/api/instruction-sets/${full.id}`)).body.updatedAt !== before.updatedAt, 'cleanup appended SetDocumentRemoved');
    // ... so a 20th document fits again, and a 21st still does not.
    expect((await sets().post(`/api/instruction-sets/${full.id}/documents`, { documentId: small[20].id })).status).toBe(201);
    expectApiError(await sets().post(`/api/instruction-sets/${full.id}/documents`, { documentId: small[19].id }), 400, 'DOCUMENT_LIMIT_EXCEEDED');
    // Reorder agrees with the read model (a permutation of the 20 it shows).
    const ids = (await sets().get(`/api/instruction-sets/${full.id}`)).body.documents.map((d: any) => d.documentId);
    expect((await sets().patch(`/api/instruction-sets/${full.id}/documents/reorder`, { documentIds: [...ids].reverse() })).status).toBe(200);
    expectApiError(await sets().post(`/api/instruction-sets/${other.id}/documents`, { documentId: victim.id }), 404, 'NOT_FOUND');
  });

  /** ASCII text of exactly `bytes` bytes that normalisation keeps as it is (no trailing whitespace). */
  const exactText = (marker: string, bytes: number) => `${prose(marker, bytes + 100).slice(0, bytes - 1)}.`;
  const setOf = async (id: string) => (await sets().get(`/api/instruction-sets/${id}`)).body;
  const rawOf = async (id: string) => {
    const r = await client(server.url).get(`/s/${id}/raw`);
    expect(r.status).toBe(200);
    return r.text as string;
  };

  it('auto-save that would push a set holding the document past 102400 bytes: 400 SIZE_LIMIT_EXCEEDED, nothing changes', async () => {
    const a = await verifiedDoc(t.owner.api, t.workspaceId, 'grow-a.txt', exactText('grow-a', 60 * 1024));
    const bText = exactText('grow-b', 102400 - a.sizeBytes);
    const b = await verifiedDoc(t.owner.api, t.workspaceId, 'grow-b.txt', bText);
    expect(a.sizeBytes + b.sizeBytes).toBe(102400);
    const set = await createSet({ name: 'Exactly full', isPublic: true });
    for (const d of [a, b]) expect((await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: d.id })).status).toBe(201);
    const before = await setOf(set.id);
    expect(before.totalSizeBytes).toBe(102400);
    const docBefore = (await t.owner.api.get(`/v1/workspaces/${t.workspaceId}/documents/${b.id}`)).body;
    const rawBefore = await rawOf(set.id);

    for (const content of ['z'.repeat(500_000), `${bText}y`]) {
      const r = await t.owner.api.patch(`/v1/workspaces/${t.workspaceId}/documents/${b.id}`, { content });
      expect({ status: r.status, code: r.body?.error?.code }).toEqual({ status: 400, code: 'SIZE_LIMIT_EXCEEDED' });
      expect(typeof r.body.error.message).toBe('string');
      expect(r.body.error.details).toEqual({ currentSize: a.sizeBytes, documentSize: Buffer.byteLength(content, 'utf8'), maxSize: 102400, instructionSetId: set.id });
    }
    // A MEMBER of the workspace is refused the same way (the check does not depend on the role).
    const m = await t.member.api.patch(`/v1/workspaces/${t.workspaceId}/documents/${a.id}`, { content: 'x'.repeat(70 * 1024) });
    expect({ status: m.status, code: m.body?.error?.code }).toEqual({ status: 400, code: 'SIZE_LIMIT_EXCEEDED' });

    const docAfter = (await t.owner.api.get(`/v1/workspaces/${t.workspaceId}/documents/${b.id}`)).body;
    expect(docAfter).toEqual(docBefore);
    expect(docAfter.processingStatus).toBe('VERIFIED');
    expect(await setOf(set.id)).toEqual(before);
    expect(await rawOf(set.id)).toBe(rawBefore);
    expect(Buffer.byteLength(rawBefore, 'utf8')).toBe(102400 + '\n---\n'.length);

    // An edit that does not grow the document is allowed in a full set.
    const shrink = await t.owner.api.patch(`/v1/workspaces/${t.workspaceId}/documents/${b.id}`, { content: bText.slice(0, 1000) });
    expect(shrink.status).toBe(200);
    const shrunk = await waitForStatus(t.owner.api, t.workspaceId, b.id);
    expect(shrunk.sizeBytes).toBe(1000);
    await eventually(async () => (await setOf(set.id)).totalSizeBytes === a.sizeBytes + 1000, 'the set learnt the smaller size');
  });

  it('auto-saves still being processed count against the limit: a second auto-save or an add cannot slip past it', async () => {
    const a = await verifiedDoc(t.owner.api, t.workspaceId, 'flight-a.txt', exactText('flight-a', 50_000));
    const b = await verifiedDoc(t.owner.api, t.workspaceId, 'flight-b.txt', exactText('flight-b', 50_000));
    const c = await verifiedDoc(t.owner.api, t.workspaceId, 'flight-c.txt', exactText('flight-c', 1500));
    const set = await createSet({ name: 'In flight' });
    for (const d of [a, b]) expect((await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: d.id })).status).toBe(201);
    // a grows to 51,500 bytes; accepted, still PROCESSING when the next requests arrive.
    const grow = await t.owner.api.patch(`/v1/workspaces/${t.workspaceId}/documents/${a.id}`, { content: 'a'.repeat(51_500) });
    expect(grow.status).toBe(200);
    const second = await t.owner.api.patch(`/v1/workspaces/${t.workspaceId}/documents/${b.id}`, { content: 'b'.repeat(51_500) });
    expect({ status: second.status, code: second.body?.error?.code }).toEqual({ status: 400, code: 'SIZE_LIMIT_EXCEEDED' });
    expect(second.body.error.details.currentSize).toBe(51_500);
    const add = await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: c.id });
    expect({ status: add.status, code: add.body?.error?.code }).toEqual({ status: 400, code: 'SIZE_LIMIT_EXCEEDED' });
    expect(add.body.error.details).toEqual({ currentSize: 101_500, documentSize: 1500, maxSize: 102400 });
    await waitForStatus(t.owner.api, t.workspaceId, a.id);
    await eventually(async () => (await setOf(set.id)).totalSizeBytes === 101_500, 'the set learnt the new size');
    expect((await setOf(set.id)).totalSizeBytes).toBeLessThanOrEqual(102400);
  });

  it('auto-save within the limit: after VERIFIED the entry and the totals follow the document, and the limits use the new size', async () => {
    const c = await verifiedDoc(t.owner.api, t.workspaceId, 'resize-c.txt', exactText('resize-c', 20 * 1024));
    const d = await verifiedDoc(t.owner.api, t.workspaceId, 'resize-d.md', `# Resize\n\n${prose('resize-d', 10 * 1024)}`);
    const e = await verifiedDoc(t.owner.api, t.workspaceId, 'resize-e.txt', exactText('resize-e', 40 * 1024));
    const set = await createSet({ name: 'Follows', isPublic: true });
    const other = await createSet({ name: 'Also holds d' });
    for (const x of [c, d]) expect((await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: x.id })).status).toBe(201);
    expect((await sets().post(`/api/instruction-sets/${other.id}/documents`, { documentId: d.id })).status).toBe(201);
    const before = await setOf(set.id);
    // e (40 KiB) fits next to c and d now (about 30 KiB) ...
    expect(before.totalSizeBytes + e.sizeBytes).toBeLessThanOrEqual(102400);

    const grown = `# Resize\n\n${prose('resize-d2', 50 * 1024)}\n\n## More\n\n${prose('resize-d3', 5 * 1024)}`;
    const r = await t.owner.api.patch(`/v1/workspaces/${t.workspaceId}/documents/${d.id}`, { content: grown });
    expect(r.status).toBe(200);
    const now = await waitForStatus(t.owner.api, t.workspaceId, d.id);
    expect(now.sizeBytes).not.toBe(d.sizeBytes);
    expect((await t.owner.api.get(`/v1/documents/${d.id}`)).body.sizeBytes).toBe(now.sizeBytes);

    await eventually(async () => (await setOf(set.id)).totalSizeBytes === c.sizeBytes + now.sizeBytes, 'the set learnt the new size');
    const after = await setOf(set.id);
    expect(after.documents.map((x: any) => [x.documentId, x.sizeBytes])).toEqual([
      [c.id, c.sizeBytes],
      [d.id, now.sizeBytes],
    ]);
    expect(after.updatedAt).toBe(before.updatedAt);
    await eventually(async () => (await setOf(other.id)).totalSizeBytes === now.sizeBytes, 'every set holding it learnt the new size');
    expect(Buffer.byteLength(await rawOf(set.id), 'utf8')).toBe(after.totalSizeBytes + '\n---\n'.length);

    // ... but no longer: the set's stream decides on the new size.
    const refused = await sets().post(`/api/instruction-sets/${set.id}/documents`, { documentId: e.id });
    expectApiError(refused, 400, 'SIZE_LIMIT_EXCEEDED');
    expect(refused.body.error.details).toEqual({ currentSize: c.sizeBytes + now.sizeBytes, documentSize: e.sizeBytes, maxSize: 102400 });
  });

  it('deleting the workspace removes its sets', async () => {
    const x = await team(server.url);
    const s = await x.admin.api.post(`/api/workspaces/${x.workspaceId}/instruction-sets`, { name: 'Goes with the workspace', isPublic: true });
    expect(s.status).toBe(201);
    expect((await x.owner.api.delete(`/v1/workspaces/${x.workspaceId}`)).status).toBe(204);
    expectApiError(await x.owner.api.get(`/api/instruction-sets/${s.body.id}`), 404, 'NOT_FOUND');
    expect((await client(server.url).get(`/s/${s.body.id}/raw`)).status).toBe(404);
  });
});

describe('instruction sets: rate limits', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({});
  });
  afterAll(async () => server?.stop());

  it('reorder is limited to 10 per minute per user, with X-RateLimit headers and 429 RATE_LIMITED', async () => {
    const t = await team(server.url);
    const set = await t.admin.api.post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: 'Limited' });
    expect(set.status).toBe(201);
    expect(set.headers.get('x-ratelimit-limit')).toBe('30');
    const list = await t.admin.api.get(`/api/workspaces/${t.workspaceId}/instruction-sets`);
    expect(list.headers.get('x-ratelimit-limit')).toBe('60');
    expect(Number(list.headers.get('x-ratelimit-remaining'))).toBe(59);
    expect(Number(list.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
    const add = await t.admin.api.post(`/api/instruction-sets/${set.body.id}/documents`, { documentId: '00000000-0000-4000-8000-000000000000' });
    expect(add.headers.get('x-ratelimit-limit')).toBe('60');

    const reorder = () => t.admin.api.patch(`/api/instruction-sets/${set.body.id}/documents/reorder`, { documentIds: [] });
    for (let i = 0; i < 10; i++) {
      const r = await reorder();
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBe('10');
      expect(r.headers.get('x-ratelimit-remaining')).toBe(String(9 - i));
    }
    const limited = await reorder();
    expectApiError(limited, 429, 'RATE_LIMITED');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    // Per user: another admin is not limited by the first one's requests.
    expect((await t.owner.api.patch(`/api/instruction-sets/${set.body.id}/documents/reorder`, { documentIds: [] })).status).toBe(200);
  });
});
