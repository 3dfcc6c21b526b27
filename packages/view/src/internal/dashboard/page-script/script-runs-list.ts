// The runs list: its rows, the runs picked for a bulk action, and the counts per status.
// A part of the dashboard's page script (page-script.ts joins the parts in order: one script,
// one closure; ES2017, no backticks).
export const runsListScript = `  var runColumns = Array.prototype.map.call(document.querySelectorAll('#runs thead th'), function (th) { return th.textContent; });
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
`;
