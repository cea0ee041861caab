import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { client, signUp, startServer, TestServer } from '../support/server';

/**
 * An invitation revoked while a newcomer accepts it (the mailed link, creating an account):
 * exactly one of the two wins, and the answers say which. Before, the accept could answer 201
 * (account and session) with no membership, the revoke having won in between its check of the
 * invitation and its append on the workspace stream.
 */
describe('invitations: a revoke racing a newcomer’s acceptance', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });

  const unQp = (raw: string) => raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
  /** The accept-invitation token mailed to `email` (the embedded outbox). */
  async function invitationToken(email: string): Promise<string> {
    const dir = path.join(server.dataDir, 'outbox');
    for (let i = 0; i < 200; i++) {
      const mails = (fs.existsSync(dir) ? fs.readdirSync(dir) : []).map((f) => unQp(fs.readFileSync(path.join(dir, f), 'utf8'))).filter((r) => r.includes(`To: ${email}`));
      const token = mails.map((m) => /\/accept-invitation\?token=([A-Za-z0-9%._-]+)/.exec(m)?.[1]).find((t) => t !== undefined);
      if (token) return decodeURIComponent(token);
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no invitation mail to ${email}`);
  }

  /** The users added to the workspace, from the log itself (not a read model that may lag). */
  function membersInLog(workspaceId: string): string[] {
    const db = new Database(path.join(server.dataDir, 'events.db'), { readonly: true });
    try {
      const rows = db.prepare("SELECT data FROM events WHERE type = 'MemberAdded'").all() as { data: string }[];
      return rows.map((r) => JSON.parse(r.data) as { workspaceId: string; userId: string }).filter((d) => d.workspaceId === workspaceId).map((d) => d.userId);
    } finally {
      db.close();
    }
  }

  it('exactly one wins: a 201 has its membership and the revoke 404; a revoke that won leaves a 404 and no membership', async () => {
    const owner = await signUp(server.url, 'Owner');
    const ws = await owner.api.post('/v1/workspaces', { name: 'Race' });
    expect(ws.status).toBe(201);
    const outcomes: { accept: number; revoke: number; userId?: string }[] = [];
    const LAGS = [0, 0, 20, 50, 100, 200, 400, 800];
    for (let round = 0; round < LAGS.length; round++) {
      const email = `newcomer-${round}-${Date.now()}@example.com`;
      const inv = await owner.api.post(`/v1/workspaces/${ws.body.id}/invite`, { email, role: 'MEMBER' });
      expect(inv.status).toBe(201);
      const token = await invitationToken(email);
      const [accept, revoke] = await Promise.all([
        client(server.url).post('/v1/auth/accept-invitation', { token, name: 'New', password: 'a good password' }),
        // Sent at once, or a little later (so that some rounds are won by each; no assertion depends on which).
        new Promise((r) => setTimeout(r, LAGS[round])).then(() => owner.api.delete(`/v1/workspaces/${ws.body.id}/invitations/${inv.body.invitationId}`)),
      ]);
      outcomes.push({ accept: accept.status, revoke: revoke.status, userId: accept.body?.user?.id });
      // One wins, the other is told so in its envelope (never a 500).
      if (accept.status === 201) {
        expect([round, revoke.status, revoke.body?.error?.code]).toEqual([round, 404, 'INVITATION_NOT_FOUND']);
        // The session it answered opens the workspace.
        expect((await client(server.url, accept.body.accessToken).get(`/v1/workspaces/${ws.body.id}`)).status).toBe(200);
      } else {
        expect([round, revoke.status]).toEqual([round, 204]);
        expect([round, accept.status, accept.body?.error?.code]).toEqual([round, 404, 'INVITATION_NOT_FOUND']);
      }
    }
    // The log agrees with every answer: a member for each 201, none for a revoke that won.
    const members = membersInLog(ws.body.id);
    for (const o of outcomes) if (o.accept === 201) expect(members).toContain(o.userId);
    // (The owner's membership comes with WorkspaceCreated, not MemberAdded.)
    expect(members).toHaveLength(outcomes.filter((o) => o.accept === 201).length);
    // Which one wins a round is the scheduler's; what matters is that no round answered both ways.
    expect(outcomes.every((o) => (o.accept === 201) !== (o.revoke === 204))).toBe(true);
  }, 60_000);
});
