import { Revocations } from '../../src/security/revocations';

describe('Revocations: what this process revoked that the projections may not have applied', () => {
  const ev = (type: string, data: Record<string, unknown>) => ({ type, data });

  it('remembers each kind by its id until every projection has applied its position', () => {
    let applied = 10;
    const r = new Revocations(() => applied);
    r.appended([ev('ApiKeyRevoked', { keyId: 'k1', userId: 'u' })], 11);
    r.appended([ev('SessionRevoked', { sessionId: 's1', userId: 'u', reason: 'logout' })], 12);
    r.appended([ev('LinkRevoked', { linkId: 'l1', workspaceId: 'w', revokedAt: '' })], 13);
    r.appended([ev('MemberRemoved', { workspaceId: 'w', userId: 'u' })], 14);
    expect([r.isRevoked('api_key', 'k1'), r.isRevoked('session', 's1'), r.isRevoked('link', 'l1'), r.isRevoked('member', 'w:u')]).toEqual([true, true, true, true]);
    // Another kind with the same id, or another id, is not revoked.
    expect([r.isRevoked('session', 'k1'), r.isRevoked('api_key', 'k2'), r.isRevoked('member', 'w:v')]).toEqual([false, false, false]);
    applied = 12;
    expect([r.isRevoked('api_key', 'k1'), r.isRevoked('session', 's1'), r.isRevoked('link', 'l1')]).toEqual([false, false, true]);
    expect(r.size).toBe(2);
    applied = 14;
    expect(r.size).toBe(0);
  });

  it('keeps nothing of other events, of no-op commands, or of what the projections already applied', () => {
    const r = new Revocations(() => 20);
    r.appended([ev('ApiKeyCreated', { keyId: 'k' }), ev('MemberAdded', { workspaceId: 'w', userId: 'u' })], 30);
    r.appended([ev('ApiKeyRevoked', { keyId: 'k' })], 0);
    r.appended([ev('ApiKeyRevoked', { keyId: 'k' })], 20);
    expect(r.size).toBe(0);
    expect(r.isRevoked('api_key', 'k')).toBe(false);
  });
});
