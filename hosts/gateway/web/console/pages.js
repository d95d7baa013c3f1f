// The console's pages, in the navigation's order. Each module exports `route` and
// `render(ctx, main, match)` (see app.js).
import * as runs from './runs.js';
import * as run from './run.js';
import * as tasks from './tasks.js';

export default [runs, run, tasks];
