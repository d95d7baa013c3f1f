// The console's pages, in the navigation's order. Each module exports `route` and
// `render(ctx, main, match)` (see app.js).
import * as runs from './runs.js';
import * as run from './run.js';
import * as tasks from './tasks.js';
import * as workflows from './workflows.js';
import * as tables from './tables.js';
import * as documents from './documents.js';
import * as webhooks from './webhooks.js';
import * as agents from './agents.js';
import * as forms from './forms.js';

export default [runs, run, tasks, workflows, tables, documents, webhooks, agents, forms];
