// The dashboard's one page: static HTML, a stylesheet and a script, served from this package (no
// CDN, no framework, no build step). The script writes run data with textContent and SVG
// attributes only, never as HTML, so a run id or payload cannot inject markup; the CSP forbids
// inline script anyway. Browser code is kept ES2017 and free of backticks (it lives in a template).
// The script is in parts by view under page-script/ (page-script.ts joins them).

/** The page; `readOnly` leaves out every control that changes a run. */
export function dashboardHtml(options: { readOnly: boolean }): string {
  const controls = options.readOnly
    ? '<span class="badge" id="mode">read-only</span>'
    : `<label>as <input id="by" size="12" placeholder="your name" autocomplete="username"></label>
      <label>token <input id="token" type="password" size="14" placeholder="from loom serve" autocomplete="off"></label>`;
  const actions = options.readOnly
    ? ''
    : `<div id="actions" class="actions">
        <button type="button" id="cancel-run" class="danger">Cancel run</button>
        <button type="button" id="resume-run" title="replay it from its log on the next timer poll of a runtime that runs its flow">Resume</button>
        <form id="signal-form">
          <input id="signal-name" placeholder="signal name" required size="12">
          <input id="signal-payload" placeholder='payload JSON, e.g. {"ok":true}' size="28">
          <button type="submit">Send signal</button>
        </form>
      </div>`;
  const bulk = options.readOnly
    ? ''
    : `<form id="bulk-form" class="bulk" aria-label="act on the runs of this page">
        <select id="bulk-action" aria-label="bulk action"><option value="cancel">Cancel</option><option value="resume">Resume</option><option value="retry">Retry</option></select>
        <input id="bulk-reason" placeholder="why (recorded with a cancel or retry)" aria-label="why (recorded with a cancel or retry)" size="26" autocomplete="off">
        <button type="submit" id="bulk-apply">Apply to the runs on this page</button>
        <label><input type="checkbox" id="select-page"> select this page</label>
        <span id="selected-count" role="status"></span>
        <button type="button" id="clear-selection" hidden>Clear selection</button>
      </form>`;
  const fork = options.readOnly
    ? ''
    : `<div class="fork"><button type="button" id="retry-run" hidden title="run its failed step again on a process running its flow (deploy the fix first)">Retry from the failed step</button> <input id="retry-reason" hidden placeholder="why (recorded with the retry)" aria-label="why retry (recorded in the log)" size="24" autocomplete="off"> <button type="button" id="fork-here" disabled title="a new run whose log is this one's up to the selected event; what follows runs again">Fork at the selected event</button></div>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Loom dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head>
<body data-read-only="${options.readOnly ? 'true' : 'false'}">
<header>
  <h1>Loom</h1>
  <span id="live" class="live">connecting…</span>
  <span class="spacer"></span>
  ${controls}
</header>
<p id="flash" class="flash" role="status"></p>
<main>
  <section id="runs-pane" aria-label="runs">
    <form id="runs-filters" class="filters" role="search">
      <input id="search-id" type="search" placeholder="run id starts with…" aria-label="run id prefix" size="18" autocomplete="off">
      <input id="filter-flow" list="flows" placeholder="flow" aria-label="flow" size="12" autocomplete="off">
      <datalist id="flows"></datalist>
      <input id="filter-version" placeholder="version" aria-label="version" size="6" autocomplete="off">
      <label>Status <select id="status-filter">
        <option value="">all</option>
        <option>running</option><option>suspended</option><option>completed</option>
        <option>failed</option><option>cancelled</option><option>continued</option><option>settled</option>
      </select></label>
      <label title="what a suspended run waits for: a timer (a sleep, a timeout, an expiry), a signal, an approval, an answer to a question, a child run; a wait for a signal with a timeout is both">Waiting for <select id="waiting-filter">
        <option value="">anything</option>
        <option value="timer">a timer</option>
        <option value="signal">a signal</option>
        <option value="approval">an approval</option>
        <option value="question">an answer</option>
        <option value="child">a child run</option>
        <option value="input">any input</option>
      </select></label>
      <label>Updated from <input id="updated-from" type="datetime-local" step="1" aria-label="updated from (UTC)"></label>
      <label>to <input id="updated-before" type="datetime-local" step="1" aria-label="updated before (UTC)"></label>
      <label>Sort <select id="sort">
        <option value="updated:desc">updated, newest first</option>
        <option value="updated:asc">updated, oldest first</option>
        <option value="created:desc">created, newest first</option>
        <option value="created:asc">created, oldest first</option>
      </select></label>
      <button type="button" id="clear-filters">Clear</button>
    </form>
    <div id="status-counts" class="counts" aria-label="runs per status"></div>
    <div class="scroll"><table id="runs">
      <thead><tr><th>Run</th><th>Flow</th><th>Status</th><th>Steps</th><th>Approvals</th><th>Updated (UTC)</th><th>Reason</th></tr></thead>
      <tbody id="runs-body"></tbody>
    </table></div>
    <p class="note keys" id="key-help">Keys: <kbd>j</kbd>/<kbd>k</kbd> or <kbd>↓</kbd>/<kbd>↑</kbd> move through the runs, <kbd>Enter</kbd> opens one, <kbd>/</kbd> searches, <kbd>Esc</kbd> closes the open run.</p>
    <div class="pager">
      <button type="button" id="prev-page" disabled>← Previous</button>
      <span id="runs-count"></span>
      <button type="button" id="next-page" disabled>Next →</button>
    </div>${bulk}
    <div id="operations">
      <div id="schedules-box" hidden>
        <h3>Schedules</h3>
        <div class="scroll"><table id="schedules">
          <thead><tr><th>Schedule</th><th>Cron</th><th>Flow</th><th>Next fires (UTC)</th><th>Latest runs</th></tr></thead>
          <tbody id="schedules-body"></tbody>
        </table></div>
      </div>
      <div id="queues-box" hidden>
        <h3>Queues</h3>
        <div class="scroll"><table id="queues">
          <thead><tr><th>Queue</th><th>Waiting</th><th>Running</th><th>Completed</th><th>Failed</th><th>Cancelled</th><th>Oldest waiting</th></tr></thead>
          <tbody id="queues-body"></tbody>
        </table></div>
        <p class="note" id="queue-limits">Limits (concurrency, per-partition concurrency, rate) are set by each worker when it works a queue and are not stored, so they are not shown here; the queue store enforces them across workers at claim time.</p>
      </div>
    </div>
  </section>
  <section id="detail" hidden aria-label="the open run">
    <button type="button" id="close-run" class="close" title="close this run (Esc)">Close</button>
    <div id="detail-head"></div>
    ${actions}
    <div id="approvals"></div>
    <div id="questions"></div>
    <div id="conversation"></div>
    <h3>Timeline</h3>
    <div id="timeline" class="timeline"></div>
    <h3>Events <small>(click one to inspect it)</small></h3>
    <div class="events">
      <div class="events-list"><table id="events"><thead><tr><th>#</th><th>Type</th><th>What</th><th>At (UTC)</th></tr></thead><tbody id="events-body"></tbody></table></div>
      <pre id="inspector" class="inspector" aria-label="event JSON">click an event or a timeline bar</pre>
    </div>
    ${fork}
  </section>
</main>
</body>
</html>
`;
}

