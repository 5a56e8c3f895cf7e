export * from './errors.js';
export * from './events.js';
export * from './json.js';
export * from './messages.js';
export * from './model.js';
export * from './run.js';
export * from './store.js';
export * from './tools.js';
