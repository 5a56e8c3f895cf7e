/** The default of `dynamicTool`: MCP tools (named `<server>__<tool>`, found at run time) are dynamic. */
export function isDynamicToolName(toolName: string): boolean {
  return toolName.includes('__');
}
