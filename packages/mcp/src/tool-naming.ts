import type { McpToolFilter, McpToolInfo } from './mcp-server-config.js';

/** The separator between a server's prefix and its tool's name. */
export const NAME_SEPARATOR = '__';
const MAX_NAME = 64;

/**
 * The Lunation name of an MCP tool: `<prefix>__<tool>`, characters outside `[a-zA-Z0-9_-]` made `_`, and a
 * name longer than 64 characters shortened with a hash of the full one. `taken` names get a hash suffix too.
 */
export function lunationToolName(prefix: string, toolName: string, taken: ReadonlySet<string>): string {
  const full = `${prefix === '' ? '' : `${prefix}${NAME_SEPARATOR}`}${toolName}`;
  const safe = full.replace(/[^a-zA-Z0-9_-]/g, '_');
  if (safe.length <= MAX_NAME && !taken.has(safe)) return safe;
  const suffix = `_${hash(full)}`;
  return `${safe.slice(0, MAX_NAME - suffix.length)}${suffix}`;
}

/** FNV-1a of the text, as 8 hex digits. */
function hash(text: string): string {
  let value = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    value ^= text.charCodeAt(index);
    value = Math.imul(value, 0x01000193) >>> 0;
  }
  return value.toString(16).padStart(8, '0');
}

function globToRegExp(glob: string): RegExp {
  const escaped = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${escaped}$`);
}

/** A filter as a predicate. */
export function toolPredicate(filter: McpToolFilter | undefined): (tool: McpToolInfo) => boolean {
  if (filter === undefined) return () => true;
  if (typeof filter === 'function') return filter;
  const include = filter.include?.map(globToRegExp);
  const exclude = (filter.exclude ?? []).map(globToRegExp);
  return (tool) =>
    (include === undefined || include.some((pattern) => pattern.test(tool.name))) &&
    !exclude.some((pattern) => pattern.test(tool.name));
}
