import { Projection, readModelProjection } from '../../src/core/projection';
import { ReadStore } from '../../src/ports/readStore';
import { ApiKeyEvent, SessionEvent, UserEvent } from '../../src/domain/user/events';

export interface UserView {
  id: string;
  email: string;
  name: string;
  passwordHash: string;
  createdAt: string;
}

export interface ApiKeyView {
  id: string;
  userId: string;
  name: string;
  prefix: string;
  keyHash: string;
  createdAt: string;
  revoked: boolean;
}

export interface SessionView {
  id: string;
  userId: string;
  revoked: boolean;
  expiresAt: string;
}

export const usersCollection = (store: ReadStore) => store.collection<UserView>('users', [{ fields: ['email'], unique: true }]);
export const apiKeysCollection = (store: ReadStore) =>
  store.collection<ApiKeyView>('api_keys', [{ fields: ['keyHash'], unique: true }, { fields: ['userId'] }]);
export const sessionsCollection = (store: ReadStore) => store.collection<SessionView>('sessions');

type Handled = UserEvent | ApiKeyEvent | SessionEvent;

export function userProjection(store: ReadStore): Projection {
  const users = usersCollection(store);
  const keys = apiKeysCollection(store);
  const sessions = sessionsCollection(store);
  return readModelProjection('users', store, ['users', 'api_keys', 'sessions'], async (event) => {
    const e = event as unknown as Handled;
    switch (e.type) {
      case 'UserRegistered':
        await users.put({ id: e.data.userId, email: e.data.email, name: e.data.name, passwordHash: e.data.passwordHash, createdAt: e.data.registeredAt });
        break;
      case 'ApiKeyCreated':
        await keys.put({ id: e.data.keyId, userId: e.data.userId, name: e.data.name, prefix: e.data.prefix, keyHash: e.data.keyHash, createdAt: e.data.createdAt, revoked: false });
        break;
      case 'ApiKeyRevoked': {
        const k = await keys.get(e.data.keyId);
        if (k) await keys.put({ ...k, revoked: true });
        break;
      }
      case 'SessionStarted':
        await sessions.put({ id: e.data.sessionId, userId: e.data.userId, revoked: false, expiresAt: e.data.expiresAt });
        break;
      case 'RefreshTokenRotated': {
        const s = await sessions.get(e.data.sessionId);
        if (s) await sessions.put({ ...s, expiresAt: e.data.expiresAt });
        break;
      }
      case 'SessionRevoked': {
        const s = await sessions.get(e.data.sessionId);
        if (s) await sessions.put({ ...s, revoked: true });
        break;
      }
      default:
        break;
    }
  });
}
