import { describe, expect, it } from 'vitest';
import * as root from './index.js';
import { LunationError } from './index.js';

const subpaths = {
  '@lunation/contract/store-utils': () => import('./store-utils/index.js'),
  '@lunation/contract/provider-utils': () => import('./provider-utils/index.js'),
  '@lunation/contract/dispatch-utils': () => import('./dispatch-utils/index.js'),
} as const;

const rootExports = new Map<string, unknown>(Object.entries(root));
const movedNames = [...rootExports]
  .filter(([, value]) => typeof value === 'function' && 'movedTo' in value)
  .map(([name]) => name);

describe('helpers that moved out of the root', () => {
  it('an adapter that still imports one from @lunation/contract is told where it went when it calls it', () => {
    // @ts-expect-error: a moved helper is not callable (its type names the subpath).
    const call = () => root.assertId('thread-1', 'threadId');
    expect(call).toThrow(LunationError);
    try {
      call();
    } catch (error) {
      expect(LunationError.isInstance(error) && error.code).toBe('specification-mismatch');
      expect((error as Error).message).toBe(
        "assertId moved from @lunation/contract to @lunation/contract/store-utils: import { assertId } from '@lunation/contract/store-utils' (the adapter was written against an older contract)",
      );
      expect((error as LunationError).details).toEqual({
        helper: 'assertId',
        movedTo: '@lunation/contract/store-utils',
      });
    }
  });

  it('each one names a subpath that exports it (28 of them)', async () => {
    expect(movedNames).toHaveLength(28);
    for (const name of movedNames) {
      const stub = rootExports.get(name) as {
        helper: string;
        movedTo: keyof typeof subpaths;
      };
      expect(stub.helper).toBe(name);
      const subpath = await subpaths[stub.movedTo]();
      const real: unknown = new Map<string, unknown>(Object.entries(subpath)).get(name);
      expect(real, `${name} in ${stub.movedTo}`).toBeDefined();
      expect(typeof real === 'function' && 'movedTo' in real).toBe(false);
    }
  });
});
