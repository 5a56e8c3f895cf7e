import type { Message } from '@lunation/contract';

/** One message part in the GenAI semantic conventions' message shape. */
type GenAIPart =
  | { type: 'text'; content: string }
  | { type: 'reasoning'; content: string }
  | { type: 'tool_call'; id: string; name: string; arguments: string }
  | { type: 'tool_call_response'; id: string; response: unknown }
  | { type: 'uri' | 'blob'; modality: 'image'; uri?: string; mime_type?: string }
  | { type: string; content?: string };

/** Messages as `gen_ai.input.messages` / `gen_ai.output.messages` hold them: `{ role, parts }`, as JSON text. */
export function genAIMessages(messages: readonly Message[]): string {
  const out: Array<{ role: string; parts: GenAIPart[] }> = [];
  for (const message of messages) {
    if (message.role === 'system') continue;
    const parts: GenAIPart[] = [];
    for (const part of message.content) {
      switch (part.type) {
        case 'text':
          parts.push({ type: 'text', content: part.text });
          break;
        case 'reasoning':
          if (!part.redacted) parts.push({ type: 'reasoning', content: part.text });
          break;
        case 'refusal':
          parts.push({ type: 'refusal', content: part.text });
          break;
        case 'tool-call':
          parts.push({
            type: 'tool_call',
            id: part.toolCallId,
            name: part.toolName,
            arguments: part.arguments,
          });
          break;
        case 'tool-result':
          parts.push({ type: 'tool_call_response', id: part.toolCallId, response: part.result });
          break;
        case 'image':
          // Image bytes are never copied into a trace; a URL is.
          parts.push(
            part.source.type === 'url'
              ? { type: 'uri', modality: 'image', uri: part.source.url }
              : { type: 'blob', modality: 'image', mime_type: part.source.mediaType },
          );
          break;
        default:
          parts.push({ type: part.type });
      }
    }
    out.push({ role: message.role, parts });
  }
  return JSON.stringify(out);
}

/** The text of the system messages, as `gen_ai.system_instructions` holds it, or undefined without any. */
export function systemInstructions(messages: readonly Message[]): string | undefined {
  const parts: Array<{ type: 'text'; content: string }> = [];
  for (const message of messages) {
    if (message.role !== 'system') continue;
    for (const part of message.content)
      if (part.type === 'text') parts.push({ type: 'text', content: part.text });
  }
  return parts.length === 0 ? undefined : JSON.stringify(parts);
}
