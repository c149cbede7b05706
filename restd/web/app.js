// Drover dashboard: plain JavaScript, no dependencies (the compute view is
// in compute.js, loaded after this file). Every figure comes
// from droverrestd's REST API (Slurm's v0.0.40 paths plus /drover/v0.0.40),
// with the pasted token in the X-SLURM-USER-TOKEN header (never a cookie).
// All text from the cluster goes in with textContent, never as HTML.
'use strict';

const API = '/slurm/v0.0.40';
const DB = '/slurmdb/v0.0.40';
const DR = '/drover/v0.0.40';
const POLL_MS = 3000; // cheap poll: jobs changed since the last answer
const FULL_MS = 60000; // full listing (and accounting) this often
const RECENT_S = 24 * 3600; // finished jobs from accounting: the last 24 h
const ROWH = 32; // px, fixed (rows are virtualised)
const T0 = performance.now();

const $ = (s) => document.querySelector(s);
function el(tag, props, ...kids) {
  const e = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'cls') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}

// ------------------------------------------------------------ state
const S = {
  token: sessionStorage.getItem('drover.token') || '',
  user: null,
  jobs: new Map(), // id -> row, from the controller
  recent: new Map(), // id -> row, finished, from accounting
  since: 0, // last_update of the previous answer
  skew: 0, // the server's clock minus the browser's, seconds
  lastFull: 0,
  sort: JSON.parse(localStorage.getItem('drover.sort') || '{"key":"id","dir":-1}'),
  filter: { state: '', user: '', account: '', partition: '', q: '' },
  hidden: new Set(JSON.parse(localStorage.getItem('drover.hidden') || '[]')),
  selected: new Set(),
  view: 'jobs',
  rows: [], // filtered and sorted
  nodes: [],
  gpus: [],
  nodeSort: { key: 'name', dir: 1 },
  fit: null,
  timings: { firstRender: null, lastUpdate: null, updates: 0 },
  timer: null,
  busy: false,
  again: null,
};
window.drover = S; // for tests and benchmarks: S.timings

// ------------------------------------------------------------ helpers
/** A v0.0.40 number: plain, or {set, infinite, number}. */
function n(v) {
  if (typeof v === 'number') return v;
  if (v && typeof v === 'object') {
    if (v.infinite) return Infinity;
    if (v.set === false) return null;
    return typeof v.number === 'number' ? v.number : null;
  }
  return null;
}
function mem(mb) {
  if (mb === null || mb === undefined || !isFinite(mb)) return '';
  if (mb === 0) return '0';
  if (mb >= 1048576) return (mb / 1048576).toFixed(mb % 1048576 ? 1 : 0) + 'T';
  if (mb >= 1024) return (mb / 1024).toFixed(mb % 1024 ? 1 : 0) + 'G';
  return mb + 'M';
}
function dur(s) {
  if (s === null || s === undefined) return '';
  if (s === Infinity) return 'UNLIMITED';
  s = Math.max(0, Math.floor(s));
  const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60;
  const p = (x) => String(x).padStart(2, '0');
  return (d ? d + '-' : '') + p(h) + ':' + p(m) + ':' + p(s % 60);
}
const fmtDay = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
const fmtTime = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
/** Epoch seconds in the browser's time zone (today: the time alone). */
function when(t) {
  if (!t) return '';
  const d = new Date(t * 1000);
  return d.toDateString() === new Date().toDateString() ? fmtTime.format(d) : fmtDay.format(d);
}
const now = () => Math.floor(Date.now() / 1000);

// ------------------------------------------------------------ the API
class ApiError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}
/** The first error of an answer in Slurm's shape, as one line. */
function errorText(body, status) {
  const e = body && Array.isArray(body.errors) && body.errors[0];
  if (!e) return 'HTTP ' + status;
  const a = e.error || '', b = e.description || '';
  if (!a) return b || 'HTTP ' + status;
  return b && b !== a ? a + ' (' + b + ')' : a;
}
async function api(method, path, body) {
  const headers = { 'X-SLURM-USER-TOKEN': S.token };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let r;
  try {
    r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store', credentials: 'omit' });
  } catch (e) {
    throw new ApiError(0, 'droverrestd unreachable: ' + e.message);
  }
  let v = null;
  try { v = await r.json(); } catch (_) { /* not JSON */ }
  if (!r.ok) {
    if (r.status === 401) loggedOut(errorText(v, r.status));
    throw new ApiError(r.status, errorText(v, r.status));
  }
  return v;
}

