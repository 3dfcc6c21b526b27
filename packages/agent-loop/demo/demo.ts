// `pnpm demo` (the README's first command): the support agent on the SQLite default with a
// scripted stub model, SIGKILLed while it waits for approval, resumed by a new process and
// approved from another; exits 1 if the refund did not run exactly once, the log does not verify
// or the run did not complete its goal.
import { runDemo } from './run-demo.js';

process.exitCode = (await runDemo('stub')) ? 0 : 1;
