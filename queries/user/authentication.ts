import { ReadStore } from '../../src/ports/readStore';
import { apiKeysCollection, sessionsCollection, usersCollection } from '../../projections/user/userProjection';
import { sha256Hex } from '../../src/util/crypto';

/** Who a bearer credential belongs to: the reads behind authentication. */

/** The live (not revoked) API key whose hash is that of `token`, or null. */
export async function liveApiKeyByToken(store: ReadStore, token: string) {
  const key = (await apiKeysCollection(store).find({ keyHash: sha256Hex(token) }, { limit: 1 }))[0];
  return key && !key.revoked ? key : null;
}

/** The live (not revoked) session with this id, or null. */
export async function liveSession(store: ReadStore, sessionId: string) {
  const session = await sessionsCollection(store).get(sessionId);
  return session && !session.revoked ? session : null;
}

export const userById = (store: ReadStore, userId: string) => usersCollection(store).get(userId);