// ------------------------------------------------------------ notices
function notice(title, lines, info) {
  const b = $('#notice-body');
  b.replaceChildren(el('strong', { text: title }));
  if (lines && lines.length) b.append(el('ul', null, ...lines.map((l) => el('li', { text: l }))));
  $('#notice').classList.toggle('info', !!info);
  $('#notice').hidden = false;
}
$('#notice-close').addEventListener('click', () => { $('#notice').hidden = true; });

// ------------------------------------------------------------ login
function loggedOut(why) {
  S.token = '';
  sessionStorage.removeItem('drover.token');
  stopPolling();
  $('#app').hidden = true;
  $('#login').hidden = false;
  $('#logout').hidden = true;
  $('#whoami').textContent = '';
  if (why) notice('Not logged in', [why]);
}
$('#login-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  let t = $('#token').value.trim();
  t = t.replace(/^(export\s+)?SLURM_JWT=/, '').trim();
  if (!t) { notice('Not logged in', ['Paste the output of scontrol token first.']); return; }
  S.token = t;
  if (await start()) $('#token').value = '';
});
$('#logout').addEventListener('click', () => loggedOut(''));

async function start() {
  try {
    const v = await api('GET', DR + '/whoami');
    S.user = v.user;
  } catch (e) {
    if (e.status !== 401) notice('Cannot log in', [e.message]);
    return false;
  }
  sessionStorage.setItem('drover.token', S.token);
  $('#notice').hidden = true;
  $('#login').hidden = true;
  $('#app').hidden = false;
  $('#logout').hidden = false;
  $('#whoami').textContent = S.user.name;
  $('#cluster').textContent = S.user.cluster;
  document.title = 'Drover: ' + S.user.cluster;
  await refresh(true);
  startPolling();
  fromHash();
  return true;
}
/** `#job=ID` opens that job's detail (a link to share). */
function fromHash() {
  const m = /^#job=(.+)$/.exec(location.hash);
  if (m && S.token) openDetail(decodeURIComponent(m[1]));
}
window.addEventListener('hashchange', fromHash);

// ------------------------------------------------------------ jobs
/** A row from the controller's job (squeue --json). */
function fromCtld(j) {
  const arr = n(j.array_job_id) || 0, task = n(j.array_task_id);
  let id = String(j.job_id), base = j.job_id, sub = -1;
  if (arr && task !== null) { id = arr + '_' + task; base = arr; sub = task; }
  else if (arr && j.array_task_string) { id = arr + '_[' + j.array_task_string + ']'; base = arr; sub = 1e12; }
  const cpus = n(j.cpus) || 0, nodes = n(j.node_count) || 1;
  const mpn = n(j.memory_per_node), mpc = n(j.memory_per_cpu);
  const gres = (j.tres_per_node || '').split(',').filter((s) => s.startsWith('gres/')).map((s) => s.slice(5)).join(',');
  const state = (j.job_state && j.job_state[0]) || '';
  const reason = j.state_reason && j.state_reason !== 'None' ? j.state_reason : '';
  const limit = n(j.time_limit);
  return {
    id, jobId: j.job_id, base, sub, name: j.name || '', user: j.user_name || '', account: j.account || '',
    partition: j.partition || '', state, reason, cpus, mem: mpn !== null ? mpn * nodes : mpc !== null ? mpc * cpus : null,
    gres, nodes: j.nodes || '', submit: n(j.submit_time) || 0,
    start: state === 'PENDING' ? 0 : n(j.start_time) || 0, end: n(j.end_time) || 0,
    elapsed: n(j.run_time) || 0, limit: limit === null ? null : limit === Infinity ? Infinity : limit * 60,
    eff: null, hold: !!j.hold, from: 'controller', at: 0,
  };
}
/** What the table shows of a row, but its elapsed time. */
function sig(r) {
  return [r.name, r.user, r.account, r.partition, r.state, r.reason, r.cpus, r.mem, r.gres, r.nodes, r.submit, r.start, r.end, r.limit, r.hold].join('\u0001');
}
/** Elapsed now: a running job's time goes on between answers. */
function elapsed(r) {
  return r.state === 'RUNNING' && r.at ? r.elapsed + Math.max(0, now() + S.skew - r.at) : r.elapsed;
}

