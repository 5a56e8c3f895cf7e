import type { Usage } from '@lunation/contract';
import { useEffect, useState } from 'preact/hooks';
import type { Api } from './api.js';
import type { RunSummary, RunTimeline, TimelineEntry, TimelineWorker } from './api-types.js';
import { messageOf } from './chat-view.js';
import { runLabel, startedAt } from './run-labels.js';

/**
 * A run's durable timeline, from the store alone: steps with their model calls (usage, latency), tool
 * executions (re-run after a crash, or answered from the ledger), checkpoints, suspensions and resumes, lease
 * takeovers, and which process ran each part.
 */
export function TimelineView(props: { api: Api; threadId: string; runId: string }) {
  const [answer, setAnswer] = useState<RunTimeline | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [label, setLabel] = useState<string | undefined>();
  const threadPath = `/threads/${encodeURIComponent(props.threadId)}`;
  const path = `${threadPath}/runs/${encodeURIComponent(props.runId)}/timeline`;
  const load = () =>
    props.api
      .json<RunTimeline>(path)
      .then((loaded) => {
        setAnswer(loaded);
        setError(undefined);
      })
      .catch((failure: unknown) => setError(messageOf(failure)));
  useEffect(() => {
    void load();
    // The run's number in its thread, for the heading (its id's start is the same for every run of a process).
    props.api
      .json<{ runs: RunSummary[] }>(`${threadPath}/runs?limit=100`)
      .then(({ runs }) => {
        const index = runs.findIndex((run) => run.runId === props.runId);
        if (index !== -1) setLabel(runLabel(runs[index]!, index));
      })
      .catch(() => undefined);
  }, [path]);
  const workers = answer ? workerNames(answer.workers) : new Map<string, string>();
  const start = answer?.entries[0]?.at ?? 0;
  return (
    <section class="timeline" aria-labelledby="timeline-title">
      <h2 id="timeline-title" tabIndex={-1}>
        Timeline of{' '}
        {label
          ? label.replace(/^Run/, 'run')
          : answer
            ? `the run started ${startedAt(answer.run.createdAt)}`
            : 'a run'}
      </h2>
      <p class="run-id">
        Run id <code>{props.runId}</code>
      </p>
      <p>
        <a href={`#/threads/${encodeURIComponent(props.threadId)}`}>Back to the thread</a>{' '}
        <button type="button" onClick={() => void load()}>
          Refresh timeline
        </button>
      </p>
      {error && <p role="alert">{error}</p>}
      {answer && (
        <>
          <dl class="run-summary" aria-label="Run summary">
            <div>
              <dt>Status</dt>
              <dd>
                {answer.run.status}
                {answer.run.termination ? ` (${answer.run.termination.type})` : ''}
              </dd>
            </div>
            <div>
              <dt>Steps</dt>
              <dd>{answer.run.steps}</dd>
            </div>
            <div>
              <dt>Tokens</dt>
              <dd>{usageText(answer.run.usage)}</dd>
            </div>
            <div>
              <dt>Processes</dt>
              <dd>{[...workers.values()].join(', ') || 'unknown'}</dd>
            </div>
          </dl>
          <ol class="timeline-entries" aria-label="Timeline entries">
            {answer.entries.map((entry, index) => (
              <li key={index} class={`timeline-entry timeline-${entry.kind}`}>
                <span class="at">+{((entry.at - start) / 1000).toFixed(2)} s</span>
                <TimelineLine entry={entry} workers={workers} />
              </li>
            ))}
          </ol>
        </>
      )}
    </section>
  );
}

function TimelineLine({ entry, workers }: { entry: TimelineEntry; workers: Map<string, string> }) {
  const who = (worker: TimelineWorker | null) =>
    worker ? (workers.get(workerKey(worker)) ?? worker.owner) : 'unknown process';
  switch (entry.kind) {
    case 'run-created':
      return <span>Run created</span>;
    case 'step':
      return (
        <span>
          <strong>Step {entry.step}</strong> on <span class="worker">{who(entry.worker)}</span>
          {entry.leaseToken !== null && <> (lease {entry.leaseToken})</>} · model call
          {entry.model.latencyMs === null ? '' : ` ${entry.model.latencyMs} ms`}
          {entry.model.usage ? `, ${usageText(entry.model.usage)}` : ''}
        </span>
      );
    case 'checkpoint':
      return (
        <span>
          Checkpoint: {entry.messages.map((message) => `#${message.seq} ${message.role}`).join(', ')}{' '}
          committed
        </span>
      );
    case 'tool':
      return (
        <span>
          Tool <code>{entry.toolName}</code> {entry.status}
          {entry.step !== null && <> (step {entry.step})</>}
          {entry.durationMs !== null && <> in {entry.durationMs} ms</>}
          {entry.attempts > 1 && <> · {entry.attempts} attempts</>}
          {entry.rerun && <span class="badge warn">re-run after a crash</span>}
          {entry.fromLedger && <span class="badge">result from the ledger</span>}
          {entry.isError && <span class="badge error">error</span>}
        </span>
      );
    case 'suspended':
      return (
        <span>
          Suspended at step {entry.step} on <span class="worker">{who(entry.worker)}</span>: waiting for{' '}
          {entry.tickets.length} decision{entry.tickets.length === 1 ? '' : 's'}
        </span>
      );
    case 'resumed':
    case 'recovered':
      return (
        <span>
          {entry.kind === 'resumed' ? 'Resumed' : <span class="badge warn">Recovered after a crash</span>} at
          step {entry.step} on <span class="worker">{who(entry.worker)}</span>
          {entry.leaseToken !== null && <> (lease {entry.leaseToken})</>}
        </span>
      );
    case 'lease-takeover':
      return (
        <span>
          <span class="badge warn">Lease takeover</span> at step {entry.step}: lease {entry.fromToken} of{' '}
          <span class="worker">{who(entry.from)}</span> → lease {entry.toToken} of{' '}
          <span class="worker">{who(entry.to)}</span>
        </span>
      );
    case 'run-ended':
      return (
        <span>
          Run ended: {entry.status}
          {entry.termination ? ` (${entry.termination.type})` : ''}
        </span>
      );
    default:
      return <span>{JSON.stringify(entry)}</span>;
  }
}

function workerKey(worker: TimelineWorker): string {
  return `${worker.owner}#${worker.incarnation ?? ''}`;
}

/**
 * Short names for the processes of a run, in order of appearance: "process 1 (instance 5f0c1a2b)", with the lease
 * owner when the server shows it (it hides it from signed-in tenants: owners hold host names and folders).
 */
function workerNames(workers: readonly TimelineWorker[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const worker of workers) {
    const details = [
      ...(/^process \d+$/.test(worker.owner) ? [] : [worker.owner]),
      ...(worker.incarnation ? [`instance ${worker.incarnation.slice(0, 8)}`] : []),
    ];
    names.set(
      workerKey(worker),
      `process ${names.size + 1}${details.length ? ` (${details.join(', ')})` : ''}`,
    );
  }
  return names;
}

function usageText(usage: Usage): string {
  return `${usage.inputTokens} in / ${usage.outputTokens} out tokens`;
}
