import { NextFunction, Request, Response } from 'express';
import * as t from 'io-ts';
import { AppContext } from '../../app/context';
import { createApiKey, login, logout, refresh, registerUser, revokeApiKey } from '../../../commands/user/userCommands';
import { listApiKeys, userById } from '../../../queries/user/userQueries';
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
    const user = await userById(ctx, a.userId);
    if (!user) throw new DomainError('UNAUTHORIZED', 'Unknown user.');
    res.json({ id: user.id, email: user.email, name: user.name });
  });

  // Keys are managed from a signed-in session: a leaked key must not mint its own replacements.
  const requireSession = [
    requireAuth(ctx),
    (req: Request, _res: Response, next: NextFunction) =>
      next(authOf(req).authMethod === 'session' ? undefined : new DomainError('FORBIDDEN', 'API keys are managed from a signed-in session, not with an API key.')),
  ];

  v1.post('/api-keys', ...requireSession, async (req, res) => {
    const body = decode(ApiKeyBody, req.body);
    const r = await createApiKey(ctx, commandContext(ctx, req), authOf(req).userId, body.name);
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    res.status(201).json({ id: r.id, name: r.name, key: r.key, createdAt: r.createdAt });
  });

  v1.get('/api-keys', ...requireSession, async (req, res) => {
    res.json({ data: await listApiKeys(ctx, authOf(req).userId) });
  });

  v1.delete('/api-keys/:id', ...requireSession, async (req, res) => {
    const r = await revokeApiKey(ctx, commandContext(ctx, req), authOf(req).userId, String(req.params.id));
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    res.status(204).end();
  });

  return { v1 };
}
