// An operator's controls (not in read-only mode): the token, who acts, and the open run's resume,
// cancel, retry, fork and signal, and the bulk actions.
// A part of the dashboard's page script (page-script.ts joins the parts in order: one script,
// one closure; ES2017, no backticks).
export const operatorActionsScript = `  if (!readOnly) {
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
`;
