import type { ModelRequest } from '@lunation/contract';
import {
  applyCompaction,
  DEFAULT_COMPACTION_PROMPT,
  estimateTokens,
  summaryRange,
} from '../context-policy.js';
import type { RunScope } from './run-scope.js';

/**
 * Summarises older history once the visible history grows past the policy's threshold: the model writes a
 * summary of messages 1..cut (cumulative: the previous summary is summarised too), kept as an internal system
 * message that later requests show instead of what it covers.
 */
export async function compactIfNeeded(scope: RunScope): Promise<void> {
  const compaction = scope.agent.definition.context?.compaction;
  if (!compaction) return;
  const { messages } = scope;
  const visible = applyCompaction(messages);
  if (estimateTokens(visible) <= compaction.thresholdTokens) return;
  const keep = compaction.keepRecentMessages ?? 6;
  let cut = messages.length - keep;
  // Never end the summarised range between a tool call and its results.
  while (cut > 0 && messages[cut]?.role === 'tool') cut--;
  const fromSeq = 1;
  const previous = visible.find((message) => summaryRange(message) !== undefined);
  if (previous && (summaryRange(previous)?.toSeq ?? 0) >= cut) return;
  if (cut < fromSeq) return;
  const request: ModelRequest = {
    messages: [
      ...applyCompaction(messages.slice(0, cut)),
      {
        id: scope.ids.id(),
        role: 'user',
        content: [{ type: 'text', text: compaction.prompt ?? DEFAULT_COMPACTION_PROMPT }],
      },
    ],
    tools: [],
  };
  let summary = '';
  if (!scope.holdsLease()) return;
  for await (const part of scope.agent.model.stream(request, { signal: scope.signal })) {
    if (part.type === 'text-delta') summary += part.delta;
    else if (part.type === 'usage') scope.addUsagePart(part);
  }
  scope.append({
    id: scope.ids.id(),
    role: 'system',
    content: [{ type: 'text', text: `<conversation-summary>\n${summary}\n</conversation-summary>` }],
    metadata: {
      compaction: { fromSeq, toSeq: cut },
      runId: scope.identity.runId,
      visibility: 'internal',
    },
  });
}
