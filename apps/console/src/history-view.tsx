import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { Api } from './api.js';
import type { Checkpoint, ForkAnswer, RunSummary, ThreadAnswer } from './api-types.js';
import { followInChat, messageOf } from './chat-view.js';
import { startedAt } from './run-labels.js';
import { storedTitle, titleFromMessage } from './thread-title.js';

/** How a step's fork form forks: from the step, or from before it with its message edited. */
type FormMode = { checkpoint: number; kind: 'fork' | 'edit' };

/** The longest answer text a step shows before "…" (the chat shows it whole). */
const TEXT_LENGTH = 280;

/**
 * A thread's history: its checkpoints, one per step across its runs (what the model said, the calls it made), each
 * with "Fork from here" (optionally with the next message, or answering again from the step) and, for a step that
 * began with a message, "Edit message" (a fork from before it, with the message changed). Forking makes a new
 * thread and opens it; this thread is not changed.
 */
export function HistoryView(props: { api: Api; threadId: string; onChanged(): void }) {
  const { api, threadId } = props;
  const path = `/threads/${encodeURIComponent(threadId)}`;
  const [checkpoints, setCheckpoints] = useState<Checkpoint[] | undefined>();
  const [runNumbers, setRunNumbers] = useState<Map<string, number>>(new Map());
  const [title, setTitle] = useState<string | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [form, setForm] = useState<FormMode | undefined>();
  /** Where focus goes once the page shows it (a form's field, or the button that opened it). */
  const focusNext = useRef<string | undefined>(undefined);

  useLayoutEffect(() => {
    const selector = focusNext.current;
    const target = selector ? document.querySelector<HTMLElement>(selector) : null;
    if (!target) return;
    focusNext.current = undefined;
    target.focus();
  });

  useEffect(() => {
    let cancelled = false;
    void Promise.all([
      api.json<ThreadAnswer>(path),
      api.json<{ checkpoints: Checkpoint[] }>(`${path}/checkpoints`),
      api.json<{ runs: RunSummary[] }>(`${path}/runs?limit=100`).catch(() => ({ runs: [] })),
    ])
      .then(([thread, loaded, { runs }]) => {
        if (cancelled) return;
        const firstInput = loaded.checkpoints.find((checkpoint) => checkpoint.input)?.input;
        setTitle(
          storedTitle(thread.thread) ?? (firstInput ? titleFromMessage(firstInput) : 'Untitled thread'),
        );
        setRunNumbers(new Map(runs.map((run, index) => [run.runId, index + 1])));
        setCheckpoints(loaded.checkpoints);
      })
      .catch((failure: unknown) => {
        if (!cancelled) setError(messageOf(failure));
      });
    return () => {
      cancelled = true;
    };
  }, [path]);

  const open = (mode: FormMode) => {
    setForm(mode);
    focusNext.current = `#fork-input-${mode.checkpoint}`;
  };
  const close = () => {
    if (form) focusNext.current = `#${form.kind}-button-${form.checkpoint}`;
    setForm(undefined);
  };
  const fork = async (body: ForkBody): Promise<void> => {
    const answer = await api.json<ForkAnswer>(`${path}/fork`, { method: 'POST', body });
    props.onChanged();
    if (answer.runId) followInChat(answer.threadId, answer.runId);
    // The new thread opens (focus moves to its heading); with a message or `continue`, its run streams there.
    location.hash = `#/threads/${encodeURIComponent(answer.threadId)}`;
  };

  return (
    <section class="history" aria-labelledby="history-title">
      <h2 id="history-title" tabIndex={-1}>
        History of {title ? `“${title}”` : 'the thread'}
      </h2>
      <p>
        <a href={`#${path}`}>Back to the thread</a>
      </p>
      <p class="hint">
        Each step is a checkpoint: the thread as it was after one model call and the tool calls it made.
        Forking makes a new thread with the steps up to it and opens it. This thread stays as it is, and no
        tool call of it runs again (unless you ask for a waiting step's calls to run again).
      </p>
      {error && <p role="alert">{error}</p>}
      {checkpoints?.length === 0 && <p class="empty">No steps yet: send a message first.</p>}
      {checkpoints && checkpoints.length > 0 && (
        <ol class="checkpoints" aria-label="Steps">
          {checkpoints.map((checkpoint) => (
            <CheckpointItem
              key={checkpoint.checkpoint}
              checkpoint={checkpoint}
              runNumber={runNumbers.get(checkpoint.runId)}
              form={form?.checkpoint === checkpoint.checkpoint ? form.kind : undefined}
              onOpen={(kind) => open({ checkpoint: checkpoint.checkpoint, kind })}
              onCancel={close}
              onFork={(body, note) =>
                fork({ ...body, metadata: { title: `${title ?? 'Untitled thread'} (${note})` } })
              }
            />
          ))}
        </ol>
      )}
    </section>
  );
}

/** What a fork form sends (`POST /threads/:id/fork`). */
interface ForkBody {
  checkpoint: number;
  input?: string;
  continue?: boolean;
  openCalls?: 'rerun';
  metadata?: { title: string };
}

function CheckpointItem(props: {
  checkpoint: Checkpoint;
  runNumber: number | undefined;
  form: 'fork' | 'edit' | undefined;
  onOpen(kind: 'fork' | 'edit'): void;
  onCancel(): void;
  /** Forks; `note` goes into the fork's title ("fork from step 2", "step 3 edited"). */
  onFork(body: ForkBody, note: string): Promise<void>;
}) {
  const { checkpoint: step } = props;
  const k = step.checkpoint;
  const text = step.text.length > TEXT_LENGTH ? `${step.text.slice(0, TEXT_LENGTH).trimEnd()}…` : step.text;
  const open = step.calls.filter((call) => !call.answered);
  return (
    <li class="checkpoint" data-checkpoint={k}>
      <h3 id={`step-${k}`}>Step {k}</h3>
      <p class="step-where">
        {props.runNumber ? `Run ${props.runNumber}` : 'A run'}, its step {step.step} · {startedAt(step.at)}
        {step.modelMs !== undefined ? ` · model ${step.modelMs} ms` : ''}
      </p>
      {step.input !== undefined && (
        <p class="step-input">
          <span class="who">You</span>
          {step.input}
        </p>
      )}
      {text && (
        <p class="step-text">
          <span class="who">Assistant</span>
          {text}
        </p>
      )}
      {step.calls.length > 0 && (
        <ul class="step-calls" aria-label={`Tool calls of step ${k}`}>
          {step.calls.map((call) => (
            <li key={call.toolCallId}>
              <span class="tool-name">{call.toolName}</span>{' '}
              <span class="badge">{call.answered ? 'has its result' : 'no result yet'}</span>
            </li>
          ))}
        </ul>
      )}
      {open.length > 0 && (
        <p class="hint">
          This step waited (for an approval, or was stopped). A fork from it answers its {open.length} open{' '}
          {open.length === 1 ? 'call' : 'calls'} with the result recorded here, or as not run.
        </p>
      )}
      {props.form ? (
        <ForkForm checkpoint={step} mode={props.form} onCancel={props.onCancel} onFork={props.onFork} />
      ) : (
        <div class="actions">
          <button type="button" id={`fork-button-${k}`} onClick={() => props.onOpen('fork')}>
            Fork from here<span class="visually-hidden"> (step {k})</span>
          </button>
          {step.input !== undefined && (
            <button type="button" id={`edit-button-${k}`} onClick={() => props.onOpen('edit')}>
              Edit message<span class="visually-hidden"> of step {k}</span> and fork
            </button>
          )}
        </div>
      )}
    </li>
  );
}

/**
 * A step's fork form. `fork`: from the step, with an optional next message, or answering again from it
 * (`continue`), optionally running a waiting step's open calls again. `edit`: from the step before it, with the
 * step's message changed.
 */
function ForkForm(props: {
  checkpoint: Checkpoint;
  mode: 'fork' | 'edit';
  onCancel(): void;
  onFork(body: ForkBody, note: string): Promise<void>;
}) {
  const { checkpoint: step, mode } = props;
  const k = step.checkpoint;
  const [text, setText] = useState(mode === 'edit' ? (step.input ?? '') : '');
  const [again, setAgain] = useState(false);
  const [rerun, setRerun] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const hasOpenCalls = step.calls.some((call) => !call.answered);
  const from = mode === 'edit' ? k - 1 : k;
  const submit = async (event: Event) => {
    event.preventDefault();
    const input = text.trim();
    if (mode === 'edit' && !input) {
      setError('Write the message to send instead.');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await props.onFork(
        {
          checkpoint: from,
          ...(again ? { continue: true } : input ? { input } : {}),
          ...(again && rerun ? { openCalls: 'rerun' as const } : {}),
        },
        mode === 'edit' ? `step ${k} edited` : `fork from step ${k}`,
      );
    } catch (failure) {
      setError(messageOf(failure));
      setBusy(false);
    }
  };
  const label = mode === 'edit' ? `Edit the message of step ${k} and fork` : `Fork from step ${k}`;
  return (
    <form class="fork-form" aria-label={label} onSubmit={submit}>
      <label for={`fork-input-${k}`}>{mode === 'edit' ? 'Message' : 'Next message (optional)'}</label>
      <textarea
        id={`fork-input-${k}`}
        rows={2}
        value={text}
        disabled={again}
        aria-describedby={`fork-hint-${k}`}
        onInput={(event) => setText(event.currentTarget.value)}
        onKeyDown={(event) => {
          if (event.key === 'Escape') props.onCancel();
        }}
      />
      <p class="hint" id={`fork-hint-${k}`}>
        {mode === 'edit'
          ? from === 0
            ? 'The new thread starts with this message instead, and runs it at once.'
            : `The new thread keeps steps 1 to ${from}, then sends this message instead, and runs it at once.`
          : `The new thread keeps steps 1 to ${k}. With a message it runs it at once; without, it opens for you to continue.`}
      </p>
      {mode === 'fork' && (
        <label class="inline">
          <input
            type="checkbox"
            checked={again}
            onChange={(event) => setAgain(event.currentTarget.checked)}
          />
          Answer again from this step instead (the model is called on the history, without a new message)
        </label>
      )}
      {mode === 'fork' && again && hasOpenCalls && (
        <label class="inline">
          <input
            type="checkbox"
            checked={rerun}
            onChange={(event) => setRerun(event.currentTarget.checked)}
          />
          Run this step's open calls again (approvals are asked again; a call that already ran here takes
          effect twice)
        </label>
      )}
      {error && <p role="alert">{error}</p>}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {mode === 'edit' ? 'Fork with this message' : 'Fork'}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
