/** What a sign-in at the organisation's OpenID provider proved. */
export interface ExternalIdentity {
  issuer: string;
  subject: string;
  email: string;
  emailVerified: boolean;
  name?: string;
}

/** The secrets of one authorization request, kept (sealed) by the browser until the callback. */
export interface PendingAuthorization {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** An OpenID Connect provider (authorization code flow with PKCE). */
export interface IdentityProvider {
  readonly issuer: string;
  /** Where to send the browser, and what the callback will need. */
  begin(redirectUri: string): Promise<{ url: string; pending: PendingAuthorization }>;
  /** Exchange the code of the callback URL (state, nonce and PKCE checked). */
  finish(callbackUrl: string, pending: PendingAuthorization): Promise<ExternalIdentity>;
}

export const IDENTITY_PROVIDER = Symbol('IDENTITY_PROVIDER');
