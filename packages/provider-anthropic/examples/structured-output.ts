import { createRuntime, defineTool } from '@lunation/runtime';
import { z } from 'zod';
import { AnthropicModel } from '../src/index.js';

const findOrder = defineTool({
  name: 'find_order',
  description: 'Looks an order up by its number.',
  input: z.object({ orderId: z.string() }),
  execute: ({ orderId }) => ({ orderId, status: 'delivered', items: 3 }),
});
const ticket = z.object({
  orderId: z.string(),
  category: z.enum(['damaged', 'missing', 'late', 'other']),
  itemsAffected: z.number().int().min(1),
  reply: z.string(),
});

const runtime = createRuntime()
  .model('main', new AnthropicModel({ model: 'claude-sonnet-4-6' })) // reads ANTHROPIC_API_KEY
  .agent({ id: 'support', model: 'main', tools: [findOrder], outputRepairs: 2 })
  .build();

const input = 'Order 1234 arrived with 2 cups broken.';
const { output, termination } = await runtime.generate({ threadId: 'ticket-7', input, output: ticket });
if (output) console.log(`${output.category} x${output.itemsAffected}: ${output.reply}`);
else console.error(termination); // { type: 'error', error: { code: 'output-invalid', ... } }
