import type { Report, ThreadEvidence } from './fleet-invariants.js';

/**
 * The thread's stored history holds each message once: no assistant message twice (same content), no tool call
 * id in two assistant messages, no call answered by two tool results.
 */
export function checkHistory(evidence: ThreadEvidence, report: Report): void {
  const contents = new Map<string, number>();
  const calls = new Map<string, number>();
  const results = new Map<string, number>();
  for (const { seq, message } of evidence.messages) {
    if (message.role === 'assistant') {
      const key = JSON.stringify(message.content);
      const first = contents.get(key);
      if (first !== undefined)
        report('duplicateMessage', `message ${seq} repeats assistant message ${first}: ${key.slice(0, 160)}`);
      else contents.set(key, seq);
      for (const part of message.content) {
        if (part.type !== 'tool-call') continue;
        const earlier = calls.get(part.toolCallId);
        if (earlier !== undefined && first === undefined) {
          report(
            'duplicateMessage',
            `message ${seq} calls "${part.toolCallId}" again (first in message ${earlier})`,
          );
        }
        calls.set(part.toolCallId, earlier ?? seq);
      }
    }
    if (message.role === 'tool') {
      for (const part of message.content) {
        if (part.type !== 'tool-result') continue;
        const earlier = results.get(part.toolCallId);
        if (earlier !== undefined) {
          report(
            'duplicateMessage',
            `message ${seq} answers "${part.toolCallId}" again (first in message ${earlier})`,
          );
        }
        results.set(part.toolCallId, earlier ?? seq);
      }
    }
  }
}
