import type { JsonObject, JsonValue, ToolResult } from '@lunation/contract';

/** The parts of an MCP `CallToolResult` this package reads. */
export interface McpCallResult {
  content?: ReadonlyArray<Record<string, unknown>>;
  structuredContent?: unknown;
  isError?: boolean;
}

/**
 * A tool result for the model from an MCP call result: the text of its content blocks (images and audio
 * named, not inlined; resource links by URI), its structured content as data, `error` when `isError`.
 */
export function toToolResult(result: McpCallResult, metadata: JsonObject): ToolResult {
  const texts: string[] = [];
  for (const block of result.content ?? []) texts.push(blockText(block));
  const text = texts.filter((part) => part !== '').join('\n');
  const data = toJson(result.structuredContent);
  const status = result.isError === true ? 'error' : 'success';
  return {
    status,
    ...(text !== '' ? { message: text } : {}),
    ...(data !== undefined ? { data } : {}),
    ...(text === '' && data === undefined && status === 'error' ? { message: 'The MCP tool failed.' } : {}),
    metadata,
  };
}

function blockText(block: Record<string, unknown>): string {
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? block.text : '';
    case 'image':
    case 'audio': {
      const size = typeof block.data === 'string' ? Math.floor((block.data.length * 3) / 4) : 0;
      return `[${block.type} ${String(block.mimeType ?? 'unknown type')}, ${size} bytes]`;
    }
    case 'resource_link':
      return `[resource ${String(block.uri ?? '')}${block.name ? ` "${String(block.name)}"` : ''}]`;
    case 'resource': {
      const resource = (block.resource ?? {}) as Record<string, unknown>;
      if (typeof resource.text === 'string') return resource.text;
      return `[resource ${String(resource.uri ?? '')}, ${String(resource.mimeType ?? 'binary')}]`;
    }
    default:
      return `[${String(block.type)} content]`;
  }
}

/** A JSON copy of a value (undefined when it has none). */
export function toJson(value: unknown): JsonValue | undefined {
  if (value === undefined) return undefined;
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : (JSON.parse(text) as JsonValue);
  } catch {
    return undefined;
  }
}
