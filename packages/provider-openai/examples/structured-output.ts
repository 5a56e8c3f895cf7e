import { createRuntime, defineTool } from '@lunation/runtime';
import { z } from 'zod';
import { OpenAIModel } from '../src/index.js';

const getWeather = defineTool({
  name: 'get_weather',
  description: 'The current weather in a city.',
  input: z.object({ city: z.string() }),
  execute: ({ city }) => ({ city, tempC: 9, sky: 'rain' }),
});
const advice = z.object({ city: z.string(), celsius: z.number(), coat: z.boolean(), why: z.string() });

const runtime = createRuntime()
  .model('main', new OpenAIModel({ model: 'gpt-4.1-mini' })) // or new OpenAIResponsesModel({ model: 'gpt-5-mini' })
  .agent({ id: 'forecaster', model: 'main', tools: [getWeather] })
  .build();

const result = await runtime.generate({ threadId: 'trip-1', input: 'Coat for Paris today?', output: advice });
if (result.output) console.log(result.output.coat ? `Take a coat: ${result.output.why}` : 'No coat needed.');
else console.error(result.termination); // { type: 'error', error: { code: 'output-invalid', ... } }
