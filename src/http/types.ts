import { AuthMethod } from '../domain/event';

export interface AuthInfo {
  userId: string;
  email: string;
  authMethod: Exclude<AuthMethod, 'system' | 'public_token'>;
  sessionId?: string;
  apiKeyId?: string;
}

declare module 'express-serve-static-core' {
  interface Request {
    auth?: AuthInfo;
    correlationId?: string;
  }
}
