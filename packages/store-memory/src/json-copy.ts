/**
 * A deep copy of `value` with exactly what `JSON.parse(JSON.stringify(value))` would give, without building the
 * text: plain objects and arrays are copied member by member (undefined, functions and symbols dropped from
 * objects and turned into null in arrays, non-finite numbers into null, -0 into 0); anything else that is an
 * object (a Date, a Map, a class instance, an object or array with `toJSON`) goes through JSON itself, with
 * `toJSON` given the key the value was found under. Throws a TypeError where JSON.stringify would: a BigInt or
 * a cycle.
 */
export function copyJson<T>(value: T): T {
  return copy(value, '', 0, undefined) as T;
}

/**
 * How deep values nest before the copy starts checking for cycles. A cycle nests without end, so it always gets
 * this deep; data rarely does, so most copies never pay for the check.
 */
const uncheckedDepth = 32;

/**
 * Asked about the object a for-in loop walks, V8 answers this one from the loop's own list of keys (not
 * `Object.hasOwn`), which makes copying objects about a quarter faster.
 */
const isOwn = Object.prototype.hasOwnProperty;

/**
 * The copy of `value`, found under `key` of its holder at `depth`. `ancestors` holds the objects from the first
 * checked depth down to the holder: a cycle below `uncheckedDepth` runs through them over and over, so it is
 * found there; an object that appears there again is a cycle, never a value that is merely shared.
 */
function copy(value: unknown, key: string | number, depth: number, ancestors: object[] | undefined): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value + 0 : null;
    case 'object':
      if (value === null) return null;
      if (depth < uncheckedDepth) return copyObject(value, key, depth, undefined);
      return copyChecked(value, key, depth, ancestors ?? []);
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    default:
      return undefined;
  }
}

function copyChecked(value: object, key: string | number, depth: number, ancestors: object[]): unknown {
  if (ancestors.includes(value)) throw new TypeError('Converting circular structure to JSON');
  ancestors.push(value);
  const result = copyObject(value, key, depth, ancestors);
  ancestors.pop();
  return result;
}

function copyObject(
  value: object,
  key: string | number,
  depth: number,
  ancestors: object[] | undefined,
): unknown {
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return viaJson(value, key);
  if (Array.isArray(value)) {
    const result = new Array<unknown>(value.length);
    for (let index = 0; index < value.length; index++) {
      const item = copy(value[index], index, depth + 1, ancestors);
      result[index] = item === undefined ? null : item;
    }
    return result;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return viaJson(value, key);
  const result: Record<string, unknown> = {};
  for (const name in value) {
    if (!isOwn.call(value, name)) continue;
    const member = copy((value as Record<string, unknown>)[name], name, depth + 1, ancestors);
    if (member !== undefined) result[name] = member;
  }
  return result;
}

/** What JSON makes of `value` found under `key`: it calls `toJSON(key)`, unwraps boxed primitives, and so on. */
function viaJson(value: object, key: string | number): unknown {
  const name = String(key);
  const text = JSON.stringify({ [name]: value });
  return (JSON.parse(text) as Record<string, unknown>)[name];
}
