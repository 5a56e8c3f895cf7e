/** One real effect of a tool (an email sent, a payment made), as the world saw it happen. */
export interface WorldEffect {
  /** What makes two effects the same one: the call's idempotency key, a submission id. */
  key: string;
  /** The process that caused it. */
  process: string;
  /** What happened, for the report. */
  label: string;
  /** Virtual milliseconds since the start. */
  at: number;
}

/**
 * The world's own record of tools' real effects, kept outside every simulated part: what the store says
 * happened is checked against it (no recorded result executed twice, at-most-once effects at most once).
 */
export class WorldLedger {
  private readonly effects: WorldEffect[] = [];
  private readonly byKey = new Map<string, WorldEffect[]>();
  /** The highest fencing token the target has seen per thread. */
  private readonly tokens = new Map<string, number>();
  private readonly stale: WorldEffect[] = [];

  /**
   * The target's fence, as a real API that remembers the highest fencing token it saw per thread: an effect that
   * comes with a lower token is refused (a process stopped between its lease check and its call, resumed after
   * a successor took the thread over: its effect has no effect) and kept in {@link refused}. True when admitted.
   */
  admit(threadId: string, token: number | undefined, effect: WorldEffect): boolean {
    if (token === undefined) return true;
    const seen = this.tokens.get(threadId);
    if (seen !== undefined && token < seen) {
      this.stale.push(effect);
      return false;
    }
    this.tokens.set(threadId, token);
    return true;
  }

  /** The effects the target refused for a stale fencing token, in the order they came. */
  refused(): readonly WorldEffect[] {
    return this.stale;
  }

  /** Records an effect. */
  record(effect: WorldEffect): void {
    this.effects.push(effect);
    const list = this.byKey.get(effect.key);
    if (list === undefined) this.byKey.set(effect.key, [effect]);
    else list.push(effect);
  }

  /** How many times the effect `key` happened. */
  count(key: string): number {
    return this.byKey.get(key)?.length ?? 0;
  }

  /** Every effect, in the order they happened. */
  all(): readonly WorldEffect[] {
    return this.effects;
  }

  /** The keys that happened more than once, with their effects. */
  repeated(): Map<string, readonly WorldEffect[]> {
    return new Map([...this.byKey].filter(([, list]) => list.length > 1));
  }

  /** How many effects happened in all. */
  get size(): number {
    return this.effects.length;
  }
}
