import { routeTemplateIndex } from '../../src/http/metrics';

describe('routeTemplateIndex: the template that would have served a request', () => {
  const index = routeTemplateIndex([
    { method: 'get', path: '/v1/workspaces/:id/members/:userId' },
    { method: 'get', path: '/v1/workspaces/:id/members/me' },
    { method: 'post', path: '/v1/workspaces/:id/documents' },
    { method: 'get', path: '/docs' },
    { method: 'get', path: '/healthz' },
  ]);

  it('matches by method and whole segments, the most literal template first', () => {
    expect(index.match('GET', '/v1/workspaces/abc/members/me')).toBe('/v1/workspaces/:id/members/me');
    expect(index.match('GET', '/v1/workspaces/abc/members/42')).toBe('/v1/workspaces/:id/members/:userId');
    expect(index.match('POST', '/v1/workspaces/abc/documents/')).toBe('/v1/workspaces/:id/documents');
    expect(index.match('HEAD', '/healthz')).toBe('/healthz');
  });

  it('answers nothing for another method, a longer or shorter path, or a look-alike', () => {
    expect(index.match('GET', '/v1/workspaces/abc/documents')).toBeUndefined();
    expect(index.match('POST', '/v1/workspaces/abc/documents/x')).toBeUndefined();
    expect(index.match('POST', '/v1/workspaces/documents')).toBeUndefined();
    expect(index.match('GET', '/v1/workspaces/a/b/members/me')).toBeUndefined();
    expect(index.match('GET', '/docsx')).toBeUndefined();
    expect(index.match('GET', '/')).toBeUndefined();
  });
});
