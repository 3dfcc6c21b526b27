// Schedules and queues: read on load and every 10 s.
// A part of the dashboard's page script (page-script.ts joins the parts in order: one script,
// one closure; ES2017, no backticks).
export const operationsScript = `  // Schedules and queues: read on load and every 10 s (they change with fires and claims, not
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

`;
