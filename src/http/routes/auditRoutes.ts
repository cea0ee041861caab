import { RouteModule } from './module';
import { AppContext } from '../../app/context';

// Routes of this feature are added by the feature's issue; nothing is mounted yet.
export function auditRoutes(_ctx: AppContext): RouteModule {
  return {};
}
