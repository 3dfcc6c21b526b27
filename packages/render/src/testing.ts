export { referenceRenderMessages } from './testing/reference-render-messages.js';
