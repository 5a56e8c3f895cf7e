import type { AgentEvent, AgentEventOf, AgentEventType } from '@lunation/contract';

/** Collects every event of an async iterable (e.g. a run handle's `events`). */
export async function collectEvents(
  events: AsyncIterable<AgentEvent> | Iterable<AgentEvent>,
): Promise<AgentEvent[]> {
  const collected: AgentEvent[] = [];
  for await (const event of events) collected.push(event);
  return collected;
}

/** The event types in order, with consecutive deltas of one kind collapsed (easy to assert on). */
export function eventTypes(
  events: readonly AgentEvent[],
  options: { collapseDeltas?: boolean } = {},
): string[] {
  const types: string[] = [];
  for (const event of events) {
    const last = types[types.length - 1];
    if ((options.collapseDeltas ?? true) && event.type.endsWith('-delta') && last === event.type) continue;
    types.push(event.type);
  }
  return types;
}

/** The events of one type. */
export function eventsOfType<T extends AgentEventType>(
  events: readonly AgentEvent[],
  type: T,
): AgentEventOf<T>[] {
  return events.filter((event): event is AgentEventOf<T> => event.type === type);
}

/** The concatenated text deltas. */
export function streamedText(events: readonly AgentEvent[]): string {
  let text = '';
  for (const event of events) if (event.type === 'text-delta') text += event.delta;
  return text;
}
