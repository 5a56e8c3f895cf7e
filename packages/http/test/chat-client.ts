import {
  AbstractChat,
  type ChatInit,
  type ChatState,
  type ChatStatus,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from 'ai';
import { ALICE, type TestApi } from './support.js';

/** The AI SDK's chat state, kept in plain arrays (what `@ai-sdk/react` keeps in React state). */
export class ArrayChatState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  constructor(public messages: UIMessage[] = []) {}
  pushMessage = (message: UIMessage) => {
    this.messages = [...this.messages, message];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

/** The AI SDK's own chat client (`AbstractChat`, which `useChat` wraps) with its default transport. */
export class TestChat extends AbstractChat<UIMessage> {
  constructor(api: TestApi, id: string, token = ALICE, init: Partial<ChatInit<UIMessage>> = {}) {
    super({
      id,
      state: new ArrayChatState(init.messages),
      transport: new DefaultChatTransport({
        api: `${api.url}/chat`,
        headers: { authorization: `Bearer ${token}` },
      }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
      ...init,
    });
  }
}

export async function until(condition: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export type ToolPart = {
  type: string;
  state: string;
  toolCallId: string;
  input?: unknown;
  output?: unknown;
  approval?: { id: string };
};
export const toolParts = (message: UIMessage | undefined) =>
  (message?.parts ?? []).filter(
    (part) => part.type === 'dynamic-tool' || part.type.startsWith('tool-'),
  ) as unknown as ToolPart[];
export const textOf = (message: UIMessage | undefined) =>
  (message?.parts ?? []).map((part) => (part.type === 'text' ? part.text : '')).join('');
