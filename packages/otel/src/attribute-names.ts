import type { StopReason } from '@lunation/contract';

/** GenAI semantic-convention attribute names (OpenTelemetry semantic conventions, `gen_ai.*`). */
export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  agentId: 'gen_ai.agent.id',
  agentName: 'gen_ai.agent.name',
  agentDescription: 'gen_ai.agent.description',
  conversationId: 'gen_ai.conversation.id',
  requestModel: 'gen_ai.request.model',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  requestTemperature: 'gen_ai.request.temperature',
  requestTopP: 'gen_ai.request.top_p',
  requestStopSequences: 'gen_ai.request.stop_sequences',
  responseId: 'gen_ai.response.id',
  responseModel: 'gen_ai.response.model',
  responseFinishReasons: 'gen_ai.response.finish_reasons',
  usageInputTokens: 'gen_ai.usage.input_tokens',
  usageOutputTokens: 'gen_ai.usage.output_tokens',
  usageCacheReadInputTokens: 'gen_ai.usage.cache_read.input_tokens',
  usageCacheCreationInputTokens: 'gen_ai.usage.cache_creation.input_tokens',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  toolDescription: 'gen_ai.tool.description',
  toolCallArguments: 'gen_ai.tool.call.arguments',
  toolCallResult: 'gen_ai.tool.call.result',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  systemInstructions: 'gen_ai.system_instructions',
  errorType: 'error.type',
} as const;

/** Lunation's own attribute, span and event names (`lunation.*`). */
export const LUNATION = {
  threadId: 'lunation.thread.id',
  runId: 'lunation.run.id',
  runOrigin: 'lunation.run.origin',
  parentRunId: 'lunation.run.parent_id',
  resumed: 'lunation.run.resumed',
  status: 'lunation.run.status',
  termination: 'lunation.run.termination',
  steps: 'lunation.run.steps',
  checkpoints: 'lunation.run.checkpoints',
  toolSpansSkipped: 'lunation.run.tool_spans_skipped',
  checkpointsDuration: 'lunation.run.checkpoint_duration_ms',
  step: 'lunation.step',
  idempotencyKey: 'lunation.tool.idempotency_key',
  rerun: 'lunation.tool.rerun',
  attempt: 'lunation.tool.attempt',
  toolStatus: 'lunation.tool.status',
  source: 'lunation.ledger.source',
  checkpointKind: 'lunation.checkpoint.kind',
  checkpointMessages: 'lunation.checkpoint.messages',
  checkpointLedgerEntries: 'lunation.checkpoint.ledger_entries',
  checkpointRunRecord: 'lunation.checkpoint.run_record',
  checkpointDuration: 'lunation.checkpoint.duration_ms',
  leaseToken: 'lunation.lease.token',
  leaseTakeover: 'lunation.lease.takeover',
  leaseFenced: 'lunation.lease.fenced',
  ticketId: 'lunation.ticket.id',
  ticketAction: 'lunation.ticket.action',
  decisionAction: 'lunation.decision.action',
  linkType: 'lunation.link.type',
  checkpointSpan: 'lunation.checkpoint',
  leaseAcquireEvent: 'lunation.lease.acquire',
  leaseRenewEvent: 'lunation.lease.renew',
  leaseLostEvent: 'lunation.lease.lost',
  leaseFencedEvent: 'lunation.lease.fenced',
  leaseRejectedSpan: 'lunation.lease.rejected',
  ledgerHitEvent: 'lunation.ledger.hit',
  ledgerRerunEvent: 'lunation.ledger.rerun',
  suspendEvent: 'lunation.run.suspend',
  resumeEvent: 'lunation.run.resume',
} as const;

/** Lunation's stop reasons as GenAI finish reasons. */
const FINISH_REASONS: Record<StopReason, string> = {
  'end-turn': 'stop',
  'max-tokens': 'length',
  'tool-use': 'tool_call',
  'stop-sequence': 'stop',
  'content-filter': 'content_filter',
  refusal: 'content_filter',
  error: 'error',
};

/**
 * `gen_ai.response.finish_reasons` of each stop reason: one array per reason, shared by every span instead of one
 * made per model call, frozen since a span may keep the array it is given (the SDK copies it).
 */
const FINISH_REASON_LISTS = Object.fromEntries(
  Object.entries(FINISH_REASONS).map(([reason, finish]) => [reason, Object.freeze([finish])]),
) as Record<StopReason, readonly string[]>;

/** The GenAI finish reasons (`gen_ai.response.finish_reasons`) of a stop reason, as a shared frozen array. */
export function finishReasons(reason: StopReason): readonly string[] {
  return FINISH_REASON_LISTS[reason];
}
