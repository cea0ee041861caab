import { Request } from 'express';
import { randomUUID } from 'node:crypto';
import { AppContext } from '../app/context';
import { CommandContext, CommandResult, Decider } from '../core/commandHandler';
import { DomainEvent } from '../domain/event';
import { runCommand } from '../../commands/shared/runCommand';
import './types';

export function commandContext(ctx: AppContext, req: Request, workspaceId?: string): CommandContext {
  return {
    actorId: req.auth?.userId ?? null,
    authMethod: req.auth?.authMethod ?? 'system',
    correlationId: req.correlationId ?? randomUUID(),
    now: ctx.now(),
    ...(workspaceId ? { workspaceId } : {}),
  };
}

/**
 * Run a command for an HTTP request and wait (bounded) until the read models have
 * applied it, so the client's next read sees its write.
 */
export async function execute<S, C, E extends DomainEvent>(
  ctx: AppContext,
  req: Request,
  streamId: string,
  decider: Decider<S, C, E>,
  command: C,
  options: { workspaceId?: string } = {},
): Promise<CommandResult<S, E>> {
  return runCommand(ctx, streamId, decider, command, commandContext(ctx, req, options.workspaceId), options);
}