/** A finished row from accounting (sacct --json), efficiency included. */
function fromAcct(j) {
  const arr = (j.array && j.array.job_id) || 0, task = j.array ? n(j.array.task_id) : null;
  const id = arr && task !== null ? arr + '_' + task : String(j.job_id);
  const alloc = (j.tres && j.tres.allocated) || [];
  const gres = alloc.filter((t) => t.type === 'gres').map((t) => t.name + ':' + t.count).join(',');
  const cpus = (j.required && j.required.CPUs) || 0;
  const t = j.time || {};
  let cpuSec = 0, rssMb = 0;
  for (const s of j.steps || []) {
    cpuSec += (s.time && s.time.total && s.time.total.seconds) || 0;
    for (const m of (s.tres && s.tres.requested && s.tres.requested.max) || []) if (m.type === 'mem') rssMb = Math.max(rssMb, m.count);
  }
  const memReq = n(j.required && j.required.memory_per_node);
  const nn = j.allocation_nodes || 1;
  const eff = {
    cpu: t.elapsed > 0 && cpus > 0 ? Math.min(100, (100 * cpuSec) / (t.elapsed * cpus)) : null,
    mem: memReq ? Math.min(100, (100 * rssMb) / (memReq * nn)) : null,
  };
  const limit = n(t.limit);
  return {
    id, jobId: j.job_id, base: arr || j.job_id, sub: arr ? task : -1, name: j.name || '', user: j.user || '',
    account: j.account || '', partition: j.partition || '', state: (j.state && j.state.current && j.state.current[0]) || '',
    reason: j.state && j.state.reason && j.state.reason !== 'None' ? j.state.reason : '', cpus,
    mem: memReq ? memReq * nn : null, gres, nodes: j.nodes === 'None assigned' ? '' : j.nodes || '',
    submit: t.submission || 0, start: t.start || 0, end: t.end || 0, elapsed: t.elapsed || 0,
    limit: limit === null ? null : limit === Infinity ? Infinity : limit * 60, eff, hold: false, from: 'accounting',
  };
}

const ACTIVE = new Set(['PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING', 'CONFIGURING', 'STOPPED']);
const effText = (e) => (!e ? '' : [e.cpu !== null ? 'CPU ' + Math.round(e.cpu) + '%' : '', e.mem !== null ? 'Mem ' + Math.round(e.mem) + '%' : ''].filter(Boolean).join(' · '));

const COLS = [
  { key: 'id', label: 'Job ID', sort: (r) => r.base * 1e13 + r.sub },
  { key: 'name', label: 'Name' },
  { key: 'user', label: 'User' },
  { key: 'account', label: 'Account' },
  { key: 'partition', label: 'Partition' },
  { key: 'state', label: 'State', sort: (r) => r.state + ' ' + r.reason },
  { key: 'cpus', label: 'CPUs', num: true },
  { key: 'mem', label: 'Memory', num: true, fmt: (r) => mem(r.mem) },
  { key: 'gres', label: 'GPUs' },
  { key: 'nodes', label: 'Nodes' },
  { key: 'submit', label: 'Submitted', num: true, fmt: (r) => when(r.submit) },
  { key: 'start', label: 'Started', num: true, fmt: (r) => when(r.start) },
  { key: 'elapsed', label: 'Elapsed / Limit', num: true, sort: elapsed, fmt: (r) => dur(elapsed(r)) + (r.limit === null ? '' : ' / ' + dur(r.limit)) },
  { key: 'eff', label: 'Efficiency', num: true, sort: (r) => (r.eff && r.eff.cpu !== null ? r.eff.cpu : -1), fmt: (r) => effText(r.eff) },
];

