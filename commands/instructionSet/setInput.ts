import { AppContext } from '../../src/app/context';
import { InstructionSetView } from '../../queries/instructionSet/instructionSetQueries';

/** What the instruction-set use cases need: the log, the read models, and read-your-writes. */
export type InstructionSetDeps = Pick<AppContext, 'eventStore' | 'runner' | 'config' | 'readStore'>;

/** The set a command runs on, as the caller's query found it. */
export type SetRef = Pick<InstructionSetView, 'id' | 'workspaceId'>;

/** A blank description is no description. */
export const blankToNull = (s: string | null | undefined): string | null | undefined => (s === undefined ? undefined : s === null || s.trim() === '' ? null : s.trim());
