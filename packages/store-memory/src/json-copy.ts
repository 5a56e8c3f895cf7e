/**
 * A deep copy of `value` with exactly what `JSON.parse(JSON.stringify(value))` would give, without building the
 * text: plain objects and arrays are copied member by member (undefined, functions and symbols dropped from
 * objects and turned into null in arrays, non-finite numbers into null, -0 into 0); anything else that is an
 * object (a Date, a Map, a class instance, an object or array with `toJSON`) goes through JSON itself, with
 * `toJSON` given the key the value was found under. Throws a TypeError where JSON.stringify would: a BigInt or
 * a cycle.
 */
export function copyJson<T>(value: T): T {
  return copy(value, '', []) as T;
}

/** The copy of `value`, found under `key` of its holder; `ancestors` are the objects from the top down to it. */
function copy(value: unknown, key: string | number, ancestors: object[]): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value + 0 : null;
    case 'object':
      return value === null ? null : copyObject(value, key, ancestors);
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    default:
      return undefined;
  }
}

function copyObject(value: object, key: string | number, ancestors: object[]): unknown {
  if (ancestors.includes(value)) throw new TypeError('Converting circular structure to JSON');
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return viaJson(value, key);
  if (Array.isArray(value)) {
    ancestors.push(value);
    const result = new Array<unknown>(value.length);
    for (let index = 0; index < value.length; index++) {
      const item = copy(value[index], index, ancestors);
      result[index] = item === undefined ? null : item;
    }
    ancestors.pop();
    return result;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return viaJson(value, key);
  ancestors.push(value);
  const result: Record<string, unknown> = {};
  for (const name in value) {
    if (!Object.hasOwn(value, name)) continue;
    const member = copy((value as Record<string, unknown>)[name], name, ancestors);
    if (member !== undefined) result[name] = member;
  }
  ancestors.pop();
  return result;
}

/** What JSON makes of `value` found under `key`: it calls `toJSON(key)`, unwraps boxed primitives, and so on. */
function viaJson(value: object, key: string | number): unknown {
  const name = String(key);
  const text = JSON.stringify({ [name]: value });
  return (JSON.parse(text) as Record<string, unknown>)[name];
}
