import { describe, expect, it } from 'vitest';
import { titleFromMessage, titleOf } from './thread-title.js';

describe('thread titles', () => {
  it('takes the first line of the first message, spaces collapsed, cut at a word near 60 characters', () => {
    expect(titleFromMessage('  what is 2 + 2  ')).toBe('what is 2 + 2');
    expect(titleFromMessage('Plan the trip\nto Tokyo in May')).toBe('Plan the trip');
    expect(titleFromMessage('a  b\t c')).toBe('a b c');
    const long = 'Summarise the quarterly report for the board and list the three biggest risks with owners';
    const title = titleFromMessage(long);
    expect(title).toBe('Summarise the quarterly report for the board and list the…');
    expect(title.length).toBeLessThanOrEqual(61);
    expect(titleFromMessage('x'.repeat(80))).toBe(`${'x'.repeat(60)}…`);
  });

  it('shows a stored title, else "Untitled thread", never the id', () => {
    expect(titleOf({ metadata: { title: ' Trip ' } })).toBe('Trip');
    expect(titleOf({ metadata: { title: '' } })).toBe('Untitled thread');
    expect(titleOf({ metadata: { title: 42 } })).toBe('Untitled thread');
    expect(titleOf({ metadata: {} })).toBe('Untitled thread');
  });
});
