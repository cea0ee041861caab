/** One outgoing mail. `id` is stable for a message (the id of the event that asked for it). */
export interface MailMessage {
  id: string;
  to: string;
  subject: string;
  text: string;
}

/**
 * Sends mail. Adapters: an outbox folder (`KB_DATA_DIR/outbox/`, the embedded default) and
 * SMTP (`KB_SMTP_URL`). Sending the same message id twice may deliver twice (SMTP cannot
 * promise otherwise); the Message-ID header is derived from the id so receivers can drop a
 * duplicate, and the outbox overwrites the same file.
 */
export interface MailSender {
  readonly kind: 'outbox' | 'smtp';
  send(message: MailMessage): Promise<void>;
  close(): Promise<void>;
}

export const MAIL_SENDER = Symbol('MAIL_SENDER');

/** The Message-ID of a message: derived from its id, so a resend is recognisably the same mail. */
export const messageIdOf = (id: string, domain = 'kb.local'): string => `<${id}@${domain}>`;
