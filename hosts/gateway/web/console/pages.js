import * as workflows from './workflows.js';
import * as tables from './tables.js';
import * as documents from './documents.js';
import * as webhooks from './webhooks.js';
import * as agents from './agents.js';
import * as forms from './forms.js';

export default [workflows, tables, documents, webhooks, agents, forms];
