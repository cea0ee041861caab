import express from 'express';
import { AppContext } from '../app/context';
import { infrastructureOf } from '../app/infrastructure';
import { ProjectionRunner } from '../core/projectionRunner';
import { createApp } from '../http/app';
import { feedPublisherProjection, processingDispatcherProjection } from './pipelineProjections';
import { healthApp } from './healthApp';
import { Component, planRole, RolePlan, RoleParts } from './plan';

function runnerComponent(name: string, runner: ProjectionRunner): Component {
  return { name, start: () => runner.start(), stop: () => runner.stop() };
}

/** The parts of this process, from the context the composition root built. */
export function partsOf(ctx: AppContext): { parts: RoleParts; owned: Component[] } {
  const infra = infrastructureOf(ctx);
  const owned: Component[] = [];
  let feedPublisher: Component | undefined;
  let dispatcher: Component | undefined;
  if (infra?.eventFeed) {
    // The feed carries events as stored: document text sealed, erasable by key destruction.
    const runner = new ProjectionRunner(infra.storedEventStore, [feedPublisherProjection(ctx.readStore, infra.eventFeed)], ctx.logger);
    feedPublisher = runnerComponent('feed-publisher', runner);
    owned.push(feedPublisher);
  }
  if (infra?.jobQueue && infra.eventFeed) {
    const runner = new ProjectionRunner(ctx.eventStore, [processingDispatcherProjection(ctx.readStore, infra.jobQueue)], ctx.logger);
    dispatcher = runnerComponent('processing-dispatcher', runner);
    owned.push(dispatcher);
  }
  return { parts: { runner: runnerComponent('projections', ctx.runner), feedPublisher, dispatcher, services: ctx.services }, owned };
}

export interface RunningRole {
  plan: RolePlan;
  app: express.Express;
  /** Stops what the role itself created (the pipeline runners); closeContext stops the rest. */
  stop(): Promise<void>;
}

/** Starts this process's share of the work for `ctx.config.role`, and returns its HTTP app. */
export async function startRole(ctx: AppContext): Promise<RunningRole> {
  const { role, feed } = ctx.config;
  if (feed === 'none' && (role === 'worker' || role === 'projector')) {
    ctx.logger.warn({ role }, 'KB_FEED=none: the document processor follows the log; run exactly one worker (KB_FEED=kafka shares the work among several)');
  }
  const { parts, owned } = partsOf(ctx);
  const plan = planRole(role, parts);
  for (const c of plan.components) await c.start();
  ctx.logger.info({ role, components: plan.components.map((c) => c.name) }, 'role started');
  const app = plan.http === 'api' ? createApp(ctx) : healthApp(ctx, { readiness: role === 'projector' });
  const started = new Set(plan.components);
  return {
    plan,
    app,
    stop: async () => {
      for (const c of [...owned].reverse()) if (started.has(c)) await c.stop().catch(() => undefined);
    },
  };
}
