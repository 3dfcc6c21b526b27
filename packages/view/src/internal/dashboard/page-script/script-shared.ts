// The page script's start: the read-only flag, the state, the runs search kept in the address, and the
// helpers every view uses (elements, SVG, times, the flash line).
// A part of the dashboard's page script (page-script.ts joins the parts in order: one script,
// one closure; ES2017, no backticks).
export const sharedScript = `'use strict';
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

`;
