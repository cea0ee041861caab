import { randomUUID } from 'node:crypto';
import { AppContext } from '../../src/app/context';
import { RecordedEvent } from '../../src/domain/event';
import { checkpointedConsumer, eachEvent, followingService, readStoreCheckpoint } from '../../src/core/consumer';
import { MailMessage, MailSender } from '../../src/ports/mail';
import { identityKeys, MailTokenPurpose } from '../../src/security/identityKeys';
import { revokeAllSessions, revokeApiKeysCreatedBefore, revokeClaimedCredentials } from './sessions';
import { joinByInvitation } from './invitationSignup';

const CHECKPOINT = 'identity_mailer';

/** Mails already handed to the mail port, by the id of the event that asked for them. */
interface SentMail {
  id: string;
  sentAt: string;
}

interface Mailable {
  purpose: MailTokenPurpose;
  subjectId: string;
  requestId: string;
  to: string;
  expiresAt: string;
  /** Path of the page the link opens, under KB_APP_URL. */
  path: string;
  subject: string;
  body: (link: string, expiresAt: string) => string;
}

/** What the mailer acts on: the three mails (mailableOf) and the three follow-ups in `handle`. */
export const MAILER_EVENT_TYPES: ReadonlySet<string> = new Set(['EmailVerificationRequested', 'PasswordResetRequested', 'InvitationCreated', 'PasswordReset', 'SsoIdentityLinked', 'UserRegistered']);

function mailableOf(e: RecordedEvent): Mailable | null {
  const d = e.data as { userId?: string; workspaceId?: string; requestId?: string; invitationId?: string; email: string; expiresAt: string };
  switch (e.type) {
    case 'EmailVerificationRequested':
      return {
        purpose: 'verify-email',
        subjectId: d.userId as string,
        requestId: d.requestId as string,
        to: d.email,
        expiresAt: d.expiresAt,
        path: '/verify-email',
        subject: 'Confirm your e-mail address',
        body: (link, exp) => `Confirm your e-mail address by opening this link:\n\n${link}\n\nThe link works once and expires at ${exp}.\nIf you did not create an account, ignore this mail.\n`,
      };
    case 'PasswordResetRequested':
      return {
        purpose: 'reset-password',
        subjectId: d.userId as string,
        requestId: d.requestId as string,
        to: d.email,
        expiresAt: d.expiresAt,
        path: '/reset-password',
        subject: 'Reset your password',
        body: (link, exp) =>
          `Someone (hopefully you) asked to reset the password of your account.\n\nChoose a new password here:\n\n${link}\n\nThe link works once and expires at ${exp}. Using it signs you out everywhere.\nIf you did not ask, ignore this mail: your password stays as it is.\n`,
      };
    case 'InvitationCreated':
      return {
        purpose: 'invitation',
        subjectId: d.workspaceId as string,
        requestId: d.invitationId as string,
        to: d.email,
        expiresAt: d.expiresAt,
        path: '/accept-invitation',
        subject: 'You are invited to a knowledge-base workspace',
        body: (link, exp) =>
          `You have been invited to join a workspace.\n\nAccept the invitation here (it creates your account if you have none):\n\n${link}\n\nThe invitation expires at ${exp}.\n`,
      };
    default:
      return null;
  }
}

/** The mail itself: its token (derived under the identity key) in the link, and the text. */
function messageOf(ctx: AppContext, id: string, m: Mailable): MailMessage {
  const token = identityKeys(ctx).mailToken(m.purpose, m.subjectId, m.requestId);
  const base = `${ctx.config.appUrl}${m.path}`;
  return { id, to: m.to, subject: m.subject, text: m.body(`${base}?token=${encodeURIComponent(token)}`, m.expiresAt) };
}

/**
 * A password-reset mail composed as the mailer composes one (token, link, text) for made-up ids, and
 * thrown away: the work a reset request of an address without an account does in place of an account's
 * (see requestPasswordReset). Never sent, never logged.
 */
export function composeDecoyResetMail(ctx: AppContext, email: string, expiresAt: Date): void {
  const m = mailableOf({ id: randomUUID(), type: 'PasswordResetRequested', data: { userId: randomUUID(), requestId: randomUUID(), email, expiresAt: expiresAt.toISOString() } } as unknown as RecordedEvent);
  if (m) messageOf(ctx, randomUUID(), m);
}

