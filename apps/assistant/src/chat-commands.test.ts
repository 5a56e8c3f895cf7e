import { describe, expect, it } from 'vitest';
import { parseChatCommand } from './chat-commands.js';

describe('parseChatCommand', () => {
  it.each([
    ['hello', undefined],
    ['what is 1/2', undefined],
    ['/exit', { type: 'exit' }],
    ['/quit', { type: 'exit' }],
    ['/help', { type: 'help' }],
    ['/?', { type: 'help' }],
    ['/exti', { type: 'unknown', name: '/exti' }],
    ['/clear all', { type: 'unknown', name: '/clear' }],
    ['/', { type: 'unknown', name: '/' }],
    ['//etc/hosts is a file', { type: 'message', text: '/etc/hosts is a file' }],
  ])('%j is %j', (line, command) => {
    expect(parseChatCommand(line)).toEqual(command);
  });
});
