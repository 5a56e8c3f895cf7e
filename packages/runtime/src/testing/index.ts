export { collectEvents, eventsOfType, eventTypes, streamedText } from './events.js';
export {
  callTool,
  reply,
  type Script,
  ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedResponse,
} from './scripted-model.js';
