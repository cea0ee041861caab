import { DocumentCatalog, PURPOSE_CODE } from '../../src/adapters/embedded/documentCatalog';

describe('DocumentCatalog', () => {
  const numbers = new Map([['w', 1], ['v', 2]]);
  function catalog(): DocumentCatalog {
    const c = new DocumentCatalog((id) => numbers.get(id));
    const add = (id: string, workspace: number, purpose: 'KNOWLEDGE' | 'INSTRUCTION', tags: string[], chunks: number): void =>
      c.set(c.intern(id), { workspace, purpose: PURPOSE_CODE[purpose], tags, chunks });
    add('a', 1, 'KNOWLEDGE', ['x'], 2);
    add('b', 1, 'INSTRUCTION', ['y'], 3);
    add('c', 2, 'KNOWLEDGE', ['x'], 4);
    add('d', 1, 'KNOWLEDGE', ['x', 'y'], 1);
    return c;
  }
  const docs = (c: DocumentCatalog, f: Parameters<DocumentCatalog['scope']>[0]): string[] =>
    (c.scope(f)?.docs ?? []).map((d) => 'abcd'[d]).sort();

  it('interns document ids once, in order', () => {
    const c = new DocumentCatalog(() => undefined);
    expect([c.intern('p'), c.intern('q'), c.intern('p')]).toEqual([0, 1, 0]);
    expect(c.docId('q')).toBe(1);
    expect(c.docId('r')).toBeUndefined();
  });

  it('scopes a workspace by purpose, tags (any of) and document ids, with chunk counts', () => {
    const c = catalog();
    const all = c.scope({ workspaceId: 'w' })!;
    expect(all).toMatchObject({ workspace: 1, chunks: 6, workspaceChunks: 6 });
    expect(Array.from(all.mask)).toEqual([1, 1, 0, 1]);
    expect(docs(c, { workspaceId: 'w', purpose: 'KNOWLEDGE' })).toEqual(['a', 'd']);
    expect(docs(c, { workspaceId: 'w', tags: ['y'] })).toEqual(['b', 'd']);
    expect(docs(c, { workspaceId: 'w', documentIds: ['c', 'd', 'd', 'zz'] })).toEqual(['d']);
    expect(c.scope({ workspaceId: 'w', documentIds: ['d', 'd'] })!.chunks).toBe(1);
    expect(c.scope({ workspaceId: 'v' })).toMatchObject({ workspace: 2, chunks: 4, workspaceChunks: 4 });
    expect(c.scope({ workspaceId: 'unknown' })).toBeUndefined();
  });

  it('caches scopes until documents or their fields change', () => {
    const c = catalog();
    const first = c.scope({ workspaceId: 'w', tags: ['x'] });
    expect(c.scope({ workspaceId: 'w', tags: ['x'] })).toBe(first);
    c.update(c.info(c.docId('b')!)!, { tags: ['x'] });
    expect(docs(c, { workspaceId: 'w', tags: ['x'] })).toEqual(['a', 'b', 'd']);
    c.update(c.info(c.docId('b')!)!, { purpose: 'KNOWLEDGE' });
    expect(docs(c, { workspaceId: 'w', purpose: 'KNOWLEDGE' })).toEqual(['a', 'b', 'd']);
    c.unset(c.docId('a')!);
    expect(docs(c, { workspaceId: 'w', tags: ['x'] })).toEqual(['b', 'd']);
    expect(c.scope({ workspaceId: 'w' })!.workspaceChunks).toBe(4);
  });

  it('counts chunks added while loading and moves a re-set document between workspaces', () => {
    const c = catalog();
    c.addChunk(c.info(c.docId('a')!)!);
    expect(c.scope({ workspaceId: 'w' })).toBeDefined();
    expect(c.scope({ workspaceId: 'w', documentIds: ['a'] })!.chunks).toBe(3);
    c.set(c.docId('a')!, { workspace: 2, purpose: 1, tags: [], chunks: 5 });
    expect(docs(c, { workspaceId: 'v' })).toEqual(['a', 'c']);
    expect(c.scope({ workspaceId: 'w' })!.workspaceChunks).toBe(4);
    c.clear();
    expect(c.scope({ workspaceId: 'w' })).toMatchObject({ docs: [], chunks: 0, workspaceChunks: 0 });
    expect(c.docId('a')).toBe(0); // numbers stay
  });
});
