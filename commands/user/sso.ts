import { randomBytes } from 'node:crypto';
import { AppContext } from '../../src/app/context';
import { CommandContext, handleCommand, loadState } from '../../src/core/commandHandler';
import { DomainError } from '../../src/domain/errors';
import { userDecider } from '../../src/domain/user/deciders';
import { userStream } from '../../src/domain/user/events';
import { ExternalIdentity, IdentityProvider, PendingAuthorization } from '../../src/ports/identityProvider';
import { identityKeys } from '../../src/security/identityKeys';
import { hashPassword, sha256Hex } from '../../src/util/crypto';
import { userByEmail } from '../../queries/user/userQueries';
import { signMfaChallenge, SsoLinkClaim } from '../../src/security/accessTokens';
import { normalizeEmail, passwordFingerprint, registerUser, SessionOrigin, startSession } from './userCommands';
import { revokeClaimedCredentials } from './sessions';

/** An address as registration accepts them, stricter: one `@`, a dotted domain without empty labels (no trailing dot), no spaces or controls. */
// eslint-disable-next-line no-control-regex -- control characters are what it refuses
const ADDRESS = /^[^\s@\u0000-\u001f\u007f]{1,64}@[^\s@.\u0000-\u001f\u007f]+(?:\.[^\s@.\u0000-\u001f\u007f]+)+$/;

const FLOW_AAD = 'oidc-flow';
const failed = (why: string) => new DomainError('SSO_FAILED', `Single sign-on failed: ${why}.`);

function providerOf(ctx: AppContext): IdentityProvider {
  if (!ctx.identityProvider || !ctx.config.oidc) throw new DomainError('SSO_NOT_CONFIGURED', 'Single sign-on is not configured on this server.');
  return ctx.identityProvider;
}

/**
 * Start a sign-in at the provider: its URL, and the flow's secrets (state, nonce, PKCE
 * verifier) sealed with the identity key for the browser to keep (a cookie) until the callback.
 */
export async function beginSso(ctx: AppContext, now: Date, opts: { console?: boolean } = {}) {
  const idp = providerOf(ctx);
  const { url, pending } = await idp.begin(ctx.config.oidc!.redirectUri).catch(() => {
    throw new DomainError('SERVICE_UNAVAILABLE', 'The identity provider cannot be reached.');
  });
  // `console`: started from the web console, whose callback ends in its cookie session (sealed with the rest, so it cannot be switched on).
  const flow = { ...pending, exp: now.getTime() + 10 * 60_000, ...(opts.console ? { console: true } : {}) };
  return { url, sealedFlow: identityKeys(ctx).sealSeed(Buffer.from(JSON.stringify(flow)), FLOW_AAD) };
}

/** Whether a sealed flow was started by the web console (false for anything that does not open). */
export function isConsoleFlow(ctx: AppContext, sealed: string | undefined): boolean {
  const raw = sealed ? identityKeys(ctx).openSeed(sealed, FLOW_AAD) : null;
  if (!raw) return false;
  try {
    return (JSON.parse(raw.toString('utf8')) as { console?: unknown }).console === true;
  } catch {
    return false;
  }
}

function openFlow(ctx: AppContext, sealed: string | undefined, now: Date): PendingAuthorization {
  const raw = sealed ? identityKeys(ctx).openSeed(sealed, FLOW_AAD) : null;
  if (!raw) throw failed('the sign-in was not started from this browser');
  const f = JSON.parse(raw.toString('utf8')) as PendingAuthorization & { exp: number };
  if (typeof f.exp !== 'number' || f.exp <= now.getTime()) throw failed('the sign-in took too long; start again');
  return { state: f.state, nonce: f.nonce, codeVerifier: f.codeVerifier };
}

/**
 * Finish a sign-in: exchange the code (state, nonce, PKCE checked), require an address the
 * provider verified and in an allowed domain, link the account with that address (or create
 * it, already verified) to the provider's `sub`, and start a session.
 */
