import { z } from 'zod';
import { createRuntime } from '../src/index.js';
import { reply, ScriptedModel } from '../src/testing/index.js';

const invoice = z.object({
  vendor: z.string(),
  total: z.number(),
  currency: z.enum(['EUR', 'USD']),
  dueDate: z.iso.date(),
});

// Any ModelProvider; this scripted one answers in prose first, then with JSON after the repair round.
const model = new ScriptedModel([
  reply('ACME wants 129.50 EUR by May 1.'),
  reply('```json\n{"vendor":"ACME","total":129.5,"currency":"EUR","dueDate":"2026-05-01"}\n```'),
]);
const runtime = createRuntime()
  .model('main', model)
  .agent({ id: 'extractor', model: 'main', systemPrompt: 'Extract the invoice.', outputRepairs: 1 })
  .build();

const { output, termination } = await runtime.generate({
  threadId: 'inbox-7',
  input: 'Invoice from ACME: 129.50 EUR, due 1 May 2026.',
  output: invoice, // or `output` on the agent definition; here it also types `output`
});
if (output) console.log(`${output.vendor} ${output.total} ${output.currency}, due ${output.dueDate}`);
else console.error(termination); // { type: 'error', error: { code: 'output-invalid', message, ... } }
