// Closing the open run, the keyboard (j/k, arrows, /, Escape), and the script's start.
// A part of the dashboard's page script (page-script.ts joins the parts in order: one script,
// one closure; ES2017, no backticks).
export const keyboardScript = `  // Closing the open run (the Close button, or Escape): back to the list, focus on its row.
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
