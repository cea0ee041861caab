import { cutToScope, LinkSearchHit } from '../../queries/searchLink/searchThroughLink';

const hit = (documentId: string, tags: string[]): LinkSearchHit => ({ documentId, title: documentId, content: 'c', score: 0.5, tags });

describe('cutToScope: hits of a search judged by the link as it is once the search is done', () => {
  const hits = [hit('d1', ['x', 'y']), hit('d2', ['y']), hit('d3', [])];

  it('a link narrowed meanwhile answers only what its scope holds now, tags cut to it', () => {
    expect(cutToScope(hits, { workspaceId: 'w', allowedTags: ['x'] })).toEqual([hit('d1', ['x'])]);
    expect(cutToScope(hits, { workspaceId: 'w', allowedTags: ['z'] })).toEqual([]);
  });

  it('a link without allowedTags keeps every hit', () => {
    expect(cutToScope(hits, { workspaceId: 'w', allowedTags: [] })).toEqual(hits);
  });
});
