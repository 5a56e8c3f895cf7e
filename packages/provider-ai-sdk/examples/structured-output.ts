import { anthropic } from '@ai-sdk/anthropic';
import { createRuntime } from '@lunation/runtime';
import { z } from 'zod';
import { AiSdkModel } from '../src/index.js';

const invoice = z.object({
  vendor: z.string(),
  total: z.number(),
  currency: z.enum(['EUR', 'USD', 'GBP']),
  lines: z.array(z.object({ item: z.string(), amount: z.number() })),
});

const runtime = createRuntime()
  .model('main', new AiSdkModel({ model: anthropic('claude-sonnet-4-6') })) // or openai('gpt-5-mini'), ...
  .agent({ id: 'extractor', model: 'main', systemPrompt: 'Extract the invoice.' })
  .build();

const text = 'ACME Ltd. invoice 88: 2 widgets 40.00, shipping 9.50. Total EUR 49.50';
const result = await runtime.generate({ threadId: 'invoice-88', input: text, output: invoice });
if (result.output) console.log(`${result.output.vendor}: ${result.output.total} ${result.output.currency}`);
else console.error(result.termination); // { type: 'error', error: { code: 'output-invalid', ... } }
