import { Request } from 'express';
import { randomUUID } from 'node:crypto';
import { AppContext } from '../app/context';
import { CommandContext, CommandResult, Decider, handleCommand } from '../core/commandHandler';
import { DomainEvent } from '../domain/event';
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
  const result = await handleCommand(ctx.eventStore, streamId, decider, command, commandContext(ctx, req, options.workspaceId), options);
  await ctx.runner.waitFor(result.position, ctx.config.readYourWritesMs);
  return result;
}
