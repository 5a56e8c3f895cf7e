import type { IdSource } from '@lunation/contract';
import type { SeededRandom } from './seeded-random.js';

/** An {@link IdSource} drawn from a seeded stream: the same seed gives the same ids and numbers. */
export class SeededIds implements IdSource {
  private readonly prefix: string;
  private counter = 0;

  constructor(private readonly stream: SeededRandom) {
    this.prefix = `s${stream.uint32().toString(16).padStart(8, '0')}-`;
  }

  id(): string {
    this.counter++;
    return this.prefix + this.counter.toString(36);
  }

  random(): number {
    return this.stream.float();
  }
}
