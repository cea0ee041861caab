import { RouteDocs } from '../openapi/routeDocs';
import { Request } from 'express';
import * as t from 'io-ts';
import { AppContext } from '../../app/context';
import { DomainError } from '../../domain/errors';
import { getWorkspace, listMembers, listPendingInvitations, listTags, listWorkspaces } from '../../../queries/workspace/workspaceQueries';
import { createWorkspace } from '../../../commands/workspace/createWorkspace';
import { updateWorkspace } from '../../../commands/workspace/updateWorkspace';
import { deleteWorkspace } from '../../../commands/workspace/deleteWorkspace';
import { addMember, changeMemberRole, removeMember, transferOwnership } from '../../../commands/workspace/members';
import { acceptInvitation, inviteMember, revokeInvitation } from '../../../commands/workspace/invitations';
import { createTag, deleteTag, updateTag } from '../../../commands/workspace/tags';
import { enforceIdentityRequirements, authOf, requireAuth, requireWorkspaceRole } from '../auth';
import { boundedString, decode, Email, HexColor, HumanName, Purpose, Role, strict } from '../codecs';
import { commandContext } from '../exec';
import { RouteModule, router } from './module';
import { InvitationCreated, InvitationList, Member, MemberList, respond, Tag, TagList, WorkspaceCreated, WorkspaceDetail, WorkspaceList } from '../responses';
import { idParam, Uuid } from '../ids';
import { UUID_PATTERN } from '../../domain/ids';

/** Headers of GET /v1/workspaces: the caller's workspaces left out of the list, and why. */
const WITHHELD_HEADER = 'KB-Workspaces-Withheld';
const WITHHELD_REASONS_HEADER = 'KB-Workspaces-Withheld-Reasons';

const Name = HumanName(200);
const TransferResult = t.type({ data: MemberList });
const TagName = HumanName(50);
const CreateBody = strict(t.type({ name: Name }));
const Settings = strict(t.partial({ allowPublicSearchLinks: t.boolean, defaultDocumentPurpose: Purpose, requireMfa: t.boolean, requireVerifiedEmail: t.boolean }));
const UpdateBody = strict(t.partial({ name: Name, settings: Settings }));
const AddMemberBody = strict(t.type({ userId: boundedString(1, 100), role: Role }));
const RoleBody = strict(t.type({ role: Role }));
const InviteBody = strict(t.type({ email: Email, role: Role }));
const TransferBody = strict(t.type({ userId: Uuid }));
const TagBody = strict(t.type({ name: TagName, color: HexColor }));
const TagPatch = strict(t.partial({ name: TagName, color: HexColor }));

/** The JSON body codecs of these routes (property tests walk them). */
export const workspaceBodies = { CreateBody, UpdateBody, AddMemberBody, RoleBody, InviteBody, TransferBody, TagBody, TagPatch };