export { dashboardJs } from './page-script/page-script.js';

export const dashboardCss = `
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d232a; background: #f6f7f9; }
header { display: flex; flex-wrap: wrap; align-items: center; gap: 12px; padding: 8px 16px; background: #1d232a; color: #fff; }
header h1 { font-size: 18px; margin: 0; }
header input { font: inherit; padding: 2px 6px; }
.spacer { flex: 1; }
.live { font-size: 12px; opacity: .8; }
.badge { background: #8a5200; padding: 2px 8px; border-radius: 10px; font-size: 12px; }
/* The runs pane takes the whole width until a run is open, then shares it; below ~1150 px the
   detail goes under the runs. Neither may push the page wider than the window. */
main { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 16px; padding: 12px 16px; }
#runs-pane { flex: 1 1 600px; }
#detail { flex: 1.2 1 520px; }
section { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 10px 12px; min-width: 0; max-width: 100%; }
.filters { display: flex; flex-wrap: wrap; gap: 6px 10px; align-items: center; margin-bottom: 8px; }
.filters input, .filters select { font: inherit; padding: 2px 4px; max-width: 100%; }
.counts { display: flex; flex-wrap: wrap; gap: 6px; margin-bottom: 6px; }
.counts button { font-size: 12px; padding: 1px 8px; border-radius: 10px; border-color: #c4cad1; }
.counts button.active { background: #1d232a; border-color: #1d232a; color: #fff; }
.pager { display: flex; gap: 12px; align-items: center; justify-content: space-between; margin-top: 6px; }
.pager button[disabled] { opacity: .45; cursor: default; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 3px 6px; border-bottom: 1px solid #eef0f3; vertical-align: top; }
/* The runs table fits its pane at any width: fixed column shares, every cell wraps (a long id,
   flow or reason breaks anywhere), so no column is pushed out of view or clipped. */
#runs { table-layout: fixed; }
#runs th, #runs td { padding: 3px 4px; overflow-wrap: anywhere; }
#runs th { overflow-wrap: normal; }
#runs th:nth-child(1) { width: 15%; } #runs th:nth-child(2) { width: 12%; }
#runs th:nth-child(3) { width: 13%; } #runs th:nth-child(4) { width: 8%; }
#runs th:nth-child(5) { width: 12%; } #runs th:nth-child(6) { width: 13%; }
#runs th:nth-child(7) { width: 27%; }
#runs td.id button { text-align: left; overflow-wrap: anywhere; }
#runs .status { font-size: 11px; padding: 1px 5px; }
/* A window too narrow for seven columns (a phone): each run is a card, one labelled line per
   column; the header row stays for screen readers only. */
@media (max-width: 600px) {
  #runs thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  #runs, #runs tbody { display: block; }
  #runs tr { display: block; padding: 4px 0; border-bottom: 1px solid #dde1e6; }
  #runs td { display: grid; grid-template-columns: 7.5em minmax(0, 1fr); border: 0; padding: 1px 4px; }
  #runs td::before { content: attr(data-label); color: #56606b; font-size: 12px; font-weight: 600; }
  #runs td > .status, #runs td > button { justify-self: start; }
}
th { font-weight: 600; font-size: 12px; color: #56606b; }
/* How a run ended is the column people read: it wraps, never clips. */
td.reason { overflow-wrap: anywhere; }
td.reason.warn { color: #8a1c14; font-weight: 600; }
.scroll { overflow-x: auto; }
#runs tr.selected { background: #e8f0fe; }
button { font: inherit; cursor: pointer; padding: 3px 10px; border: 1px solid #8a94a0; border-radius: 4px; background: #fff; }
button.link { border: 0; background: none; padding: 0; color: #0b57d0; text-decoration: underline; }
button.primary { background: #1f7a36; border-color: #1f7a36; color: #fff; }
button.danger { border-color: #b3261e; color: #b3261e; }
.status { padding: 1px 7px; border-radius: 9px; font-size: 12px; background: #eef0f3; }
.s-completed { background: #d8f0dc; } .s-failed { background: #fbd9d6; } .s-cancelled { background: #e6e1e5; }
.s-suspended { background: #fff0c2; } .s-running { background: #d6e6fb; }
#detail-head h2 { overflow-wrap: anywhere; }
dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 12px; margin: 4px 0 8px; }
dt { color: #56606b; } dd { margin: 0; overflow-wrap: anywhere; }
.actions { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; margin: 8px 0; }
.actions form { display: flex; gap: 6px; }
.fork { margin: 6px 0; }
.bulk { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0; }
.turn { margin: 6px 0; padding: 6px 8px; border: 1px solid #dde1e6; border-radius: 4px; background: #fff; }
.turn .meta { color: #5b6470; font-size: 12px; }
.turn .said { white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0; }
.turn .call { font-family: ui-monospace, monospace; font-size: 12px; overflow-wrap: anywhere; margin: 2px 0; }
.turn .call .result { color: #1b5e20; }
.turn .call .failed { color: #8b1a1a; }
.approval { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; padding: 6px 8px; margin: 4px 0; border: 1px solid #f0c36d; background: #fffaeb; border-radius: 4px; }
.approval.decided { border-color: #dde1e6; background: #fafbfc; }
.approval .resolve { flex-basis: 100%; display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
.approval .hint { color: #7a5b00; }
.approval > span { overflow-wrap: anywhere; min-width: 0; }
.approval .record-output { font: inherit; font-family: ui-monospace, monospace; width: 16em; }
.timeline svg { display: block; width: 100%; height: auto; }
.timeline text { font-size: 11px; fill: #1d232a; }
.timeline .axis { stroke: #c4cad1; }
.bar { cursor: pointer; }
rect.b-completed { fill: #2e7d32; } rect.b-failed { fill: #c62828; } rect.b-open { fill: #f9a825; }
rect.b-cancelled { fill: #757575; } rect.b-timed_out { fill: #8e24aa; }
/* The events list beside the inspector when both fit (380 px each), else one above the other. */
.events { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(380px, 100%), 1fr)); gap: 10px; }
.events-list { max-height: 340px; overflow: auto; }
#events tbody tr { cursor: pointer; }
#events tr.selected { background: #e8f0fe; }
.inspector { margin: 0; max-height: 340px; overflow: auto; background: #1d232a; color: #e6edf3; padding: 8px; border-radius: 4px; font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
.note { color: #56606b; font-size: 12px; margin: 4px 0; }
kbd { font: 11px ui-monospace, monospace; border: 1px solid #8a94a0; border-radius: 3px; padding: 0 3px; background: #fff; color: #1d232a; }
/* Keyboard focus is always visible: a thick outline, and the focused run's row is highlighted. */
:focus-visible { outline: 3px solid #0b57d0; outline-offset: 1px; }
#runs tbody tr:focus-within { background: #e8f0fe; }
#runs td.id input { margin: 0 4px 0 0; vertical-align: middle; }
.close { float: right; }
.turn .approval { margin: 4px 0 4px 12px; }
.retries { margin: 4px 0; }
.flash { margin: 0; padding: 0 16px; min-height: 1.6em; line-height: 1.6em; color: #1f7a36; }
.flash.error { color: #b3261e; }
/* A long output wraps inside its box instead of stretching the page. */
pre.value { background: #f3f4f6; padding: 6px; border-radius: 4px; max-height: 120px; overflow: auto; margin: 2px 0; white-space: pre-wrap; overflow-wrap: anywhere; }
`;
