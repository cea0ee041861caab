import { AppContext } from '../../src/app/context';
import { CommandContext } from '../../src/core/commandHandler';
import { SearchLinkCommand, searchLinkDecider } from '../../src/domain/searchLink/decider';
import { searchLinkStream } from '../../src/domain/searchLink/events';
import { runCommand, RunCommandDeps } from '../shared/runCommand';

/** What the search-link use cases need: the log, the read models, and the config (token key, read-your-writes). */
export type SearchLinkDeps = RunCommandDeps & Pick<AppContext, 'readStore'>;

export const runSearchLinkCommand = (deps: RunCommandDeps, cc: CommandContext, linkId: string, workspaceId: string, command: SearchLinkCommand) =>
  runCommand(deps, searchLinkStream(linkId), searchLinkDecider, command, { ...cc, workspaceId }, { workspaceId });