/** The API description of these routes (schemas from the codecs above). */
export const workspaceDocs: RouteDocs = {
  'POST /workspaces': { summary: 'Create a workspace (you are its OWNER)', body: CreateBody, status: 201, response: WorkspaceCreated, example: { name: 'Support' } },
  'GET /workspaces': {
    summary: 'Your workspaces',
    description:
      'The workspaces you can access. A workspace whose `requireMfa` or `requireVerifiedEmail` setting you do not meet (its own routes answer 403 `MFA_ENROLMENT_REQUIRED` / `EMAIL_NOT_VERIFIED`) is left out; the `KB-Workspaces-Withheld` header counts them and `KB-Workspaces-Withheld-Reasons` says why, so you can enrol a second factor (`POST /v1/auth/mfa/totp`) or verify your e-mail address to see them again.',
    response: WorkspaceList,
    responseHeaders: [
      { name: WITHHELD_HEADER, description: 'How many of your workspaces are left out because you do not meet their identity settings (0 when none).', schema: { type: 'string', pattern: '^[0-9]+$' } },
      {
        name: WITHHELD_REASONS_HEADER,
        description: 'Only when some are left out: `CODE=count` pairs separated by `, ` in the codes\' alphabetical order, the code being what the workspace\'s routes answer (`MFA_ENROLMENT_REQUIRED`, `EMAIL_NOT_VERIFIED`).',
        schema: { type: 'string' },
      },
    ],
  },
  'GET /workspaces/:id': { summary: 'One workspace', response: WorkspaceDetail },
  'PUT /workspaces/:id': { summary: 'Rename a workspace or change its settings (ADMIN)', body: UpdateBody, response: WorkspaceDetail, example: { settings: { allowPublicSearchLinks: false } } },
  'DELETE /workspaces/:id': { summary: 'Delete a workspace (OWNER)', status: 204, produces: 'none' },
  'GET /workspaces/:id/members': { summary: 'Members of a workspace', response: MemberList },
  'POST /workspaces/:id/members': { summary: 'Add a member (ADMIN)', body: AddMemberBody, status: 201, response: Member },
  'PATCH /workspaces/:id/members/:userId': { summary: "Change a member's role (ADMIN)", body: RoleBody, response: Member, example: { role: 'ADMIN' } },
  'DELETE /workspaces/:id/members/:userId': { summary: 'Remove a member (ADMIN)', status: 204, produces: 'none' },
  'POST /workspaces/:id/invite': { summary: 'Invite someone by e-mail (ADMIN)', body: InviteBody, status: 201, response: InvitationCreated, example: { email: 'bob@example.com', role: 'MEMBER' } },
  'GET /workspaces/:id/invitations': {
    summary: 'Invitations not yet accepted (ADMIN)',
    description: 'Newest first, at most 200 (`total` counts them all); each `PENDING` or `EXPIRED`. Accepted and revoked invitations are not listed.',
    response: InvitationList,
  },
  'DELETE /workspaces/:id/invitations/:invitationId': { summary: 'Revoke a pending invitation (ADMIN): its link no longer works', status: 204, produces: 'none' },
  'POST /workspaces/:id/transfer-ownership': {
    summary: 'Transfer ownership to another member (OWNER)',
    description: 'The member becomes OWNER and you become ADMIN, in one event (`OwnershipTransferred`, shown in the audit trail). Answers the members afterwards.',
    body: TransferBody,
    response: TransferResult,
    example: { userId: '0b7c6f1e-8a8d-4c1e-9f55-3d1f2a4b5c6d' },
  },
  'POST /invitations/:invitationId/accept': {
    summary: 'Accept an invitation: answers the workspace joined',
    description:
      'By the signed-in user whose address the invitation names (anyone else: 404 INVITATION_NOT_FOUND), and only once that address is confirmed: else 403 EMAIL_NOT_VERIFIED, nothing recorded (confirm it with the mailed link; `POST /v1/auth/resend-verification` mails it again), for whoever registered an address without owning its mailbox could otherwise join. When the workspace requires more of the caller (`requireMfa` for sessions), the membership is recorded but the answer is that requirement\'s 403 (MFA_ENROLMENT_REQUIRED) with `details: {accepted: true, workspaceId}`, as the workspace\'s own routes answer until it is met.',
    response: WorkspaceDetail,
  },
  'GET /workspaces/:id/tags': { summary: 'Tags of a workspace', response: TagList },
  'POST /workspaces/:id/tags': { summary: 'Create a tag (ADMIN)', body: TagBody, status: 201, response: Tag, example: { name: 'Billing', color: '#112233' } },
  'PUT /workspaces/:id/tags/:tagId': { summary: 'Rename or recolour a tag (ADMIN)', body: TagPatch, response: Tag },
  'DELETE /workspaces/:id/tags/:tagId': { summary: 'Delete a tag (ADMIN)', status: 204, produces: 'none' },
};

const ID = UUID_PATTERN;

/** A path id that cannot name a workspace is simply not found (never a 500). */
function workspaceIdOf(req: Request): string {
  const id = String(req.params.id);
  if (!ID.test(id)) throw new DomainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
  return id.toLowerCase();
}

/**
 * The member a write answers with. It is read back after the write; should the read model not
 * show it yet (the bounded read-your-writes wait ran out), the write is done and the client is
 * asked to read the members again, rather than sent an empty body.
 */
function memberOrRetry<M>(member: M | undefined): M {
  if (member === undefined) throw new DomainError('SERVICE_UNAVAILABLE', 'The change is saved but not yet readable; list the members again.');
  return member;
}

const memberIdOf = (req: Request): string => idParam(req, 'userId', 'MEMBER_NOT_FOUND', 'The user is not a member of this workspace.');
const tagIdOf = (req: Request): string => idParam(req, 'tagId', 'TAG_NOT_FOUND', 'Tag not found.');