function allRows() {
  const out = [...S.jobs.values()];
  for (const [id, r] of S.recent) {
    const c = S.jobs.get(id);
    if (!c) out.push(r);
    else if (!c.eff && !ACTIVE.has(c.state)) { c.eff = r.eff; rowCache.delete(id); } // finished: accounting's figures
  }
  return out;
}

function matches(r, f, q) {
  if (f.state && r.state !== f.state) return false;
  if (f.user && r.user !== f.user) return false;
  if (f.account && r.account !== f.account) return false;
  if (f.partition && r.partition !== f.partition) return false;
  if (q) {
    const hay = (r.id + ' ' + r.name + ' ' + r.user + ' ' + r.account + ' ' + r.partition + ' ' + r.state + ' ' + r.reason + ' ' + r.nodes + ' ' + r.gres).toLowerCase();
    if (!hay.includes(q)) return false;
  }
  return true;
}

function computeRows() {
  const f = S.filter, q = f.q.trim().toLowerCase();
  const rows = allRows().filter((r) => matches(r, f, q));
  const col = COLS.find((c) => c.key === S.sort.key) || COLS[0];
  const key = col.sort || ((r) => r[col.key]);
  const dir = S.sort.dir;
  const keyed = rows.map((r) => [key(r), r]);
  keyed.sort((a, b) => {
    const x = a[0], y = b[0];
    if (x === y) return b[1].base - a[1].base || b[1].sub - a[1].sub;
    if (x === null || x === undefined || x === '') return 1;
    if (y === null || y === undefined || y === '') return -1;
    return (typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y), undefined, { numeric: true })) * dir;
  });
  S.rows = keyed.map((k) => k[1]);
}

function fillSelect(sel, label, values, cur) {
  const vals = [...values].filter(Boolean).sort();
  if (cur && !vals.includes(cur)) vals.push(cur);
  const want = [''].concat(vals).join('\n');
  if (sel.dataset.opts === want) return;
  sel.dataset.opts = want;
  sel.replaceChildren(el('option', { value: '', text: 'All ' + label }), ...vals.map((v) => el('option', { value: v, text: v })));
  sel.value = cur;
}
function fillFilters() {
  const sets = { state: new Set(), user: new Set(), account: new Set(), partition: new Set() };
  for (const r of allRows()) for (const k in sets) sets[k].add(r[k]);
  fillSelect($('#f-state'), 'states', sets.state, S.filter.state);
  fillSelect($('#f-user'), 'users', sets.user, S.filter.user);
  fillSelect($('#f-account'), 'accounts', sets.account, S.filter.account);
  fillSelect($('#f-partition'), 'partitions', sets.partition, S.filter.partition);
}

function visibleCols() { return COLS.filter((c) => !S.hidden.has(c.key)); }

function renderHead() {
  const tr = $('#jobs-head');
  const all = el('input', { type: 'checkbox', id: 'sel-all', 'aria-label': 'Select all shown jobs' });
  all.addEventListener('change', () => {
    if (all.checked) for (const r of S.rows) S.selected.add(r.id);
    else S.selected.clear();
    renderBody();
  });
  const ths = [el('th', { scope: 'col' }, all)];
  for (const c of visibleCols()) {
    const th = el('th', { scope: 'col', cls: c.num ? 'num' : '', 'data-col': c.key });
    if (S.sort.key === c.key) th.setAttribute('aria-sort', S.sort.dir > 0 ? 'ascending' : 'descending');
    th.append(el('button', { type: 'button', text: c.label, onclick: () => sortBy(c.key) }));
    ths.push(th);
  }
  ths.push(el('th', { scope: 'col', text: 'Actions' }));
  tr.replaceChildren(...ths);
  colsVersion++;
  const tg = $('#col-toggles');
  tg.replaceChildren(...COLS.map((c) => {
    const cb = el('input', { type: 'checkbox', 'data-col': c.key });
    cb.checked = !S.hidden.has(c.key);
    cb.addEventListener('change', () => {
      if (cb.checked) S.hidden.delete(c.key); else S.hidden.add(c.key);
      localStorage.setItem('drover.hidden', JSON.stringify([...S.hidden]));
      renderHead(); renderBody();
    });
    return el('label', null, cb, ' ' + c.label);
  }));
}

