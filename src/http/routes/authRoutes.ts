import { RouteDocs } from '../openapi/routeDocs';
import * as t from 'io-ts';
import { AppContext } from '../../app/context';
import { createApiKey, login, logout, refresh, registerUser, revokeApiKey } from '../../../commands/user/userCommands';
import { listApiKeys } from '../../../queries/user/userQueries';
import { DomainError } from '../../domain/errors';
import { authOf, requireAuth } from '../auth';
import { boundedString, decode, Email, HumanName, strict } from '../codecs';
import { commandContext } from '../exec';
import { rateLimit, byIp } from '../rateLimit';
import { RouteModule, router } from './module';

const RegisterBody = strict(t.type({ email: Email, password: boundedString(8, 1024, 'password (8+ characters)'), name: HumanName(200) }));
const LoginBody = strict(t.type({ email: boundedString(1, 254), password: boundedString(1, 1024) }));
const RefreshBody = strict(t.type({ refreshToken: boundedString(1, 512) }));
const ApiKeyBody = strict(t.type({ name: HumanName(100) }));

/** The JSON body codecs of these routes (property tests walk them). */
export const authBodies = { RegisterBody, LoginBody, RefreshBody, ApiKeyBody };

const Tokens = t.type({ accessToken: t.string, refreshToken: t.string, expiresIn: t.number });
const Registered = t.type({ id: t.string, email: t.string, name: t.string, createdAt: t.string });

/** The API description of these routes (schemas from the codecs above). */
export const authDocs: RouteDocs = {
  'POST /auth/register': { summary: 'Create an account', body: RegisterBody, auth: false, status: 201, response: Registered, example: { email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' } },
  'POST /auth/login': { summary: 'Sign in: an access token (JWT) and a refresh token', body: LoginBody, auth: false, response: Tokens, example: { email: 'ada@example.com', password: 'correct horse battery' } },
  'POST /auth/refresh': { summary: 'A new access token for a refresh token (rotated)', body: RefreshBody, auth: false, response: Tokens },
  'POST /auth/logout': { summary: 'End the session', body: RefreshBody, auth: false, status: 204, produces: 'none' },
  'GET /auth/me': { summary: 'The signed-in user' },
  'POST /api-keys': { summary: 'Create an API key (shown once)', body: ApiKeyBody, status: 201, example: { name: 'CI' } },
  'GET /api-keys': { summary: 'List your API keys' },
  'DELETE /api-keys/:id': { summary: 'Revoke an API key', status: 204, produces: 'none' },
};

export function authRoutes(ctx: AppContext): RouteModule {
  const v1 = router();
  // Brute-force guard on credentials (not in the spec's table; generous for real use).
  const credentialLimit = rateLimit(ctx, 'auth', 30, byIp);

  v1.post('/auth/register', credentialLimit, async (req, res) => {
    if (!ctx.config.allowRegistration) throw new DomainError('REGISTRATION_DISABLED', 'Registration is disabled on this server.');
    const body = decode(RegisterBody, req.body);
    const { user, position } = await registerUser(ctx, commandContext(ctx, req), body);
    await ctx.runner.waitFor(position, ctx.config.readYourWritesMs);
    res.status(201).json({ id: user.userId, email: user.email, name: user.name, createdAt: user.registeredAt });
  });

  v1.post('/auth/login', credentialLimit, async (req, res) => {
    const body = decode(LoginBody, req.body);
    const r = await login(ctx, commandContext(ctx, req), body);
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    res.json({ accessToken: r.accessToken, refreshToken: r.refreshToken, expiresIn: r.expiresIn });
  });

  v1.post('/auth/refresh', credentialLimit, async (req, res) => {
    const body = decode(RefreshBody, req.body);
    try {
      const r = await refresh(ctx, commandContext(ctx, req), body.refreshToken);
      await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
      res.json({ accessToken: r.accessToken, refreshToken: r.refreshToken, expiresIn: r.expiresIn });
    } catch (err) {
      if (err instanceof DomainError && err.code === 'CONFLICT') throw new DomainError('UNAUTHORIZED', 'Invalid refresh token.');
      throw err;
    }
  });

  v1.post('/auth/logout', async (req, res) => {
    const body = decode(RefreshBody, req.body);
    const r = await logout(ctx, commandContext(ctx, req), body.refreshToken);
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    res.status(204).end();
  });

  v1.get('/auth/me', requireAuth(ctx), async (req, res) => {
    const a = authOf(req);
    const user = await ctx.readStore.collection<{ id: string; email: string; name: string }>('users').get(a.userId);
    if (!user) throw new DomainError('UNAUTHORIZED', 'Unknown user.');
    res.json({ id: user.id, email: user.email, name: user.name });
  });

  v1.post('/api-keys', requireAuth(ctx), async (req, res) => {
    const body = decode(ApiKeyBody, req.body);
    const r = await createApiKey(ctx, commandContext(ctx, req), authOf(req).userId, body.name);
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    res.status(201).json({ id: r.id, name: r.name, key: r.key, createdAt: r.createdAt });
  });

  v1.get('/api-keys', requireAuth(ctx), async (req, res) => {
    res.json({ data: await listApiKeys(ctx, authOf(req).userId) });
  });

  v1.delete('/api-keys/:id', requireAuth(ctx), async (req, res) => {
    const r = await revokeApiKey(ctx, commandContext(ctx, req), authOf(req).userId, String(req.params.id));
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    res.status(204).end();
  });

  return { v1, docs: authDocs };
}
