import { NextFunction, Request, Response } from 'express';
import { RouteDocs } from '../openapi/routeDocs';
import * as t from 'io-ts';
import { AppContext } from '../../app/context';
import { createApiKey, login, logout, refresh, registerUser, revokeApiKey, SessionOrigin } from '../../../commands/user/userCommands';
import { requestEmailVerification, requestPasswordReset, resetPassword, verifyEmail } from '../../../commands/user/emailFlows';
import { revokeAllSessions, revokeSession } from '../../../commands/user/sessions';
import { acceptInvitationAsNewcomer } from '../../../commands/user/invitationSignup';
import { beginSso, finishSso, isConsoleFlow } from '../../../commands/user/sso';
import { setConsoleCookie } from './consoleAuthRoutes';
import { challengeOf, confirmTotp, disableTotp, loginWithMfa, startTotpEnrollment } from '../../../commands/user/mfa';
import { accountEvents, listApiKeys, listSessions, userById } from '../../../queries/user/userQueries';
import { DomainError } from '../../domain/errors';
import { authOf, requireAuth } from '../auth';
import { idParam } from '../ids';
import { boundedString, decode, Email, HumanName, strict } from '../codecs';
import { commandContext } from '../exec';
import { consumeRateLimit, mfaChallengeLimiter, mfaFailureLimit, rateLimit, byIp } from '../rateLimit';
import { RouteModule, router } from './module';
import {
  ApiKeyCreated,
  ApiKeyList,
  EmailVerified,
  InvitationSignup,
  Me,
  PasswordReset,
  Registered,
  ResetRequested,
  respond,
  SecurityEventList,
  SessionList,
  SessionsRevoked,
  SignInOptions,
  SsoSignedIn,
  Tokens,
  TotpConfirmed,
  TotpDisabled,
  TotpEnrollment,
  VerificationResent,
} from '../responses';

const RegisterBody = strict(t.type({ email: Email, password: boundedString(8, 1024, 'password (8+ characters)'), name: HumanName(200) }));
const LoginBody = strict(t.type({ email: boundedString(1, 254), password: boundedString(1, 1024) }));
const RefreshBody = strict(t.type({ refreshToken: boundedString(1, 512) }));
const ApiKeyBody = strict(t.type({ name: HumanName(100) }));
const TokenBody = strict(t.type({ token: boundedString(1, 512) }));
const ForgotBody = strict(t.type({ email: Email }));
const ResetBody = strict(t.type({ token: boundedString(1, 512), password: boundedString(8, 1024, 'password (8+ characters)') }));
const MfaLoginBody = strict(t.type({ challenge: boundedString(1, 2048), code: boundedString(1, 64) }));
const CodeBody = strict(t.type({ code: boundedString(1, 64) }));
const EmptyBody = strict(t.partial({}));
const InvitationSignupBody = strict(t.type({ token: boundedString(1, 512), name: HumanName(200), password: boundedString(8, 1024, 'password (8+ characters)') }));

/** The JSON body codecs of these routes (property tests walk them). */
export const authBodies = { RegisterBody, LoginBody, RefreshBody, ApiKeyBody, TokenBody, ForgotBody, ResetBody, MfaLoginBody, CodeBody, InvitationSignupBody };

const originOf = (req: Request): SessionOrigin => ({ userAgent: req.headers['user-agent'], ip: req.ip });
const HOUR = 3600;
const FLOW_COOKIE = 'kb_oidc';
const cookieOf = (req: Request, name: string): string | undefined => {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return undefined;
};