function sortBy(key) {
  S.sort = S.sort.key === key ? { key, dir: -S.sort.dir } : { key, dir: 1 };
  localStorage.setItem('drover.sort', JSON.stringify(S.sort));
  renderHead();
  renderJobs();
}

function stateBadge(state, reason, cls) {
  const frag = document.createDocumentFragment();
  frag.append(el('span', { cls: 'st st-' + (cls || state), text: state }));
  if (reason) frag.append(el('span', { cls: 'reason', text: '(' + reason + ')' }));
  return frag;
}

const rowCache = new Map(); // id -> {r, tr, v}: rows drawn, reused while unchanged
let colsVersion = 0;
function rowFor(r) {
  const c = rowCache.get(r.id);
  if (c && c.r === r && c.v === colsVersion) {
    const sel = S.selected.has(r.id);
    c.tr.classList.toggle('sel', sel);
    const cb = c.tr.querySelector('.pick');
    if (cb.checked !== sel) cb.checked = sel;
    const td = c.tr.querySelector('td[data-col=elapsed]');
    if (td && r.state === 'RUNNING') td.textContent = td.title = COLS.find((x) => x.key === 'elapsed').fmt(r);
    return c.tr;
  }
  const tr = rowEl(r);
  rowCache.set(r.id, { r, tr, v: colsVersion });
  return tr;
}
function rowEl(r) {
  const tr = el('tr', { 'data-id': r.id, cls: S.selected.has(r.id) ? 'sel' : '' });
  const cb = el('input', { type: 'checkbox', 'aria-label': 'Select job ' + r.id, cls: 'pick' });
  cb.checked = S.selected.has(r.id);
  cb.addEventListener('change', () => {
    if (cb.checked) S.selected.add(r.id); else S.selected.delete(r.id);
    tr.classList.toggle('sel', cb.checked);
    renderSelCount();
  });
  const tds = [el('td', null, cb)];
  for (const c of visibleCols()) {
    const td = el('td', { cls: c.num ? 'num' : '', 'data-col': c.key });
    if (c.key === 'id') td.append(el('button', { type: 'button', cls: 'link', text: r.id, title: 'Details of job ' + r.id, onclick: () => openDetail(r.id) }));
    else if (c.key === 'state') td.append(stateBadge(r.state, r.reason));
    else td.textContent = c.fmt ? c.fmt(r) : r[c.key] === null || r[c.key] === undefined ? '' : String(r[c.key]);
    if (c.key !== 'id' && c.key !== 'state') td.title = td.textContent;
    tds.push(td);
  }
  const act = el('select', { cls: 'rowact', 'aria-label': 'Actions for job ' + r.id },
    el('option', { value: '', text: 'Act…' }), el('option', { value: 'cancel', text: 'Cancel' }), el('option', { value: 'hold', text: 'Hold' }),
    el('option', { value: 'release', text: 'Release' }), el('option', { value: 'requeue', text: 'Requeue' }));
  act.addEventListener('change', () => { const a = act.value; act.value = ''; if (a) ask(a, [r.id]); });
  tds.push(el('td', null, act));
  tr.append(...tds);
  return tr;
}

