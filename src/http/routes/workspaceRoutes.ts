import { Request } from 'express';
import * as t from 'io-ts';
import { randomUUID } from 'node:crypto';
import { AppContext } from '../../app/context';
import { DomainError } from '../../domain/errors';
import { workspaceDecider, WorkspaceCommand } from '../../domain/workspace/decider';
import { workspaceStream } from '../../domain/workspace/events';
import { getInvitation, getWorkspace, listMembers, listTags, listWorkspaces } from '../../../queries/workspace/workspaceQueries';
import { usersCollection } from '../../../projections/user/userProjection';
import { authOf, requireAuth, requireWorkspaceRole } from '../auth';
import { boundedString, decode, Email, HexColor, HumanName, Purpose, Role, strict } from '../codecs';
import { execute } from '../exec';
import { RouteModule, router } from './module';
import { idParam, isUuid } from '../ids';

const Name = HumanName(200);
const TagName = HumanName(50);
const CreateBody = strict(t.type({ name: Name }));
const Settings = strict(t.partial({ allowPublicSearchLinks: t.boolean, defaultDocumentPurpose: Purpose }));
const UpdateBody = strict(t.partial({ name: Name, settings: Settings }));
const AddMemberBody = strict(t.type({ userId: boundedString(1, 100), role: Role }));
const RoleBody = strict(t.type({ role: Role }));
const InviteBody = strict(t.type({ email: Email, role: Role }));
const TagBody = strict(t.type({ name: TagName, color: HexColor }));
const TagPatch = strict(t.partial({ name: TagName, color: HexColor }));

/** The JSON body codecs of these routes (property tests walk them). */
export const workspaceBodies = { CreateBody, UpdateBody, AddMemberBody, RoleBody, InviteBody, TagBody, TagPatch };

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path id that cannot name a workspace is simply not found (never a 500). */
function workspaceIdOf(req: Request): string {
  const id = String(req.params.id);
  if (!ID.test(id)) throw new DomainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
  return id.toLowerCase();
}

const memberIdOf = (req: Request): string => idParam(req, 'userId', 'MEMBER_NOT_FOUND', 'The user is not a member of this workspace.');
const tagIdOf = (req: Request): string => idParam(req, 'tagId', 'TAG_NOT_FOUND', 'Tag not found.');

