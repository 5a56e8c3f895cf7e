import type {
  AssistantMessage,
  ModelStreamPart,
  ReasoningPart,
  RefusalPart,
  TextPart,
} from '@lunation/contract';

/**
 * Builds the assistant content a consumer of the stream keeps (the same block rules as the runtime's agent loop),
 * so a turn continued after `pause_turn` sends back exactly what a later request will.
 */
export class AnswerBuilder {
  readonly content: AssistantMessage['content'] = [];
  #text: TextPart | undefined;
  #reasoning: ReasoningPart | undefined;
  #refusal: RefusalPart | undefined;
  readonly #calls = new Map<string, true>();

  push(part: ModelStreamPart): void {
    switch (part.type) {
      case 'text-delta':
        if (!this.#text) {
          this.#text = { type: 'text', text: '' };
          this.content.push(this.#text);
        }
        this.#text.text += part.delta;
        this.#reasoning = undefined;
        this.#refusal = undefined;
        if (part.providerMetadata) {
          this.#text.providerMetadata = part.providerMetadata;
          this.#text = undefined;
        }
        break;
      case 'reasoning-delta':
        if (!this.#reasoning) {
          this.#reasoning = { type: 'reasoning', text: '' };
          this.content.push(this.#reasoning);
        }
        this.#text = undefined;
        this.#refusal = undefined;
        this.#reasoning.text += part.delta;
        if (part.redacted) this.#reasoning.redacted = true;
        if (part.providerMetadata) this.#reasoning.providerMetadata = part.providerMetadata;
        if (part.signature !== undefined || part.redacted || part.providerMetadata) {
          if (part.signature !== undefined) this.#reasoning.signature = part.signature;
          this.#reasoning = undefined;
        }
        break;
      case 'refusal-delta':
        if (!this.#refusal) {
          this.#refusal = { type: 'refusal', text: '' };
          this.content.push(this.#refusal);
        }
        this.#refusal.text += part.delta;
        this.#text = undefined;
        this.#reasoning = undefined;
        break;
      case 'provider-content':
        this.content.push({
          type: 'provider-content',
          provider: part.provider,
          kind: part.kind,
          value: part.value,
        });
        this.#close();
        break;
      case 'tool-call-end':
        this.#calls.set(part.toolCallId, true);
        this.content.push({
          type: 'tool-call',
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          arguments: part.arguments,
          ...(part.providerMetadata ? { providerMetadata: part.providerMetadata } : {}),
        });
        this.#close();
        break;
      default:
        break;
    }
  }

  /** Whether the answer so far holds a call for the client to run. */
  get hasToolCalls(): boolean {
    return this.#calls.size > 0;
  }

  #close(): void {
    this.#text = undefined;
    this.#reasoning = undefined;
    this.#refusal = undefined;
  }
}
