import express from 'express';
import { AppContext } from '../app/context';
import { DependencyContainer } from 'tsyringe';
import { APP_CONTEXT } from '../app/context';
import { optional, STORED_EVENT_STORE } from '../app/tokens';
import { EventStore, EVENT_STORE } from '../ports/eventStore';
import { EVENT_FEED, EventFeed } from '../ports/eventFeed';
import { JOB_QUEUE, JobQueue } from '../ports/jobQueue';
import { READ_STORE, ReadStore } from '../ports/readStore';
import { ProjectionRunner } from '../core/projectionRunner';
import { createApp } from '../http/app';
import { feedPublisherProjection, processingDispatcherProjection } from './pipelineProjections';
import { healthApp } from './healthApp';
import { Component, planRole, RolePlan, RoleParts } from './plan';

function runnerComponent(name: string, runner: ProjectionRunner): Component {
  return { name, start: () => runner.start(), stop: () => runner.stop() };
}

/** The parts of this process, resolved from the composition root's container. */
export function partsOf(di: DependencyContainer): { parts: RoleParts; owned: Component[] } {
  const ctx = di.resolve<AppContext>(APP_CONTEXT);
  const readStore = di.resolve<ReadStore>(READ_STORE);
  const eventFeed = optional<EventFeed>(di, EVENT_FEED);
  const jobQueue = optional<JobQueue>(di, JOB_QUEUE);
  const owned: Component[] = [];
  let feedPublisher: Component | undefined;
  let dispatcher: Component | undefined;
  if (eventFeed) {
    // The feed carries events as stored: document text sealed, erasable by key destruction.
    const runner = new ProjectionRunner(di.resolve<EventStore>(STORED_EVENT_STORE), [feedPublisherProjection(readStore, eventFeed)], ctx.logger);
    feedPublisher = runnerComponent('feed-publisher', runner);
    owned.push(feedPublisher);
  }
  if (jobQueue && eventFeed) {
    const runner = new ProjectionRunner(di.resolve<EventStore>(EVENT_STORE), [processingDispatcherProjection(readStore, jobQueue)], ctx.logger);
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

/** Starts this process's share of the work for KB_ROLE, and returns its HTTP app. */
export async function startRole(di: DependencyContainer): Promise<RunningRole> {
  const ctx = di.resolve<AppContext>(APP_CONTEXT);
  const { role, feed } = ctx.config;
  if (feed === 'none' && (role === 'worker' || role === 'projector')) {
    ctx.logger.warn({ role }, 'KB_FEED=none: the document processor follows the log; run exactly one worker (KB_FEED=kafka shares the work among several)');
  }
  const { parts, owned } = partsOf(di);
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
