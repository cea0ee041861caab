import { Job } from '../ports/jobQueue';

export const PROCESS_DOCUMENT_JOB = 'process-document';

/**
 * The job that processes one run of one document; its id (the run's processingId) is its
 * idempotency key, its group the workspace (fair scheduling across workspaces).
 */
export function processDocumentJob(documentId: string, processingId: string, workspaceId?: string): Job {
  const job: Job = { id: processingId, type: PROCESS_DOCUMENT_JOB, payload: { documentId, processingId } };
  if (workspaceId !== undefined) {
    job.payload.workspaceId = workspaceId;
    job.group = workspaceId;
  }
  return job;
}
