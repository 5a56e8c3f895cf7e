import type { ModelProvider, ModelRequest, ModelStreamPart } from '@lunation/contract';
import { createRuntime, defineTool } from '@lunation/runtime';
import { z } from 'zod';

const S = 10;
class Model implements ModelProvider {
  readonly specificationVersion = 'v1' as const;
  readonly provider = 'x';
  readonly modelId = 'x';
  async *stream(request: ModelRequest): AsyncGenerator<ModelStreamPart> {
    const tools = request.messages.filter((m) => m.role === 'tool').length;
    if (tools < S - 1) {
      yield { type: 'tool-call-start', toolCallId: `c${tools}`, toolName: 'add' };
      yield { type: 'tool-call-end', toolCallId: `c${tools}`, toolName: 'add', arguments: '{"a":1,"b":2}' };
      yield { type: 'finish', stopReason: 'tool-use' };
    } else {
      yield { type: 'text-delta', delta: 'done' };
      yield { type: 'finish', stopReason: 'end-turn' };
    }
  }
}
const add = defineTool({
  name: 'add',
  description: 'add',
  input: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => ({ sum: a + b }),
});
const runtime = createRuntime()
  .model('m', new Model())
  .agent({ id: 'a', model: 'm', tools: [add] })
  .build();
const streaming = process.argv.includes('--stream');
let i = 0;
async function once() {
  if (streaming) {
    const h = await runtime.run({ threadId: `t${i++}`, input: 'go' });
    for await (const _ of h.events) {
    }
    const r = await h.result;
    if (r.finalText !== 'done' || r.steps !== S) throw new Error('bad');
  } else {
    const r = await runtime.generate({ threadId: `t${i++}`, input: 'go' });
    if (r.finalText !== 'done' || r.steps !== S) throw new Error('bad ' + JSON.stringify(r.termination));
  }
}
for (let w = 0; w < 2000; w++) await once();
const N = 5000;
const t0 = process.hrtime.bigint();
for (let k = 0; k < N; k++) await once();
const us = Number(process.hrtime.bigint() - t0) / 1000 / N;
console.log(`${streaming ? 'stream' : 'generate'}: ${us.toFixed(1)} µs/run, ${(us / S).toFixed(2)} µs/step`);
