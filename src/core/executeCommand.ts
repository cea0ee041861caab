import { DomainEvent } from '../domain/event';
import { EventStore } from '../ports/eventStore';
import { CommandContext, CommandResult, Decider, handleCommand } from './commandHandler';

/** What a use case needs to run a command and let its caller read its own write. */
export interface CommandPorts {
  eventStore: EventStore;
  runner: { waitFor(position: number, timeoutMs?: number): Promise<boolean> };
  config: { readYourWritesMs: number };
}

/**
 * Run a command through the one command handler, then wait (bounded) until the read
 * models have applied it, so the caller's next read sees its write.
 */
export async function executeCommand<S, C, E extends DomainEvent>(
  ports: CommandPorts,
  streamId: string,
  decider: Decider<S, C, E>,
  command: C,
  context: CommandContext,
  options: { workspaceId?: string } = {},
): Promise<CommandResult<S, E>> {
  const result = await handleCommand(ports.eventStore, streamId, decider, command, context, options);
  await ports.runner.waitFor(result.position, ports.config.readYourWritesMs);
  return result;
}