const spacers = [null, null];
function spacer(i, h, ncol) {
  if (!spacers[i]) spacers[i] = el('tr', { cls: 'spacer', 'aria-hidden': 'true' }, el('td'));
  const td = spacers[i].firstChild;
  td.colSpan = ncol;
  td.style.height = h + 'px';
  return spacers[i];
}
/** Draw the rows in view (and a few around): the table is virtualised. */
function renderBody() {
  const wrap = $('#jobs-wrap'), body = $('#jobs-body');
  const ncol = visibleCols().length + 2;
  if (!S.rows.length) {
    const any = S.jobs.size + S.recent.size > 0;
    body.replaceChildren(el('tr', null, el('td', { colspan: ncol, cls: 'empty', text: any ? 'No jobs match these filters.' : 'No jobs.' })));
    renderSelCount();
    return;
  }
  const head = $('#jobs-head').offsetHeight || ROWH;
  const top = Math.max(0, wrap.scrollTop - head);
  const first = Math.max(0, Math.floor(top / ROWH) - 10);
  const count = Math.ceil((wrap.clientHeight || 800) / ROWH) + 20;
  const last = Math.min(S.rows.length, first + count);
  const kids = [];
  if (first > 0) kids.push(spacer(0, first * ROWH, ncol));
  for (let i = first; i < last; i++) kids.push(rowFor(S.rows[i]));
  if (last < S.rows.length) kids.push(spacer(1, (S.rows.length - last) * ROWH, ncol));
  // Unchanged (a live update that changed nothing in view): leave the DOM.
  if (kids.length === body.children.length && kids.every((k, i) => body.children[i] === k)) {
    renderSelCount();
    return;
  }
  // Keep the focused control across redraws (a row's checkbox or menu).
  const fa = document.activeElement, fid = fa && fa.closest && fa.closest('tr[data-id]');
  const fsel = fid && (fa.classList.contains('pick') ? '.pick' : fa.classList.contains('rowact') ? '.rowact' : fa.classList.contains('link') ? '.link' : null);
  const focusId = fid && fid.dataset.id;
  body.replaceChildren(...kids);
  if (focusId && fsel) {
    const tr = body.querySelector('tr[data-id="' + CSS.escape(focusId) + '"]');
    const t = tr && tr.querySelector(fsel);
    if (t) t.focus({ preventScroll: true });
  }
  renderSelCount();
}
function renderSelCount() {
  for (const id of [...S.selected]) if (!S.jobs.has(id) && !S.recent.has(id)) S.selected.delete(id);
  const k = S.selected.size;
  $('#sel-count').textContent = k + ' selected';
  for (const b of document.querySelectorAll('[data-bulk]')) b.disabled = k === 0;
  $('#sel-clear').disabled = k === 0;
  const all = $('#sel-all');
  if (all) all.checked = k > 0 && S.rows.length > 0 && S.rows.every((r) => S.selected.has(r.id));
}
function renderJobs() {
  computeRows();
  fillFilters();
  const total = S.jobs.size + [...S.recent.keys()].filter((id) => !S.jobs.has(id)).length;
  $('#count').textContent = S.rows.length === total ? total + ' jobs' : S.rows.length + ' of ' + total + ' jobs';
  renderBody();
}
$('#jobs-wrap').addEventListener('scroll', () => {
  if (S.scrollPending) return;
  S.scrollPending = true;
  requestAnimationFrame(() => { S.scrollPending = false; renderBody(); });
});

async function loadJobs(full) {
  const t = performance.now();
  const since = S.since;
  const incremental = !full && since > 0;
  const v = await api('GET', API + '/jobs' + (incremental ? '?update_time=' + (since - 1) : ''));
  const fetched = performance.now();
  const at = n(v.last_update) || now();
  S.skew = at - now();
  const next = new Map(incremental ? S.jobs : []);
  let changed = 0;
  for (const j of v.jobs || []) {
    const r = fromCtld(j);
    r.at = at;
    r.sig = sig(r);
    const old = S.jobs.get(r.id);
    if (old && old.sig === r.sig) { old.elapsed = r.elapsed; old.at = at; next.set(r.id, old); continue; }
    next.set(r.id, r);
    changed++;
  }
  if (!incremental && next.size !== S.jobs.size) changed++;
  S.jobs = next;
  S.since = at;
  return { t, changed, fetched };
}
async function loadRecent() {
  try {
    const v = await api('GET', DB + '/jobs?start_time=' + (now() - RECENT_S));
    const m = new Map();
    for (const j of v.jobs || []) {
      const r = fromAcct(j);
      if (!ACTIVE.has(r.state) && (!r.end || r.end >= now() - RECENT_S)) m.set(r.id, r);
    }
    S.recent = m;
  } catch (e) {
    S.recent = new Map(); // accounting off or unreachable: the controller's jobs only
    if (e.status && e.status !== 404) notice('Accounting', ['Finished jobs are not shown: ' + e.message], true);
  }
}

