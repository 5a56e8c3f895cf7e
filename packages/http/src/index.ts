export type { CorsOptions } from './cors.js';
export { isDynamicToolName } from './dynamic-tool-name.js';
export { type EventStreamOptions, eventStreamResponse, type ServerSentEvent } from './event-stream.js';
export { FleetFront, type FleetFrontOptions } from './fleet-front.js';
export {
  type FrontAnswer,
  type FrontRequest,
  type FrontSendOptions,
  isRunStream,
  type RunFront,
  type RunStream,
} from './front.js';
export { createHttpApi, type HttpApi, type HttpApiOptions } from './http-api.js';
export { HttpError, toHttpError } from './http-error.js';
export { LocalFront, type LocalFrontOptions } from './local-front.js';
export { type RunSummary, runSummary } from './run-summary.js';
export { INBOX_SCAN_LIMIT, type InboxThread, SEARCH_SCAN_LIMIT } from './thread-queries.js';
export { buildTimeline, type RunTimeline, type TimelineEntry, type TimelineWorker } from './timeline.js';
export { type Authenticate, LOCAL_RESOURCE, tokenAuth } from './token-auth.js';
export {
  toUIMessageChunks,
  UI_MESSAGE_STREAM_HEADERS,
  type UIMessageChunk,
  type UIMessageChunksOptions,
} from './ui-message-stream.js';
export {
  type ChatUIMessage,
  type ChatUIMessagesOptions,
  type ChatUIPart,
  type ThreadUIMessagesOptions,
  threadUIMessages,
  toChatUIMessages,
} from './ui-messages.js';