/**
 * Process manager: sends the mails the log asks for (verification, password reset,
 * invitation), completes the membership of an account created from an invitation, and signs every session out after a password reset.
 *
 * Idempotent by event id: an event whose id is in `mail_sent` is not sent again, and the id
 * is recorded right after the port accepted the message. A crash between those two steps
 * sends the mail again on restart (SMTP offers no exactly-once); the message keeps the same
 * Message-ID (derived from the event id) and the same token, and the outbox overwrites the
 * same file, so the duplicate is recognisably the same mail. A crash before the send loses
 * nothing: the checkpoint has not moved. A request that expired while the server was down is
 * not mailed.
 *
 * The token is derived from the request id under the identity key (never in the log).
 */
export function identityMailer(ctx: AppContext, mail: MailSender): AppContext['services'][number] {
  const sent = ctx.readStore.collection<SentMail>('mail_sent');

  const handle = async (e: RecordedEvent) => {
    if (e.type === 'PasswordReset') {
      const { userId, resetAt, claimedUnverified } = e.data as { userId: string; resetAt: string; claimedUnverified?: true };
      if (!(await ctx.runner.waitFor(e.position, 30_000))) throw new Error('read models did not catch up; retrying');
      const cc = { actorId: userId, authMethod: 'system' as const, correlationId: e.metadata.correlationId, now: new Date() };
      await revokeAllSessions(ctx, cc, userId, 'password_reset');
      if (claimedUnverified) await revokeApiKeysCreatedBefore(ctx, cc, userId, resetAt);
      return;
    }
    if (e.type === 'SsoIdentityLinked') {
      const d = e.data as { userId: string; linkedAt: string; claimedUnverified?: true };
      if (!d.claimedUnverified) return;
      if (!(await ctx.runner.waitFor(e.position, 30_000))) throw new Error('read models did not catch up; retrying');
      // Again from the log (the route did it first): what was issued before the claim, not the session it started.
      await revokeClaimedCredentials(ctx, { actorId: d.userId, authMethod: 'system', correlationId: e.metadata.correlationId, now: new Date() }, d.userId, d.linkedAt);
      return;
    }
    if (e.type === 'UserRegistered') {
      const d = e.data as { userId: string; email: string; invitation?: { workspaceId: string; invitationId: string } };
      if (!d.invitation) return;
      if (!(await ctx.runner.waitFor(e.position, 30_000))) throw new Error('read models did not catch up; retrying');
      // The account was created by accepting an invitation: the membership follows (idempotent; the route usually did it already).
      await joinByInvitation(ctx, { actorId: d.userId, authMethod: 'system', correlationId: e.metadata.correlationId, now: new Date() }, d.invitation.invitationId, d.email);
      return;
    }
    const m = mailableOf(e);
    if (!m) return;
    if (await sent.get(e.id)) return;
    if (Date.parse(m.expiresAt) <= ctx.now().getTime()) {
      ctx.logger.info({ mailId: e.id, kind: m.purpose }, 'mail not sent: its link expired before it could be sent');
      return;
    }
    const message = messageOf(ctx, e.id, m);
    const base = `${ctx.config.appUrl}${m.path}`;
    await mail.send(message);
    await sent.put({ id: e.id, sentAt: ctx.now().toISOString() });
    // Never the token: the link as far as its path, and where the mail went.
    if (ctx.config.mail.logLinks) ctx.logger.info({ mailId: e.id, kind: m.purpose, via: mail.kind, link: `${base}?token=<redacted>` }, 'mail sent');
  };

  const consumer = checkpointedConsumer({ name: CHECKPOINT, checkpoint: readStoreCheckpoint(ctx.readStore, CHECKPOINT), handle: eachEvent(handle), eventTypes: MAILER_EVENT_TYPES });
  return {
    ...followingService(ctx.eventStore, consumer, { onError: (err) => ctx.logger.error({ errName: err instanceof Error ? err.name : 'unknown', errMessage: err instanceof Error ? err.message : String(err) }, 'identity mailer failed; retrying') }),
    name: 'identity-mailer',
  };
}