export function workspaceRoutes(ctx: AppContext): RouteModule {
  const v1 = router();
  v1.use('/workspaces', requireAuth(ctx));
  v1.use('/invitations', requireAuth(ctx));

  const run = (req: Request, workspaceId: string, command: WorkspaceCommand) =>
    execute(ctx, req, workspaceStream(workspaceId), workspaceDecider, command, { workspaceId });

  v1.post('/workspaces', async (req, res) => {
    const body = decode(CreateBody, req.body);
    const workspaceId = randomUUID();
    const r = await run(req, workspaceId, { type: 'CreateWorkspace', workspaceId, actorId: authOf(req).userId, name: body.name.trim(), now: ctx.now() });
    const e = r.events[0];
    if (e.type !== 'WorkspaceCreated') throw new Error('unexpected event');
    res.status(201).json({ id: workspaceId, name: e.data.name, createdAt: e.data.createdAt });
  });

  v1.get('/workspaces', async (req, res) => {
    res.json(await listWorkspaces(ctx, authOf(req).userId));
  });

  v1.get('/workspaces/:id', async (req, res) => {
    res.json(await getWorkspace(ctx, workspaceIdOf(req), authOf(req).userId));
  });

  v1.put('/workspaces/:id', async (req, res) => {
    const id = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, id, 'ADMIN');
    const body = decode(UpdateBody, req.body);
    await run(req, id, { type: 'UpdateWorkspace', actorId: authOf(req).userId, name: body.name?.trim(), settings: body.settings, now: ctx.now() });
    res.json(await getWorkspace(ctx, id, authOf(req).userId));
  });

  v1.delete('/workspaces/:id', async (req, res) => {
    const id = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, id, 'OWNER');
    await run(req, id, { type: 'DeleteWorkspace', actorId: authOf(req).userId, now: ctx.now() });
    res.status(204).end();
  });

  v1.get('/workspaces/:id/members', async (req, res) => {
    const id = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, id, 'MEMBER');
    res.json(await listMembers(ctx, id));
  });

  v1.post('/workspaces/:id/members', async (req, res) => {
    const id = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, id, 'ADMIN');
    const body = decode(AddMemberBody, req.body);
    const user = isUuid(body.userId) ? await usersCollection(ctx.readStore).get(body.userId.toLowerCase()) : null;
    if (!user) throw new DomainError('USER_NOT_FOUND', 'No user with this id.');
    await run(req, id, { type: 'AddMember', actorId: authOf(req).userId, userId: user.id, role: body.role, now: ctx.now() });
    const member = (await listMembers(ctx, id)).find((m) => m.userId === user.id);
    res.status(201).json(member);
  });

  v1.patch('/workspaces/:id/members/:userId', async (req, res) => {
    const id = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, id, 'ADMIN');
    const body = decode(RoleBody, req.body);
    const userId = memberIdOf(req);
    await run(req, id, { type: 'ChangeMemberRole', actorId: authOf(req).userId, userId, role: body.role });
    const member = (await listMembers(ctx, id)).find((m) => m.userId === userId);
    res.json(member);
  });

  v1.delete('/workspaces/:id/members/:userId', async (req, res) => {
    const id = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, id, 'MEMBER');
    await run(req, id, { type: 'RemoveMember', actorId: authOf(req).userId, userId: memberIdOf(req) });
    res.status(204).end();
  });

  v1.post('/workspaces/:id/invite', async (req, res) => {
    const id = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, id, 'ADMIN');
    const body = decode(InviteBody, req.body);
    const invitationId = randomUUID();
    const email = body.email.trim().toLowerCase();
    const invitee = (await usersCollection(ctx.readStore).find({ email }, { limit: 1 }))[0];
    const r = await run(req, id, { type: 'InviteMember', actorId: authOf(req).userId, invitationId, email, role: body.role, now: ctx.now(), inviteeUserId: invitee?.id });
    const e = r.events[0];
    if (e.type !== 'InvitationCreated') throw new Error('unexpected event');
    res.status(201).json({ invitationId, email: e.data.email, role: e.data.role, expiresAt: e.data.expiresAt });
  });

  v1.post('/invitations/:invitationId/accept', async (req, res) => {
    const invitationId = String(req.params.invitationId);
    const inv = ID.test(invitationId) ? await getInvitation(ctx, invitationId) : null;
    if (!inv) throw new DomainError('INVITATION_NOT_FOUND', 'Invitation not found.');
    const auth = authOf(req);
    await run(req, inv.workspaceId, { type: 'AcceptInvitation', actorId: auth.userId, actorEmail: auth.email, invitationId, now: ctx.now() });
    res.json(await getWorkspace(ctx, inv.workspaceId, auth.userId));
  });

  v1.get('/workspaces/:id/tags', async (req, res) => {
    const id = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, id, 'MEMBER');
    res.json({ data: await listTags(ctx, id) });
  });

  v1.post('/workspaces/:id/tags', async (req, res) => {
    const id = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, id, 'ADMIN');
    const body = decode(TagBody, req.body);
    const tagId = randomUUID();
    await run(req, id, { type: 'CreateTag', actorId: authOf(req).userId, tagId, name: body.name.trim(), color: body.color.toLowerCase() });
    res.status(201).json({ id: tagId, name: body.name.trim(), color: body.color.toLowerCase() });
  });

  v1.put('/workspaces/:id/tags/:tagId', async (req, res) => {
    const id = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, id, 'ADMIN');
    const body = decode(TagPatch, req.body);
    const tagId = tagIdOf(req);
    await run(req, id, { type: 'UpdateTag', actorId: authOf(req).userId, tagId, name: body.name?.trim(), color: body.color?.toLowerCase() });
    const tag = (await listTags(ctx, id)).find((x) => x.id === tagId);
    if (!tag) throw new DomainError('TAG_NOT_FOUND', 'Tag not found.');
    res.json(tag);
  });

  v1.delete('/workspaces/:id/tags/:tagId', async (req, res) => {
    const id = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, id, 'ADMIN');
    await run(req, id, { type: 'DeleteTag', actorId: authOf(req).userId, tagId: tagIdOf(req) });
    res.status(204).end();
  });

  return { v1 };
}
