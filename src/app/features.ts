import { AppContext } from './context';
import { Projection } from '../core/projection';
import { userProjection } from '../../projections/user/userProjection';
import { workspaceProjection } from '../../projections/workspace/workspaceProjection';
import { documentProjection } from '../../projections/document/documentProjection';
import { searchIndexProjection } from '../../projections/searchIndex/searchIndexProjection';
import { documentProcessorService } from '../processing/documentProcessor';
import { instructionSetProjection } from '../../projections/instructionSet/instructionSetProjection';
import { instructionSetDocumentCleanup } from '../../commands/instructionSet/documentCleanup';
import { searchLinkProjection } from '../../projections/searchLink/searchLinkProjection';
import { queryHistorySweeper } from '../../queries/searchLink/linkUsage';
import { auditProjection } from '../../projections/audit/auditProjection';
import { erasureService } from '../audit/erasureService';

type ProjectionFactory = (ctx: Omit<AppContext, 'runner' | 'projections' | 'services'>) => Projection;
type ServiceFactory = (ctx: AppContext) => AppContext['services'][number];

/**
 * Read models kept up to date from the log, in the order they are started and rebuilt.
 * Features add theirs here.
 */
export const projectionFactories: ProjectionFactory[] = [(c) => userProjection(c.readStore), (c) => workspaceProjection(c.readStore), (c) => documentProjection(c.readStore), (c) => searchIndexProjection(c), (c) => instructionSetProjection(c.readStore), (c) => searchLinkProjection(c.readStore), (c) => auditProjection(c.readStore)];

/** Background services (process managers such as the document processor). */
export const serviceFactories: ServiceFactory[] = [(c) => documentProcessorService(c), (c) => instructionSetDocumentCleanup(c), (c) => queryHistorySweeper(c), (c) => erasureService(c)];