export async function finishSso(ctx: AppContext, cc: CommandContext, callbackUrl: string, sealedFlow: string | undefined, origin: SessionOrigin) {
  const idp = providerOf(ctx);
  const pending = openFlow(ctx, sealedFlow, cc.now);
  let id: ExternalIdentity;
  try {
    id = await idp.finish(callbackUrl, pending);
  } catch (err) {
    ctx.logger.warn({ errName: err instanceof Error ? err.name : 'unknown', errMessage: err instanceof Error ? err.message : String(err) }, 'OIDC code exchange failed');
    throw failed('the provider did not confirm the sign-in');
  }
  if (!id.emailVerified) throw failed('the provider has not verified this e-mail address');
  const email = normalizeEmail(id.email);
  // The claim is the provider's, but it decides the account and the domain check: it must be an address.
  if (email.length > 254 || !ADDRESS.test(email)) throw failed('the provider gave no usable e-mail address');
  const domain = email.slice(email.lastIndexOf('@') + 1);
  const allowed = ctx.config.oidc!.allowedDomains;
  if (allowed.length > 0 && !allowed.includes(domain)) throw new DomainError('SSO_DOMAIN_NOT_ALLOWED', `Accounts of ${domain} cannot sign in here.`);

  let user = await userByEmail(ctx, email);
  let created = false;
  if (!user) {
    // No password anyone knows: the account signs in through the provider (or resets one by mail).
    // The provider's name, held to what registration accepts (no control characters or line breaks, 200 at most).
    // eslint-disable-next-line no-control-regex -- control characters are what it removes
    const name = (id.name ?? '').replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').trim().slice(0, 200) || email.split('@')[0];
    const reg = await registerUser(ctx, cc, { email, password: randomBytes(32).toString('base64url'), name, emailVerified: true });
    await ctx.runner.waitFor(reg.position, ctx.config.readYourWritesMs);
    user = await userByEmail(ctx, email);
    if (!user) throw new DomainError('SERVICE_UNAVAILABLE', 'The account is being created; try again.');
    created = true;
  }
  // A second factor enrolled here is asked for after the provider too, as after a password: the provider's
  // sign-in (maybe without a second factor of its own) must not skip it, nor count as it for a workspace's requireMfa.
  // Nor may it link its `sub` to the account before the factor is passed: whoever controls an account at the
  // provider asserting this address would otherwise have it recorded without the code, and the owner's own single
  // sign-on would then be refused (SSO_ACCOUNT_MISMATCH). The link rides in the signed challenge and is recorded by
  // POST /v1/auth/login/mfa once the code is right; an abandoned or failed challenge records nothing.
  if (user.mfa === 'on') {
    // A link the account could never take (another `sub` of this provider) is refused now, not after the code.
    const { state } = await loadState(ctx.eventStore, userStream(sha256Hex(email)), userDecider);
    const linked = state.exists ? state.sso.get(id.issuer) : undefined;
    if (linked !== undefined && linked !== id.subject) throw new DomainError('SSO_ACCOUNT_MISMATCH', 'This account is linked to another identity at the provider.');
    throw new DomainError('MFA_REQUIRED', 'Enter the code from your authenticator app.', {
      challenge: signMfaChallenge(ctx, user.id, passwordFingerprint(user.passwordHash), linked === id.subject ? undefined : { issuer: id.issuer, subject: id.subject }),
      expiresIn: ctx.config.identity.mfaChallengeTtl,
    });
  }
  const link = await linkSsoIdentity(ctx, cc, user.id, email, { issuer: id.issuer, subject: id.subject });
  const session = await startSession(ctx, cc, user.id, origin, 'sso');
  return { ...session, user: { id: user.id, email, created }, position: Math.max(link.position, session.position) };
}

/**
 * Record the provider's `sub` on the account (nothing when it is already there; SSO_ACCOUNT_MISMATCH when
 * another is). An address never proven is claimed: its password is replaced by one nobody knows (the decider
 * judges that from the stream, not from the read model, which may lag) and whoever registered it loses their
 * sessions and keys. Called by the callback, or by the MFA step that a single sign-on's challenge leads to.
 */
export async function linkSsoIdentity(ctx: AppContext, cc: CommandContext, userId: string, email: string, sso: SsoLinkClaim): Promise<{ position: number }> {
  const passwordHash = await hashPassword(randomBytes(32).toString('base64url'));
  const link = await handleCommand(ctx.eventStore, userStream(sha256Hex(email)), userDecider, { type: 'LinkSsoIdentity', issuer: sso.issuer, subject: sso.subject, passwordHash, now: cc.now }, { ...cc, actorId: userId });
  const linked = link.events[0];
  if (linked?.type === 'SsoIdentityLinked' && linked.data.claimedUnverified) {
    // Whoever registered the address without proving it signed in with that password: their sessions and keys end here (before this session starts).
    await ctx.runner.waitFor(link.position, ctx.config.readYourWritesMs);
    await revokeClaimedCredentials(ctx, { ...cc, actorId: userId, authMethod: 'system' }, userId, linked.data.linkedAt);
  }
  return { position: link.position };
}
