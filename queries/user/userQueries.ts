import { AppContext } from '../../src/app/context';
import { apiKeysCollection, usersCollection, UserView } from '../../projections/user/userProjection';

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
