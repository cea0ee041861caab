import { ExternalIdentity, IdentityProvider, PendingAuthorization } from '../../ports/identityProvider';

/** The part of openid-client (v6, ESM only) used here. */
interface OpenIdClient {
  discovery(server: URL, clientId: string, metadata?: string, auth?: unknown, options?: { execute?: ((c: unknown) => void)[]; timeout?: number }): Promise<unknown>;
  allowInsecureRequests(c: unknown): void;
  randomPKCECodeVerifier(): string;
  calculatePKCECodeChallenge(v: string): Promise<string>;
  randomState(): string;
  randomNonce(): string;
  buildAuthorizationUrl(c: unknown, p: Record<string, string>): URL;
  authorizationCodeGrant(c: unknown, url: URL, checks: { pkceCodeVerifier: string; expectedState: string; expectedNonce: string; idTokenExpected: boolean }): Promise<{ access_token: string; claims(): Record<string, unknown> | undefined }>;
  fetchUserInfo(c: unknown, accessToken: string, expectedSubject: string): Promise<Record<string, unknown>>;
}

// A real import() (TypeScript would turn `import()` into require(), which cannot load ESM).
const importEsm = new Function('s', 'return import(s)') as (s: string) => Promise<OpenIdClient>;

export interface OidcOptions {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Bound on discovery and token requests (ms). */
  timeoutMs: number;
}

/**
 * OpenID Connect through openid-client: discovery (once, lazily, retried after a failure),
 * authorization code flow with PKCE (S256), state and nonce. Plain http issuers are accepted
 * only on loopback addresses (tests, local IdPs).
 */
export function openidClientProvider(o: OidcOptions): IdentityProvider {
  let loaded: Promise<{ lib: OpenIdClient; config: unknown }> | null = null;
  const load = () => {
    loaded ??= (async () => {
      const lib = await importEsm('openid-client');
      const url = new URL(o.issuer);
      const loopback = url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
      const config = await lib.discovery(url, o.clientId, o.clientSecret, undefined, { execute: loopback ? [lib.allowInsecureRequests] : [], timeout: Math.ceil(o.timeoutMs / 1000) });
      return { lib, config };
    })().catch((err: unknown) => {
      loaded = null;
      throw err;
    });
    return loaded;
  };
  return {
    issuer: o.issuer,
    async begin(redirectUri) {
      const { lib, config } = await load();
      const pending: PendingAuthorization = { state: lib.randomState(), nonce: lib.randomNonce(), codeVerifier: lib.randomPKCECodeVerifier() };
      const url = lib.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: 'openid email profile',
        response_type: 'code',
        code_challenge: await lib.calculatePKCECodeChallenge(pending.codeVerifier),
        code_challenge_method: 'S256',
        state: pending.state,
        nonce: pending.nonce,
      });
      return { url: url.href, pending };
    },
    async finish(callbackUrl, pending): Promise<ExternalIdentity> {
      const { lib, config } = await load();
      const tokens = await lib.authorizationCodeGrant(config, new URL(callbackUrl), { pkceCodeVerifier: pending.codeVerifier, expectedState: pending.state, expectedNonce: pending.nonce, idTokenExpected: true });
      const idClaims = tokens.claims() ?? {};
      if (typeof idClaims.sub !== 'string') throw new Error('the ID token has no sub');
      // Providers may keep e-mail claims out of the ID token: then they come from userinfo (same sub checked).
      const c = typeof idClaims.email === 'string' ? idClaims : { ...(await lib.fetchUserInfo(config, tokens.access_token, idClaims.sub)), iss: idClaims.iss, sub: idClaims.sub };
      if (typeof c.sub !== 'string' || typeof c.email !== 'string') throw new Error('the provider gave no e-mail address');
      return {
        issuer: typeof c.iss === 'string' ? c.iss : o.issuer,
        subject: c.sub,
        email: c.email,
        emailVerified: c.email_verified === true,
        ...(typeof c.name === 'string' ? { name: c.name } : {}),
      };
    },
  };
}
