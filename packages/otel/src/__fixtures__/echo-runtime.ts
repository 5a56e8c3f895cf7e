import type { Instrumentation, LunationStore } from '@lunation/contract';
import { createRuntime, defineTool } from '@lunation/runtime';
import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { z } from 'zod';

/**
 * A runtime whose one run on any thread is two steps: the model calls `echo` with "hi", then answers "said hi".
 * Traced through `instrumentation`, on `store` when given.
 */
export function echoRuntime(instrumentation: Instrumentation, store?: LunationStore) {
  const echo = defineTool({
    name: 'echo',
    description: 'Echoes',
    input: z.object({ text: z.string() }),
    execute: ({ text }) => text,
  });
  const builder = createRuntime()
    .model('m', new ScriptedModel([callTool('echo', { text: 'hi' }), reply('said hi')]))
    .agent({ id: 'a', model: 'm', tools: [echo] })
    .instrumentation(instrumentation);
  return (store ? builder.store(store) : builder).build();
}
