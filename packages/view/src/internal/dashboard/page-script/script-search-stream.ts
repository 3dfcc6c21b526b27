// Opening a run, the search (its fields, into the address), and the live stream of the searched page,
// its counts and the open run.
// A part of the dashboard's page script (page-script.ts joins the parts in order: one script,
// one closure; ES2017, no backticks).
export const searchStreamScript = `
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

`;