// ------------------------------------------------------------ actions
const VERB = { cancel: 'Cancel', hold: 'Hold', release: 'Release', requeue: 'Requeue' };
function act(a, id) {
  const p = encodeURIComponent(id);
  if (a === 'cancel') return api('DELETE', API + '/job/' + p);
  if (a === 'hold') return api('POST', API + '/job/' + p, { hold: true });
  if (a === 'release') return api('POST', API + '/job/' + p, { hold: false });
  return api('POST', DR + '/job/' + p + '/requeue');
}
function ask(a, ids) {
  const d = $('#confirm');
  $('#confirm-h').textContent = VERB[a] + (ids.length === 1 ? ' job ' + ids[0] : ' ' + ids.length + ' jobs') + '?';
  $('#confirm-text').textContent = (a === 'cancel' ? 'Cancel (stop) ' : VERB[a] + ' ') + (ids.length === 1 ? 'job ' : 'jobs ') + ids.join(', ') + '.';
  $('#confirm-yes').textContent = VERB[a];
  d.onclose = () => { if (d.returnValue === 'yes') perform(a, ids); };
  d.returnValue = '';
  d.showModal();
  $('#confirm-no').focus();
}
async function perform(a, ids) {
  const errors = [];
  let done = 0;
  const queue = [...ids];
  const worker = async () => {
    while (queue.length) {
      const id = queue.shift();
      try { await act(a, id); done++; } catch (e) { errors.push('Job ' + id + ': ' + e.message); }
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, ids.length) }, worker));
  if (errors.length) notice(VERB[a] + ': ' + done + ' of ' + ids.length + ' done, ' + errors.length + ' failed', errors);
  else notice(VERB[a] + ': ' + done + ' of ' + ids.length + ' done', [], true);
  // Holds and releases change no job time: fetch the jobs acted on.
  await Promise.all(ids.map(async (id) => {
    try {
      const v = await api('GET', API + '/job/' + encodeURIComponent(id));
      for (const j of v.jobs || []) { const r = fromCtld(j); r.at = S.since; r.sig = sig(r); S.jobs.set(r.id, r); }
    } catch (_) { /* gone: the next full listing drops it */ }
  }));
  renderJobs();
  if (!$('#detail').open) return;
  openDetail($('#detail').dataset.id);
}
for (const b of document.querySelectorAll('[data-bulk]')) {
  b.addEventListener('click', () => { if (S.selected.size) ask(b.dataset.bulk, [...S.selected]); });
}
$('#sel-clear').addEventListener('click', () => { S.selected.clear(); renderBody(); });
for (const b of document.querySelectorAll('#detail-actions [data-act]')) {
  b.addEventListener('click', () => ask(b.dataset.act, [$('#detail').dataset.id]));
}

async function openDetail(id) {
  const d = $('#detail');
  d.dataset.id = id;
  $('#detail-h').textContent = 'Job ' + id;
  const body = $('#detail-body');
  body.replaceChildren(el('p', { cls: 'muted', text: 'Loading…' }));
  if (!d.open) d.showModal();
  try {
    const v = (await api('GET', DR + '/job/' + encodeURIComponent(id) + '/detail')).detail;
    const kids = [];
    const r = S.jobs.get(id) || S.recent.get(id);
    if (r && r.eff) kids.push(el('p', null, el('strong', { text: 'Efficiency: ' }), effText(r.eff) || 'not measured'));
    if (v.show) kids.push(el('h3', { text: 'scontrol show job' }), el('pre', { cls: 'show', text: v.show }));
    if (v.steps && v.steps.length) kids.push(el('h3', { text: 'Steps' }), el('pre', { cls: 'show', text: v.steps.join('\n') }));
    for (const [k, label] of [['std_out', 'Output'], ['std_err', 'Errors']]) {
      const o = v.output && v.output[k];
      if (!o) continue;
      const what = k === 'std_out' && !v.output.std_err ? 'Output and errors' : label;
      kids.push(el('h3', { text: what + ' (' + o.path + (o.size > 16384 ? ', last 16 KiB of ' + Math.round(o.size / 1024) + ' KiB' : '') + ')' }));
      kids.push(o.error !== undefined ? el('p', { cls: 'notice', 'data-output': k, text: o.error }) : el('pre', { cls: 'show', 'data-output': k, text: o.text || '(empty)' }));
    }
    kids.push(el('h3', { text: 'Efficiency (seff)' }), el('pre', { cls: 'show', text: v.efficiency || 'No accounting record yet (the job has not finished, or accounting is off).' }));
    body.replaceChildren(...kids);
  } catch (e) {
    body.replaceChildren(el('p', { cls: 'notice', text: e.message }));
  }
}

