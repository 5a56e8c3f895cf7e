import { useMemo } from 'preact/hooks';
import { renderMarkdown } from './markdown.js';
import { StructuredData } from './structured-data.js';
import { formatJson } from './ticket-card.js';
import type { Entry, ToolEntry } from './transcript.js';

/** The chat's entries: messages, reasoning, tool calls with their arguments and results, notices. */
export function TranscriptView(props: { entries: readonly Entry[] }) {
  return (
    <ol class="transcript" aria-label="Conversation">
      {props.entries.map((entry) => (
        <li key={entry.key} class={`entry entry-${entry.kind}`}>
          {entry.kind === 'user' && (
            <p>
              <span class="who">You</span> {entry.text}
            </p>
          )}
          {entry.kind === 'assistant' && (
            <>
              {entry.reasoning && (
                <details class="reasoning" open>
                  <summary>Reasoning</summary>
                  <p>{entry.reasoning}</p>
                </details>
              )}
              {entry.text && <AssistantText text={entry.text} />}
            </>
          )}
          {entry.kind === 'tool' && <ToolView tool={entry} />}
          {entry.kind === 'notice' && (
            <p class={`notice notice-${entry.tone}`} role={entry.tone === 'error' ? 'alert' : undefined}>
              {entry.text}
            </p>
          )}
        </li>
      ))}
    </ol>
  );
}

const STATE_TEXT: Record<ToolEntry['state'], string> = {
  calling: 'calling…',
  running: 'running…',
  waiting: 'waiting for a decision',
  done: 'done',
  error: 'failed',
  stopped: 'stopped',
  declined: 'declined',
};

/** The assistant's text as Markdown (sanitised HTML). */
function AssistantText({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return (
    <div class="assistant-text">
      <div class="who">Assistant</div>
      {/* renderMarkdown escapes raw HTML and sanitises the result with DOMPurify. */}
      <div class="markdown" dangerouslySetInnerHTML={{ __html: html }} />
    </div>
  );
}

function ToolView({ tool }: { tool: ToolEntry }) {
  const progress = tool.progress as { done?: number; total?: number; message?: string } | undefined;
  return (
    <div class={`tool tool-${tool.state}`} data-call={tool.toolCallId} tabIndex={-1}>
      <p class="tool-head">
        <span class="tool-name">{tool.toolName}</span>
        <span class="badge">{STATE_TEXT[tool.state]}</span>
        {tool.rerun && <span class="badge warn">re-run after a crash</span>}
        {tool.fromLedger && <span class="badge">from the ledger</span>}
      </p>
      {tool.arguments && <pre class="arguments">{formatJson(tool.arguments)}</pre>}
      {progress && tool.state === 'running' && (
        <p class="progress">
          {typeof progress.done === 'number' && typeof progress.total === 'number' && (
            <progress
              value={progress.done}
              max={progress.total}
              aria-label={`Progress of ${tool.toolName}`}
            />
          )}{' '}
          {progress.message ?? JSON.stringify(progress)}
        </p>
      )}
      {tool.result && (
        <div class="tool-result">
          {tool.result.message && <p>{tool.result.message}</p>}
          {tool.result.data !== undefined && (
            <StructuredData value={tool.result.data} label={`Result of ${tool.toolName}`} />
          )}
        </div>
      )}
    </div>
  );
}
