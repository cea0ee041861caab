import fs from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { MailMessage, MailSender, messageIdOf } from '../../ports/mail';

const envelopeOf = (from: string, m: MailMessage) => ({
  from,
  to: m.to,
  subject: m.subject,
  text: m.text,
  messageId: messageIdOf(m.id),
  headers: { 'X-KB-Message': m.id },
});

/**
 * The embedded default: each message is written as `<outbox>/<id>.eml` (RFC 5322, composed by
 * nodemailer's stream transport). Written to a temporary name and renamed, so a reader never
 * sees half a file, and the same id overwrites the same file (a resend is not a second mail).
 */
export function outboxMailSender(dir: string, from: string): MailSender {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    kind: 'outbox',
    async send(m) {
      if (!/^[0-9a-zA-Z-]+$/.test(m.id)) throw new Error('mail id must be a plain id');
      const info = await transport.sendMail(envelopeOf(from, m));
      const file = path.join(dir, `${m.id}.eml`);
      const tmp = `${file}.tmp`;
      await fs.promises.writeFile(tmp, info.message as Buffer, { mode: 0o600 });
      await fs.promises.rename(tmp, file);
    },
    close: async () => transport.close(),
  };
}

export interface SmtpOptions {
  url: string;
  from: string;
  /** Refuse a server whose certificate does not verify (default true). */
  tlsRejectUnauthorized: boolean;
  /** Require STARTTLS on a plain connection. */
  requireTls: boolean;
  /** Bound on connecting, greeting and each socket inactivity (ms). */
  timeoutMs: number;
}

/** SMTP through nodemailer (`smtp://user:pass@host:587`, `smtps://...:465`). */
export function smtpMailSender(o: SmtpOptions): MailSender {
  const transport = nodemailer.createTransport({
    url: o.url,
    requireTLS: o.requireTls,
    tls: { rejectUnauthorized: o.tlsRejectUnauthorized },
    connectionTimeout: o.timeoutMs,
    greetingTimeout: o.timeoutMs,
    socketTimeout: o.timeoutMs,
  } as unknown as Parameters<typeof nodemailer.createTransport>[0]);
  return {
    kind: 'smtp',
    async send(m) {
      await transport.sendMail(envelopeOf(o.from, m));
    },
    close: async () => transport.close(),
  };
}
