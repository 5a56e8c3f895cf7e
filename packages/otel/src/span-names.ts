import type { ToolDescriptor } from '@lunation/contract';

/** How many names of one kind are kept; past it (a runaway set of models or tools) a name is built per span. */
const LIMIT = 1024;

/**
 * What the spans of every run of one instrumentation share instead of building per span: their names
 * (`chat {model}`, `execute_tool {tool}`) and the descriptions of a request's tools by name, kept per tools list
 * (an agent's list is one array for all its runs).
 */
export class SpanNames {
  private readonly chatNames = new Map<string, string>();
  private readonly toolNames = new Map<string, string>();
  private readonly descriptions = new WeakMap<readonly ToolDescriptor[], ReadonlyMap<string, string>>();

  /** `chat {model}`. */
  chat(model: string): string {
    return named(this.chatNames, 'chat ', model);
  }

  /** `execute_tool {tool}`. */
  tool(toolName: string): string {
    return named(this.toolNames, 'execute_tool ', toolName);
  }

  /** The descriptions of `tools` by tool name (`gen_ai.tool.description`). */
  toolDescriptions(tools: readonly ToolDescriptor[]): ReadonlyMap<string, string> {
    let found = this.descriptions.get(tools);
    if (found === undefined) {
      found = new Map(tools.map((tool) => [tool.name, tool.description]));
      this.descriptions.set(tools, found);
    }
    return found;
  }
}

function named(names: Map<string, string>, prefix: string, name: string): string {
  let found = names.get(name);
  if (found === undefined) {
    found = prefix + name;
    if (names.size < LIMIT) names.set(name, found);
  }
  return found;
}
