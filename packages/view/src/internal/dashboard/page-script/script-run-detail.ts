// The open run: its facts, the agent's conversation with approvals and questions inline, the
// timeline, the events, and `act` (an operator's POST).
// A part of the dashboard's page script (page-script.ts joins the parts in order: one script,
// one closure; ES2017, no backticks).
export const runDetailScript = `
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
`;
