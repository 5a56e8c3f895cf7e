import type { TraceCarrier } from '@lunation/contract';
import { createTraceState, type SpanContext, TraceFlags, trace } from '@opentelemetry/api';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A span context as W3C Trace Context entries (`traceparent`, and `tracestate` when it has one). */
export function toTraceCarrier(context: SpanContext): TraceCarrier | undefined {
  if (!trace.isSpanContextValid(context)) return undefined;
  const flags = (context.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, '0');
  const carrier: Record<string, string> = {
    traceparent: `00-${context.traceId}-${context.spanId}-${flags}`,
  };
  const state = context.traceState?.serialize();
  if (state) carrier.tracestate = state;
  return carrier;
}

/** The span context a carrier holds (remote), or undefined when it holds none that is valid. */
export function fromTraceCarrier(carrier: TraceCarrier | undefined): SpanContext | undefined {
  const match = carrier?.traceparent === undefined ? null : TRACEPARENT.exec(carrier.traceparent);
  if (!match) return undefined;
  const context: SpanContext = {
    traceId: match[1] as string,
    spanId: match[2] as string,
    traceFlags: Number.parseInt(match[3] as string, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  if (carrier?.tracestate) context.traceState = createTraceState(carrier.tracestate);
  return trace.isSpanContextValid(context) ? context : undefined;
}
