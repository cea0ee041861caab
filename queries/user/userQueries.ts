import { AppContext } from '../../src/app/context';
import { accountEventsCollection, apiKeysCollection, sessionsCollection, usersCollection, UserView } from '../../projections/user/userProjection';

export async function listApiKeys(ctx: AppContext, userId: string) {
  const keys = await apiKeysCollection(ctx.readStore).find({ userId, revoked: false }, { sort: [{ field: 'createdAt', direction: 'asc' }] });
  const usage = await ctx.readStore.collection<{ id: string; lastUsedAt: string }>('api_key_usage').getMany(keys.map((k) => k.id));
  const used = new Map(usage.map((u) => [u.id, u.lastUsedAt]));
  return keys.map((k) => ({ id: k.id, name: k.name, prefix: k.prefix, createdAt: k.createdAt, lastUsedAt: used.get(k.id) ?? null }));
}

/** A registered user by id (null: none). */
export async function userById(deps: Pick<AppContext, 'readStore'>, userId: string): Promise<UserView | null> {
  return usersCollection(deps.readStore).get(userId);
}

/** A registered user by normalised e-mail (null: none). */
export async function userByEmail(deps: Pick<AppContext, 'readStore'>, email: string): Promise<UserView | null> {
  return (await usersCollection(deps.readStore).find({ email }, { limit: 1 }))[0] ?? null;
}

/** The caller's live sessions, newest first (`current`: the one making the request). */
export async function listSessions(ctx: Pick<AppContext, 'readStore' | 'now'>, userId: string, currentSessionId?: string) {
  const now = ctx.now().getTime();
  const live = await sessionsCollection(ctx.readStore).find({ userId, revoked: false }, { limit: 1000 });
  return live
    .filter((s) => Date.parse(s.expiresAt) > now)
    .map((s) => ({ id: s.id, device: s.device ?? null, createdAt: s.createdAt ?? null, lastUsedAt: s.lastUsedAt ?? null, ipHash: s.ipHash ?? null, expiresAt: s.expiresAt, current: s.id === currentSessionId }))
    .sort((a, b) => String(b.createdAt).localeCompare(String(a.createdAt)));
}

/** The account's security trail (sign-ins, verification, resets, MFA), newest first. */
export async function accountEvents(ctx: Pick<AppContext, 'readStore'>, userId: string, limit: number) {
  const rows = await accountEventsCollection(ctx.readStore).find({ userId }, { sort: [{ field: 'position', direction: 'desc' }], limit });
  return rows.map((r) => ({ id: r.id, occurredAt: r.occurredAt, action: r.action, authMethod: r.authMethod, summary: r.summary }));
}
