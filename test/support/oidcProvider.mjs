// A real OpenID provider (oidc-provider, ESM only) for the SSO tests, run as a child process:
//   node test/support/oidcProvider.mjs <port> <redirectUri>
// Accounts are fixed below; the login form accepts any of their ids (dev interactions).
import Provider from 'oidc-provider';

const [port, redirectUri] = process.argv.slice(2);
const accounts = new Map([
  ['alice', { email: 'alice@corp.example', email_verified: true, name: 'Alice Corp' }],
  ['bob', { email: 'bob@corp.example', email_verified: true, name: 'Bob' }],
  ['carol', { email: 'carol@corp.example', email_verified: true, name: 'Carol' }],
  ['mallory', { email: 'mallory@elsewhere.example', email_verified: true, name: 'Mallory' }],
  ['unverified', { email: 'unverified@corp.example', email_verified: false, name: 'U' }],
  ['dave', { email: 'dave@corp.example', email_verified: true, name: 'Dave' }],
  ['erin', { email: 'erin@corp.example', email_verified: true, name: 'Erin' }],
  ['gina', { email: 'gina@corp.example', email_verified: true, name: 'Gina' }],
  // Another person at the provider asserting gina's (verified) address: a rogue or compromised provider account.
  ['gina-impostor', { email: 'gina@corp.example', email_verified: true, name: 'Not Gina' }],
  ['upper', { email: 'Upper@CORP.Example', email_verified: true, name: 'Upper' }],
  ['trailingdot', { email: 'td@corp.example.', email_verified: true, name: 'TD' }],
  ['subdomain', { email: 'sd@sub.corp.example', email_verified: true, name: 'SD' }],
  ['quotedat', { email: 'evil.example@corp.example@evil.example', email_verified: true, name: 'Q' }],
  ['noaddress', { email: 'corp.example', email_verified: true, name: 'NA' }],
  ['controls', { email: 'ctl\n@corp.example', email_verified: true, name: 'C' }],
  ['noclaim', { email: 'noclaim@corp.example', name: 'NC' }],
  ['linebreaks', { email: 'lb@corp.example', email_verified: true, name: 'Line\nBreak\u0000Name\u2028' }],
]);

const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [{ client_id: 'kb', client_secret: 'kb-test-secret', redirect_uris: [redirectUri], grant_types: ['authorization_code'], response_types: ['code'] }],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  scopes: ['openid', 'email', 'profile'],
  findAccount: async (_ctx, id) => (accounts.has(id) ? { accountId: id, claims: async () => ({ sub: id, ...accounts.get(id) }) } : undefined),
  // Consent is given in advance (the organisation's own client).
  loadExistingGrant: async (ctx) => {
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile');
    grant.addOIDCClaims(['email', 'email_verified', 'name']);
    await grant.save();
    return grant;
  },
  pkce: { required: () => true },
  cookies: { keys: ['kb-test-cookie-key'] },
  features: { devInteractions: { enabled: true } },
});
provider.listen(Number(port), '127.0.0.1', () => console.log('OIDC_READY'));
