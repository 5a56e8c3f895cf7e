/**
 * A deep copy of `value` with exactly what `JSON.parse(JSON.stringify(value))` would give, without building the
 * text: plain objects and arrays are copied member by member (undefined, functions and symbols dropped from
 * objects and turned into null in arrays, non-finite numbers into null, -0 into 0); anything else that is an
 * object (a Date, a Map, a class instance, an object with `toJSON`) goes through JSON itself. Throws a
 * TypeError where JSON.stringify would: a BigInt or a cycle.
 */
export function copyJson<T>(value: T): T {
  return copy(value, []) as T;
}

function copy(value: unknown, ancestors: object[]): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value + 0 : null;
    case 'object':
      return value === null ? null : copyObject(value, ancestors);
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    default:
      return undefined;
  }
}

function copyObject(value: object, ancestors: object[]): unknown {
  if (ancestors.includes(value)) throw new TypeError('Converting circular structure to JSON');
  if (Array.isArray(value)) {
    ancestors.push(value);
    const result = new Array<unknown>(value.length);
    for (let index = 0; index < value.length; index++) {
      const item = copy(value[index], ancestors);
      result[index] = item === undefined ? null : item;
    }
    ancestors.pop();
    return result;
  }
  const prototype = Object.getPrototypeOf(value);
  if (
    (prototype !== Object.prototype && prototype !== null) ||
    typeof (value as { toJSON?: unknown }).toJSON === 'function'
  ) {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : JSON.parse(text);
  }
  ancestors.push(value);
  const result: Record<string, unknown> = {};
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const member = copy((value as Record<string, unknown>)[key], ancestors);
    if (member !== undefined) result[key] = member;
  }
  ancestors.pop();
  return result;
}