export function workspaceRoutes(ctx: AppContext): RouteModule {
  const v1 = router();
  v1.use('/workspaces', requireAuth(ctx));
  v1.use('/invitations', requireAuth(ctx));
  // Every /v1/workspaces/:id/... route (this module's and the later ones'): the workspace's identity settings.
  v1.use('/workspaces/:id', (req, _res, next) => {
    enforceIdentityRequirements(ctx, req, String(req.params.id)).then(() => next(), next);
  });

  const cc = (req: Request) => commandContext(ctx, req);
  /** The workspace of the path, once the caller is known to hold at least `role` in it. */
  const workspaceAs = async (req: Request, role: Parameters<typeof requireWorkspaceRole>[3]) => {
    const id = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, id, role);
    return id;
  };

  v1.post('/workspaces', async (req, res) => {
    const body = decode(CreateBody, req.body);
    respond(res, WorkspaceCreated, await createWorkspace(ctx, cc(req), body), 201);
  });

  v1.get('/workspaces', async (req, res) => {
    const auth = authOf(req);
    const { workspaces, withheld } = await listWorkspaces(ctx, auth.userId, auth.authMethod);
    // Workspaces left out because their identity settings ask more of the caller (their own routes answer 403 with these codes).
    let count = 0;
    for (const n of withheld.values()) count += n;
    res.setHeader(WITHHELD_HEADER, String(count));
    // In the codes' order (the memberships come in no order).
    if (count > 0) res.setHeader(WITHHELD_REASONS_HEADER, [...withheld].sort(([a], [b]) => (a < b ? -1 : 1)).map(([reason, n]) => `${reason}=${n}`).join(', '));
    respond(res, WorkspaceList, workspaces);
  });

  v1.get('/workspaces/:id', async (req, res) => {
    respond(res, WorkspaceDetail, await getWorkspace(ctx, workspaceIdOf(req), authOf(req).userId));
  });

  v1.put('/workspaces/:id', async (req, res) => {
    const id = await workspaceAs(req, 'ADMIN');
    respond(res, WorkspaceDetail, await updateWorkspace(ctx, cc(req), id, decode(UpdateBody, req.body)));
  });

  v1.delete('/workspaces/:id', async (req, res) => {
    await deleteWorkspace(ctx, cc(req), await workspaceAs(req, 'OWNER'));
    res.status(204).end();
  });

  v1.get('/workspaces/:id/members', async (req, res) => {
    respond(res, MemberList, await listMembers(ctx, await workspaceAs(req, 'MEMBER')));
  });

  v1.post('/workspaces/:id/members', async (req, res) => {
    const id = await workspaceAs(req, 'ADMIN');
    respond(res, Member, memberOrRetry(await addMember(ctx, cc(req), id, decode(AddMemberBody, req.body))), 201);
  });

  v1.patch('/workspaces/:id/members/:userId', async (req, res) => {
    const id = await workspaceAs(req, 'ADMIN');
    const body = decode(RoleBody, req.body);
    respond(res, Member, memberOrRetry(await changeMemberRole(ctx, cc(req), id, { userId: memberIdOf(req), role: body.role })));
  });

  v1.delete('/workspaces/:id/members/:userId', async (req, res) => {
    const id = await workspaceAs(req, 'MEMBER');
    await removeMember(ctx, cc(req), id, memberIdOf(req));
    res.status(204).end();
  });

  v1.post('/workspaces/:id/invite', async (req, res) => {
    const id = await workspaceAs(req, 'ADMIN');
    respond(res, InvitationCreated, await inviteMember(ctx, cc(req), id, decode(InviteBody, req.body)), 201);
  });

  v1.get('/workspaces/:id/invitations', async (req, res) => {
    respond(res, InvitationList, await listPendingInvitations(ctx, await workspaceAs(req, 'ADMIN'), ctx.now()));
  });

  v1.delete('/workspaces/:id/invitations/:invitationId', async (req, res) => {
    const id = await workspaceAs(req, 'ADMIN');
    await revokeInvitation(ctx, cc(req), id, idParam(req, 'invitationId', 'INVITATION_NOT_FOUND', 'Invitation not found.'));
    res.status(204).end();
  });

  v1.post('/workspaces/:id/transfer-ownership', async (req, res) => {
    const id = await workspaceAs(req, 'OWNER');
    const body = decode(TransferBody, req.body);
    respond(res, TransferResult, { data: await transferOwnership(ctx, cc(req), id, body.userId) });
  });

  v1.post('/invitations/:invitationId/accept', async (req, res) => {
    const { workspaceId } = await acceptInvitation(ctx, cc(req), { invitationId: idParam(req, 'invitationId', 'INVITATION_NOT_FOUND', 'Invitation not found.'), actorEmail: authOf(req).email });
    // The membership is recorded. The workspace itself is shown only to a caller who meets its
    // identity settings (requireMfa, requireVerifiedEmail), as on every route of the workspace:
    // otherwise the same 403, saying that the invitation was accepted (it cannot be accepted again).
    await enforceIdentityRequirements(ctx, req, workspaceId).catch((err: unknown) => {
      if (err instanceof DomainError && (err.code === 'MFA_ENROLMENT_REQUIRED' || err.code === 'EMAIL_NOT_VERIFIED')) {
        const what = err.code === 'MFA_ENROLMENT_REQUIRED' ? 'two-factor authentication' : 'a verified e-mail address';
        throw new DomainError(err.code, `Invitation accepted: you are a member now. This workspace requires ${what}; it opens once you have it.`, { accepted: true, workspaceId });
      }
      throw err;
    });
    respond(res, WorkspaceDetail, await getWorkspace(ctx, workspaceId, authOf(req).userId));
  });

  v1.get('/workspaces/:id/tags', async (req, res) => {
    respond(res, TagList, { data: await listTags(ctx, await workspaceAs(req, 'MEMBER')) });
  });

  v1.post('/workspaces/:id/tags', async (req, res) => {
    const id = await workspaceAs(req, 'ADMIN');
    respond(res, Tag, await createTag(ctx, cc(req), id, decode(TagBody, req.body)), 201);
  });

  v1.put('/workspaces/:id/tags/:tagId', async (req, res) => {
    const id = await workspaceAs(req, 'ADMIN');
    const body = decode(TagPatch, req.body);
    respond(res, Tag, await updateTag(ctx, cc(req), id, tagIdOf(req), body));
  });

  v1.delete('/workspaces/:id/tags/:tagId', async (req, res) => {
    const id = await workspaceAs(req, 'ADMIN');
    await deleteTag(ctx, cc(req), id, tagIdOf(req));
    res.status(204).end();
  });

  return { v1, docs: workspaceDocs };
}
