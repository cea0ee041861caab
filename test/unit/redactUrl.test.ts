import { redactUrl } from '../../src/app/logger';

describe('redactUrl', () => {
  const token = '0123456789abcdef'.repeat(4);
  it.each([
    [`/public/${token}/search?q=secret`, '/public/[REDACTED]/search'],
    [`/mcp/${token}`, '/mcp/[REDACTED]'],
    [`/api/v1/mcp/${token}`, '/api/v1/mcp/[REDACTED]'],
    [`/v1/public/${token}/search`, '/v1/public/[REDACTED]/search'],
    [`/s/${token}?q=x`, '/s/[REDACTED]'],
    [`/mcp/${token}%E0%A4%A`, '/mcp/[REDACTED]'],
    ['/s/123e4567-e89b-12d3-a456-426614174000?q=secret', '/s/[REDACTED]'],
    ['/api/v1/s/123e4567-e89b-12d3-a456-426614174000', '/api/v1/s/[REDACTED]'],
    ['/s/123e4567-e89b-12d3-a456-426614174000/raw', '/s/[REDACTED]/raw'],
    ['/api/workspaces/w/public-links/123e4567-e89b-12d3-a456-426614174000/usage', '/api/workspaces/w/public-links/[REDACTED]/usage'],
    ['/api/workspaces/w/public-links', '/api/workspaces/w/public-links'],
    ['/v1/workspaces/123e4567-e89b-12d3-a456-426614174000/documents?search=x', '/v1/workspaces/123e4567-e89b-12d3-a456-426614174000/documents'],
  ])('%s → %s', (input, expected) => {
    expect(redactUrl(input)).toBe(expected);
  });
});
