// The dashboard's one page: static HTML, a stylesheet and a script, served from this package (no
// CDN, no framework, no build step). The script writes run data with textContent and SVG
// attributes only, never as HTML, so a run id or payload cannot inject markup; the CSP forbids
// inline script anyway. Browser code is kept ES2017 and free of backticks (it lives in a template).

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

export const dashboardJs = `'use strict';
(function () {
  var readOnly = document.body.getAttribute('data-read-only') === 'true';
  var tokenKey = 'loom-dashboard-token';
  var state = { run: null, detail: null, eventsCount: -1, source: null, events: [], page: null };
  // Runs picked for a bulk action, by id, kept across pages (keyset paging) until cleared: the
  // action applies to exactly these. Insertion order is the order they were picked.
  var selected = {};
  var selectedOrder = [];
  // The runs search, kept in the address (?id=…&status=…) so a filtered page can be shared and
  // reloaded; the server checks every value (a bad one is a 400 with its name).
  var searchKeys = ['id', 'flow', 'version', 'status', 'waiting', 'updatedFrom', 'updatedBefore', 'sort', 'order', 'limit', 'after', 'before'];
  var search = {};
  (function () {
    var params = new URLSearchParams(location.search);
    searchKeys.forEach(function (key) { if (params.get(key)) search[key] = params.get(key); });
  })();
  function searchQuery() {
    var params = new URLSearchParams();
    searchKeys.forEach(function (key) { if (search[key]) params.set(key, search[key]); });
    return params.toString();
  }
  // Ending reasons of an agent run that did not reach its goal: the Reason column says so loudly.
  var plainEndings = ['completed', 'goal_completed'];
  function $(id) { return document.getElementById(id); }

  // The token arrives in the URL fragment (never sent to a server, not in logs), is kept for this
  // tab only, and leaves the address bar at once.
  var given = /[#&]token=([^&]+)/.exec(location.hash);
  if (given) {
    sessionStorage.setItem(tokenKey, decodeURIComponent(given[1]));
    history.replaceState(null, '', location.pathname + location.search);
  }
  var linked = /[#&]run=([^&]+)/.exec(location.hash);
  if (linked) state.run = decodeURIComponent(linked[1]);
  function token() { return sessionStorage.getItem(tokenKey) || ''; }

  function el(tag, props, children) {
    var node = document.createElement(tag);
    props = props || {};
    if (props.text !== undefined) node.textContent = props.text;
    if (props.className) node.className = props.className;
    if (props.title) node.title = props.title;
    if (props.type) node.type = props.type;
    (children || []).forEach(function (child) { node.appendChild(child); });
    return node;
  }
  var svgNs = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, text) {
    var node = document.createElementNS(svgNs, tag);
    Object.keys(attrs).forEach(function (key) { node.setAttribute(key, String(attrs[key])); });
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function time(ms) { return ms === null || ms === undefined ? '' : new Date(ms).toISOString().replace('T', ' ').slice(0, 23); }
  function clock(ms) { return time(ms).slice(11); }
  function flash(message, isError) {
    var node = $('flash');
    node.textContent = message;
    node.className = isError ? 'flash error' : 'flash';
  }
  function ended(status) { return status !== 'running' && status !== 'suspended'; }

  var runColumns = Array.prototype.map.call(document.querySelectorAll('#runs thead th'), function (th) { return th.textContent; });
  function renderRuns(page) {
    state.page = page;
    var body = $('runs-body');
    // A re-render (a live update) keeps the keyboard where it was: on the same run's control.
    var active = document.activeElement;
    var activeRow = active && active.closest ? active.closest('#runs-body tr') : null;
    var focusRun = activeRow ? activeRow.getAttribute('data-run') : null;
    var focusPick = active && active.classList ? active.classList.contains('pick-run') : false;
    body.replaceChildren();
    var flows = {};
    page.runs.forEach(function (run) {
      var open = el('button', { text: run.id, className: 'link', type: 'button', title: 'show ' + run.id });
      open.addEventListener('click', function () { select(run.id); });
      var reason = run.terminalReason || (run.waitingFor ? 'waiting for ' + run.waitingFor : '');
      var warn = run.terminalReason && (run.status !== 'completed' || plainEndings.indexOf(run.terminalReason) < 0);
      var pick = el('input', { type: 'checkbox', className: 'pick-run' });
      pick.checked = selected[run.id] === true;
      pick.setAttribute('aria-label', 'select ' + run.id + ' for a bulk action');
      pick.addEventListener('change', function () { toggleSelected(run.id, pick.checked); });
      var row = el('tr', { className: run.id === state.run ? 'selected' : '' }, [
        el('td', { className: 'id' }, [el('span', { className: 'pick' }, readOnly ? [open] : [pick, open])]),
        el('td', { text: (run.flow || '') + (run.version ? ' v' + run.version : '') }),
        el('td', {}, [el('span', { className: 'status s-' + run.status, text: run.status })]),
        el('td', { text: String(run.steps), className: 'num' }),
        el('td', { text: run.pendingApprovals ? run.pendingApprovals + ' pending' : '', className: 'num' }),
        el('td', { text: time(run.updatedAtMs).slice(5, 10) + ' ' + time(run.updatedAtMs).slice(11, 19), title: time(run.updatedAtMs), className: 'time' }),
        el('td', { text: reason, className: warn ? 'reason warn' : 'reason' }),
      ]);
      row.setAttribute('data-run', run.id);
      row.setAttribute('data-status', run.status);
      // Each cell carries its column's name: a narrow window shows a run as a card of labels.
      Array.prototype.forEach.call(row.children, function (cell, i) { cell.setAttribute('data-label', runColumns[i]); });
      body.appendChild(row);
      if (run.flow) flows[run.flow] = true;
    });
    var list = $('flows');
    list.replaceChildren();
    Object.keys(flows).sort().forEach(function (flow) { var option = el('option'); option.value = flow; list.appendChild(option); });
    $('runs-count').textContent = page.runs.length === 0 ? 'no runs match' : page.runs.length + ' runs on this page';
    $('prev-page').disabled = !page.prevCursor;
    $('next-page').disabled = !page.nextCursor;
    if (focusRun) {
      var again = body.querySelector('tr[data-run="' + CSS.escape(focusRun) + '"] ' + (focusPick ? 'input.pick-run' : 'button.link'));
      if (again) again.focus();
    }
    showSelection();
  }

  // Selection for bulk actions, across pages.
  function toggleSelected(runId, on) {
    if (on && !selected[runId]) { selected[runId] = true; selectedOrder.push(runId); }
    if (!on && selected[runId]) {
      delete selected[runId];
      selectedOrder = selectedOrder.filter(function (id) { return id !== runId; });
    }
    showSelection();
  }
  function showSelection() {
    if (readOnly) return;
    var n = selectedOrder.length;
    $('selected-count').textContent = n === 0 ? '' : n + ' selected';
    $('clear-selection').hidden = n === 0;
    $('bulk-apply').textContent = n === 0 ? 'Apply to the runs on this page' : 'Apply to the ' + n + ' selected runs';
    var runs = state.page ? state.page.runs : [];
    $('select-page').checked = runs.length > 0 && runs.every(function (run) { return selected[run.id] === true; });
    Array.prototype.forEach.call(document.querySelectorAll('#runs-body input.pick-run'), function (box) {
      box.checked = selected[box.closest('tr').getAttribute('data-run')] === true;
    });
  }

  var countOrder = ['running', 'suspended', 'completed', 'failed', 'cancelled', 'continued'];
  function renderCounts(counts) {
    var box = $('status-counts');
    box.replaceChildren();
    [''].concat(countOrder).forEach(function (status) {
      var n = status === '' ? counts.total : counts[status];
      var button = el('button', { type: 'button', text: (status || 'all') + ' ' + n });
      button.setAttribute('data-status', status || 'all');
      button.setAttribute('data-count', String(n));
      if ((search.status || '') === status) button.className = 'active';
      button.addEventListener('click', function () { setSearch({ status: status }); });
      box.appendChild(button);
    });
  }

  function value(label, json) {
    return [el('dt', { text: label }), el('dd', {}, [el('pre', { className: 'value', text: JSON.stringify(json, null, 2) })])];
  }

  function renderDetail(detail) {
    state.detail = detail;
    var run = detail.run;
    $('detail').hidden = false;
    var head = $('detail-head');
    head.replaceChildren();
    head.appendChild(el('h2', { text: run.id }));
    var facts = [
      ['flow', (run.flow || '') + (run.version ? ' v' + run.version : '')],
      ['status', run.status],
      ['reason', run.terminalReason || ''],
      ['steps', String(run.steps)],
      ['events', String(detail.events)],
      ['created', time(run.createdAtMs)],
      ['updated', time(run.updatedAtMs)],
    ];
    if (run.wakeAtMs) facts.push(['wakes', time(run.wakeAtMs)]);
    if (run.waitingFor) facts.push(['waiting for', run.waitingFor]);
    var list = el('dl');
    facts.forEach(function (fact) {
      list.appendChild(el('dt', { text: fact[0] }));
      var dd = el('dd', { text: fact[1] });
      if (fact[0] === 'status') dd.id = 'run-status';
      list.appendChild(dd);
    });
    // The parent and the children (from the timeline's child entries), each opened by a click.
    var children = detail.timeline.filter(function (entry) { return entry.kind === 'child' && entry.childId; });
    if (detail.parentId) linkFacts(list, 'parent', [detail.parentId], 'run-parent');
    if (children.length > 0) {
      linkFacts(list, 'children', children.map(function (entry) { return entry.childId; }), 'run-children');
    }
    value('input', detail.input).forEach(function (n) { list.appendChild(n); });
    if (detail.output !== undefined) value('output', detail.output).forEach(function (n) { list.appendChild(n); });
    if (detail.error !== undefined) value('error', detail.error).forEach(function (n) { list.appendChild(n); });
    head.appendChild(list);
    // Each retry with who asked and why, as its execution.retried event records them.
    var retries = detail.retries || [];
    if (retries.length > 0) {
      var box = el('div', { className: 'retries' }, [el('h3', { text: 'Retries' })]);
      retries.forEach(function (retry) {
        var line = el('div', { className: 'retry', text: 'retried at ' + time(retry.atMs) + (retry.by ? ' by ' + retry.by : '') + (retry.reason ? ': ' + retry.reason : '') + ' (event ' + retry.sequence + ')' });
        line.setAttribute('data-sequence', String(retry.sequence));
        box.appendChild(line);
      });
      head.appendChild(box);
    }
    if (!readOnly) {
      $('actions').hidden = ended(run.status);
      $('retry-run').hidden = run.status !== 'failed';
      $('retry-reason').hidden = run.status !== 'failed';
    }
    renderAgentParts();
    renderTimeline(detail.timeline, run);
    if (detail.events !== state.eventsCount) loadEvents(run.id, detail.events);
  }

  function linkFacts(list, label, runIds, id) {
    list.appendChild(el('dt', { text: label }));
    var dd = el('dd');
    dd.id = id;
    runIds.forEach(function (runId, index) {
      if (index > 0) dd.appendChild(document.createTextNode(', '));
      var open = el('button', { text: runId, className: 'link', type: 'button', title: 'show ' + runId });
      open.addEventListener('click', function () { select(runId); });
      dd.appendChild(open);
    });
    list.appendChild(dd);
  }

  // Approvals and questions of an agent run sit in its conversation, at the call that asked;
  // what cannot be placed there (the log not read yet, a key of another shape) goes in the panels
  // above it. Both use the same rows and the same endpoints.
  function renderAgentParts() {
    var detail = state.detail;
    if (!detail) return;
    var placed = state.events.length > 0 && state.events[0].executionId === detail.run.id
      ? renderConversation(state.events, detail)
      : {};
    renderApprovals(detail.approvals.filter(function (a) { return !placed[a.id]; }));
    renderQuestions((detail.questions || []).filter(function (q) { return !placed[q.id]; }));
  }
  // The call an approval or a question belongs to: its id's key after the run id, '<turn>.<call>'.
  function callKeyOf(id) {
    var match = /^([0-9]+[.][0-9]+)(?![0-9])/.exec(id.slice(id.lastIndexOf('~') + 1));
    return match ? match[1] : null;
  }
  // What the run decided (the status), not what was sent: a refused decision says why.
  function decisionText(approval) {
    if (!approval.decision) return approval.status;
    if (approval.refused) return 'rejected: ' + approval.refused + ' (sent by ' + approval.decision.by + ')';
    var resolution = approval.decision.resolution;
    var how = !resolution ? '' : resolution.kind === 'rerun' ? ' (re-run)' : ' (outcome recorded)';
    var when = typeof approval.decision.decidedAtMs === 'number' ? ' at ' + time(approval.decision.decidedAtMs) : '';
    return approval.status + ' by ' + approval.decision.by + how + when;
  }
  function renderApprovals(approvals) {
    var box = $('approvals');
    box.replaceChildren();
    if (approvals.length === 0) return;
    box.appendChild(el('h3', { text: 'Approvals' }));
    approvals.forEach(function (approval) { box.appendChild(approvalRow(approval)); });
  }
  function approvalRow(approval) {
      var pending = approval.status === 'pending';
      var what = approval.request.tool + ' ' + JSON.stringify(approval.request.input) + ': ' + approval.reason;
      var row = el('div', { className: pending ? 'approval' : 'approval decided' }, [
        el('strong', { text: approval.id }),
        el('span', { text: what }),
        el('span', { className: 'status', text: decisionText(approval) }),
      ]);
      if (pending && !readOnly) {
        var path = '/api/approvals/' + encodeURIComponent(approval.id);
        var controls = null;
        if (approval.kind === 'interrupted_side_effect') {
          // A tool that must not run twice was cut off by a crash: its outcome is unknown. Re-run
          // it (same idempotency key), or record what it did (found out in the other system).
          var controls = el('div', { className: 'resolve' }, [
            el('span', { className: 'hint', text: 'cut off by a crash, outcome unknown:' }),
          ]);
          var rerun = el('button', { text: 'Re-run', className: 'primary', type: 'button' });
          rerun.setAttribute('data-action', 'rerun');
          rerun.addEventListener('click', function () {
            act(path + '/approve', { resolution: { kind: 'rerun' } }, function () { return 're-running the call of ' + approval.id; });
          });
          var output = el('input', { type: 'text' });
          output.className = 'record-output';
          output.placeholder = 'what it did, as JSON: {"sent":true}';
          output.setAttribute('aria-label', 'the outcome to record, as JSON');
          var record = el('button', { text: 'Record outcome', type: 'button' });
          record.setAttribute('data-action', 'record');
          record.addEventListener('click', function () {
            var recorded;
            try { recorded = JSON.parse(output.value); } catch (error) {
              flash('the outcome to record must be JSON, e.g. {"sent":true} or "done"', true);
              return;
            }
            act(path + '/approve', { resolution: { kind: 'record', output: recorded } }, function () { return 'recorded the outcome of ' + approval.id; });
          });
          controls.appendChild(rerun);
          controls.appendChild(output);
          controls.appendChild(record);
          row.appendChild(controls);
        } else {
          var approve = el('button', { text: 'Approve', className: 'primary', type: 'button' });
          approve.addEventListener('click', function () {
            act(path + '/approve', {}, function () { return 'approved ' + approval.id; });
          });
          row.appendChild(approve);
        }
        var reject = el('button', { text: 'Reject', className: 'danger', type: 'button' });
        reject.addEventListener('click', function () {
          act(path + '/reject', {}, function () { return 'rejected ' + approval.id; });
        });
        (controls || row).appendChild(reject);
      }
      row.setAttribute('data-approval', approval.id);
      return row;
  }

  // What the model asked a person (ask_human): a pending question gets a text box and an Answer
  // button; the run goes on where its agent runs, and the model gets the answer.
  function renderQuestions(questions) {
    var box = $('questions');
    box.replaceChildren();
    if (questions.length === 0) return;
    box.appendChild(el('h3', { text: 'Questions' }));
    questions.forEach(function (question) { box.appendChild(questionRow(question)); });
  }
  function questionRow(question) {
      var pending = question.status === 'pending';
      var row = el('div', { className: pending ? 'approval question' : 'approval question decided' }, [
        el('strong', { text: question.id }),
        el('span', { text: question.question }),
        el('span', {
          className: 'status',
          text: pending ? 'pending' : 'answered by ' + question.answer.by + ': ' + question.answer.text + (typeof question.answer.answeredAtMs === 'number' ? ' (at ' + time(question.answer.answeredAtMs) + ')' : ''),
        }),
      ]);
      if (pending && !readOnly) {
        var answer = el('input', { type: 'text' });
        answer.className = 'answer-text';
        answer.placeholder = 'the answer the model gets';
        answer.setAttribute('aria-label', 'the answer to ' + question.id);
        var send = el('button', { text: 'Answer', className: 'primary', type: 'button' });
        send.addEventListener('click', function () {
          if (answer.value.trim() === '') { flash('type the answer first', true); return; }
          act('/api/questions/' + encodeURIComponent(question.id) + '/answer', { text: answer.value }, function () {
            return 'answered ' + question.id;
          });
        });
        row.appendChild(el('div', { className: 'resolve' }, [answer, send]));
      }
      row.setAttribute('data-question', question.id);
      return row;
  }

  // Steps as bars over time: one row per timeline entry, x from its start to its end (an open
  // entry runs to the latest time seen), coloured by status; click a bar to inspect it.
  function renderTimeline(entries, run) {
    var box = $('timeline');
    box.replaceChildren();
    if (entries.length === 0) { box.textContent = 'nothing on the timeline yet'; return; }
    var starts = entries.map(function (e) { return e.startedAtMs; });
    var ends = entries.map(function (e) { return e.endedAtMs === null ? e.startedAtMs : e.endedAtMs; });
    var t0 = Math.min.apply(null, starts);
    var t1 = Math.max(Math.max.apply(null, ends), ended(run.status) ? run.updatedAtMs : Date.now());
    var span = Math.max(1, t1 - t0);
    var labelW = 230, chartW = 520, rowH = 22, top = 22;
    var height = top + entries.length * rowH + 6;
    var root = svg('svg', { viewBox: '0 0 ' + (labelW + chartW + 70) + ' ' + height, role: 'img', 'aria-label': 'timeline of ' + run.id });
    root.appendChild(svg('line', { x1: labelW, y1: top - 4, x2: labelW + chartW, y2: top - 4, class: 'axis' }));
    root.appendChild(svg('text', { x: labelW, y: top - 8 }, '0 ms'));
    root.appendChild(svg('text', { x: labelW + chartW, y: top - 8, 'text-anchor': 'end' }, span + ' ms'));
    entries.forEach(function (entry, i) {
      var y = top + i * rowH;
      var end = entry.endedAtMs === null ? t1 : entry.endedAtMs;
      var x = labelW + ((entry.startedAtMs - t0) / span) * chartW;
      var width = Math.max(3, ((end - entry.startedAtMs) / span) * chartW);
      var label = (entry.agentRole ? entry.agentRole + ': ' : entry.kind + ': ') + entry.name;
      root.appendChild(svg('text', { x: 4, y: y + 15 }, label.length > 36 ? label.slice(0, 35) + '…' : label));
      var bar = svg('rect', { x: x.toFixed(1), y: y + 4, width: width.toFixed(1), height: rowH - 8, rx: 2, class: 'bar b-' + entry.status, 'data-sequence': entry.sequence, 'data-label': label });
      bar.appendChild(svg('title', {}, label + ' ' + entry.status + (entry.durationMs === null ? '' : ', ' + entry.durationMs + ' ms')));
      bar.addEventListener('click', function () { inspect(entry, entry.sequence); });
      root.appendChild(bar);
      var note = entry.status === 'open' ? 'open' : entry.durationMs + ' ms';
      root.appendChild(svg('text', { x: Math.min(x + width + 4, labelW + chartW + 4), y: y + 15 }, note));
    });
    box.appendChild(root);
  }

  function inspect(json, sequence) {
    $('inspector').textContent = JSON.stringify(json, null, 2);
    // An event of the log (not a timeline bar) can be forked at.
    state.selectedSequence = json && json.executionId === state.run && typeof json.sequence === 'number' && json.type ? json.sequence : undefined;
    if ($('fork-here')) $('fork-here').disabled = state.selectedSequence === undefined;
    Array.prototype.forEach.call($('events-body').children, function (row) {
      row.className = row.getAttribute('data-sequence') === String(sequence) ? 'selected' : '';
    });
  }

  // What an event is about, without opening it: the step, timer, signal, value or child it
  // names, an attempt's number, a child's id, a run's flow, a cancel's reason.
  function eventWhat(event) {
    var p = event.payload && typeof event.payload === 'object' ? event.payload : {};
    var parts = [];
    if (event.type === 'execution.started' && typeof p.flow === 'string') parts.push(p.flow);
    if (typeof p.name === 'string') parts.push(p.name);
    if (typeof p.attempt === 'number') parts.push('attempt ' + p.attempt);
    if (typeof p.childId === 'string') parts.push(p.childId);
    if (typeof p.successorId === 'string') parts.push(p.successorId);
    if (typeof p.reason === 'string') parts.push(p.reason);
    return parts.join(' · ');
  }

  // An agent run's conversation, folded from its log: the input, then per turn the model's
  // record (model, tokens, cost, latency, its text and its tool calls) with each call's result.
  // Returns the ids of the approvals and questions it placed at their calls.
  function renderConversation(events, detail) {
    var box = $('conversation');
    // A pending answer being typed survives a re-render.
    var typing = {};
    Array.prototype.forEach.call(box.querySelectorAll('input'), function (input) {
      var owner = input.closest('[data-approval],[data-question]');
      if (owner && input.value) typing[owner.getAttribute('data-approval') || owner.getAttribute('data-question')] = input.value;
    });
    var hadFocus = box.contains(document.activeElement) && document.activeElement.tagName === 'INPUT' ? document.activeElement.closest('[data-approval],[data-question]') : null;
    var focusId = hadFocus ? hadFocus.getAttribute('data-approval') || hadFocus.getAttribute('data-question') : null;
    box.replaceChildren();
    var placed = {};
    var started = events[0];
    if (!started || typeof started.payload.flow !== 'string' || started.payload.flow.indexOf('agent:') !== 0) return placed;
    var byCall = {};
    (detail.approvals || []).concat(detail.questions || []).forEach(function (item) {
      var key = callKeyOf(item.id);
      if (key) (byCall[key] = byCall[key] || []).push(item);
    });
    box.appendChild(el('h3', { text: 'Conversation' }));
    var input = started.payload.input;
    box.appendChild(el('div', { className: 'turn' }, [
      el('div', { className: 'meta', text: 'input' }),
      el('div', { className: 'said', text: typeof input === 'string' ? input : JSON.stringify(input) }),
    ]));
    var results = {};
    // Each call's last record (a re-run's name has a suffix after turn.index): its result, or
    // the error its step failed with.
    events.forEach(function (event) {
      var p = event.payload;
      var key = typeof p.name === 'string' ? /^tool:([0-9]+[.][0-9]+)/.exec(p.name) : null;
      if (!key) return;
      if (event.type === 'step.completed') results[key[1]] = p.result;
      if (event.type === 'step.failed') results[key[1]] = { error: p.error ? p.error.message : 'failed' };
    });
    events.forEach(function (event) {
      var p = event.payload;
      if (event.type !== 'step.completed' || typeof p.name !== 'string' || !/^decide:[0-9]+$/.test(p.name)) return;
      var turn = p.name.slice(7);
      var r = p.result && typeof p.result === 'object' ? p.result : {};
      var usage = r.usage || {};
      var meta = ['turn ' + turn];
      if (r.model) meta.push(r.model);
      if (typeof usage.inputTokens === 'number') meta.push(usage.inputTokens + ' in / ' + (usage.outputTokens || 0) + ' out tokens');
      if (typeof r.costUsd === 'number') meta.push('$' + r.costUsd.toFixed(4));
      if (typeof r.latencyMs === 'number') meta.push(r.latencyMs + ' ms');
      var card = el('div', { className: 'turn' }, [el('div', { className: 'meta', text: meta.join(' · ') })]);
      card.setAttribute('data-turn', turn);
      if (r.text) card.appendChild(el('div', { className: 'said', text: r.text }));
      (r.toolCalls || []).forEach(function (call, index) {
        var line = el('div', { className: 'call', text: call.tool + '(' + JSON.stringify(call.input) + ')' });
        var result = results[turn + '.' + index];
        if (result && result.interrupted) {
          line.appendChild(el('span', { className: 'failed', text: ' → interrupted: its outcome is for a person to resolve' }));
        } else if (result !== undefined && result !== null) {
          var failed = result.error !== undefined;
          line.appendChild(el('span', { className: failed ? 'failed' : 'result', text: ' → ' + JSON.stringify(failed ? result.error : result.output) }));
        }
        card.appendChild(line);
        // The approval this call waits or waited for, and the question it asked, right here.
        (byCall[turn + '.' + index] || []).forEach(function (item) {
          var row = item.question !== undefined ? questionRow(item) : approvalRow(item);
          var kept = typing[item.id];
          var input = row.querySelector('input');
          if (kept !== undefined && input) input.value = kept;
          card.appendChild(row);
          placed[item.id] = true;
          if (focusId === item.id && input) input.focus();
        });
      });
      box.appendChild(card);
    });
    return placed;
  }

  function loadEvents(runId, count) {
    fetch('/api/runs/' + encodeURIComponent(runId) + '/events').then(function (response) {
      return response.json();
    }).then(function (events) {
      if (state.run !== runId) return;
      state.eventsCount = count;
      state.events = events;
      renderAgentParts();
      var body = $('events-body');
      body.replaceChildren();
      events.forEach(function (event) {
        var row = el('tr', {}, [el('td', { text: String(event.sequence) }), el('td', { text: event.type }), el('td', { text: eventWhat(event) }), el('td', { text: clock(event.at), title: time(event.at) })]);
        row.setAttribute('data-sequence', String(event.sequence));
        row.addEventListener('click', function () { inspect(event, event.sequence); });
        body.appendChild(row);
      });
    }, function (error) { flash('could not load events: ' + error.message, true); });
  }

  function act(path, body, done) {
    var by = $('by') ? $('by').value : '';
    return fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer ' + token() },
      body: JSON.stringify(Object.assign({ by: by }, body)),
    }).then(function (response) {
      return response.json().then(function (json) {
        if (!response.ok) throw new Error(json.error ? json.error.message + ' [' + json.error.code + ']' : response.statusText);
        return json;
      });
    }).then(function (json) { flash(done(json)); }, function (error) { flash(error.message, true); });
  }

  function select(runId) {
    state.run = runId;
    state.eventsCount = -1;
    $('inspector').textContent = 'click an event or a timeline bar';
    $('events-body').replaceChildren();
    $('conversation').replaceChildren();
    state.events = [];
    state.selectedSequence = undefined;
    if ($('fork-here')) $('fork-here').disabled = true;
    history.replaceState(null, '', '#run=' + encodeURIComponent(runId));
    Array.prototype.forEach.call($('runs-body').children, function (row) {
      row.className = row.getAttribute('data-run') === runId ? 'selected' : '';
    });
    connect();
  }

  // A new search (a filter, the sort, a page): into the address, the form, then the stream.
  function setSearch(changes, keepCursor) {
    Object.keys(changes).forEach(function (key) { search[key] = changes[key]; });
    if (!keepCursor) { delete search.after; delete search.before; }
    var query = searchQuery();
    history.replaceState(null, '', location.pathname + (query ? '?' + query : '') + location.hash);
    showSearch();
    connect();
  }
  function utcInput(ms) { return ms ? new Date(Number(ms)).toISOString().slice(0, 19) : ''; }
  function fromUtcInput(value) { return value ? String(Date.parse(value + 'Z')) : ''; }
  function showSearch() {
    $('search-id').value = search.id || '';
    $('filter-flow').value = search.flow || '';
    $('filter-version').value = search.version || '';
    $('status-filter').value = search.status || '';
    $('waiting-filter').value = search.waiting || '';
    $('updated-from').value = utcInput(search.updatedFrom);
    $('updated-before').value = utcInput(search.updatedBefore);
    $('sort').value = (search.sort || 'updated') + ':' + (search.order || 'desc');
  }

  // Live updates: one event stream for the searched page, its counts and the open run; the
  // server sends only what changed, and the browser reconnects by itself. A search the server
  // refuses (a hand-edited address) is a 400: read it once to say why.
  function connect() {
    if (state.source) state.source.close();
    var query = searchQuery();
    if (state.run) query += (query ? '&' : '') + 'run=' + encodeURIComponent(state.run);
    var source = new EventSource('/api/stream' + (query ? '?' + query : ''));
    source.addEventListener('runs', function (e) { renderRuns(JSON.parse(e.data)); });
    source.addEventListener('counts', function (e) { renderCounts(JSON.parse(e.data)); });
    source.addEventListener('run', function (e) {
      var detail = JSON.parse(e.data);
      if (detail.run.id === state.run) renderDetail(detail);
    });
    source.addEventListener('failure', function (e) { flash(JSON.parse(e.data).error.message, true); });
    source.onopen = function () { $('live').textContent = 'live'; };
    source.onerror = function () {
      $('live').textContent = 'reconnecting…';
      if (source.readyState !== EventSource.CLOSED) return;
      $('live').textContent = 'stopped';
      fetch('/api/runs?' + searchQuery()).then(function (response) { return response.json(); }).then(function (json) {
        if (json.error) flash(json.error.message + ' [' + json.error.code + ']', true);
      }, function () {});
    };
    state.source = source;
  }

  // A text filter applies once typing pauses (each field its own pause), or at once on Enter.
  function typed(key, node) {
    var typing = null;
    function apply() {
      clearTimeout(typing);
      if ((search[key] || '') === node.value.trim()) return;
      var change = {};
      change[key] = node.value.trim();
      setSearch(change);
    }
    node.addEventListener('input', function () { clearTimeout(typing); typing = setTimeout(apply, 250); });
    node.addEventListener('change', apply);
  }
  typed('id', $('search-id'));
  typed('flow', $('filter-flow'));
  typed('version', $('filter-version'));
  $('runs-filters').addEventListener('submit', function (e) { e.preventDefault(); });
  $('status-filter').addEventListener('change', function (e) { setSearch({ status: e.target.value }); });
  $('waiting-filter').addEventListener('change', function (e) { setSearch({ waiting: e.target.value }); });
  $('updated-from').addEventListener('change', function (e) { setSearch({ updatedFrom: fromUtcInput(e.target.value) }); });
  $('updated-before').addEventListener('change', function (e) { setSearch({ updatedBefore: fromUtcInput(e.target.value) }); });
  $('sort').addEventListener('change', function (e) {
    var parts = e.target.value.split(':');
    setSearch({ sort: parts[0], order: parts[1] });
  });
  $('clear-filters').addEventListener('click', function () {
    searchKeys.forEach(function (key) { delete search[key]; });
    setSearch({});
  });
  $('next-page').addEventListener('click', function () {
    if (state.page && state.page.nextCursor) setSearch({ after: state.page.nextCursor, before: '' }, true);
  });
  $('prev-page').addEventListener('click', function () {
    if (state.page && state.page.prevCursor) setSearch({ before: state.page.prevCursor, after: '' }, true);
  });
  showSearch();

  if (!readOnly) {
    $('token').value = token();
    $('token').addEventListener('change', function (e) { sessionStorage.setItem(tokenKey, e.target.value.trim()); });
    $('by').value = localStorage.getItem('loom-dashboard-by') || '';
    $('by').addEventListener('change', function (e) { localStorage.setItem('loom-dashboard-by', e.target.value.trim()); });
    $('resume-run').addEventListener('click', function () {
      var runId = state.run;
      if (!runId) return;
      act('/api/runs/' + encodeURIComponent(runId) + '/resume', {}, function (r) {
        return 'resumed ' + runId + ' (it was ' + r.was + '): the next timer poll replays it';
      });
    });
    $('bulk-form').addEventListener('submit', function (e) {
      e.preventDefault();
      // The runs selected (on any page), else the runs this page shows.
      var picked = selectedOrder.length > 0;
      var runs = picked ? selectedOrder.slice() : state.page ? state.page.runs.map(function (run) { return run.id; }) : [];
      var action = $('bulk-action').value;
      if (runs.length === 0) { flash('no runs on this page', true); return; }
      if (runs.length > 500) { flash('at most 500 runs in one action: ' + runs.length + ' are selected', true); return; }
      if (!confirm(action + ' ' + runs.length + (picked ? ' selected' : '') + ' runs (' + runs.slice(0, 5).join(', ') + (runs.length > 5 ? ', …' : '') + ')?')) return;
      var reason = $('bulk-reason').value.trim();
      act('/api/runs/bulk', { action: action, runIds: runs, reason: reason || undefined }, function (r) {
        if (picked) { selected = {}; selectedOrder = []; showSelection(); }
        var done = r.results.filter(function (x) { return x.ok; }).length;
        var refused = r.results.filter(function (x) { return !x.ok; });
        return action + ': ' + done + ' of ' + r.results.length + ' done' +
          (refused.length ? '; refused: ' + refused.map(function (x) { return x.executionId + ' (' + x.error.code + ')'; }).join(', ') : '');
      });
    });
    $('select-page').addEventListener('change', function (e) {
      (state.page ? state.page.runs : []).forEach(function (run) { toggleSelected(run.id, e.target.checked); });
    });
    $('clear-selection').addEventListener('click', function () {
      selected = {};
      selectedOrder = [];
      showSelection();
    });
    $('retry-run').addEventListener('click', function () {
      var runId = state.run;
      if (!runId || !confirm('Retry ' + runId + ' from its failed step? Its completed steps replay; the failed one runs again.')) return;
      var reason = $('retry-reason').value.trim();
      act('/api/runs/' + encodeURIComponent(runId) + '/retry', { reason: reason || undefined }, function (r) {
        $('retry-reason').value = '';
        return 'retried ' + runId + ' (by ' + r.by + '): the next timer poll of a runtime running its flow replays it';
      });
    });
    $('fork-here').addEventListener('click', function () {
      var runId = state.run;
      var at = state.selectedSequence;
      if (!runId || typeof at !== 'number') return;
      if (!confirm('Fork ' + runId + ' after event ' + at + '? The new run replays up to it and runs what follows again.')) return;
      act('/api/runs/' + encodeURIComponent(runId) + '/fork', { atSequence: at }, function (r) {
        return 'forked ' + runId + ' at ' + at + ' as ' + r.forked;
      });
    });
    $('cancel-run').addEventListener('click', function () {
      var runId = state.run;
      if (!runId || !confirm('Cancel ' + runId + '? It ends with execution.cancelled.')) return;
      act('/api/runs/' + encodeURIComponent(runId) + '/cancel', { reason: 'from the dashboard' }, function (r) {
        return r.cancelled ? 'cancelled ' + runId : runId + ' had already ended';
      });
    });
    $('signal-form').addEventListener('submit', function (e) {
      e.preventDefault();
      var runId = state.run;
      var text = $('signal-payload').value.trim();
      var payload = null;
      if (text !== '') {
        try { payload = JSON.parse(text); } catch (error) { flash('the payload is not JSON: ' + error.message, true); return; }
      }
      var name = $('signal-name').value.trim();
      act('/api/runs/' + encodeURIComponent(runId) + '/signal', { name: name, payload: payload }, function (r) {
        return r.duplicate ? 'signal ' + name + ' was already sent' : 'signal ' + name + ' sent to ' + runId;
      });
    });
  }
  // Schedules and queues: read on load and every 10 s (they change with fires and claims, not
  // with every run, so they ride no stream of their own).
  function loadOperations() {
    fetch('/api/operations').then(function (response) {
      if (!response.ok) throw new Error(response.statusText);
      return response.json();
    }).then(function (ops) {
      var sBody = $('schedules-body');
      sBody.replaceChildren();
      ops.schedules.forEach(function (schedule) {
        var runs = el('td');
        schedule.recentRuns.forEach(function (run, index) {
          if (index > 0) runs.appendChild(document.createTextNode(' '));
          var open = el('button', { text: clock(run.updatedAtMs) + ' ' + run.status, className: 'link', type: 'button', title: 'show ' + run.id });
          open.addEventListener('click', function () { select(run.id); });
          runs.appendChild(open);
        });
        var row = el('tr', {}, [
          el('td', { text: schedule.name }),
          el('td', { text: schedule.expression + (schedule.timezone && schedule.timezone !== 'UTC' ? ' (' + schedule.timezone + ')' : '') }),
          el('td', { text: schedule.flow + (schedule.version ? ' v' + schedule.version : '') }),
          el('td', { text: schedule.nextFiresAtMs.map(time).join(', ') }),
          runs,
        ]);
        row.setAttribute('data-schedule', schedule.name);
        sBody.appendChild(row);
      });
      $('schedules-box').hidden = ops.schedules.length === 0;
      var qBody = $('queues-body');
      qBody.replaceChildren();
      ops.queues.forEach(function (queue) {
        var row = el('tr', {}, [queue.queue, queue.depth, queue.claimed, queue.completed, queue.failed, queue.cancelled].map(function (v) {
          return el('td', { text: String(v) });
        }));
        // The oldest waiting item: its id, its flow and how long it has waited (by this clock).
        var oldest = queue.oldestWaiting;
        var cell = el('td', { className: 'oldest' });
        if (oldest === null) cell.textContent = '';
        else if (oldest === undefined) cell.textContent = 'not known on this store';
        else {
          cell.textContent = oldest.itemId + ' · ' + oldest.flow + (oldest.version ? ' v' + oldest.version : '') + ' · waiting ' + age(Date.now() - oldest.enqueuedAtMs);
          cell.title = 'enqueued ' + time(oldest.enqueuedAtMs);
        }
        row.appendChild(cell);
        row.setAttribute('data-queue', queue.queue);
        qBody.appendChild(row);
      });
      $('queues-box').hidden = ops.queues.length === 0;
    }, function (error) { flash('could not load schedules and queues: ' + error.message, true); });
  }
  function age(ms) {
    var sec = Math.max(0, Math.round(ms / 1000));
    if (sec < 120) return sec + ' s';
    if (sec < 7200) return Math.round(sec / 60) + ' min';
    if (sec < 172800) return Math.round(sec / 3600) + ' h';
    return Math.round(sec / 86400) + ' d';
  }

  // Closing the open run (the Close button, or Escape): back to the list, focus on its row.
  function closeRun() {
    var runId = state.run;
    if (!runId) return;
    state.run = null;
    state.detail = null;
    state.events = [];
    $('detail').hidden = true;
    history.replaceState(null, '', location.pathname + location.search);
    Array.prototype.forEach.call($('runs-body').children, function (row) { row.className = ''; });
    connect();
    var row = document.querySelector('#runs-body tr[data-run="' + CSS.escape(runId) + '"] button.link');
    if (row) row.focus();
  }
  $('close-run').addEventListener('click', closeRun);

  // Keyboard: j/k or the arrows move through the runs (focus on a run's id button, so Enter opens
  // it), / goes to the search, Escape closes the open run. Keys typed into a field stay there.
  function moveInRuns(step) {
    var buttons = Array.prototype.slice.call(document.querySelectorAll('#runs-body button.link'));
    if (buttons.length === 0) return;
    var active = document.activeElement;
    var activeRow = active && active.closest ? active.closest('#runs-body tr') : null;
    var at = -1;
    buttons.forEach(function (button, i) {
      var row = button.closest('tr');
      if (row === activeRow || (at < 0 && !activeRow && row.getAttribute('data-run') === state.run)) at = i;
    });
    var next = at < 0 ? (step > 0 ? 0 : buttons.length - 1) : Math.min(buttons.length - 1, Math.max(0, at + step));
    buttons[next].focus();
    buttons[next].scrollIntoView({ block: 'nearest' });
  }
  document.addEventListener('keydown', function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var target = e.target;
    var typing = target && (target.tagName === 'INPUT' || target.tagName === 'SELECT' || target.tagName === 'TEXTAREA');
    if (e.key === 'Escape') {
      // In a field, Escape only leaves it (what was typed stays); else it closes the open run.
      if (typing) { target.blur(); return; }
      if (state.run) { e.preventDefault(); closeRun(); }
      return;
    }
    if (typing) return;
    var inRuns = target && target.closest && target.closest('#runs-body');
    if (e.key === '/') { e.preventDefault(); $('search-id').focus(); $('search-id').select(); }
    else if (e.key === 'j' || (e.key === 'ArrowDown' && (inRuns || target === document.body))) { e.preventDefault(); moveInRuns(1); }
    else if (e.key === 'k' || (e.key === 'ArrowUp' && (inRuns || target === document.body))) { e.preventDefault(); moveInRuns(-1); }
  });

  loadOperations();
  setInterval(loadOperations, 10000);
  connect();
})();
`;
