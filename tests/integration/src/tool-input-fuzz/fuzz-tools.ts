import { type AnyTool, defineTool, type ToolContext } from '@lunation/runtime';
import { z } from 'zod';
import {
  fuzzToolNames,
  type HostileReturn,
  type HostileThrow,
  hostileReturns,
  hostileThrows,
} from './hostile-calls.js';

/** Everything the fuzz tools and the decisions did, in order. */
export type FuzzEvent =
  | { type: 'execution'; threadId: string; toolCallId: string; nonce: string }
  | { type: 'decision'; threadId: string; toolCallId: string; action: 'resume' | 'cancel' };

/** A proxy that throws on every trap, even `typeof`-free ones such as `getPrototypeOf`. */
function throwingProxy(): object {
  const fail = () => {
    throw new Error('hostile proxy trap');
  };
  return new Proxy(
    {},
    {
      get: fail,
      set: fail,
      has: fail,
      ownKeys: fail,
      getPrototypeOf: fail,
      getOwnPropertyDescriptor: fail,
      defineProperty: fail,
      deleteProperty: fail,
      apply: fail,
      construct: fail,
      isExtensible: fail,
      preventExtensions: fail,
      setPrototypeOf: fail,
    },
  );
}

function deepValue(): unknown {
  let value: unknown = 1;
  for (let level = 0; level < 10_000; level++) value = { a: value };
  return value;
}

function hostileValue(kind: HostileReturn): unknown {
  switch (kind) {
    case 'bigint':
      return 10n;
    case 'bigint-inside':
      return { count: 1n };
    case 'cycle': {
      const value: Record<string, unknown> = { name: 'cycle' };
      value.self = value;
      return value;
    }
    case 'function':
      return () => 1;
    case 'symbol':
      return Symbol('returned');
    case 'undefined':
      return undefined;
    case 'nan':
      return Number.NaN;
    case 'deep':
      return deepValue();
    case 'getter-throws':
      return {
        get boom(): never {
          throw new Error('hostile getter');
        },
      };
    case 'to-json-throws':
      return {
        toJSON(): never {
          throw new Error('hostile toJSON');
        },
      };
    case 'proxy':
      return throwingProxy();
    case 'huge':
      return 'x'.repeat(200_000);
    case 'map':
      return new Map([['key', 'value']]);
    case 'date':
      return new Date(0);
    case 'bad-status':
    case 'bad-message':
      return 'unused';
  }
}

function hostileResult(kind: HostileReturn, context: ToolContext): unknown {
  if (kind === 'bad-status') return context.output({ status: 'finished' as never, data: 'x' });
  if (kind === 'bad-message') {
    const message = {
      toString(): never {
        throw new Error('hostile message');
      },
    };
    return context.output({ status: 'error', message: message as never });
  }
  return context.output({ status: 'success', data: hostileValue(kind) as never });
}

function hostileThrown(kind: HostileThrow): unknown {
  switch (kind) {
    case 'null-prototype':
      return Object.create(null);
    case 'to-string-throws':
      return {
        toString(): never {
          throw new Error('hostile toString');
        },
      };
    case 'message-getter-throws': {
      const error = new Error('unreadable');
      Object.defineProperty(error, 'message', {
        get(): never {
          throw new Error('hostile message getter');
        },
      });
      return error;
    }
    case 'proxy':
      return throwingProxy();
    case 'symbol':
      return Symbol('thrown');
    case 'undefined':
      return undefined;
    case 'null':
      return null;
    case 'number':
      return 42;
    case 'string':
      return 'a plain string';
    case 'huge-string':
      return 'y'.repeat(200_000);
    case 'circular-cause': {
      const error = new Error('circular cause');
      (error as { cause?: unknown }).cause = error;
      return error;
    }
    case 'retryable-getter-throws':
      return {
        message: 'retry me?',
        get retryable(): never {
          throw new Error('hostile retryable getter');
        },
      };
    case 'error-like':
      return { code: 'internal', message: 'looks like a LunationError', isRetryable: true };
  }
}

/** The fuzz agent's tools; each records its execution (by nonce) before doing anything hostile. */
export function createFuzzTools(events: FuzzEvent[]): AnyTool[] {
  const record = (context: ToolContext, nonce: string) =>
    events.push({
      type: 'execution',
      threadId: context.identity.threadId,
      toolCallId: context.toolCallId,
      nonce,
    });
  const echo = ({ text }: { text: string }, context: ToolContext) => {
    record(context, text);
    return { echoed: text };
  };
  return [
    defineTool({
      name: fuzzToolNames.echo,
      description: 'Echoes its text',
      input: z.object({ text: z.string() }),
      execute: echo,
    }),
    defineTool({
      name: fuzzToolNames.gated,
      description: 'Echoes its text after approval',
      input: z.object({ text: z.string(), payload: z.unknown().optional() }),
      execute: echo,
    }),
    defineTool({
      name: fuzzToolNames.returns,
      description: 'Returns a hostile value',
      input: z.object({ text: z.string(), kind: z.enum(hostileReturns), via: z.enum(['return', 'output']) }),
      execute: ({ text, kind, via }, context) => {
        record(context, text);
        return via === 'output' ? hostileResult(kind, context) : hostileValue(kind);
      },
    }),
    defineTool({
      name: fuzzToolNames.throws,
      description: 'Throws a hostile value',
      input: z.object({ text: z.string(), kind: z.enum(hostileThrows) }),
      execute: ({ text, kind }, context) => {
        record(context, text);
        throw hostileThrown(kind);
      },
    }),
  ];
}
