import { LunationError, type ModelProvider } from '@lunation/contract';
import { DemoModel } from './demo-model.js';

export type ProviderKind = 'openai' | 'anthropic' | 'demo';

export interface CreateModelOptions {
  /** @default openai when OPENAI_API_KEY is set, else anthropic when ANTHROPIC_API_KEY is set, else demo */
  provider?: ProviderKind;
  /** The model id; each provider has a default. */
  model?: string;
  /** Where API keys and base URLs are read from. */
  env: Record<string, string | undefined>;
}

export const DEFAULT_MODELS: Record<Exclude<ProviderKind, 'demo'>, string> = {
  openai: 'gpt-5.4-mini',
  anthropic: 'claude-sonnet-5-5',
};

/** The provider to use when none is named: the first one with an API key, else the offline demo model. */
export function defaultProvider(env: Record<string, string | undefined>): ProviderKind {
  if (env.OPENAI_API_KEY) return 'openai';
  if (env.ANTHROPIC_API_KEY) return 'anthropic';
  return 'demo';
}

/** Creates the model provider; providers are loaded only when chosen. */
export async function createModel(options: CreateModelOptions): Promise<ModelProvider> {
  const { env } = options;
  const provider = options.provider ?? defaultProvider(env);
  switch (provider) {
    case 'demo':
      return new DemoModel();
    case 'openai': {
      const apiKey = requireKey(env, 'OPENAI_API_KEY', provider);
      const { OpenAIModel } = await import('@lunation/provider-openai');
      return new OpenAIModel({
        model: options.model ?? DEFAULT_MODELS.openai,
        apiKey,
        ...(env.OPENAI_BASE_URL ? { baseURL: env.OPENAI_BASE_URL } : {}),
      });
    }
    case 'anthropic': {
      const apiKey = requireKey(env, 'ANTHROPIC_API_KEY', provider);
      const { AnthropicModel } = await import('@lunation/provider-anthropic');
      return new AnthropicModel({
        model: options.model ?? DEFAULT_MODELS.anthropic,
        apiKey,
        ...(env.ANTHROPIC_BASE_URL ? { baseURL: env.ANTHROPIC_BASE_URL } : {}),
      });
    }
  }
}

function requireKey(env: Record<string, string | undefined>, name: string, provider: ProviderKind): string {
  const key = env[name];
  if (!key) {
    throw new LunationError(
      'invalid-argument',
      `--provider ${provider} needs ${name} in the environment (or use --provider demo for the offline model)`,
    );
  }
  return key;
}
