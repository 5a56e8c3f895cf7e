import { createTraceState, TraceFlags } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { fromTraceCarrier, toTraceCarrier } from './index.js';

describe('trace carriers', () => {
  it('round-trips a span context as W3C traceparent and tracestate', () => {
    const context = {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.SAMPLED,
      traceState: createTraceState('vendor=value'),
    };
    const carrier = toTraceCarrier(context);
    expect(carrier).toEqual({
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      tracestate: 'vendor=value',
    });
    const back = fromTraceCarrier(carrier);
    expect(back).toMatchObject({
      traceId: context.traceId,
      spanId: context.spanId,
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    });
    expect(back?.traceState?.serialize()).toBe('vendor=value');
    expect(fromTraceCarrier({ traceparent: carrier?.traceparent ?? '' })?.traceState).toBeUndefined();
  });

  it('gives nothing for an invalid context or carrier', () => {
    expect(
      toTraceCarrier({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 0 }),
    ).toBeUndefined();
    expect(fromTraceCarrier(undefined)).toBeUndefined();
    expect(fromTraceCarrier({ traceparent: 'garbage' })).toBeUndefined();
    expect(fromTraceCarrier({ traceparent: `00-${'0'.repeat(32)}-b7ad6b7169203331-01` })).toBeUndefined();
  });
});