// ------------------------------------------------------------ refresh
async function refresh(full) {
  if (!S.token) return;
  if (S.busy) { S.again = S.again || (full ? 'full' : 'delta'); return; } // after this one
  S.busy = true;
  try {
    full = full || performance.now() - S.lastFull > FULL_MS;
    if (S.view === 'compute') {
      try {
        await loadCompute();
        S.computeError = '';
      } catch (e) {
        S.computeError = e.message; // PrivateData=nodes: said in the view
      }
      renderCompute();
    }
    const jobsFull = full || !S.since;
    const [{ t, changed, fetched }] = await Promise.all([loadJobs(jobsFull), jobsFull ? loadRecent() : null]);
    if (jobsFull) {
      S.lastFull = performance.now();
      for (const id of rowCache.keys()) if (!S.jobs.has(id) && !S.recent.has(id)) rowCache.delete(id);
    }
    if (changed || jobsFull || S.timings.firstRender === null) renderJobs();
    else renderBody(); // running jobs' elapsed times
    const end = performance.now();
    const tm = S.timings;
    if (tm.firstRender === null) { tm.firstRender = end - T0; tm.firstRenderSinceNav = end; tm.firstFetch = fetched - t; }
    else { tm.lastUpdate = end - t; tm.lastFetch = fetched - t; tm.lastKind = jobsFull ? 'full' : 'delta'; tm.updates++; }
    $('#live-state').textContent = 'updated ' + fmtTime.format(new Date());
  } catch (e) {
    if (e.status !== 401) notice('Refresh failed', [e.message]);
  } finally {
    S.busy = false;
    const again = S.again;
    S.again = null;
    if (again) refresh(again === 'full');
  }
}
function startPolling() {
  stopPolling();
  if ($('#live').checked) S.timer = setInterval(() => { if (!document.hidden) refresh(false); }, POLL_MS);
}
function stopPolling() { if (S.timer) clearInterval(S.timer); S.timer = null; }
$('#live').addEventListener('change', startPolling);
$('#refresh').addEventListener('click', () => refresh(true));

// ------------------------------------------------------------ views, keys
function show(view) {
  S.view = view;
  for (const v of ['jobs', 'compute']) {
    $('#view-' + v).hidden = v !== view;
    $('#tab-' + v).setAttribute('aria-selected', String(v === view));
  }
  if (view === 'compute') refresh(false); else renderBody();
}
$('#tab-jobs').addEventListener('click', () => show('jobs'));
$('#tab-compute').addEventListener('click', () => show('compute'));
$('#q').addEventListener('input', () => { S.filter.q = $('#q').value; renderJobs(); });
for (const k of ['state', 'user', 'account', 'partition']) {
  $('#f-' + k).addEventListener('change', (ev) => { S.filter[k] = ev.target.value; renderJobs(); });
}
document.addEventListener('keydown', (ev) => {
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
  if (typing || ev.ctrlKey || ev.metaKey || ev.altKey || document.querySelector('dialog[open]')) return;
  if (ev.key === '/') { ev.preventDefault(); $('#q').focus(); }
  else if (ev.key === 'r') refresh(true);
});

renderHead();
if (S.token) start(); else loggedOut('');
