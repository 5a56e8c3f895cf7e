import { type JsonValue, LunationError, type ToolResult } from '@lunation/contract';

// The boundary: everything a tool call puts in the store is checked here first, so that a value JSON cannot
// hold (or one nested deep enough to break a parser or a store) becomes an error result the model sees
// instead of failing a commit after a side effect.

/** Deepest nesting of arrays and objects kept in tool arguments, results and tickets. */
export const MAX_JSON_DEPTH = 64;

export type Checked<T> = { ok: true; value: T } | { ok: false; problem: string };

/** Parses a tool call's raw arguments: JSON text (empty means `{}`), nested at most MAX_JSON_DEPTH deep. */
export function parseArguments(raw: string): Checked<unknown> {
  if (raw.trim() === '') return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    return { ok: false, problem: `not valid JSON (${describeThrown(error)})` };
  }
  // Each level of nesting takes two characters of text, so short text cannot be too deep: no walk needed.
  if (raw.length <= 2 * MAX_JSON_DEPTH + 1 || depthOf(value, 0) <= MAX_JSON_DEPTH) return { ok: true, value };
  return { ok: false, problem: `nested deeper than ${MAX_JSON_DEPTH} levels` };
}

/**
 * `value` as JSON the store can keep. Plain JSON (plain objects, arrays, finite numbers) is kept as it is;
 * anything else goes through `JSON.stringify` (so `toJSON`, dates and dropped `undefined`s behave as usual).
 * Cycles, BigInts, functions, symbols, throwing getters and values nested deeper than MAX_JSON_DEPTH fail.
 */
export function toStorableJson(value: unknown): Checked<JsonValue | undefined> {
  if (value === undefined) return { ok: true, value: undefined };
  try {
    const plain = plainJsonDepth(value, 0);
    if (plain > MAX_JSON_DEPTH) return { ok: false, problem: tooDeep(value) };
    if (plain >= 0) return { ok: true, value: value as JsonValue };
    if (typeof value === 'function' || typeof value === 'symbol') {
      return { ok: false, problem: `a ${typeof value} is not JSON` };
    }
    const text = JSON.stringify(value);
    if (text === undefined) return { ok: false, problem: 'it has no JSON form' };
    const copy = JSON.parse(text) as JsonValue;
    if (depthOf(copy, 0) > MAX_JSON_DEPTH) {
      return { ok: false, problem: `it is nested deeper than ${MAX_JSON_DEPTH} levels` };
    }
    return { ok: true, value: copy };
  } catch (error) {
    return { ok: false, problem: describeThrown(error) };
  }
}

const RESULT_STATUSES = new Set(['success', 'error']);

/** A tool result as given by a tool or a gate, checked to be well formed and storable. */
export function checkToolResult(result: unknown): Checked<ToolResult> {
  try {
    if (typeof result !== 'object' || result === null) return { ok: false, problem: 'it is not an object' };
    const { status, message, metadata, data } = result as Record<string, unknown>;
    if (typeof status !== 'string' || !RESULT_STATUSES.has(status)) {
      return {
        ok: false,
        problem: `its status is ${JSON.stringify(String(status))}, not "success" or "error"`,
      };
    }
    if (message !== undefined && typeof message !== 'string')
      return { ok: false, problem: 'its message is not a string' };
    const checkedData = toStorableJson(data);
    if (!checkedData.ok) return { ok: false, problem: `its data cannot be stored: ${checkedData.problem}` };
    let checkedMetadata: JsonValue | undefined;
    if (metadata !== undefined) {
      if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
        return { ok: false, problem: 'its metadata is not an object' };
      }
      const stored = toStorableJson(metadata);
      if (!stored.ok) return { ok: false, problem: `its metadata cannot be stored: ${stored.problem}` };
      checkedMetadata = stored.value;
    }
    const checked: ToolResult = { status: status as ToolResult['status'] };
    if (checkedData.value !== undefined) checked.data = checkedData.value;
    if (message !== undefined) checked.message = message;
    if (checkedMetadata !== undefined) checked.metadata = checkedMetadata as Record<string, JsonValue>;
    return { ok: true, value: checked };
  } catch (error) {
    return { ok: false, problem: describeThrown(error) };
  }
}

/**
 * Text for any thrown value; never throws itself (not for a Proxy, a null-prototype object or a bad getter).
 * An Error gives its message; an object with a string `message` gives that; other objects their JSON.
 */
export function describeThrown(error: unknown): string {
  try {
    if (error instanceof Error) {
      const message = error.message;
      if (typeof message === 'string' && message !== '') return message;
      return typeof error.name === 'string' ? error.name : 'Error';
    }
  } catch {
    // a hostile value: fall through
  }
  if (typeof error === 'object' && error !== null) {
    try {
      const message = (error as { message?: unknown }).message;
      if (typeof message === 'string' && message !== '') return message;
    } catch {
      // a throwing getter
    }
    try {
      const json = JSON.stringify(error);
      if (typeof json === 'string' && json !== '{}') return `a thrown object ${truncate(json)}`;
    } catch {
      // cyclic or hostile
    }
    return 'an unprintable thrown object';
  }
  try {
    const text = String(error);
    if (typeof text === 'string') return text;
  } catch {
    // fall through
  }
  return 'an unprintable thrown value';
}

function truncate(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** Whether a LunationError, for any value (a hostile Proxy included). */
export function isLunationError(value: unknown): value is LunationError {
  try {
    return LunationError.isInstance(value);
  } catch {
    return false;
  }
}

/** Why a value past the depth limit cannot be stored: a cycle, or plain depth. */
function tooDeep(value: unknown): string {
  try {
    JSON.stringify(value);
  } catch (error) {
    if (error instanceof TypeError) return describeThrown(error);
  }
  return `it is nested deeper than ${MAX_JSON_DEPTH} levels`;
}

/** Nesting depth of parsed JSON, counting stops just past the limit. */
function depthOf(value: unknown, depth: number): number {
  if (typeof value !== 'object' || value === null) return depth;
  if (depth > MAX_JSON_DEPTH) return depth;
  let deepest = depth + 1;
  if (Array.isArray(value)) {
    for (const item of value) deepest = Math.max(deepest, depthOf(item, depth + 1));
  } else {
    for (const key in value)
      deepest = Math.max(deepest, depthOf((value as Record<string, unknown>)[key], depth + 1));
  }
  return deepest;
}

/**
 * The depth of `value` when it is plain JSON (kept as it is, not copied), or -1 when it is not (a class
 * instance, a non-finite number, an `undefined` member, ...). Stops just past the depth limit.
 */
function plainJsonDepth(value: unknown, depth: number): number {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return depth;
  if (typeof value === 'number') return Number.isFinite(value) ? depth : -1;
  if (typeof value !== 'object') return -1;
  if (depth > MAX_JSON_DEPTH) return depth;
  let deepest = depth + 1;
  if (Array.isArray(value)) {
    for (const item of value) {
      const inner = plainJsonDepth(item, depth + 1);
      if (inner < 0) return -1;
      if (inner > deepest) deepest = inner;
    }
    return deepest;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return -1;
  for (const key in value) {
    const inner = plainJsonDepth((value as Record<string, unknown>)[key], depth + 1);
    if (inner < 0) return -1;
    if (inner > deepest) deepest = inner;
  }
  return deepest;
}
