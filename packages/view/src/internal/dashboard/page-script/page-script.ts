import { keyboardScript } from './script-keyboard.js';
import { operationsScript } from './script-operations.js';
import { operatorActionsScript } from './script-operator-actions.js';
import { runDetailScript } from './script-run-detail.js';
import { runsListScript } from './script-runs-list.js';
import { searchStreamScript } from './script-search-stream.js';
import { sharedScript } from './script-shared.js';

/**
 * The dashboard's page script, served as /app.js: one closure over the page's state, in parts by
 * view (shared helpers, the runs list, the open run, the search and its live stream, an operator's
 * actions, schedules and queues, the keyboard), joined in this order.
 */
export const dashboardJs = [
  sharedScript,
  runsListScript,
  runDetailScript,
  searchStreamScript,
  operatorActionsScript,
  operationsScript,
  keyboardScript,
].join('');
