import { CommandContext } from '../../src/core/commandHandler';
import { Purpose } from '../../src/domain/document/events';
import { getWorkspace } from '../../queries/workspace/workspaceQueries';
import { userById } from '../../queries/user/userQueries';
import { DomainError } from '../../src/domain/errors';
import { actorOf, runWorkspaceCommand, WorkspaceDeps } from './runWorkspaceCommand';

export interface UpdateWorkspaceInput {
  name?: string;
  settings?: { allowPublicSearchLinks?: boolean; defaultDocumentPurpose?: Purpose; requireMfa?: boolean; requireVerifiedEmail?: boolean };
}

/** Rename a workspace or change its settings; returns the workspace as its caller now sees it. */
export async function updateWorkspace(deps: WorkspaceDeps, cc: CommandContext, workspaceId: string, input: UpdateWorkspaceInput) {
  const actorId = actorOf(cc);
  // Whoever turns a requirement on must meet it (else they would lock themselves out).
  if (input.settings?.requireMfa || input.settings?.requireVerifiedEmail) {
    const me = await userById(deps, actorId);
    if (input.settings.requireMfa && me?.mfa !== 'on') throw new DomainError('MFA_ENROLMENT_REQUIRED', 'Enable two-factor authentication yourself before requiring it.');
    if (input.settings.requireVerifiedEmail && me?.emailVerified !== true) throw new DomainError('EMAIL_NOT_VERIFIED', 'Verify your own e-mail address before requiring it.');
  }
  await runWorkspaceCommand(deps, cc, workspaceId, { type: 'UpdateWorkspace', actorId, name: input.name?.trim(), settings: input.settings, now: cc.now });
  return getWorkspace(deps, workspaceId, actorId);
}