/** The API description of these routes (schemas from the codecs above). */
export const authDocs: RouteDocs = {
  'POST /auth/register': { summary: 'Create an account', body: RegisterBody, auth: false, status: 201, response: Registered, example: { email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' } },
  'POST /auth/login': { summary: 'Sign in: an access token (JWT) and a refresh token', body: LoginBody, auth: false, response: Tokens, example: { email: 'ada@example.com', password: 'correct horse battery' } },
  'POST /auth/refresh': { summary: 'A new access token for a refresh token (rotated)', body: RefreshBody, auth: false, response: Tokens },
  'POST /auth/logout': { summary: 'End the session', body: RefreshBody, auth: false, status: 204, produces: 'none' },
  'GET /auth/me': { summary: 'The signed-in user', response: Me },
  'POST /api-keys': { summary: 'Create an API key (shown once)', body: ApiKeyBody, status: 201, response: ApiKeyCreated, example: { name: 'CI' } },
  'GET /api-keys': { summary: 'List your API keys', response: ApiKeyList },
  'DELETE /api-keys/:id': { summary: 'Revoke an API key', status: 204, produces: 'none' },
  'POST /auth/login/mfa': { summary: 'Finish a sign-in that answered MFA_REQUIRED with a TOTP or recovery code', body: MfaLoginBody, auth: false, response: Tokens },
  'POST /auth/verify-email': { summary: 'Verify the e-mail address with the token from the mailed link', body: TokenBody, auth: false, response: EmailVerified },
  'POST /auth/resend-verification': { summary: 'Mail the verification link again (rate-limited)', body: EmptyBody, status: 202, response: VerificationResent },
  'POST /auth/forgot-password': { summary: 'Mail a password-reset link (the same answer whether or not the address has an account)', body: ForgotBody, auth: false, status: 202, response: ResetRequested, example: { email: 'ada@example.com' } },
  'POST /auth/reset-password': { summary: 'Set a new password with the mailed token; revokes every session', body: ResetBody, auth: false, response: PasswordReset },
  'POST /auth/accept-invitation': { summary: 'Accept a mailed invitation as a newcomer: account, membership and session in one step', body: InvitationSignupBody, auth: false, status: 201, response: InvitationSignup },
  'GET /auth/oidc/start': { summary: "Start single sign-on with the organisation's OpenID provider (redirect)", auth: false, produces: 'none', status: 302 },
  'GET /auth/oidc/callback': {
    summary: "The OpenID provider's callback (authorization code with PKCE)",
    description: 'A sign-in started with GET /v1/auth/oidc/start answers the tokens (200). One started from the console (GET /v1/auth/console/sso) sets the console cookie and redirects to `/app/` (302), or to `/app/signin?ssoError=<code>` when it fails. An account with a second factor enrolled is not signed in by the provider alone: 401 MFA_REQUIRED with `details: {challenge, expiresIn}`, finished with POST /v1/auth/login/mfa (from the console: a redirect to `/app/signin#mfaChallenge=<challenge>`, its code form).',
    auth: false,
    response: SsoSignedIn,
    otherSuccesses: [{ status: 302, description: "A console sign-in: the console's cookie is set and the browser goes back to /app/ (or to /app/signin?ssoError=<code>)", produces: 'none' }],
  },
  'GET /auth/options': { summary: 'How one may sign in here: registration open, single sign-on configured (for sign-in pages)', auth: false, response: SignInOptions },
  'GET /auth/sessions': { summary: "The account's sessions", response: SessionList },
  'DELETE /auth/sessions': { summary: 'Revoke every session but this one (from a session: an API key gets 403)', response: SessionsRevoked },
  'DELETE /auth/sessions/:sessionId': { summary: 'Revoke one session (from a session: an API key gets 403)', status: 204, produces: 'none' },
  'GET /auth/security-events': { summary: "The account's security trail (verification, resets, MFA, SSO, sessions)", response: SecurityEventList },
  'POST /auth/mfa/totp': { summary: 'Start TOTP enrolment: the secret, shown once, as an otpauth URI', body: EmptyBody, status: 201, response: TotpEnrollment },
  'POST /auth/mfa/totp/confirm': { summary: 'Confirm TOTP enrolment with a code; answers the recovery codes, shown once', body: CodeBody, response: TotpConfirmed },
  'POST /auth/mfa/totp/disable': { summary: 'Turn TOTP off with a code', body: CodeBody, response: TotpDisabled },
};

export function authRoutes(ctx: AppContext): RouteModule {
  const v1 = router();
  // Brute-force guard on credentials (not in the spec's table; generous for real use).
  const credentialLimit = rateLimit(ctx, 'auth', 30, byIp);
  const id = ctx.config.identity;
  const resendLimiter = ctx.rateLimiter({ keyPrefix: 'resend-verification', points: id.resendVerificationPerHour, durationSeconds: HOUR });
  const forgotIpLimiter = ctx.rateLimiter({ keyPrefix: 'forgot-password-ip', points: id.forgotPasswordPerIpPerHour, durationSeconds: HOUR });
  const forgotEmailLimiter = ctx.rateLimiter({ keyPrefix: 'forgot-password-email', points: id.forgotPasswordPerEmailPerHour, durationSeconds: HOUR });
  const mfaAttemptLimiter = mfaChallengeLimiter(ctx);
  const mfaFailures = mfaFailureLimit(ctx);

  v1.post('/auth/register', credentialLimit, async (req, res) => {
    if (!ctx.config.allowRegistration) throw new DomainError('REGISTRATION_DISABLED', 'Registration is disabled on this server.');
    const body = decode(RegisterBody, req.body);
    const { user, position } = await registerUser(ctx, commandContext(ctx, req), body);
    await ctx.runner.waitFor(position, ctx.config.readYourWritesMs);
    respond(res, Registered, { id: user.userId, email: user.email, name: user.name, createdAt: user.registeredAt }, 201);
  });

  v1.post('/auth/login', credentialLimit, async (req, res) => {
    const body = decode(LoginBody, req.body);
    const r = await login(ctx, commandContext(ctx, req), body, originOf(req));
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    respond(res, Tokens, { accessToken: r.accessToken, refreshToken: r.refreshToken, expiresIn: r.expiresIn });
  });

  // Second step of a sign-in with TOTP enrolled: the challenge from 401 MFA_REQUIRED and a code.
  v1.post('/auth/login/mfa', credentialLimit, async (req, res) => {
    const body = decode(MfaLoginBody, req.body);
    // A few codes per challenge (then sign in again), on top of the per-IP credential limit.
    const challenge = challengeOf(ctx, body.challenge);
    await consumeRateLimit(ctx, mfaAttemptLimiter, id.mfaAttemptsPerChallenge, challenge.challengeId, res);
    // And a few wrong codes per account per hour, whatever the challenge or route.
    const r = await mfaFailures.guard(challenge.userId, () => loginWithMfa(ctx, commandContext(ctx, req), body, originOf(req)));
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    respond(res, Tokens, { accessToken: r.accessToken, refreshToken: r.refreshToken, expiresIn: r.expiresIn });
  });

  v1.post('/auth/verify-email', credentialLimit, async (req, res) => {
    const body = decode(TokenBody, req.body);
    const r = await verifyEmail(ctx, commandContext(ctx, req), body.token);
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    respond(res, EmailVerified, { emailVerified: true });
  });

  v1.post('/auth/resend-verification', requireAuth(ctx), async (req, res) => {
    decode(EmptyBody, req.body ?? {});
    const userId = authOf(req).userId;
    await consumeRateLimit(ctx, resendLimiter, id.resendVerificationPerHour, userId, res);
    const r = await requestEmailVerification(ctx, commandContext(ctx, req), userId);
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    respond(res, VerificationResent, { emailVerified: r.alreadyVerified, sent: r.sent }, 202);
  });

  v1.post('/auth/forgot-password', async (req, res) => {
    const body = decode(ForgotBody, req.body);
    const email = body.email.trim().toLowerCase();
    await consumeRateLimit(ctx, forgotIpLimiter, id.forgotPasswordPerIpPerHour, byIp(req), res);
    await consumeRateLimit(ctx, forgotEmailLimiter, id.forgotPasswordPerEmailPerHour, email, res);
    const cc = commandContext(ctx, req);
    // Answered before the look-up: the same answer, in the same time, whether or not the address has an account. What
    // follows (after a random pause, the same steps for both but the account's append: see requestPasswordReset) must not tell either.
    respond(res, ResetRequested, { message: 'If an account uses this address, a reset link is on its way.' }, 202);
    requestPasswordReset(ctx, cc, email).catch((err: unknown) => ctx.logger.error({ errName: err instanceof Error ? err.name : 'unknown' }, 'password reset request failed'));
  });

  v1.post('/auth/reset-password', credentialLimit, async (req, res) => {
    const body = decode(ResetBody, req.body);
    const r = await resetPassword(ctx, commandContext(ctx, req), body.token, body.password);
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    respond(res, PasswordReset, { passwordReset: true, sessionsRevoked: true });
  });

  // An e-mailed invitation accepted by someone without an account: account (pre-verified) + membership + session.
  v1.post('/auth/accept-invitation', credentialLimit, async (req, res) => {
    const body = decode(InvitationSignupBody, req.body);
    const r = await acceptInvitationAsNewcomer(ctx, commandContext(ctx, req), body, originOf(req));
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    respond(res, InvitationSignup, { user: { id: r.userId, email: r.email, emailVerified: true }, workspaceId: r.workspaceId, accessToken: r.accessToken, refreshToken: r.refreshToken, expiresIn: r.expiresIn }, 201);
  });

  // OpenID Connect: start at the provider (302), come back with a code (the flow's secrets ride in a sealed, HttpOnly cookie).
  v1.get('/auth/oidc/start', credentialLimit, async (req, res) => {
    const r = await beginSso(ctx, ctx.now());
    const secure = ctx.config.baseUrl.startsWith('https:') ? '; Secure' : '';
    res.setHeader('Set-Cookie', `${FLOW_COOKIE}=${r.sealedFlow}; Path=/v1/auth/oidc; HttpOnly; SameSite=Lax; Max-Age=600${secure}`);
    res.redirect(302, r.url);
  });

  v1.get('/auth/oidc/callback', credentialLimit, async (req, res) => {
    const callbackUrl = `${ctx.config.oidc?.redirectUri ?? ''}${req.originalUrl.slice(req.originalUrl.indexOf('?') >= 0 ? req.originalUrl.indexOf('?') : req.originalUrl.length)}`;
    res.setHeader('Set-Cookie', `${FLOW_COOKIE}=; Path=/v1/auth/oidc; HttpOnly; SameSite=Lax; Max-Age=0`);
    const flow = cookieOf(req, FLOW_COOKIE);
    if (isConsoleFlow(ctx, flow)) {
      // Started from the web console: its httpOnly cookie session, then back to the console (never a token in the page).
      try {
        const r = await finishSso(ctx, commandContext(ctx, req), callbackUrl, flow, originOf(req));
        await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
        setConsoleCookie(ctx, res, r.refreshToken);
        res.redirect(302, '/app/');
      } catch (err) {
        if (!(err instanceof DomainError)) throw err;
        // The account has a second factor: the sign-in page's code form, the challenge in the fragment (never sent to a server).
        const challenge = err.code === 'MFA_REQUIRED' ? (err.details as { challenge?: unknown } | undefined)?.challenge : undefined;
        if (typeof challenge === 'string') res.redirect(302, `/app/signin#mfaChallenge=${encodeURIComponent(challenge)}`);
        else res.redirect(302, `/app/signin?ssoError=${encodeURIComponent(err.code)}`);
      }
      return;
    }
    const r = await finishSso(ctx, commandContext(ctx, req), callbackUrl, flow, originOf(req));
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    respond(res, SsoSignedIn, { user: r.user, accessToken: r.accessToken, refreshToken: r.refreshToken, expiresIn: r.expiresIn });
  });

  v1.get('/auth/options', (_req, res) => {
    respond(res, SignInOptions, { registration: ctx.config.allowRegistration, sso: ctx.config.oidc !== undefined && ctx.identityProvider !== undefined });
  });

  // Keys, sessions and the second factor are managed from a signed-in session: a leaked key must not mint its own
  // replacements, nor enrol a second factor of its own (the owner could not sign in again: a reset leaves it on),
  // nor sign the owner out of every session again and again (they could never stay signed in long enough to revoke it).
  const requireSession = [
    requireAuth(ctx),
    (req: Request, _res: Response, next: NextFunction) =>
      next(
        authOf(req).authMethod === 'session'
          ? undefined
          : new DomainError('FORBIDDEN', `${req.path.startsWith('/auth/mfa') ? 'Two-step sign-in is' : req.path.startsWith('/auth/sessions') ? 'Sessions are' : 'API keys are'} managed from a signed-in session, not with an API key.`),
      ),
  ];

  v1.get('/auth/sessions', requireAuth(ctx), async (req, res) => {
    const a = authOf(req);
    respond(res, SessionList, { data: await listSessions(ctx, a.userId, a.sessionId) });
  });

  // Sign out every other session (the caller's own stays).
  v1.delete('/auth/sessions', ...requireSession, async (req, res) => {
    const a = authOf(req);
    const r = await revokeAllSessions(ctx, commandContext(ctx, req), a.userId, 'revoked_by_user', a.sessionId);
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    respond(res, SessionsRevoked, { revoked: r.revoked });
  });

  v1.delete('/auth/sessions/:sessionId', ...requireSession, async (req, res) => {
    const r = await revokeSession(ctx, commandContext(ctx, req), authOf(req).userId, idParam(req, 'sessionId', 'SESSION_NOT_FOUND', 'Session not found.'));
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    res.status(204).end();
  });

  v1.get('/auth/security-events', requireAuth(ctx), async (req, res) => {
    respond(res, SecurityEventList, { data: await accountEvents(ctx, authOf(req).userId, 200) });
  });

  v1.post('/auth/mfa/totp', ...requireSession, async (req, res) => {
    decode(EmptyBody, req.body ?? {});
    const a = authOf(req);
    const r = await startTotpEnrollment(ctx, commandContext(ctx, req), a.userId, a.sessionId ?? '');
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    respond(res, TotpEnrollment, { otpauthUri: r.otpauthUri, secret: r.secret }, 201);
  });

  v1.post('/auth/mfa/totp/confirm', ...requireSession, async (req, res) => {
    const body = decode(CodeBody, req.body);
    const r = await confirmTotp(ctx, commandContext(ctx, req), authOf(req).userId, body.code);
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    respond(res, TotpConfirmed, { mfaEnabled: true, recoveryCodes: r.recoveryCodes });
  });

  v1.post('/auth/mfa/totp/disable', ...requireSession, async (req, res) => {
    const body = decode(CodeBody, req.body);
    const userId = authOf(req).userId;
    const r = await mfaFailures.guard(userId, () => disableTotp(ctx, commandContext(ctx, req), userId, body.code));
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    respond(res, TotpDisabled, { mfaEnabled: false });
  });

  v1.post('/auth/refresh', credentialLimit, async (req, res) => {
    const body = decode(RefreshBody, req.body);
    try {
      const r = await refresh(ctx, commandContext(ctx, req), body.refreshToken, originOf(req));
      await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
      respond(res, Tokens, { accessToken: r.accessToken, refreshToken: r.refreshToken, expiresIn: r.expiresIn });
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
    respond(res, Me, { id: user.id, email: user.email, name: user.name, emailVerified: user.emailVerified === true, mfaEnabled: user.mfa === 'on' });
  });

  v1.post('/api-keys', ...requireSession, async (req, res) => {
    const body = decode(ApiKeyBody, req.body);
    const r = await createApiKey(ctx, commandContext(ctx, req), authOf(req).userId, body.name);
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    respond(res, ApiKeyCreated, { id: r.id, name: r.name, key: r.key, createdAt: r.createdAt }, 201);
  });

  v1.get('/api-keys', ...requireSession, async (req, res) => {
    respond(res, ApiKeyList, { data: await listApiKeys(ctx, authOf(req).userId) });
  });

  v1.delete('/api-keys/:id', ...requireSession, async (req, res) => {
    const r = await revokeApiKey(ctx, commandContext(ctx, req), authOf(req).userId, idParam(req, 'id', 'API_KEY_NOT_FOUND', 'API key not found.'));
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    res.status(204).end();
  });

  return { v1, docs: authDocs };
}
