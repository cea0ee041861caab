import { AppContext } from '../../src/app/context';
import { CommandContext } from '../../src/core/commandHandler';
import { SearchLinkCommand, searchLinkDecider } from '../../src/domain/searchLink/decider';
import { searchLinkStream } from '../../src/domain/searchLink/events';
import { CommandPorts, executeCommand } from '../../src/core/executeCommand';

/** What the search-link use cases need: the log, the read models, and the config (token key, read-your-writes). */
export type SearchLinkDeps = CommandPorts & Pick<AppContext, 'readStore' | 'config'>;

export const runSearchLinkCommand = (deps: CommandPorts, cc: CommandContext, linkId: string, workspaceId: string, command: SearchLinkCommand) =>
  executeCommand(deps, searchLinkStream(linkId), searchLinkDecider, command, { ...cc, workspaceId }, { workspaceId });
